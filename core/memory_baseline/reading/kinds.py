"""What a question asks for, read from its words alone (never from a task label).

The styles shape their prompt, schema and grammar by it: `is_work_request` (an artifact
is asked for), `question_kind` (the focused style's kinds), `itemised_kind` (the two
kinds the itemised style reads its own way) and `routed_style` (which style then reads
the question). The patterns are part of the styles' template hashes (`templates`):
changing one changes which prompt a question gets, so it is a different reader.
"""

from __future__ import annotations

import re

# The fence languages a work answer may use.
ARTIFACT_LANGUAGES = ("yaml", "toml", "json", "python", "sql", "ini", "text")

_WORK_VERB = re.compile(r"\b(write|draft|generate|create|produce|add)\b", re.IGNORECASE)
_WORK_OBJECT = re.compile(
    r"\b(config(uration)?|yaml|toml|json|sql|function|code|class|script|entry|block|file|migration)\b",
    re.IGNORECASE,
)


def is_work_request(query: str) -> bool:
    """A downstream request for an artifact ("Write the TOML entry ..."), not a question."""
    return bool(_WORK_VERB.search(query) and _WORK_OBJECT.search(query))


_WHERE = re.compile(r"^\s*(where|in which (files?|documents?|sessions?|records?)|which (files?|"
                    r"documents?|sessions?|records?|sources?))\b", re.IGNORECASE)
_WHY = re.compile(r"^\s*why\b|\bwhat (was|were) the reasons?\b|\bwhy did\b", re.IGNORECASE)
_LIST = re.compile(r"\b(still open|outstanding|open items?|follow-?ups?|obligations?|left to do|"
                   r"remaining|not yet done|what (is|was|remains) (still )?(open|pending))\b", re.IGNORECASE)
_OUTCOME = re.compile(
    r"^\s*(have|has|had|was|were|is|are|did|does|do)\b|\b(decided|decision|adopted|accepted|rejected|approved|superseded|replaced|withdrawn|deferred|"
    r"status|outcome|still (use|run|used|running)|did (we|they|the team)|was .* (adopted|chosen|"
    r"rejected|accepted)|is .* (in force|current))\b", re.IGNORECASE)


_PROMISES = re.compile(
    r"\b(promis\w*|follow-?ups?|obligations?|still open|remain\w*|unfinished|outstanding|"
    r"open (items?|issues?|questions?)|left (open|to do)|leaves?\b.*\b(later|future)|future work|"
    # the verb, not a name: "what did PEP 758 defer", "... deferred?", never "deferred evaluation"
    r"defer|deferred(?=\s*\?)|not yet done)\b", re.IGNORECASE)
# Only a which/what question asks for the items; a yes/no question about one promise ("Have the
# keys promised after evt-204 been added?") is structured's: itemising it listed other promises
# and turned the answer (dev tasks of the fixture and two worlds, a first version of this style).
_ASKS_FOR_WHICH = re.compile(r"^\s*(which|what)\b", re.IGNORECASE)
# A request that starts with a work verb and names an artifact language ("Write Python that ...")
# is work too; structured's own test (`is_work_request`) stays as it was, to keep its prompts.
_WORK_START = re.compile(r"^\s*(write|draft|generate|create|produce)\b", re.IGNORECASE)
SHELL = re.compile(r"\bshell\b", re.IGNORECASE)  # not "command": "dispatches on a command string"

# What each routing style reads a question by, in the order its template hash records them.
FOCUSED_PATTERNS = (_WORK_VERB, _WORK_OBJECT, _WHERE, _WHY, _LIST, _OUTCOME)
ITEMISED_PATTERNS = (_WORK_VERB, _WORK_OBJECT, _PROMISES, _WORK_START, _ASKS_FOR_WHICH)


def is_artifact_request(query: str) -> bool:
    return is_work_request(query) or bool(_WORK_START.search(query) and _named_languages(query))


def itemised_kind(query: str) -> str | None:
    """What the itemised style reads differently, from the question's words alone (never a task
    label): ``work`` (an artifact), ``items`` (promises, follow-ups, deferred work), else None."""
    if is_artifact_request(query):
        return "work"
    if _PROMISES.search(query) and _ASKS_FOR_WHICH.search(query):
        return "items"
    return None


def routed_style(style: str, query: str) -> str:
    """The style that reads `query`: itemised reads only its two kinds; every other question is
    read by structured, with structured's prompt and identity."""
    if style == "itemised" and itemised_kind(query) is None:
        return "structured"
    return style


def question_kind(query: str) -> str:
    """What the question asks for, read from its words alone (never from a task label):
    ``work`` (an artifact), ``where``, ``why``, ``list``, ``outcome`` or ``other``."""
    if is_work_request(query):
        return "work"
    if _WHERE.search(query):
        return "where"
    if _WHY.search(query):
        return "why"
    if _LIST.search(query):
        return "list"
    if _OUTCOME.search(query):
        return "outcome"
    return "other"


def _named_languages(query: str) -> tuple[str, ...]:
    return tuple(lang for lang in ARTIFACT_LANGUAGES if re.search(rf"\b{lang}\b", query, re.I))


def requested_languages(query: str) -> tuple[str, ...]:
    """The artifact languages the request names; all of them when it names none."""
    return _named_languages(query) or ARTIFACT_LANGUAGES


def work_languages(query: str) -> tuple[str, ...]:
    """The fence languages of a work answer: shell commands are ``bash`` (asked for "one fenced
    block holding the shell commands", a free choice wrote JSON); else the requested ones."""
    if SHELL.search(query):
        return ("bash",)
    return requested_languages(query)
