"""Read what an answer commits to: phrases as words, with their polarity, under hedges, typed values.

Why a module of its own: a substring check is fooled by the commonest things a
reader writes. "no" is found in "now", "delivered" in "never delivered", "open"
in a list that says an item is closed, "PostgreSQL" in "maybe PostgreSQL, maybe
SQLite". The rules here, used by `scoring`:

* Words. A phrase matches only where it is not glued to letters or digits on
  either side (``session-036`` matches inside ``sessions/session-036.md``;
  ``no`` does not match ``now``; ``0.10.1`` does not match ``0.10.10``). Its
  words of five letters or more also match their inflections ("withdrawn" meets
  "withdrew", "provisional" meets "provisionally", "added" meets "adds"), so a
  reader need not echo the task's tense. The bare phrases "yes" and "no" match
  only as a reply ("No.", "No, ...", "no [source]"), never the determiner of
  "no longer MySQL" or "no migration".
* Polarity. An occurrence is negated when a negator stands before it in its
  clause, at most NEGATION_WINDOW words back: not, no, never, none, nothing,
  neither, nor, without, cannot, any "n't", "no longer", "rather than",
  "instead of", "decided against"; or a change of state that leaves it behind:
  "moved off / switched from X (to Y)", "replaced X (with Y)", "ADR-007
  superseded X" (the scope ends at "to", "with", "by", "for"). It is also
  negated when it is the subject of a negated state ("Kafka isn't live yet",
  "SQLite is no longer the store", "Redis never made it in", "X was replaced
  by Y"), unless the phrase is what the question itself is about ("Have the
  idempotency keys been added?" -> "the keys had not been added" still names
  them). A negated occurrence asserts nothing, unless the phrase itself is the
  negative: "not yet" is matched as written, and a phrase that starts with a
  negator ("no lock errors") also matches its remainder under negation ("did
  not hit a single lock error"). Words in code (```None```) negate nothing.
* Clauses end at sentence punctuation, ``;``, ``:``, commas, dashes,
  parentheses, line breaks, "because" (not "not because") and contrastive conjunctions (but,
  however, while, whereas, although); a dot or colon inside a token (``4.1%``,
  ``06:14``, ``adr-007.md``) is no boundary, and neither is the comma of a list
  ("not the replay procedure, the lag alert or the volume" negates all three).
* Hedges. An embedded question asserts nothing: "the notes don't say whether
  the cache shipped" says neither that it shipped nor that it did not. An
  answer that offers alternatives without choosing between them asserts none of
  them: a sentence with "either ... or", "maybe X, maybe Y",
  "possibly ..., possibly", "probably X, or perhaps Y", or "X, unless ... could
  have been Y" is hedged, and an answer that says "it could be either", "hard
  to say" or "the notes don't settle it" is hedged throughout. A softener around
  one answer ("fairly sure it's PostgreSQL", "most likely PostgreSQL") is a
  commitment, not a hedge.
* A structured status line (``Status: rejected.`` leading the answer) is a
  field, split off before any phrase is matched.
* Abstentions are recognised in several wordings (`ABSTENTION_PATTERNS`); a
  guess ("probably", "maybe", "I think") outside them is a substantive claim.
* Obligation states. Sentences (split at ``.``, ``;``, line breaks and "but")
  carry state words: done words (done, merged, delivered, closed, ...) and open
  words (open, pending, still, remains, not yet, ...); a negated done word means
  open and a negated open word means done. When a sentence has state words of
  one kind, every item it names takes that state; when it has both, each state
  word goes to the nearest item named before it (else after it). An item's
  state is that of its last mention that has one. A state word in a clause dated
  after the question's as-of date ("destroyed only on 14 October") says what
  happened later, not the state then, and a hedged sentence states nothing. An
  item written as a long promise is also named by a run of its distinctive
  words ("the alert on search engine errors").

This is a lexical reader of answers, measured on the labelled answers of
`fixtures/grader/` (`memory_instrument.validation`); what it still misreads is
listed in `benchmarks/results/grader-tuning.json`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from itertools import combinations

NEGATION_WINDOW = 8

NEGATORS = frozenset({
    "not", "no", "never", "none", "nothing", "neither", "nor", "without", "cannot", "nobody",
})
NEGATOR_PAIRS = frozenset({
    ("no", "longer"), ("rather", "than"), ("instead", "of"), ("decided", "against"),
    ("voted", "against"), ("chose", "against"),
})
# "moved off X to Y": the verb and particle that leave X behind; the scope ends at CHANGE_TARGET.
CHANGE_VERBS = frozenset({
    "move", "moved", "moves", "moving", "switch", "switched", "switches", "switching",
    "migrate", "migrated", "migrates", "migrating", "went", "changed", "transitioned", "cut",
    "ported",
})
CHANGE_PARTICLES = frozenset({"off", "from", "away"})
# "replaced X with Y", "ADR-007 superseded X": the object is left behind (not "replaced by").
REPLACING_VERBS = frozenset({
    "replaced", "replaces", "replacing", "replace", "superseded", "supersedes", "superseding",
    "supersede",
})
CHANGE_TARGET = frozenset({"to", "onto", "into", "with", "by", "for", "in"})
CHANGE_SCOPE = 4
CHOICE_AGAINST = frozenset({("decided", "against"), ("voted", "against"), ("chose", "against")})
_SCOPE_ENDS = frozenset({"and", "but", "so", "then", "while"})
# "X was replaced by Y", "X got retired": the subject is left behind.
LEFT_BEHIND = frozenset({
    "replaced", "superseded", "succeeded", "retired", "dropped", "abandoned", "phased",
})
# What a negated predicate must say for its subject to be negated: a state, not a judgement
# ("Kafka isn't live" negates Kafka; "retrying is not safe" does not negate the retry).
STATE_PREDICATES = frozenset({
    "live", "in", "on", "used", "using", "use", "adopted", "chosen", "selected", "deployed",
    "running", "run", "current", "active", "accepted", "final", "decided", "approved",
    "implemented", "made", "went", "got", "there", "around", "kept", "available", "enabled",
    "shipped", "released", "merged", "added", "done", "landed", "delivered", "installed",
    "introduced", "part", "what", "anymore", "production", "considered", "picked", "taken",
    "built", "created", "set", "wired", "supported", "the", "a", "an", "our", "its",
    "their",
})
# Auxiliaries, and the adverbs that sit among them ("was still not", "had not yet been").
AUXILIARIES = frozenset({
    "is", "was", "were", "are", "be", "been", "being", "has", "have", "had", "did", "does",
    "do", "will", "would", "should", "could", "can", "may", "might", "'s", "got", "get",
    "ever", "still", "yet", "really", "actually", "also", "even", "then", "already",
    "formally", "officially", "quite", "any", "more", "longer", "truly",
})
DONE_WORDS = frozenset({
    "done", "closed", "closes", "closing", "completed", "complete", "finished", "delivered",
    "merged", "shipped", "released", "resolved", "fixed", "implemented", "added", "destroyed",
    "decommissioned", "removed", "deleted", "kept", "landed",
})
OPEN_WORDS = frozenset({
    "open", "outstanding", "pending", "unfinished", "remain", "remains", "remaining", "still",
    "unresolved", "undone", "todo",
})
# Words that open a new clause after a comma (so the comma is no list comma).
_CLAUSE_OPENERS = frozenset({
    "not", "but", "so", "which", "while", "although", "though", "since", "because", "as",
    "then", "and", "or", "nor", "who", "where", "when", "unless", "until", "with", "after",
    "before", "per", "it", "its", "i", "we", "they", "he", "she", "this", "that", "there",
})
LIST_ITEM_MAX_WORDS = 6
_VERBAL = frozenset({"is", "was", "were", "are", "has", "had", "have", "did", "does", "do",
                     "will", "would", "could", "can", "should", "been", "be"})
# Inflections a phrase word of at least INFLECT_MIN_LETTERS letters also matches.
INFLECT_MIN_LETTERS = 5
_IRREGULAR = (
    ("withdraw", "withdraws", "withdrew", "withdrawn", "withdrawing"),
    ("choose", "chooses", "chose", "chosen", "choosing"),
    ("write", "writes", "wrote", "written", "writing"),
    ("take", "takes", "took", "taken", "taking"),
    ("give", "gives", "gave", "given", "giving"),
    ("make", "makes", "made", "making"),
    ("keep", "keeps", "kept", "keeping"),
    ("build", "builds", "built", "building"),
    ("begin", "begins", "began", "begun", "beginning"),
    ("break", "breaks", "broke", "broken", "breaking"),
)

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CLAUSE_BOUNDARY = re.compile(
    r"[;!?()\[\]\n—–]|[.,:](?=\s|$)|\s-\s|"
    r"\s(?:but|however|although|though|whereas|while)\s|(?<!not)\sbecause\s"
)
_SENTENCE_BOUNDARY = re.compile(r"[;!?\n]|\.(?=\s|$)|\sbut\s")
# A sentence ends at . ! ? before a space, at a line break, or after a citation it ends.
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n|\](?=\s)")
_STATUS_LINE = re.compile(r"^\s*status\s*:\s*([a-z][a-z-]*)\s*\.?\s*", re.IGNORECASE)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
_CODE = re.compile(r"```.*?```|``[^`\n]*``|`[^`\n]*`", re.DOTALL)

ABSTENTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"\binsufficient evidence\b",
    r"\b(?:cannot|can't|can not|unable to|could not|couldn't)\s+(?:tell|answer|determine|find|say)\b",
    r"\b(?:does|do|did)(?: not|n't)(?: really| actually)?\s+(?:say|mention|cover|record|state"
    r"|contain|include|specify|come up|appear|show)\b",
    r"\bno (?:record|mention|information|evidence|idea)\b",
    r"\b(?:records|mentions|says|contains|covers|gives) (?:no|nothing)\b",
    r"\bnot (?:mentioned|recorded|covered|documented|stated|written down)\b",
    r"\bno\b[^.;]{0,60}\b(?:mentions|records|covers|discusses)\b",
    r"\bnothing (?:in|about|on)\b[^.;]{0,60}\b(?:gives|says|mentions|records|covers|shows"
    r"|states|tells)\b",
    r"\bnothing in the (?:project )?(?:history|records|notes|sources|documents)\b",
    r"\b(?:history|records|notes|sources|documents|logs) (?:never|don't|do not|doesn't|does not)"
    r" (?:mention|say|cover|record|include|contain|show|discuss)(?:s|ed)?\b",
    r"\bi (?:don't|do not) know\b",
    r"\bthere(?:'s| is) nothing (?:about|on|in)\b",
    r"\b(?:don't|do not|can't|cannot) see (?:any|anything)\b",
    r"\bno sign of\b",
    r"\b(?:history|records|notes|sources|documents|logs) (?:is|are) silent\b",
    r"\bnever (?:comes|came) up\b",
    r"\bnot (?:in|anywhere in) the (?:project )?(?:history|records|notes|sources)\b",
))
# An answer that declares it cannot choose between alternatives: hedged throughout.
_DECLARED_HEDGE = re.compile(
    r"\bcould (?:be|go) either\b|\beither (?:is|one is|could be) possible\b|\bboth are possible\b"
    r"|\bhard to say\b|\bcan(?:not|'t| not) tell which\b"
    r"|\b(?:don't|do not|doesn't|does not|didn't|did not) settle (?:it|which|this)\b"
    r"|\bnot sure which\b|\bunclear which\b"
)
# "whether ..." (and "if ..." after a verb of saying or knowing) asks; it asserts nothing.
_EMBEDDED_QUESTION = re.compile(
    r"\bwhether\b|\b(?:say|says|said|tell|tells|know|knows|sure|clear|settle|settles|show"
    r"|shows|mention|mentions|record|records|state|states) if\b"
)
_UNCERTAIN = frozenset({"maybe", "perhaps", "possibly", "probably", "likely", "might", "may",
                        "could", "unclear", "unsure", "ambiguous", "uncertain"})
_REPEATABLE = frozenset({"maybe", "perhaps", "possibly"})
# A guess: a claim offered without commitment (on an unanswerable question, an invention).
_GUESS = re.compile(
    r"\b(?:probably|presumably|likely|maybe|perhaps|possibly|i think|i guess|i believe"
    r"|my guess|i'd guess|i would guess|might have|may have|must have)\b"
)


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


# --- clauses ------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _masked(text: str) -> str:
    """`text` with code spans blanked out (same length), for reading negators."""
    return _CODE.sub(lambda m: " " * len(m.group(0)), text)


@lru_cache(maxsize=256)
def _boundaries(text: str) -> tuple[tuple[int, int], ...]:
    """Clause boundaries of `text` as (start, end) spans, without the commas of lists."""
    found = [(m.start(), m.end()) for m in _CLAUSE_BOUNDARY.finditer(text)]
    commas = [i for i, (s, e) in enumerate(found) if text[s] == ","]
    keep = set(range(len(found))) - {i for i in commas if _is_list_comma(text, found, i)}
    return tuple(found[i] for i in sorted(keep))


def _is_list_comma(text: str, found: list[tuple[int, int]], index: int) -> bool:
    """A comma inside an enumeration ("A, B and C"), which does not end a clause.

    The items after it are short and none opens a clause of its own, and the run ends
    with a coordinated item ("... and C", "... or C", "... nor C").
    """
    position = index
    while True:
        start = found[position][1]
        end = found[position + 1][0] if position + 1 < len(found) else len(text)
        item = words(text[start:end])
        coordinated = [i for i, w in enumerate(item) if w in ("and", "or", "nor")]
        limit = LIST_ITEM_MAX_WORDS * (2 if coordinated else 1) + 1
        if not item or len(item) > limit or any(w in _VERBAL for w in item):
            return False  # a list item is a short noun phrase, not a clause
        if coordinated and coordinated[0] == 0:
            return True  # "..., and C"
        if item[0] in _CLAUSE_OPENERS:
            return False
        if coordinated:
            return True
        if position + 1 >= len(found) or text[found[position + 1][0]] != ",":
            return False
        position += 1


def _clause_start(text: str, position: int) -> int:
    start = 0
    for _, b_end in _boundaries(text):
        if b_end > position:
            break
        start = b_end
    return start


def _clause_end(text: str, position: int) -> int:
    for b_start, _ in _boundaries(text):
        if b_start >= position:
            return b_start
    return len(text)


def _forward_negated(tokens: Sequence[str]) -> bool:
    """Whether a negator among `tokens` (the clause before an occurrence) still has scope.

    A plain negator reaches NEGATION_WINDOW words; a change of state ("moved off",
    "replaced") only its object, CHANGE_SCOPE words up to "to"/"with"/"by" or a verb.
    """
    since: int | None = None
    reach = NEGATION_WINDOW
    i = 0
    while i < len(tokens):
        tok, nxt = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else ""
        if since is not None and reach == CHANGE_SCOPE and (
            tok in CHANGE_TARGET or tok in _VERBAL or tok in _SCOPE_ENDS
        ):
            since = None
        if tok in CHANGE_VERBS and nxt in CHANGE_PARTICLES:
            since, reach = i + 1, CHANGE_SCOPE
            i += 2
            continue
        if tok in REPLACING_VERBS and nxt != "by":
            since, reach = i, CHANGE_SCOPE
        elif (tok, nxt) in CHOICE_AGAINST:  # "decided against X and kept Y": X only
            since, reach = i + 1, CHANGE_SCOPE
            i += 1
        elif _is_negator(tok, nxt):
            since, reach = i, NEGATION_WINDOW
            if (tok, nxt) in NEGATOR_PAIRS:
                i += 1
        elif since is not None and reach == NEGATION_WINDOW and tok in ("or", "nor"):
            since = i  # "not A, B or C": the denial reaches each item of the list
        i += 1
    return since is not None and len(tokens) - since <= reach


def _subject_negated(after: Sequence[str]) -> bool:
    """Whether the words after an occurrence make it the subject of a negated state.

    "Kafka isn't live yet", "SQLite is no longer the store", "Redis never made it in",
    "the Redis proposal was not adopted", "ADR-003 was replaced by ADR-007".
    """
    i = 0
    while i < len(after) and i < 2 and after[i] not in AUXILIARIES and not _is_negator(
        after[i], after[i + 1] if i + 1 < len(after) else None
    ) and after[i] not in LEFT_BEHIND:
        i += 1  # a noun or two of the subject ("the Redis proposal was ...")
    auxiliary = i
    while i < len(after) and after[i] in AUXILIARIES:
        i += 1
    if i < len(after) and after[i] in LEFT_BEHIND:  # passive only: "X was replaced (by Y)"
        return i > auxiliary or (i + 1 < len(after) and after[i + 1] == "by")
    if i >= len(after) or not _is_negator(after[i], after[i + 1] if i + 1 < len(after) else None):
        return False
    i += 2 if (after[i], after[i + 1] if i + 1 < len(after) else "") in NEGATOR_PAIRS else 1
    while i < len(after) and after[i] in AUXILIARIES:
        i += 1
    return i >= len(after) or after[i] in STATE_PREDICATES


def is_negated(text: str, start: int, end: int | None = None, subject: bool = False) -> bool:
    """Whether what stands at text[start:end] is negated in its clause.

    Negators before it count in any case; a negated state after it (it is the subject)
    only when `end` is given and the occurrence is not the question's own subject.
    """
    view = _masked(text)
    clause_start = _clause_start(text, start)
    before = words(view[clause_start:start])[-(NEGATION_WINDOW + 2):]
    if _forward_negated(before):
        return True
    if end is None or subject:
        return False
    return _subject_negated(words(view[end:_clause_end(text, end)]))


# --- hedges -------------------------------------------------------------------------------


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` (split at . ! ? before a space, and line breaks)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if text[start:m.end()].strip():
            spans.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


@lru_cache(maxsize=256)
def hedged_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The spans of `text` that assert nothing: sentences offering alternatives without
    choosing, and embedded questions ("the notes don't say whether the cache shipped")."""
    view = _masked(text)
    if _DECLARED_HEDGE.search(view):
        return ((0, len(text)),)
    spans = [(s, e) for s, e in sentences(view) if _offers_alternatives(view[s:e])]
    spans += [(m.start(), _clause_end(text, m.end())) for m in _EMBEDDED_QUESTION.finditer(view)]
    return tuple(sorted(spans))


