"""What an answer commits to, read against one task's expectations.

`matching` reads language (phrases, negation, hedges); this module reads an
answer the way the task's author meant its expectations to be read:

* Phrase groups. A group holds when the answer asserts one of its phrasings, or
  when the structured status line states it and the text adds nothing of its own
  ("Status: rejected. No" satisfies a group asking for "rejected"; "Status:
  rejected. Redis now caches the read models" does not). A citation names its
  source as the answer (a locate question's "[sessions/session-036.md]"), unless
  the answer is a quote dump (`scoring.copied_citations`): sentences copied out of
  their sources, none a title or record line, say nothing about which document
  answers. A forbidden phrase counts only where the answer asserts it, outside
  citations.
* The status line is a claim. Checked against `expect.status` when the task has
  one; otherwise, when a required group asks for a state ("Final", "withdrawn",
  "Provisional"), the field must be one that can name that state
  (`STATE_FIELDS`): "Status: proposed" on a Final PEP is false, "Status:
  decided" on an accepted one is not.
* Yes/no questions. For a question that opens with an auxiliary ("Had the
  proposal been formally rejected?") whose expectations say which reply is true
  (a required or forbidden "yes"/"no", an evidenced negative, a required phrase
  that negates or restates the question), the reply an answer opens with is
  checked, and a reply that matches answers the question: a group restating the
  question is satisfied by it ("Yes: ADR-009, dated 12 August" for "formally
  rejected"), and an answer that adds nothing the question does not already say
  ("No, not formally.", "Yes, the keys have been added.") needs no other group,
  nor the date or number the question did not ask for (one it states is checked).
* Evidence. The task's evidence quotes say what a paraphrase may say: an answer
  that restates a quote (most of what it says beyond the question, in one
  unhedged sentence, with its numbers and its polarity) satisfies the groups
  that share a word with that quote ("latency at the 99th percentile reached
  120 ms" for "tail latency"), in whatever words it uses for the rest.
* A question asking which items there are is answered "none" by a bare "No.".
* Choice, dates, numbers and obligations are typed checks (`expect`): the
  option the answer asserts as the state (`matching.chosen_option`), a stated
  date or number, and the stated state of every promise on the as-of date. A
  task's promises are all the promises there are: a list line naming none of
  them, stated (or, in a list of open items, left) open, invents one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import citations as grammar
from . import matching
from .metrics import STOP_WORDS
from .tasks import ObligationExpectation, Task

# A task's state words, and the status-field values (tasks.OUTCOME_STATUSES) that can name them.
STATE_FIELDS: dict[str, frozenset[str]] = {
    word: frozenset(fields) for words, fields in (
        (("accepted", "final", "active", "adopted", "approved", "in force", "in use"),
         ("decided", "done")),
        (("provisional", "decided", "chosen"), ("decided",)),
        (("draft", "proposed", "proposal", "undecided", "not decided", "no decision",
          "nothing was decided", "pending", "deferred"), ("proposed", "open")),
        (("open", "outstanding", "still open", "not yet"), ("open", "proposed")),
        # A decision to reject is a decision: "Status: decided" names it, vaguely but truly.
        (("rejected", "reject", "rejecting", "declined", "not adopted", "turned down"),
         ("rejected", "decided")),
        (("withdrawn", "superseded", "replaced", "no longer in force"), ("superseded",)),
        (("done", "closed", "completed", "merged", "delivered", "shipped", "destroyed",
          "decommissioned", "implemented"), ("done", "decided")),
    ) for word in words
}
_YES_NO_QUERY = re.compile(
    r"^\s*(?:is|was|were|are|did|does|do|has|have|had|can|could|will|would|should)\b",
    re.IGNORECASE,
)
_REPLY = re.compile(
    r"^\W*(?:(?P<yes>yes|yep|yeah|correct)\b|(?P<no>no|nope)(?=\s*(?:[,.;:!?\[(—–-]|$))"
    r"|(?P<not>not (?:yet|formally)|(?:it|they|that|there) (?:\w+n't|is not|was not"
    r"|does not|did not|has not|had not)\b))"
)
_ASKS_VALUE = re.compile(r"\b(?:when|what date|which date|how many|how much|how long)\b",
                         re.IGNORECASE)
_CONTRACTION = re.compile(r"\b(?:can't|won't)|n't\b")
_CONTRACTIONS = {"can't": "can not", "won't": "will not"}
# Restating an evidence quote: this share of its content words, in one sentence.
RESTATE_SHARE = 0.75
RESTATE_MIN_WORDS = 3


@dataclass(frozen=True)
class CheckResult:
    """The result of one check (an artifact check, or a typed expectation)."""

    check: dict[str, Any]
    passed: bool
    reason: str


@dataclass(frozen=True)
class AnswerReading:
    status: str | None
    text: str  # normalised answer without its status line
    matched: int
    unmatched: list[tuple[str, ...]]
    hits: list[str]
    typed: tuple[CheckResult, ...]

    @property
    def passes(self) -> bool:
        return not self.unmatched and not self.hits and all(c.passed for c in self.typed)


def question_words(task: Task) -> frozenset[str]:
    return frozenset(matching.words(matching.normalise(task.query)))


def prose(text: str) -> str:
    """Normalised `text` without its citations (ids name sources; they assert nothing)."""
    return matching.normalise(grammar.remove_citations(text)[0])


def read_answer(task: Task, answer: str, copied: frozenset[str] = frozenset()) -> AnswerReading:
    """Read `answer` against `task`. `copied` are the cited ids of a quote dump
    (`scoring.copied_citations`): they name no answer."""
    status, rest = matching.split_status(answer)
    text, bare = matching.normalise(rest), prose(rest)
    named = matching.normalise(_without_citations_of(rest, copied)) if copied else text
    subject = question_words(task)
    groups = task.answer.must_include
    # The status line speaks for the answer only when the text says nothing else:
    # "Status: rejected. No" does, "Status: rejected. Redis now caches ..." does not.
    terse = _adds_nothing(bare, task)
    unmatched = [g for g in groups
                 if not _group_holds(g, named, status if terse else None, subject)]
    typed: list[CheckResult] = []
    reply_check, expected = _reply_check(task, bare)
    if reply_check is not None:
        typed.append(reply_check)
    reply = reply_of(bare)
    agrees = reply is not None and reply == expected
    if unmatched and agrees:
        unmatched = [g for g in unmatched if not _restates_question(g, task, reply)]
        if terse:
            unmatched = []
    if unmatched and reply == "no" and terse:  # "No." to "which ... are open?" is "none"
        unmatched = [g for g in unmatched if not any(_is_none(p) for p in g)]
    restated = _restated_evidence(task, text)
    if unmatched and restated:
        unmatched = [g for g in unmatched if not any(_lemmas(p) & restated for p in g)]
    hits = [p for p in task.answer.must_not_include if matching.asserts(bare, p, subject)]
    # A bare reply to a question that does not ask when or how many states no date or number
    # to check; one that states them must state them right.
    typed += _typed_checks(task, status, text, bare, subject,
                           values=not (agrees and terse and not _ASKS_VALUE.search(task.query)))
    return AnswerReading(status=status, text=text, matched=len(groups) - len(unmatched),
                         unmatched=unmatched, hits=hits, typed=tuple(typed))


def _without_citations_of(text: str, ids: frozenset[str]) -> str:
    pieces, position = [], 0
    for span in grammar.find_citations(text):
        if span.ids and set(span.ids) <= ids:
            pieces += [text[position:span.start], " "]
            position = span.end
    return "".join(pieces) + text[position:]


def _group_holds(group: tuple[str, ...], text: str, status: str | None,
                 subject: frozenset[str]) -> bool:
    if status is not None and any(matching.asserts(status.replace("-", " "), p) for p in group):
        return True
    return any(matching.asserts(text, phrase, subject) for phrase in group)


# --- yes/no questions ---------------------------------------------------------------------


def expected_reply(task: Task) -> str | None:
    """'yes' or 'no' for a yes/no question whose expectations say which is true, else None."""
    if not _YES_NO_QUERY.match(task.query):
        return None
    spec = task.answer
    forbidden = {matching.normalise(p).strip() for p in spec.must_not_include}
    phrases = [matching.normalise(p).strip() for g in spec.must_include for p in g]
    query = _lemmas(task.query)
    says_no = (spec.evidenced_negative or "yes" in forbidden or "no" in phrases
               or any(_negates(p, query) for p in phrases))
    says_yes = "no" in forbidden or "yes" in phrases or any(
        not matching.phrase_is_negative(p) and _lemmas(p) and _lemmas(p) <= query
        for p in phrases)
    if says_no == says_yes:
        return None
    return "no" if says_no else "yes"


def _negates(phrase: str, query: set[str]) -> bool:
    tokens = matching.words(phrase)
    if not tokens or not matching.phrase_is_negative(phrase):
        return False
    rest = _lemmas(" ".join(t for t in tokens if t not in matching.NEGATORS
                            and not t.endswith("n't")))
    return bool(rest) and rest <= query


def reply_of(text: str) -> str | None:
    """The reply an answer opens with: 'yes', 'no', or None."""
    match = _REPLY.match(text)
    if not match:
        return None
    return "yes" if match.group("yes") else "no"


def _reply_check(task: Task, text: str) -> tuple[CheckResult | None, str | None]:
    expected = expected_reply(task)
    reply = reply_of(text)
    if expected is None or reply is None or reply == expected:
        return None, expected
    return (CheckResult({"expect": "reply", "answer": expected}, False,
                        f"answer replies {reply!r}"), expected)


def _lemmas(text: str) -> set[str]:
    """Lemmas of the content words, contractions read as their negation ("can't": "can not")."""
    text = _CONTRACTION.sub(lambda m: _CONTRACTIONS.get(m.group(0), " not"), matching.normalise(text))
    return {matching.lemma(w) for w in matching.words(text) if w not in STOP_WORDS and len(w) > 1}


def _restates_question(group: tuple[str, ...], task: Task, reply: str) -> bool:
    """A group one of whose phrasings is the question's own predicate, with the reply's polarity."""
    query = _lemmas(task.query)
    for phrase in group:
        norm = matching.normalise(phrase)
        if reply == "yes" and not matching.phrase_is_negative(norm):
            if _lemmas(norm) and _lemmas(norm) <= query:
                return True
        if reply == "no" and (norm.strip() == "no" or _negates(norm, query)):
            return True
    return False


def _adds_nothing(text: str, task: Task) -> bool:
    """Whether the answer says nothing beyond its reply and the question's own words."""
    return _lemmas(text) <= _lemmas(task.query)


