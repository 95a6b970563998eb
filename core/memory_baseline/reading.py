"""Reading styles: how an LLM reader is asked, and how its reply becomes an answer.

The plain prompt (`build_messages`) is the control. The other styles
are reader engineering for a small local model, each a named configuration
(`ReaderConfig.style`) measured with oracle context in the reader chapter:

- ``dated``: a free-text answer, but the prompt states the question's as-of
  date first, gives every passage a header with its id, kind and the date the
  artifact states, orders passages oldest first when the question has a date,
  and names the outcomes to tell apart (proposed, decided, rejected, ...).
- ``structured``: the dated prompt, decoded under a JSON schema: the evidence
  first (each a source from an enum of the admitted ids, with a verbatim
  quote), then the answer, then an outcome status; a work request ("write the
  configuration ...") also gets the artifact and its language. Evidence comes
  before the answer so the model reads before it concludes.
- ``two-step``: a first constrained call extracts the claims that bear on the
  question (source, verbatim quote, claim); a second answers from those
  claims, listed oldest first with their dates, under the structured schema.
  A work request also keeps the sources in the second call, since a
  configuration has to follow the files' layout. Costs two calls.
- ``focused``: the dated prompt and the structured schema, shaped by what the
  question asks, as the system reads it from the question alone
  (`question_kind`): an outcome status only when it asks about an outcome; for
  a where-question one evidence item from every admitted source that bears on
  it, all of them cited; for a why-question the reasons the record gives; and
  always an answer composed from the quotes that keeps their dates, numbers
  and names, and does not restate the question.
- ``itemised``: structured, except for two kinds of request it reads from the
  question alone (`itemised_kind`). A which/what question about promises,
  follow-ups or deferred work is asked for every action item, to-do or
  deferral the sources state, each named with its state as of the date (and
  the date it was done), without an outcome status. A work request is
  answered outside JSON, under a grammar: ``Follows [id], [id].`` (ids from the
  admitted ones), then the fenced block in a language the request names
  (``bash`` for shell commands). After a JSON head, structured's artifacts came
  back with escaped newlines and missing imports. Every
  other question gets the structured prompt, byte for byte, under the
  structured reader's identity, so its answers are structured's, cached ones
  included.

The answer text of the structured styles is rendered from the fields:
``Status: <status>. <answer> [ids]`` plus a fenced block for an artifact. The
quotes stay in ``extra["evidence"]`` (each marked verified when it occurs in
the cited passage, whitespace and case ignored) and are not part of the
scored text, so a grader's phrase check cannot pass on a quote the model
merely copied. Citations come from the schema's enum: an id the reader never
saw cannot be produced at all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .passages import Passage

INSUFFICIENT = "insufficient evidence"
STYLES: dict[str, str] = {
    "plain": "the one plain prompt, free-text answer (the control)",
    "dated": "as-of date first, dated passage headers, date order, outcome vocabulary; free text",
    "structured": "dated prompt, JSON-schema decoding: quoted evidence from admitted ids, answer, status",
    "two-step": "extract quoted claims (constrained), then answer from them (structured); two calls",
    "focused": "structured, shaped by the question's kind: status only for outcomes, every source for "
               "where-questions, reasons for why, specifics kept",
    "itemised": "structured, but which-promises questions ask for every action item with its state, "
                "and work requests are answered outside JSON: cited ids, then one fenced block",
}
STATUSES = ("decided", "proposed", "rejected", "superseded", "open", "done", "not-applicable")
ARTIFACT_LANGUAGES = ("yaml", "toml", "json", "python", "sql", "ini", "text")
MAX_EVIDENCE = 4
MAX_CLAIMS = 6
MAX_QUOTE_CHARS = 200  # a quote is a line or two, not the file
MAX_ANSWER_CHARS = 500

# -- the plain prompt: the control ---------------------------------------------------------

SYSTEM_PROMPT = (
    "You answer questions about a software project's history. Use only the sources "
    "provided; do not rely on outside knowledge.\n"
    "Rules:\n"
    # The example id is deliberately no corpus's id, so it cannot nudge the model
    # towards a real source.
    "1. After each claim, cite the source id it comes from in square brackets, e.g. "
    "[path/to/file.md]. Cite only ids listed in the sources.\n"
    "2. Keep proposals apart from decisions: if something was only proposed, say so; if it "
    "was rejected or superseded, say that, with the date.\n"
    "3. When the question gives a date, answer for that date.\n"
    f"4. If the sources do not answer the question, reply exactly: {INSUFFICIENT}.\n"
    "Be brief."
)
# Repeated after the question: small models follow the instruction nearest the end best.
ANSWER_REMINDER = (
    "Cite the source id in square brackets after each claim. If the sources do not answer "
    f"the question, reply exactly: {INSUFFICIENT}."
)
# Recorded in every LLM reader's identity: a changed template is a different reader.


def render_passage(passage: Passage) -> str:
    details = [passage.kind]
    if passage.artifact_date:
        details.append(f"dated {passage.artifact_date}")
    if passage.section:
        details.append(f"section: {passage.section}")
    return f"### Source [{passage.source_id}] ({', '.join(details)})\n{passage.text.strip()}"


# With no history at all (the no-memory condition, or an empty index) the reader is
# not told to refuse: "no memory" means no retrieved project history, not empty model
# weights, so it answers from general knowledge and says that it did.
SYSTEM_PROMPT_NO_HISTORY = (
    "You help with a software project, but no project history is available for this "
    "question. Answer from general knowledge, say briefly that no project records were "
    "consulted, and when a configuration or code is asked for, write it in a fenced code "
    "block. Be brief."
)


def build_messages(query: str, passages: Sequence[Passage], as_of: str | None, *,
                   history: bool = True) -> list[dict]:
    """The one plain prompt template: a system message and a user message with the sources.

    `history=False` (the no-memory condition) asks without any project history. With
    history consulted and no passage found, LLM readers abstain without a call
    (`LocalLLMReader.answer`); the template still renders, for counting.
    """
    parts = []
    if as_of:
        parts.append(f"The question is asked as of {as_of}.")
    if not history:
        parts.append(f"Question: {query.strip()}")
        return [{"role": "system", "content": SYSTEM_PROMPT_NO_HISTORY},
                {"role": "user", "content": "\n\n".join(parts)}]
    sources = "\n\n".join(render_passage(p) for p in passages) or "(none found in the project history)"
    parts.append("Sources:\n\n" + sources)
    parts.append(f"Question: {query.strip()}")
    parts.append(ANSWER_REMINDER)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]


# Recorded in every LLM reader's identity: a changed template is a different reader.
PROMPT_TEMPLATE_SHA256 = hashlib.sha256(
    (SYSTEM_PROMPT + SYSTEM_PROMPT_NO_HISTORY + ANSWER_REMINDER).encode("utf-8")
).hexdigest()[:16]



# -- the other styles ------------------------------------------------------------------------

SYSTEM_DATED = (
    "You answer questions about a software project's history from the sources given, and only "
    "from them.\n"
    "- Each source header gives its id and the date the source states. When the question has a "
    "date, answer for that date: sources dated later did not exist yet.\n"
    "- Tell apart what was proposed, decided, rejected, superseded by a later decision, promised "
    "but still open, and done. A proposal is not a decision; if the sources say something was "
    "rejected or not adopted, the answer is no.\n"
    "- Cite source ids exactly as written in the headers, in square brackets.\n"
    "- When the question asks for a configuration or code, write it so that it follows the "
    "decisions and the existing files in the sources.\n"
    f"- If the sources do not answer the question, answer exactly: {INSUFFICIENT}."
)
# The no-memory control in the same style: the same rules, layout, ask and output format,
# only no records, so it answers from general knowledge (as the plain control does).
SYSTEM_DATED_NO_HISTORY = (
    "You answer questions about a software project, but none of its records are available for "
    "this question: answer from general knowledge and say that no project records were "
    "consulted.\n"
    "- When the question has a date, answer for that date.\n"
    "- Tell apart what was proposed, decided, rejected, superseded by a later decision, promised "
    "but still open, and done.\n"
    "- When the question asks for a configuration or code, write it as such a project would most "
    "likely need it.\n"
    f"- If you cannot answer the question at all, answer exactly: {INSUFFICIENT}."
)
NO_SOURCES = "(none: no project records are available for this question)"
STATUS_GUIDE = (
    "status: what the sources say happened to the thing asked about: decided (adopted and in "
    "force), proposed (suggested, never decided), rejected, superseded (decided, later replaced), "
    "open (promised, not done yet), done (promised and finished), not-applicable (the question is "
    "not about an outcome)."
)
ASK_DATED = (
    "Answer briefly, citing the source id in square brackets after each claim. If the sources do "
    f"not answer the question, reply exactly: {INSUFFICIENT}."
)
ASK_STRUCTURED = (
    f"Reply in JSON. evidence: up to {MAX_EVIDENCE} items, one from each source that bears on the "
    "question: its source id and a short verbatim quote. answer: one or two sentences that answer "
    "the question from that evidence, in its words; when the question asks why, give the reasons "
    f"the sources state (or answer exactly: {INSUFFICIENT}). " + STATUS_GUIDE
)
ASK_ARTIFACT = (
    " This is a work request: the answer is one sentence naming the decisions the work follows. "
    "After the JSON, write the complete content asked for in one fenced code block, following the "
    "decisions and the existing files in the sources, changed where the request differs."
)
ASK_CLAIMS = (
    f"Reply in JSON. claims: up to {MAX_CLAIMS} statements from the sources that bear on the "
    "question, each with its source id, a short verbatim quote, and the claim in a few words. "
    "Include statements that something was proposed, decided, rejected, replaced, promised or done, "
    "and the reasons given."
)

ASK_FOCUSED = (
    "Reply in JSON. evidence: first quote the sentences that answer the question, each with its "
    "source id and the words exactly as written. answer: then answer from those quotes only, in one "
    "or two sentences that start with the answer itself (do not restate the question) and keep the "
    "dates, numbers, names and versions the quotes give. If the sources do not answer the question, "
    f"answer exactly: {INSUFFICIENT}."
)
ASK_FOCUSED_KIND = {
    "outcome": " " + STATUS_GUIDE,
    "where": (f" This asks where something was discussed or recorded: give one evidence item from "
              f"every source that bears on it (up to {MAX_EVIDENCE + 2}), and name each of them in "
              "the answer."),
    "why": (" This asks why: the answer gives the reasons the sources state for it (the measured "
            "problem, the evidence, the trade-off), not praise of the choice."),
    "list": (" This asks for a list: the answer names every item the sources give, each with its "
             "state (still open or done) as of the question's date."),
    "other": "",
}
QUESTION_KINDS = tuple(ASK_FOCUSED_KIND) + ("work",)

ASK_ITEMS = (
    "Reply in JSON. evidence: from each source that states any, a short verbatim quote of the "
    "promises the question is about: action items, to-dos (a \"- [ ]\" line is one), follow-ups, "
    "work deferred or left for later. answer: then name every such item, each with its state as of "
    "the question's date (still open; done, with the date a source gives; or deferred), keeping "
    "names, dates and versions. A later source may finish what an earlier one promised. If the "
    f"sources do not answer the question, answer exactly: {INSUFFICIENT}."
)
ASK_WORK = (
    "This is a work request. First name the sources the work follows, as their ids in square "
    "brackets. Then write the complete content asked for in one fenced code block with real line "
    "breaks, following the decisions and the existing files in the sources (their names, keys and "
    "layout), changed only where the request differs; code imports everything it uses."
)

# Bump when the schemas or grammars change shape: the answer cache keys on the prompt text,
# which a schema change leaves as it was.
GRAMMAR_VERSION = 2
_SHARED_TEMPLATE = (SYSTEM_DATED, STATUS_GUIDE, ASK_ARTIFACT, STATUSES, ARTIFACT_LANGUAGES, MAX_EVIDENCE,
                    MAX_CLAIMS, MAX_QUOTE_CHARS, MAX_ANSWER_CHARS, GRAMMAR_VERSION)


def template_sha256(style: str, kind: str | None = None) -> str:
    """Recorded in the reader identity: a changed template or grammar is a different reader.

    Per style, so that adding or changing one style leaves the others' cached answers valid;
    for itemised also per `kind` it reads (`itemised_kind`), so that changing how it reads
    promises leaves its work answers valid. (The asks themselves are in the prompt, which the
    answer cache keys on; this hash covers what shapes the reply outside it.)
    """
    if style == "itemised" and kind is not None:
        # What picks the grammar of a question is part of it: the cache keys on the prompt only.
        shaped = {"work": ("Follows ", "bash", _SHELL.pattern, ARTIFACT_LANGUAGES),
                  "items": ("evidence and answer, no status",)}[kind]
        material = json.dumps([_SHARED_TEMPLATE, "itemised", kind, shaped], ensure_ascii=False)
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]
    own: dict[str, tuple] = {
        "dated": (ASK_DATED,),
        "structured": (ASK_STRUCTURED,),
        "two-step": (ASK_CLAIMS, ASK_STRUCTURED),
        "focused": (ASK_FOCUSED, ASK_FOCUSED_KIND,
                    [r.pattern for r in (_WORK_VERB, _WORK_OBJECT, _WHERE, _WHY, _LIST, _OUTCOME)]),
        "itemised": ([r.pattern for r in (_WORK_VERB, _WORK_OBJECT, _PROMISES, _WORK_START,
                                          _ASKS_FOR_WHICH)],),
    }
    material = json.dumps([_SHARED_TEMPLATE, own.get(style, ())], ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]

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


def answer_allowance(style: str, query: str, max_answer_tokens: int) -> int:
    """Tokens a reply may use: a structured work request carries evidence and an artifact, so twice."""
    style = routed_style(style, query)
    work = itemised_kind(query) == "work" if style == "itemised" else is_work_request(query)
    structured = style in ("structured", "two-step", "focused", "itemised")
    return max_answer_tokens * 2 if structured and work else max_answer_tokens


def _named_languages(query: str) -> tuple[str, ...]:
    return tuple(lang for lang in ARTIFACT_LANGUAGES if re.search(rf"\b{lang}\b", query, re.I))


def requested_languages(query: str) -> tuple[str, ...]:
    """The artifact languages the request names; all of them when it names none."""
    return _named_languages(query) or ARTIFACT_LANGUAGES


def ordered_for_reading(passages: Sequence[Passage], as_of: str | None) -> list[Passage]:
    """Oldest first when the question has a date (undated last), else as ranked."""
    if not as_of:
        return list(passages)
    return sorted(passages, key=lambda p: (p.artifact_date is None, p.artifact_date or "", p.rank))


def render_dated_passage(passage: Passage) -> str:
    details = [f"kind: {passage.kind}", f"dated: {passage.artifact_date or 'undated'}"]
    if passage.section:
        details.append(f"section: {passage.section}")
    return f"### [{passage.source_id}] ({'; '.join(details)})\n{passage.text.strip()}"


def dated_messages(query: str, passages: Sequence[Passage], as_of: str | None, ask: str, *,
                   history: bool = True) -> list[dict]:
    """The dated layout; `history=False` keeps it and says that there are no records."""
    parts = []
    if as_of:
        parts.append(f"Today is {as_of}. Answer as of {as_of}.")
    parts.append("Sources (oldest first):" if as_of else "Sources:")
    if history:
        parts.append("\n\n".join(render_dated_passage(p) for p in ordered_for_reading(passages, as_of)))
    else:
        parts.append(NO_SOURCES)
    parts.append(f"Question{f' (as of {as_of})' if as_of else ''}: {query.strip()}")
    parts.append(ask)
    system = SYSTEM_DATED if history else SYSTEM_DATED_NO_HISTORY
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def answer_ask(query: str) -> str:
    return ASK_STRUCTURED + (ASK_ARTIFACT if is_work_request(query) else "")


def focused_ask(query: str) -> str:
    kind = question_kind(query)
    return ASK_FOCUSED + (ASK_ARTIFACT if kind == "work" else ASK_FOCUSED_KIND[kind])


def messages_for(style: str, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
    """The first (for two-step: the extraction) prompt of a non-plain style (`style_messages` takes all).

    Without history (the matched no-memory control) each style keeps its layout, ask and
    output format; two-step has no sources to extract claims from, so it asks its
    answer step directly, which is the structured prompt. A routing style (itemised) asks the
    questions it does not read its own way in structured's words.
    """
    style = routed_style(style, query)
    if style == "dated":
        return dated_messages(query, passages, as_of, ASK_DATED, history=history)
    if style == "structured" or (style == "two-step" and not history):
        return dated_messages(query, passages, as_of, answer_ask(query), history=history)
    if style == "two-step":
        return dated_messages(query, passages, as_of, ASK_CLAIMS)
    if style == "focused":
        return dated_messages(query, passages, as_of, focused_ask(query), history=history)
    if style == "itemised":
        ask = ASK_WORK if itemised_kind(query) == "work" else ASK_ITEMS
        return dated_messages(query, passages, as_of, ask, history=history)
    raise ValueError(f"unknown reading style {style!r}; choose one of {sorted(STYLES)}")


def style_messages(style: str, query: str, passages: Sequence[Passage], as_of: str | None, *,
                   history: bool = True) -> list[dict]:
    """A reading style's first prompt; without history, the same style with no records."""
    if style == "plain":
        return build_messages(query, passages, as_of, history=history)
    return messages_for(style, query, passages, as_of, history=history)