def _offers_alternatives(sentence: str) -> bool:
    tokens = words(sentence)
    uncertain = [t for t in tokens if t in _UNCERTAIN]
    if "either" in tokens and "or" in tokens[tokens.index("either") + 1:] and (
        tokens.index("either") < 4 or uncertain
    ):
        return True  # "Either X or Y", "it was either X or Y"; not "requires either X or Y"
    if sum(1 for t in tokens if t in _REPEATABLE) >= 2:
        return True
    if uncertain and ("unless" in tokens or re.search(r"\bor (?:maybe|perhaps|possibly)\b", sentence)):
        return True
    return bool(uncertain) and bool(re.search(r"\b(?:unclear|unsure|not sure|ambiguous)\b", sentence)
                                    and re.search(r"\bor\b", sentence))


def in_spans(position: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(s <= position < e for s, e in spans)


# --- phrases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Occurrence:
    start: int
    end: int
    negated: bool
    hedged: bool = False


def lemma(word: str) -> str:
    """The word without its inflection ("withdrew" and "withdrawn" give "withdraw")."""
    for forms in _IRREGULAR:
        if word in forms:
            return forms[0]
    for suffix in ("ing", "ed", "es", "s", "ly"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and not (suffix == "s" and word[-2] in "su"):
            if suffix == "ly" and len(stem) < 7:
                continue
            return stem
    return word


def _word_pattern(word: str) -> str:
    """A regex for `word` and its inflections (words of INFLECT_MIN_LETTERS letters or more)."""
    if len(word) < INFLECT_MIN_LETTERS or not word.isalpha():
        return re.escape(word)
    stem = lemma(word)
    for forms in _IRREGULAR:
        if stem == forms[0]:
            return "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + ")"
    adverb = "|ly|ally" if len(stem) >= 7 else ""
    if stem.endswith("ify"):  # the act and its noun: "notify", "a notification"
        return re.escape(stem[:-1]) + "(?:y|ies|ied|ying|ication|ications)"
    if stem.endswith("y"):
        return re.escape(stem[:-1]) + f"(?:y|ys|yed|ying|ies|ied{adverb})"
    if stem.endswith("e"):
        stem = stem[:-1]
    return re.escape(stem) + f"(?:e|es|s|ed|d|ing{adverb})?"


@lru_cache(maxsize=4096)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    norm = normalise(phrase).strip()
    if norm in ("yes", "no"):  # a reply, not the determiner of "no longer" or "no migration"
        return re.compile(rf"(?<![a-z0-9']){norm}(?=\s*(?:[,.;:!?\[(—–-]|$))")
    parts = re.split(r"([a-z]+)", norm)
    body = "".join(_word_pattern(p) if p.isalpha() else re.escape(p) for p in parts)
    body = body.replace(r"\ ", r"\s+")
    return re.compile(rf"(?<![a-z0-9]){body}(?![a-z0-9])")


def occurrences(text: str, phrase: str, subject: frozenset[str] = frozenset()) -> list[Occurrence]:
    """Occurrences of `phrase` in normalised `text`, each with its polarity and hedging.

    `subject` holds the words of the question; a phrase made of them is what the question
    is about, and is not negated by a negated state after it.
    """
    own = set(words(normalise(phrase))) <= subject if subject else False
    hedged = hedged_spans(text)
    return [
        Occurrence(m.start(), m.end(), is_negated(text, m.start(), m.end(), own),
                   in_spans(m.start(), hedged))
        for m in _phrase_pattern(phrase).finditer(text)
    ]


def phrase_is_negative(phrase: str) -> bool:
    return _has_negator(words(normalise(phrase)))


def asserted_occurrences(
    text: str, phrase: str, subject: frozenset[str] = frozenset()
) -> list[Occurrence]:
    """Occurrences of `phrase` that the text asserts (see the module docstring)."""
    if phrase_is_negative(phrase):
        found = [o for o in occurrences(text, phrase, subject) if not o.hedged]
        tokens = words(normalise(phrase))
        if tokens and _is_negator(tokens[0], tokens[1] if len(tokens) > 1 else None):
            skip = 2 if (tokens[0], tokens[1] if len(tokens) > 1 else "") in NEGATOR_PAIRS else 1
            core = " ".join(tokens[skip:])
            if core:
                found += [o for o in occurrences(text, core, subject)
                          if o.negated and not o.hedged]
        return found
    return [o for o in occurrences(text, phrase, subject) if not o.negated and not o.hedged]


def asserts(text: str, phrase: str, subject: frozenset[str] = frozenset()) -> bool:
    return bool(asserted_occurrences(text, phrase, subject))


def abstention_in_text(text: str) -> str | None:
    """The abstention wording found in `text` (normalised), or None."""
    for pattern in ABSTENTION_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def guesses(text: str) -> list[str]:
    """Clauses of `text` that offer a guess outside any abstention ("it was probably X")."""
    found: list[str] = []
    position = 0
    for b_start, b_end in [*_boundaries(text), (len(text), len(text))]:
        clause = text[position:b_start]
        position = b_end
        if _GUESS.search(clause) and not abstention_in_text(clause) and len(words(clause)) > 2:
            found.append(clause.strip())
    return found


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


def _dates_with_positions(text: str) -> list[tuple[int, tuple[int | None, int, int]]]:
    found: list[tuple[int, tuple[int | None, int, int]]] = []
    for m in _ISO_DATE.finditer(text):
        found.append((m.start(), (int(m.group(1)), int(m.group(2)), int(m.group(3)))))
    for m in _DAY_MONTH.finditer(text):
        found.append((m.start(), (int(m.group(3)) if m.group(3) else None, _month(m.group(2)),
                                  int(m.group(1)))))
    for m in _MONTH_DAY.finditer(text):
        found.append((m.start(), (int(m.group(3)) if m.group(3) else None, _month(m.group(1)),
                                  int(m.group(2)))))
    return found


def stated_dates(text: str) -> list[tuple[int | None, int, int]]:
    """(year or None, month, day) of every date written in `text` (normalised)."""
    return [value for _, value in _dates_with_positions(text)]


def states_date(text: str, wanted: Iterable[str]) -> bool:
    """True when `text` states one of the `wanted` ISO dates (a date without a year matches
    on month and day)."""
    targets = [date.fromisoformat(w) for w in wanted]
    for year, month, day in stated_dates(text):
        for target in targets:
            if (month, day) == (target.month, target.day) and year in (None, target.year):
                return True
    return False


def _after(value: tuple[int | None, int, int], as_of: date) -> bool:
    year, month, day = value
    try:
        return date(year if year is not None else as_of.year, month, day) > as_of
    except ValueError:
        return False


def stated_numbers(text: str) -> list[float]:
    """Numbers written in `text`, outside ids and dates (``adr-007``, ``0.10.1`` are none)."""
    without_dates = _ISO_DATE.sub(" ", text)
    return [float(m.group(1).replace(",", "")) for m in _NUMBER.finditer(without_dates)]


def states_number(text: str, wanted: Iterable[float]) -> bool:
    values = stated_numbers(text)
    return any(abs(v - w) < 1e-9 for v in values for w in wanted)


# An option the clause says was turned down, only proposed or planned, or came later, is not
# the state the answer asserts: "X was rejected", "Mei proposed X", "the switch to X came later".
_LEFT_AFTER = re.compile(
    r"^\W*(?:[a-z0-9'-]+\W+){0,3}?(?:rejected|withdrawn|abandoned|dropped|retired|proposed"
    r"|planned|scheduled|turned down|ruled out|came later|only later)\b"
)
_LEFT_BEFORE = re.compile(
    r"\b(?:rejected|rejecting|rejects|abandoned|dropped|proposed|proposing|proposes|planned"
    r"|planning|plans|scheduled|turned down|ruled out)\W+(?:[a-z0-9'-]+\W+){0,2}$"
)


def chosen_option(
    text: str, options: Sequence[tuple[str, Sequence[str]]],
    subject: frozenset[str] = frozenset(),
) -> str | None:
    """The option the text asserts as the state, or None when it asserts none.

    Of the options the text asserts (not negated, not hedged), the first one whose clause
    does not leave it behind (rejected, replaced, only planned); when every asserted one
    is left behind, the first asserted.
    """
    asserted: list[tuple[int, bool, int, str]] = []
    for name, phrasings in options:
        for phrase in phrasings:
            for occurrence in asserted_occurrences(text, phrase, subject):
                before = text[_clause_start(text, occurrence.start):occurrence.start]
                after = text[occurrence.end:_clause_end(text, occurrence.end)]
                left = bool(_LEFT_AFTER.search(after) or _LEFT_BEFORE.search(before))
                asserted.append((occurrence.start, left, occurrence.start - occurrence.end,
                                 name))
    if not asserted:
        return None
    # At one position the longer phrasing is the one meant ("postgres-compatible X", not
    # "postgres").
    current = sorted(a for a in asserted if not a[1])
    return (current or sorted(asserted))[0][3]


# --- obligation states -------------------------------------------------------------------


def _state_words(sentence: str, offset: int, as_of: date | None) -> list[tuple[int, str]]:
    """(position, "open"|"done") of the state words in one sentence."""
    found: list[tuple[int, str]] = []
    later = [(p, value) for p, value in _dates_with_positions(sentence)
             if as_of is not None and _after(value, as_of)]
    for m in re.finditer(r"[a-z0-9]+(?:'[a-z]+)?", sentence):
        word = m.group(0)
        if later and any(_clause_start(sentence, p) == _clause_start(sentence, m.start())
                         for p, _ in later):
            continue  # what happened after the as-of date is not the state then
        if word == "yet" and is_negated(sentence, m.start()):
            found.append((offset + m.start(), "open"))  # "not yet"
            continue
        if word in DONE_WORDS or word in OPEN_WORDS:
            state = "done" if word in DONE_WORDS else "open"
            if is_negated(sentence, m.start()):
                state = "open" if state == "done" else "done"
            found.append((offset + m.start(), state))
    return found


_ITEM_STOP = frozenset({
    "a", "an", "the", "of", "on", "in", "for", "to", "and", "or", "with", "by", "at", "from",
    "add", "write", "schedule", "make", "set", "up", "service",
})


def _item_mentions(text: str, phrase: str, shared: frozenset[str] = frozenset()
                   ) -> list[tuple[int, int]]:
    """Where `text` names an item: the phrase itself, or for a long promise ("add an alert on
    search engine errors in the fulfilment service") a run of three or more of its
    distinctive words, in order, at most two words apart ("the restore drill for the message
    queue" names "schedule a restore drill for the fulfilment service message queue"), one
    of them a word the other items (`shared`: the words they use) do not have."""
    found = [(o.start, o.end) for o in occurrences(text, phrase)]
    key = [w for w in words(normalise(phrase)) if w not in _ITEM_STOP]
    if found or len(key) < 4:
        return found
    for size in range(len(key), max(3, len(key) - 2) - 1, -1):
        for run in combinations(key, size):
            if all(w in shared for w in run):
                continue  # words every sibling item has too name none of them

            pattern = r"(?<![a-z0-9])" + r"(?:\W+(?:[a-z0-9']+\W+){0,2}?)".join(
                _word_pattern(w) for w in run) + r"(?![a-z0-9])"
            found += [(m.start(), m.end()) for m in re.finditer(pattern, text)]
        if found:
            return found
    return found


_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]+(?:\[[ x]\][ \t]+)?(?P<item>\S.*)$",
                        re.MULTILINE)