# --- evidence ----------------------------------------------------------------------------


def _restated_evidence(task: Task, text: str) -> set[str]:
    """The content words of the evidence quotes the answer restates (empty: none restated).

    A quote counts when most of what it says beyond the question's own words
    (RESTATE_SHARE of at least RESTATE_MIN_WORDS content words) is in one unhedged
    sentence of the answer, with every number the quote gives and with its polarity.
    """
    query = _lemmas(task.query)
    hedged = matching.hedged_spans(text)
    spans = [text[s:e] for s, e in matching.sentences(text) if not matching.in_spans(s, hedged)]
    restated: set[str] = set()
    for span in task.answer.evidence:
        quote = matching.normalise(span.quote)
        wanted = _lemmas(quote) - query
        if len(wanted) >= RESTATE_MIN_WORDS and any(_restates(s, quote, wanted) for s in spans):
            restated |= _lemmas(quote)
    return restated


def _restates(sentence: str, quote: str, wanted: set[str]) -> bool:
    share = len(wanted & _lemmas(sentence)) / len(wanted)
    numbers = set(matching.stated_numbers(quote)) <= set(matching.stated_numbers(sentence))
    negative = matching.phrase_is_negative
    return share >= RESTATE_SHARE and numbers and negative(sentence) == negative(quote)