# -- schemas ---------------------------------------------------------------------------


def answer_schema(source_ids: Sequence[str], query: str, *, focused: bool = False) -> dict[str, Any]:
    """Evidence (ids from the enum only), answer, status; artifact fields for a work request.

    `focused` (the focused style): a status only for an outcome question, and room for
    one evidence item per source on a where-question.
    """
    work = is_work_request(query)
    kind = question_kind(query)
    most = MAX_EVIDENCE + 2 if focused and kind == "where" else MAX_EVIDENCE
    # With no source at all (the no-memory control) the evidence list is the same field, empty.
    evidence: dict[str, Any] = {
        "type": "array", "minItems": 1, "maxItems": most,
        "items": {"type": "object",
                  "properties": {"source": {"enum": list(source_ids)},
                                 "quote": {"type": "string", "maxLength": MAX_QUOTE_CHARS}},
                  "required": ["source", "quote"]},
    } if source_ids else {"type": "array", "maxItems": 0}
    properties: dict[str, Any] = {
        "evidence": evidence,
        "answer": {"type": "string", "maxLength": 200 if work else MAX_ANSWER_CHARS},
    }
    if not work and (not focused or kind == "outcome"):  # an artifact has no outcome to classify
        properties["status"] = {"enum": list(STATUSES)}
    return {"type": "object", "properties": properties, "required": list(properties)}


