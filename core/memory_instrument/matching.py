"""Read what an answer asserts: phrases as whole words and with their polarity, typed values.

Why a module of its own: a substring check is fooled by the commonest things a
reader writes. "no" is found in "now", "delivered" in "never delivered", "open"
in a list that says an item is closed. The rules here, used by `scoring`:

* Whole words. A phrase matches only where it is not glued to letters or digits
  on either side (``session-036`` matches inside ``sessions/session-036.md``;
  ``no`` does not match ``now``; ``0.10.1`` does not match ``0.10.10``).
* Polarity. An occurrence is negated when a negator (not, no, never, none,
  nothing, neither, nor, without, cannot, any "n't", "no longer", "rather
  than", "instead of") stands before it in the same clause, at most
  NEGATION_WINDOW words back. A negated occurrence asserts nothing, unless the
  phrase itself is the negative: "not yet" is matched as written, and a phrase
  that starts with a negator ("no lock errors") also matches its remainder
  under negation ("did not hit a single lock error").
* Clauses end at sentence punctuation, ``;``, ``:``, commas, dashes,
  parentheses, line breaks and contrastive conjunctions (but, however, while,
  whereas, although). A dot or colon inside a token (``4.1%``, ``06:14``,
  ``adr-007.md``) is no boundary.
* A structured status line (``Status: rejected.`` leading the answer) is a
  field, split off before any phrase is matched.
* Obligation states. Sentences (split at ``.``, ``;``, line breaks and
  "but") carry state words: done words (done, merged, delivered, closed, ...)
  and open words (open, pending, still, remains, not yet, ...); a negated done
  word means open and a negated open word means done. When a sentence has state
  words of one kind, every item it names takes that state; when it has both,
  each state word goes to the nearest item named before it (else after it). An
  item's state is that of its last mention that has one.

This is a lexical reader of answers, measured on `fixtures/grader/probes.json`;
what it still misreads is listed in `benchmarks/results/grader-validation.json`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

NEGATION_WINDOW = 8

NEGATORS = frozenset({
    "not", "no", "never", "none", "nothing", "neither", "nor", "without", "cannot", "nobody",
})
NEGATOR_PAIRS = frozenset({("no", "longer"), ("rather", "than"), ("instead", "of")})
DONE_WORDS = frozenset({
    "done", "closed", "closes", "closing", "completed", "complete", "finished", "delivered",
    "merged", "shipped", "released", "resolved", "fixed", "implemented", "added", "destroyed",
    "decommissioned", "removed", "deleted", "kept", "landed",
})
OPEN_WORDS = frozenset({
    "open", "outstanding", "pending", "unfinished", "remain", "remains", "remaining", "still",
    "unresolved", "undone", "todo",
})

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CLAUSE_BOUNDARY = re.compile(
    r"[;!?()\[\]\n—–]|[.,:](?=\s|$)|\s-\s|\s(?:but|however|although|though|whereas|while)\s"
)
_SENTENCE_BOUNDARY = re.compile(r"[;!?\n]|\.(?=\s|$)|\sbut\s")
_STATUS_LINE = re.compile(r"^\s*status\s*:\s*([a-z][a-z-]*)\s*\.?\s*", re.IGNORECASE)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})

ABSTENTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"\binsufficient evidence\b",
    r"\b(?:cannot|can't|can not|unable to|could not|couldn't)\s+(?:tell|answer|determine|find|say)\b",
    r"\b(?:does|do|did)(?: not|n't)\s+(?:say|mention|cover|record|state|contain|include|specify)\b",
    r"\bno (?:record|mention|information|evidence)\b",
    r"\b(?:records|mentions|says|contains) (?:no|nothing)\b",
    r"\bnot (?:mentioned|recorded|covered|documented|stated)\b",
    r"\bno\b[^.;]{0,60}\b(?:mentions|records|covers|discusses)\b",
))


def normalise(text: str) -> str:
    """Lowercase, straight quotes, single spaces (line breaks kept: they end clauses)."""
    text = text.translate(_APOSTROPHES).lower()
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


def split_status(answer: str) -> tuple[str | None, str]:
    """(status field or None, the rest of the answer): a leading ``Status: <value>.``."""
    match = _STATUS_LINE.match(answer)
    if not match:
        return None, answer
    return match.group(1).lower(), answer[match.end():]


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def _is_negator(word: str, following: str | None) -> bool:
    return word in NEGATORS or word.endswith("n't") or (word, following or "") in NEGATOR_PAIRS


def _has_negator(tokens: Sequence[str]) -> bool:
    return any(
        _is_negator(tok, tokens[i + 1] if i + 1 < len(tokens) else None)
        for i, tok in enumerate(tokens)
    )


def _clause_start(text: str, position: int) -> int:
    start = 0
    for boundary in _CLAUSE_BOUNDARY.finditer(text, 0, position):
        start = boundary.end()
    return start


def is_negated(text: str, start: int) -> bool:
    """Whether the words before `start` in its clause negate what stands at `start`."""
    before = words(text[_clause_start(text, start):start])[-NEGATION_WINDOW:]
    return _has_negator(before) or bool(before and before[-1] == "no")


@dataclass(frozen=True)
class Occurrence:
    start: int
    end: int
    negated: bool


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    body = re.escape(normalise(phrase)).replace(r"\ ", r"\s+")
    return re.compile(rf"(?<![a-z0-9]){body}(?![a-z0-9])")


def occurrences(text: str, phrase: str) -> list[Occurrence]:
    """Whole-word occurrences of `phrase` in normalised `text`, each with its polarity."""
    return [
        Occurrence(m.start(), m.end(), is_negated(text, m.start()))
        for m in _phrase_pattern(phrase).finditer(text)
    ]


def phrase_is_negative(phrase: str) -> bool:
    return _has_negator(words(normalise(phrase)))


def asserted_occurrences(text: str, phrase: str) -> list[Occurrence]:
    """Occurrences of `phrase` that the text asserts (see the module docstring)."""
    if phrase_is_negative(phrase):
        found = occurrences(text, phrase)
        tokens = words(normalise(phrase))
        if tokens and _is_negator(tokens[0], tokens[1] if len(tokens) > 1 else None):
            skip = 2 if (tokens[0], tokens[1] if len(tokens) > 1 else "") in NEGATOR_PAIRS else 1
            core = " ".join(tokens[skip:])
            if core:
                found += [o for o in occurrences(text, core) if o.negated]
        return found
    return [o for o in occurrences(text, phrase) if not o.negated]


def asserts(text: str, phrase: str) -> bool:
    return bool(asserted_occurrences(text, phrase))


def abstention_in_text(text: str) -> str | None:
    """The abstention wording found in `text` (normalised), or None."""
    for pattern in ABSTENTION_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


# --- typed values ------------------------------------------------------------------------

_MONTHS = {name: index for index, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), start=1)}
_MONTH = "(" + "|".join(_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_DAY_MONTH = re.compile(rf"(?<![\d])(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}}))?")
_MONTH_DAY = re.compile(rf"{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?(?!\d)(?:,?\s+(\d{{4}}))?")
_NUMBER = re.compile(r"(?<![\w.\-/])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w\-/]|[.,]\d)")


def _month(name: str) -> int:
    name = name.rstrip(".")
    for full, index in _MONTHS.items():
        if full.startswith(name):
            return index
    raise ValueError(name)


def stated_dates(text: str) -> list[tuple[int | None, int, int]]:
    """(year or None, month, day) of every date written in `text` (normalised)."""
    found: list[tuple[int | None, int, int]] = []
    for m in _ISO_DATE.finditer(text):
        found.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for m in _DAY_MONTH.finditer(text):
        found.append((int(m.group(3)) if m.group(3) else None, _month(m.group(2)), int(m.group(1))))
    for m in _MONTH_DAY.finditer(text):
        found.append((int(m.group(3)) if m.group(3) else None, _month(m.group(1)), int(m.group(2))))
    return found


def states_date(text: str, wanted: Iterable[str]) -> bool:
    """True when `text` states one of the `wanted` ISO dates (a date without a year matches
    on month and day)."""
    targets = [date.fromisoformat(w) for w in wanted]
    for year, month, day in stated_dates(text):
        for target in targets:
            if (month, day) == (target.month, target.day) and year in (None, target.year):
                return True
    return False


def stated_numbers(text: str) -> list[float]:
    """Numbers written in `text`, outside ids and dates (``adr-007``, ``0.10.1`` are none)."""
    without_dates = _ISO_DATE.sub(" ", text)
    return [float(m.group(1).replace(",", "")) for m in _NUMBER.finditer(without_dates)]


def states_number(text: str, wanted: Iterable[float]) -> bool:
    values = stated_numbers(text)
    return any(abs(v - w) < 1e-9 for v in values for w in wanted)


def first_choice(text: str, options: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    """The option the text asserts first, by position, or None when it asserts none."""
    best: tuple[int, str] | None = None
    for name, phrasings in options:
        for phrase in phrasings:
            for occurrence in asserted_occurrences(text, phrase):
                if best is None or occurrence.start < best[0]:
                    best = (occurrence.start, name)
    return best[1] if best else None


# --- obligation states -------------------------------------------------------------------


def _state_words(sentence: str, offset: int) -> list[tuple[int, str]]:
    """(position, "open"|"done") of the state words in one sentence."""
    found: list[tuple[int, str]] = []
    for m in re.finditer(r"[a-z0-9]+(?:'[a-z]+)?", sentence):
        word = m.group(0)
        if word == "yet" and is_negated(sentence, m.start()):
            found.append((offset + m.start(), "open"))  # "not yet"
            continue
        if word in DONE_WORDS or word in OPEN_WORDS:
            state = "done" if word in DONE_WORDS else "open"
            if is_negated(sentence, m.start()):
                state = "open" if state == "done" else "done"
            found.append((offset + m.start(), state))
    return found


def obligation_states(
    text: str, items: Sequence[Sequence[str]]
) -> list[tuple[bool, str | None]]:
    """For each item (a group of phrasings): (mentioned, stated state or None)."""
    mentions: list[list[tuple[int, int]]] = [[] for _ in items]
    for index, phrasings in enumerate(items):
        for phrase in phrasings:
            for o in occurrences(text, phrase):
                mentions[index].append((o.start, o.end))
    states: list[list[tuple[int, str]]] = [[] for _ in items]  # (position, state) per item
    position = 0
    bounds = [m.end() for m in _SENTENCE_BOUNDARY.finditer(text)] + [len(text)]
    for end in bounds:
        sentence = text[position:end]
        named = [(start, stop, i) for i, ms in enumerate(mentions) for start, stop in ms
                 if position <= start < end]
        markers = _state_words(sentence, position)
        kinds = {state for _, state in markers}
        if named and len(kinds) == 1:
            only = kinds.pop()
            for start, _, i in named:
                states[i].append((start, only))
        elif named and kinds:
            for at, state in markers:
                before = [(at - stop, i, start) for start, stop, i in named if stop <= at]
                after = [(start - at, i, start) for start, _, i in named if start > at]
                chosen = min(before) if before else min(after)
                states[chosen[1]].append((chosen[2], state))
        position = end
    out: list[tuple[bool, str | None]] = []
    for index in range(len(items)):
        last = max(states[index])[1] if states[index] else None
        out.append((bool(mentions[index]), last))
    return out