def unknown_list_items(
    text: str, items: Sequence[Sequence[str]], as_of: date | None = None
) -> list[tuple[str, str | None]]:
    """The list lines of `text` (bullets, numbers) that name none of `items`, each with the
    state the line gives it ("open", "done" or None)."""
    found: list[tuple[str, str | None]] = []
    for m in _LIST_ITEM.finditer(text):
        line = m.group("item")
        if any(_item_mentions(line, phrase, _sibling_words(items, i))
               for i, group in enumerate(items) for phrase in group):
            continue
        if not re.search(r"[a-z]{3}", grammar_free(line)):
            continue  # a citation or a mark, not an item
        kinds = {state for _, state in _state_words(line, 0, as_of)}
        found.append((line.strip(), kinds.pop() if len(kinds) == 1 else None))
    return found


def grammar_free(line: str) -> str:
    """`line` without bracketed ids and parenthesised asides."""
    return re.sub(r"\[[^\]]*\]|\([^)]*\)", " ", line)


def _sibling_words(items: Sequence[Sequence[str]], index: int) -> frozenset[str]:
    return frozenset(w for i, group in enumerate(items) if i != index
                     for phrase in group for w in words(normalise(phrase)))


def obligation_states(
    text: str, items: Sequence[Sequence[str]], as_of: date | None = None
) -> list[tuple[bool, str | None]]:
    """For each item (a group of phrasings): (mentioned, stated state or None)."""
    hedged = hedged_spans(text)
    mentions: list[list[tuple[int, int]]] = [[] for _ in items]
    for index, phrasings in enumerate(items):
        shared = _sibling_words(items, index)
        for phrase in phrasings:
            # An item named only inside a hedge ("maybe A, maybe B") is not stated.
            mentions[index] += [(a, b) for a, b in _item_mentions(text, phrase, shared)
                                if not in_spans(a, hedged)]
    states: list[list[tuple[int, str]]] = [[] for _ in items]  # (position, state) per item
    position = 0
    bounds = [m.end() for m in _SENTENCE_BOUNDARY.finditer(text)] + [len(text)]
    for end in bounds:
        sentence = text[position:end]
        named = [(start, stop, i) for i, ms in enumerate(mentions) for start, stop in ms
                 if position <= start < end]
        markers = [] if in_spans(position, hedged) and in_spans(max(position, end - 1), hedged) \
            else _state_words(sentence, position, as_of)
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