def items_schema(source_ids: Sequence[str], query: str) -> dict[str, Any]:
    """The itemised reply to a question about promises: structured's evidence and answer, without
    an outcome status (the answer gives each item its own state). A first version asked for the
    items as fields (item, state, date), one list per source: the model left every list empty and
    put the items in its answer, so the fields only cost tokens."""
    schema = answer_schema(source_ids, query)
    schema["properties"].pop("status", None)
    schema["required"] = [key for key in schema["required"] if key != "status"]
    return schema


_SHELL = re.compile(r"\bshell\b", re.IGNORECASE)  # not "command": "dispatches on a command string"


def work_languages(query: str) -> tuple[str, ...]:
    """The fence languages of a work answer: shell commands are ``bash`` (asked for "one fenced
    block holding the shell commands", a free choice wrote JSON); else the requested ones."""
    if _SHELL.search(query):
        return ("bash",)
    return requested_languages(query)


def work_grammar(query: str, source_ids: Sequence[str]) -> str:
    """A work answer outside JSON (so the artifact has real line breaks): ``Follows [id], [id].``
    with ids from the admitted ones only, then one fenced block in a requested language. Free prose
    first came back as the ask repeated, or a source header copied, instead of what it follows."""
    languages = " | ".join(json.dumps(lang) for lang in work_languages(query))
    block = f"lang: {languages}\nbody: /[^`]+/\n"
    if not source_ids:  # the no-memory control: no sources to follow, the block alone
        return "%llguidance {}\nstart: \"```\" lang \"\\n\" body \"```\"\n" + block
    ids = " | ".join(json.dumps(f"[{sid}]") for sid in source_ids)
    return ("%llguidance {}\n"
            "start: \"Follows \" cite (\", \" cite)* \".\\n\\n```\" lang \"\\n\" body \"```\"\n"
            f"cite: {ids}\n" + block)