def _is_none(phrase: str) -> bool:
    return matching.normalise(phrase).strip() in ("none", "no", "nothing")


# --- typed expectations ----------------------------------------------------------------------


def _implied_fields(task: Task) -> set[str] | None:
    """The status-field values the required state words allow, or None if none is asked for."""
    allowed: set[str] | None = None
    for group in task.answer.must_include:
        fields = {f for p in group for f in STATE_FIELDS.get(matching.normalise(p).strip(), ())}
        if fields:
            allowed = fields if allowed is None else allowed & fields
    return allowed


def _typed_checks(task: Task, status: str | None, text: str, bare: str,
                  subject: frozenset[str], values: bool = True) -> list[CheckResult]:
    expect = task.answer.expect
    results: list[CheckResult] = []
    if status is not None:
        allowed = set(expect.status) if expect.status else _implied_fields(task)
        if allowed is not None:
            ok = status in allowed
            results.append(CheckResult({"expect": "status", "any_of": sorted(allowed)}, ok,
                                       f"status field is {status!r}"))
    if expect.date and values:
        ok = matching.states_date(text, expect.date)
        results.append(CheckResult({"expect": "date", "any_of": list(expect.date)}, ok,
                                   "date stated" if ok else "none of the dates is stated"))
    if expect.number and values:
        ok = matching.states_number(text, expect.number)
        found = matching.stated_numbers(text)
        results.append(CheckResult({"expect": "number", "any_of": list(expect.number)}, ok,
                                   f"numbers stated: {found}"))
    if expect.choice is not None:
        chosen = matching.chosen_option(bare, expect.choice.options, subject)
        ok = chosen == expect.choice.answer
        results.append(CheckResult({"expect": "choice", "answer": expect.choice.answer}, ok,
                                   f"option asserted as the state: {chosen}"))
    if expect.obligations is not None:
        results.append(obligation_check(expect.obligations, text, task))
    return results


def obligation_check(spec: ObligationExpectation, text: str, task: Task) -> CheckResult:
    items = [*spec.open, *spec.closed]
    truth = ["open"] * len(spec.open) + ["done"] * len(spec.closed)
    problems: list[str] = []
    for group, true_state, (mentioned, stated) in zip(
        items, truth, matching.obligation_states(text, items, task.as_of), strict=True
    ):
        read = stated if stated is not None else (spec.unmarked if mentioned else None)
        required = spec.require == "all" or true_state == "open"
        if required and read != true_state:
            problems.append(f"{group[0]!r} is {true_state}, answer says "
                            f"{read or ('nothing' if mentioned else 'not mentioned')}")
        elif not required and mentioned and read == "open":
            problems.append(f"{group[0]!r} is closed, answer lists it as open")
    # The task's items are every promise there is; a listed item it does not know, stated
    # (or, in a list of open items, left) open, is an invented one.
    for line, state in matching.unknown_list_items(text, items, task.as_of):
        if (state or spec.unmarked) == "open":
            problems.append(f"lists an item the history does not hold as open: {line[:60]!r}")
    reason = "; ".join(problems) if problems else "every promise stated with its true state"
    return CheckResult({"expect": "obligations"}, not problems, reason)