def reply_grammar(schema: dict[str, Any], query: str) -> str:
    """The llguidance grammar of a reply: compact JSON, then for a work request a fenced block.

    The runtime's own ``json_schema`` path lets the model indent, which costs a small
    model a third of its tokens; llguidance's ``x-guidance`` option forbids it. An
    artifact written as a JSON string made the 1.5B model loop on escaped newlines,
    so a work request's artifact follows the JSON as an ordinary fenced block in one
    of the languages the request names.
    """
    head = "%json " + json.dumps({"x-guidance": {"whitespace_flexible": False}, **_closed(schema)})
    if not is_work_request(query) or "claims" in schema["properties"]:
        return "%llguidance {}\nstart: " + head
    languages = " | ".join(json.dumps(lang) for lang in requested_languages(query))
    return ("%llguidance {}\nstart: head \"\\n```\" lang \"\\n\" body \"```\"\n"
            f"head: {head}\nlang: {languages}\nbody: /[^`]+/\n")


def split_reply(text: str) -> tuple[str, str | None, str | None]:
    """(JSON head, artifact language, artifact) of a reply made under `reply_grammar`."""
    head, fence, rest = text.partition("\n```")
    if not fence:
        return text, None, None
    language, _, body = rest.partition("\n")
    return head, language.strip() or None, body.removesuffix("```").strip("\n")


def _closed(schema: Any) -> Any:
    """Every object of `schema` with ``additionalProperties: false``: llguidance follows JSON
    Schema's default (extra keys allowed), and a small model then invents keys until it runs out."""
    if isinstance(schema, dict):
        closed = {key: _closed(value) for key, value in schema.items()}
        if schema.get("type") == "object":
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


def claims_schema(source_ids: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"claims": {
            "type": "array", "minItems": 1, "maxItems": MAX_CLAIMS,
            "items": {"type": "object",
                      "properties": {"source": {"enum": list(source_ids)},
                                     "quote": {"type": "string", "maxLength": MAX_QUOTE_CHARS},
                                     "claim": {"type": "string", "maxLength": MAX_QUOTE_CHARS}},
                      "required": ["source", "quote", "claim"]},
        }},
        "required": ["claims"],
    }


# -- running a style -----------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    """One constrained or free model call, as a style sees it."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    prompt_seconds: float
    generation_seconds: float
    finish_reason: str
    cached_prompt_tokens: int = 0  # prompt tokens whose state the runtime reused (prefix cache)


# complete(messages, constraint) -> Completion; the reader supplies settings. The constraint is
# a JSON schema (made into `reply_grammar`), a ready llguidance grammar (a str), or None (free).
Complete = Callable[[list[dict], dict[str, Any] | str | None], Completion]


@dataclass(frozen=True)
class StyleRun:
    """What a style produced: the raw replies and their summed cost; the answer cache stores it."""

    raw_text: str  # the reply; for two-step a JSON object {"claims": ..., "answer": ...}
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    prompt_seconds: float
    generation_seconds: float
    finish_reason: str
    calls: int = 1  # records cached before two-step existed have no count: they made one call
    cached_prompt_tokens: int = 0  # of prompt_tokens, reused from the prefix cache (none before it)


def _claims_messages(query: str, claims: list[dict], passages: Sequence[Passage], as_of: str | None,
                     ) -> list[dict]:
    dates = {p.source_id: p.artifact_date for p in passages}
    ordered = sorted(claims, key=lambda c: (dates.get(c["source"]) is None, dates.get(c["source"]) or ""))
    lines = [f"- ({dates.get(c['source']) or 'undated'}) [{c['source']}] {c['claim'].strip()} "
             f"(quote: \"{c['quote'].strip()}\")" for c in ordered]
    parts = []
    if as_of:
        parts.append(f"Today is {as_of}. Answer as of {as_of}.")
    parts.append("Claims extracted from the project's sources (oldest first):\n" + "\n".join(lines))
    if is_work_request(query):
        parts.append("Sources:\n\n" + "\n\n".join(render_dated_passage(p)
                                                 for p in ordered_for_reading(passages, as_of)))
    parts.append(f"Question{f' (as of {as_of})' if as_of else ''}: {query.strip()}")
    parts.append(answer_ask(query))
    return [{"role": "system", "content": SYSTEM_DATED}, {"role": "user", "content": "\n\n".join(parts)}]


def run_style(style: str, complete: Complete, messages: list[dict], query: str,
              passages: Sequence[Passage], as_of: str | None) -> StyleRun:
    """Ask the model in `style`, starting from `messages` (the reader's first prompt, which it has
    already built and counted); the caller renders `raw_text` with `render`."""
    style = routed_style(style, query)
    if style in ("plain", "dated"):
        return single(complete(messages, None))
    ids = list(dict.fromkeys(p.source_id for p in passages))
    # No passages reach here only without history (readers abstain otherwise); two-step then
    # asks its answer step alone (see messages_for).
    if style == "structured" or (style == "two-step" and not passages):
        return single(complete(messages, answer_schema(ids, query)))
    if style == "focused":
        return single(complete(messages, answer_schema(ids, query, focused=True)))
    if style == "itemised":
        if itemised_kind(query) == "work":
            return single(complete(messages, work_grammar(query, ids)))
        return single(complete(messages, items_schema(ids, query)))
    first = complete(messages, claims_schema(ids))
    claims = _parse_json(first.text).get("claims") or []
    claims = [c for c in claims if isinstance(c, dict) and c.get("source") in ids]
    if not claims:  # a cut-off or empty extraction: no second call
        return StyleRun(json.dumps({"claims": first.text, "answer": None}), first.prompt_tokens,
                        first.completion_tokens, first.seconds, first.prompt_seconds,
                        first.generation_seconds, first.finish_reason, calls=1,
                        cached_prompt_tokens=first.cached_prompt_tokens)
    claimed = list(dict.fromkeys(c["source"] for c in claims))
    second = complete(_claims_messages(query, claims, passages, as_of), answer_schema(claimed, query))
    return StyleRun(
        json.dumps({"claims": first.text, "answer": second.text}),
        first.prompt_tokens + second.prompt_tokens, first.completion_tokens + second.completion_tokens,
        first.seconds + second.seconds, first.prompt_seconds + second.prompt_seconds,
        first.generation_seconds + second.generation_seconds, second.finish_reason, calls=2,
        cached_prompt_tokens=first.cached_prompt_tokens + second.cached_prompt_tokens,
    )


def single(completion: Completion) -> StyleRun:
    return StyleRun(completion.text, completion.prompt_tokens, completion.completion_tokens,
                    completion.seconds, completion.prompt_seconds, completion.generation_seconds,
                    completion.finish_reason, calls=1,
                    cached_prompt_tokens=completion.cached_prompt_tokens)


def _parse_json(text: str | None) -> dict[str, Any]:
    """A constrained reply is JSON unless generation hit the token limit; then it is not."""
    try:
        value = json.loads(text or "")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# -- rendering -----------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def quote_verified(quote: str, source_id: str, passages: Sequence[Passage]) -> bool:
    wanted = _normal(quote)
    return bool(wanted) and any(wanted in _normal(p.text) for p in passages if p.source_id == source_id)


@dataclass(frozen=True)
class Rendered:
    text: str
    extra: dict[str, Any]


def render(style: str, raw_text: str, passages: Sequence[Passage]) -> Rendered:
    """The answer text of a reply: free text as is; structured fields as prose plus a code block."""
    if style in ("plain", "dated"):
        return Rendered(raw_text, {})
    if style == "itemised" and not raw_text.lstrip().startswith("{"):
        return Rendered(raw_text, {"kind": "work"})  # a work request's free text and its block
    extra: dict[str, Any] = {}
    if style == "two-step":
        both = _parse_json(raw_text)
        claims = _parse_json(both.get("claims")).get("claims") or []
        extra["claims"] = [{**c, "verified": quote_verified(str(c.get("quote", "")), c.get("source", ""),
                                                           passages)}
                           for c in claims if isinstance(c, dict)]
        if both.get("answer") is None:
            return Rendered(f"{INSUFFICIENT}.", extra | {"no_claims": True})
        raw_text = both["answer"]
    head, language, artifact = split_reply(raw_text)
    reply = _parse_json(head)
    if not reply:
        extra["unparsed_reply"] = True  # cut off by the token limit: keep nothing unchecked
        return Rendered(f"{INSUFFICIENT}.", extra)
    evidence = [e for e in reply.get("evidence") or [] if isinstance(e, dict)]
    extra["evidence"] = [{"source": e.get("source"), "quote": e.get("quote"),
                          "verified": quote_verified(str(e.get("quote", "")), e.get("source", ""), passages)}
                         for e in evidence]
    status = reply.get("status")
    extra["status"] = status
    # Code belongs in the artifact; a fence opened inside the answer (and cut by its length
    # limit) would swallow the artifact's own fence.
    answer = str(reply.get("answer") or "").split("```", 1)[0].strip()
    if artifact is not None:  # a work request: its prose is the first line only
        answer = answer.splitlines()[0] if answer else answer
    answer = answer.rstrip(":").strip()
    if not answer or INSUFFICIENT in answer.lower():
        return Rendered(f"{INSUFFICIENT}.", extra)
    cited = list(dict.fromkeys(str(e.get("source")) for e in evidence if e.get("source")))
    missing = [c for c in cited if f"[{c}]" not in answer]
    text = answer + (f" [{', '.join(missing)}]" if missing else "")
    if status and status != "not-applicable":
        text = f"Status: {status}. {text}"
    if artifact and artifact.strip():
        text += f"\n\n```{language or ''}\n{artifact.rstrip()}\n```"
    return Rendered(text, extra)
