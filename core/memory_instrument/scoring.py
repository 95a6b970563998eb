"""Score one system output against one task: the instrument's definition of success.

`score_task` is deterministic: the same task and output always give the same
Score. Every Score carries GRADER_VERSION, a content hash of the scoring code
and the task schema (`grader_version`), so a changed rule is a changed version
and old and new scores are never silently mixed.

Decisions this module makes (and documents here, once):

* Reading the answer: what it commits to, not which words it uses
  (`memory_instrument.reading` against the task, `memory_instrument.matching`
  for the language). Phrases are matched as words with their polarity, under
  hedges (an answer that offers alternatives asserts none of them), with the
  scope of negation readers use ("Not X any more: Y", "X isn't live yet",
  "moved off X to Y", lists); a leading structured status line
  (``Status: rejected.``) is a field, checked as a claim; a yes/no question is
  answered by its reply.
* Typed expectations (`answer.expect`, task-file version 2) hold beside the
  phrase groups: a date or number the answer must state, the option it asserts
  as the state (`choice`), and the stated state of every promise
  (`obligations`: required items with their true state, closed items never
  stated as open, no invented ones).
* Abstention. The system's `abstained` flag is primary. An answer whose text
  says it cannot answer (`matching.ABSTENTION_PATTERNS`) also counts as an
  abstention, unless it passes every answer check of an answerable task; then
  the reader has answered and merely hedged a part of it. On a task that must be
  abstained from, an abstention that goes on to guess ("I could not find it,
  but it was probably X") has made the claim it declined: `unsupported_answer`.
* Outcome labels (exactly one per score, see OUTCOMES). An answerable task's
  abstention is a `false_abstention` when at least one expected source reached
  the reader, and a `missed_evidence_abstention` when none did: the first is a
  reading failure, the second a retrieval failure. A correct answer to a task
  whose answer is a recorded negative is `correct_evidenced_negative`, never an
  abstention.
* Citations follow the one grammar of the output contract
  (`memory_instrument.citations`). An id matches an admitted passage by source
  id or chunk id (a ``path@commit`` id by its path). A system that reports its
  citations beside an answer without inline ones (`SystemOutput.citations`)
  cites them for the whole answer. The instrument counts the
  cited ids that were not admitted itself (`unknown_citations`) and keeps what
  the system reported about its own (`reported_unknown_citations`, e.g. ids a
  reader removed from its text), with `unknown_citations_agree` saying whether
  the two counts agree.
* Claim support. The answer outside fenced code is split into sentences (and
  lines); citations attach to the sentence they end, or to the previous one
  when they stand alone, and cover the uncited sentences before it in the same
  paragraph (a citation opening a sentence belongs to the one before it, whose
  full stop it follows). A cited claim is supported when a cited, admitted
  passage contains a quoted span of the claim (at least MIN_QUOTE_WORDS words,
  case and whitespace ignored), or else when at least SUPPORT_THRESHOLD of the
  claim's content words occur in the cited passages. This lexical check
  catches citations to passages about something else, not subtle misreadings;
  a model `ClaimJudge` replaces it in the pass rule only once it has beaten it
  on the labelled claims (`memory_instrument.judges`).
* Provenance questions ask where a claim comes from, so for them support is
  part of success: a decisive claim (one that states a required phrase or
  value) must cite an admitted expected source that supports it.
* Extraneous admitted sources are reported as such; whether they hurt the
  reader is a separate experiment, so no label here calls them a distraction.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Protocol, runtime_checkable

import yaml

from . import citations as grammar
from . import matching
from .grader_version import GRADER_VERSION
from .harness import HarnessResult, load_harness, run_harness
from .metrics import StageMetrics, normalise_text, stage_metrics, word_overlap
from .outputs import STAGES, Passage, SystemOutput
from .reading import CheckResult, read_answer
from .tasks import ArtifactCheck, Task

ABSTENTION_PHRASES: tuple[str, ...] = tuple(p.pattern for p in matching.ABSTENTION_PATTERNS)
# Question types whose answer is a claim about where something comes from.
SUPPORT_REQUIRED_TYPES = frozenset({"provenance"})
SUPPORT_THRESHOLD = 0.6
MIN_QUOTE_WORDS = 3
MIN_COPIED_WORDS = 6

OUTCOMES: tuple[str, ...] = (
    "correct_answer",
    "correct_evidenced_negative",
    "correct_abstention",
    "false_abstention",
    "missed_evidence_abstention",
    "unsupported_answer",
    "unsupported_claim",
    "wrong_answer",
)
CORRECT_OUTCOMES = frozenset({"correct_answer", "correct_evidenced_negative", "correct_abstention"})


class ScoringError(ValueError):
    """The task and output cannot be scored together (e.g. they name different tasks)."""


@runtime_checkable
class ClaimJudge(Protocol):
    """An optional second opinion on claim support, e.g. a model; never the default.

    `identity` (model name, revision, prompt version, ...) is written into every
    Score the judge took part in, so its verdicts are traceable to what gave them.
    `in_pass_rule` is True only for a judge that beat the lexical check on the
    labelled claims (`memory_instrument.judges.admit_judge`); otherwise its verdicts
    are recorded beside the lexical ones and decide nothing.
    """

    identity: dict[str, str]
    in_pass_rule: bool

    def supports(self, claim: str, passages: Sequence[Passage]) -> bool: ...


@dataclass(frozen=True)
class ClaimCheck:
    """The support verdict for one cited claim of the answer."""

    claim: str
    cited_ids: tuple[str, ...]
    supported: bool
    method: str  # "quote", "overlap", or "none" when nothing could be checked
    overlap: float | None
    reason: str
    judge_supported: bool | None = None


@dataclass(frozen=True)
class Score:
    """Every judgement the instrument makes about one output, with its evidence."""

    grader_version: str
    task_id: str
    condition: str
    question_type: str
    outcome: str
    passed: bool
    abstained: bool
    abstention_signal: str | None  # "flag", "text" or None
    stage_metrics: dict[str, StageMetrics]
    admitted_sources: tuple[str, ...]
    expected_admitted: tuple[str, ...]
    extraneous_admitted: tuple[str, ...]
    must_include_groups_matched: int
    must_include_groups_total: int
    unmatched_groups: tuple[tuple[str, ...], ...]
    must_not_include_hits: tuple[str, ...]
    answer_checks_pass: bool
    cited_sources: tuple[str, ...]
    unknown_citations: tuple[str, ...]
    reported_unknown_citations: tuple[str, ...]
    unknown_citations_agree: bool
    status_field: str | None
    typed_checks: tuple[CheckResult, ...]
    support_required: bool
    decisive_claim_supported: bool | None
    supported_claims: tuple[ClaimCheck, ...]
    unsupported_claims: tuple[ClaimCheck, ...]
    uncited_claims: tuple[str, ...]
    claim_judge: dict[str, str] | None
    artifact_source: str | None  # "artifact", "fenced_block", "answer"; None without checks
    artifact_checks: tuple[CheckResult, ...]
    artifact_pass: bool | None
    usage: dict[str, float] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    harness: dict[str, Any] | None = None  # HarnessResult.to_dict() when a harness judged the artifact

    def stage(self, name: str) -> StageMetrics | None:
        return self.stage_metrics.get(name)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(self)


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# --- citations ----------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LEADING_CITATION = re.compile(r"^\s*(?:\[[^\[\]\n]+\]\s*)+(?=\S)")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")


def _strip_citations(segment: str) -> tuple[str, list[str]]:
    """Remove citations from a segment; return the remaining text and the ids, in order."""
    text, ids = grammar.remove_citations(segment)
    # Removing "claim [id]." leaves "claim ."; close the gap so claim text reads as written.
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split())), ids


def parse_citations(text: str) -> list[tuple[str, list[str]]]:
    """Split an answer into claims and the source ids each one cites.

    Every claim is returned, cited or not (uncited claims have an empty list), so
    callers can count both. A citation also covers the uncited sentences before it in
    its paragraph, back to the previous citation. Text inside fenced code blocks is work
    product, not claims, and is skipped.
    """
    prose = grammar.FENCED_BLOCK.sub("\n\n", text)
    claims: list[tuple[str, list[str]]] = []
    first_of_paragraph = 0
    for line in prose.splitlines():
        if not line.strip():  # a blank line ends the paragraph a citation can cover
            first_of_paragraph = len(claims)
            continue
        line = _LIST_MARKER.sub("", line)
        for segment in _SENTENCE_END.split(line.strip()):
            leading = _LEADING_CITATION.match(segment)
            if leading and claims and len(claims) > first_of_paragraph:
                # "Claim. [id] Next claim.": the id belongs to the claim its full stop ended.
                _, ids = _strip_citations(leading.group(0))
                previous, previous_ids = claims[-1]
                claims[-1] = (previous, list(dict.fromkeys(previous_ids + ids)))
                segment = segment[leading.end():]
            claim, ids = _strip_citations(segment)
            claim = claim.strip()
            if not re.search(r"\w", claim):
                if ids and claims:  # a citation standing after its sentence's full stop
                    previous, previous_ids = claims[-1]
                    claims[-1] = (previous, list(dict.fromkeys(previous_ids + ids)))
                elif ids:
                    claims.append(("", list(dict.fromkeys(ids))))
                continue
            claims.append((claim, list(dict.fromkeys(ids))))
        _cover_uncited_run(claims, first_of_paragraph)
    return claims


def _cover_uncited_run(claims: list[tuple[str, list[str]]], start: int) -> None:
    """A citation ending a run of uncited sentences in one paragraph covers the run.

    That is how people cite a paragraph ("... The team fixed the index. [s.md]"), and what
    a reader of the answer takes it to mean; a run after the paragraph's last citation
    stays uncited.
    """
    pending: list[int] = []
    for index in range(start, len(claims)):
        text, ids = claims[index]
        if not ids:
            pending.append(index)
            continue
        for waiting in pending:
            claims[waiting] = (claims[waiting][0], list(ids))
        pending = []


def _passages_for(cited_id: str, passages: Sequence[Passage]) -> list[Passage]:
    base = grammar.base_source_id(cited_id)
    return [p for p in passages if cited_id in (p.source_id, p.chunk_id) or base == p.source_id]


def check_claim(
    claim: str,
    cited_ids: Sequence[str],
    passages: Sequence[Passage],
    judge: ClaimJudge | None = None,
) -> ClaimCheck:
    """Decide deterministically whether the admitted passages a claim cites support it."""
    cited = tuple(cited_ids)
    cited_passages = [p for cid in cited for p in _passages_for(cid, passages)]
    if not cited_passages:
        return ClaimCheck(claim, cited, False, "none", None, "no cited id was admitted")
    judge_verdict = judge.supports(claim, cited_passages) if judge is not None else None
    passage_texts = [normalise_text(p.text) for p in cited_passages]
    for match in _QUOTED.finditer(claim):
        quote = normalise_text(match.group(1) or match.group(2))
        if len(quote.split()) >= MIN_QUOTE_WORDS and any(quote in t for t in passage_texts):
            return ClaimCheck(
                claim, cited, True, "quote", None, "quoted span found", judge_verdict
            )
    overlap = word_overlap(claim, (p.text for p in cited_passages))
    if overlap is None:
        return ClaimCheck(
            claim, cited, False, "none", None, "claim has no content words", judge_verdict
        )
    supported = overlap >= SUPPORT_THRESHOLD
    comparison = ">=" if supported else "<"
    reason = f"content-word overlap {overlap:.2f} {comparison} {SUPPORT_THRESHOLD}"
    return ClaimCheck(claim, cited, supported, "overlap", overlap, reason, judge_verdict)


def copied_citations(
    claims: Sequence[tuple[str, Sequence[str]]], passages: Sequence[Passage]
) -> frozenset[str]:
    """The cited ids of a quote dump, which name no document as the answer.

    A quote dump is an answer of two or more claims, every one a sentence copied out of
    the source it cites and none of them that source's title, a heading or a record line
    ("Agreed: ...", "Status: Rejected", "PEP: 8 Title: ..."): the reader has copied
    evidence without saying which document answers. Any other answer's citations name
    their sources (a locate question's "[sessions/session-036.md]").
    """
    cited = [(claim, ids) for claim, ids in claims if claim.strip() and ids]
    if len(cited) < 2 or len(cited) < len([c for c, _ in claims if c.strip()]):
        return frozenset()
    for claim, ids in cited:
        quote = _flat(claim)
        if len(quote.split()) < MIN_COPIED_WORDS or _RECORD_LINE.match(claim.strip()):
            return frozenset()
        texts = [p.text for cid in ids for p in _passages_for(cid, passages)]
        if not any(quote in _flat(t) and quote not in _flat(_title_part(t)) for t in texts):
            return frozenset()
    return frozenset(cid for _, ids in cited for cid in ids)


# A line that labels what a record holds: a heading, or "Label: ..." ("Agreed:", "Status:").
_RECORD_LINE = re.compile(r"^(?:#+\s|\w[\w.#/-]*(?: [\w.#/-]+){0,2}:\s)")


def _flat(text: str) -> str:
    """Casefolded, single-spaced, no space before punctuation (as claims are cut)."""
    return re.sub(r"\s+([.,;:!?])", r"\1", normalise_text(text))


def _title_part(text: str) -> str:
    """A source's header block (up to its first blank line) and its heading lines."""
    header = text.lstrip().split("\n\n", 1)[0]
    headings = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    return "\n".join([header, *headings])


# --- answer checks and abstention -----------------------------------------------------


def detect_abstention(output: SystemOutput) -> str | None:
    """'flag' if the system said it abstained, 'text' if the answer says so, else None."""
    if output.abstained:
        return "flag"
    _, rest = matching.split_status(output.answer)
    if matching.abstention_in_text(matching.normalise(rest)):
        return "text"
    return None


def _outcome(
    task: Task, signal: str | None, checks_pass: bool, evidence_admitted: bool,
    guessed: bool = False,
) -> tuple[str, bool]:
    """The outcome label, and whether the output counts as an abstention."""
    if task.answer.abstain:
        # An abstention that goes on to guess ("I could not find it, but it was probably X")
        # makes the claim it declined to make.
        if signal and not guessed:
            return "correct_abstention", True
        return "unsupported_answer", False
    # A text-only signal on an answer that passes every check is a hedge, not an abstention.
    abstained = signal == "flag" or (signal == "text" and not checks_pass)
    if abstained:
        label = "false_abstention" if evidence_admitted else "missed_evidence_abstention"
        return label, True
    if checks_pass:
        label = "correct_evidenced_negative" if task.answer.evidenced_negative else "correct_answer"
        return label, False
    return "wrong_answer", False


def _is_decisive(task: Task, claim: str) -> bool:
    """A claim that states something the task requires (a phrase group or a typed value)."""
    text = matching.normalise(claim)
    if read_answer(task, claim).matched:
        return True
    expect = task.answer.expect
    return bool(expect.number and matching.states_number(text, expect.number)) or bool(
        expect.date and matching.states_date(text, expect.date)
    )


def _decisive_claim_supported(
    task: Task, checked: Sequence[ClaimCheck], judge: ClaimJudge | None
) -> bool:
    expected = set(task.expected_sources)
    for check in checked:
        if not _is_decisive(task, check.claim):
            continue
        if not any(grammar.base_source_id(c) in expected or c in expected
                   for c in check.cited_ids):
            continue
        use_judge = judge is not None and judge.in_pass_rule and check.judge_supported is not None
        if check.judge_supported if use_judge else check.supported:
            return True
    return False


# --- downstream artifacts ---------------------------------------------------------------

_FENCED_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def extract_artifact(output: SystemOutput) -> tuple[str, str]:
    """The work product to check, and where it came from.

    The system's separate artifact wins; else the first fenced code block of the
    answer; else the whole answer.
    """
    if output.artifact is not None:
        return output.artifact, "artifact"
    block = _FENCED_BLOCK.search(output.answer)
    if block:
        return block.group(1), "fenced_block"
    return output.answer, "answer"


def _load_structured(text: str, fmt: str) -> Any:
    if fmt == "yaml":
        return yaml.safe_load(text)
    if fmt == "json":
        return json.loads(text)
    if fmt == "toml":
        return tomllib.loads(text)
    raise ScoringError(f"unknown artifact format {fmt!r}")


_PARSE_ERRORS = (yaml.YAMLError, json.JSONDecodeError, tomllib.TOMLDecodeError)


def run_artifact_check(check: ArtifactCheck, artifact: str) -> CheckResult:
    """Execute one check against the artifact text."""
    spec = check.to_dict()
    if check.check in ("matches", "not_matches"):
        found = re.search(check.pattern or "", artifact, re.IGNORECASE)
        if check.check == "matches":
            reason = f"found {found.group(0)!r}" if found else "pattern not found"
            return CheckResult(spec, bool(found), reason)
        reason = f"forbidden text found: {found.group(0)!r}" if found else "pattern absent"
        return CheckResult(spec, not found, reason)

    fmt = check.format or ""
    try:
        document = _load_structured(artifact, fmt)
    except _PARSE_ERRORS as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return CheckResult(spec, False, f"not valid {fmt}: {first_line}")
    # A bare scalar (e.g. prose read as one YAML string) is not a structured work product.
    if not isinstance(document, dict | list):
        return CheckResult(spec, False, f"{fmt} parsed to a {type(document).__name__}, "
                           "not a mapping or list")
    if check.check == "parses":
        return CheckResult(spec, True, f"valid {fmt}")

    value: Any = document
    for part in (check.key or "").split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return CheckResult(spec, False, f"key '{check.key}' not found (missing '{part}')")
    if isinstance(value, dict | list):
        return CheckResult(spec, False, f"key '{check.key}' holds a {type(value).__name__}, "
                           "not a value")
    actual = str(value).strip().casefold()
    if actual in {option.strip().casefold() for option in check.any_of}:
        return CheckResult(spec, True, f"'{check.key}' is {value!r}")
    return CheckResult(
        spec, False, f"'{check.key}' is {value!r}, expected one of {list(check.any_of)}"
    )


def run_task_harness(task: Task, artifact: str) -> HarnessResult:
    """Run the task's harness on the work product (the task must name one)."""
    if task.answer.harness is None:
        raise ScoringError(f"task '{task.id}' names no harness")
    if task.answer.harness_dir is None:
        raise ScoringError(f"task '{task.id}': harness '{task.answer.harness}' cannot be found; "
                           "load the task file from disk so its harnesses/ folder is known")
    return run_harness(load_harness(task.answer.harness_dir), artifact)


def harness_check(result: HarnessResult) -> CheckResult:
    """A harness run as one artifact check, so gains and scorecards count it like the others."""
    spec = {"check": "harness", "harness": result.harness, "digest": result.digest}
    return CheckResult(spec, result.passed, f"{result.status}: {result.reason}")


def artifact_verdicts(task: Task, artifact: str) -> tuple[tuple[CheckResult, ...], HarnessResult | None]:
    """The checks that judge a work product: its harness when it has one, else the task's checks.

    The harness replaces the lexical checks: it runs or validates the work, which a
    pattern over its text cannot (a syntax error used to pass them).
    """
    if task.answer.harness is not None:
        result = run_task_harness(task, artifact)
        return (harness_check(result),), result
    return tuple(run_artifact_check(check, artifact) for check in task.answer.artifact_checks), None


def downstream_gain(with_history: Score, without: Score) -> dict[str, Any]:
    """Compare one downstream task's artifact checks with and without project history.

    The harness pairs the two conditions; this only does the arithmetic and names
    which checks the history fixed or broke.
    """
    if with_history.task_id != without.task_id:
        raise ScoringError(
            f"downstream_gain compares one task; got '{with_history.task_id}' "
            f"and '{without.task_id}'"
        )
    if not with_history.artifact_checks or not without.artifact_checks:
        raise ScoringError(f"task '{with_history.task_id}' has no artifact checks to compare")
    pairs = list(zip(with_history.artifact_checks, without.artifact_checks, strict=True))
    passed_with = sum(a.passed for a, _ in pairs)
    passed_without = sum(b.passed for _, b in pairs)
    return {
        "task_id": with_history.task_id,
        "with_condition": with_history.condition,
        "without_condition": without.condition,
        "checks_total": len(pairs),
        "checks_passed_with": passed_with,
        "checks_passed_without": passed_without,
        "gain": passed_with - passed_without,
        "fixed_checks": [a.check for a, b in pairs if a.passed and not b.passed],
        "broken_checks": [a.check for a, b in pairs if b.passed and not a.passed],
        "artifact_pass_with": with_history.artifact_pass,
        "artifact_pass_without": without.artifact_pass,
        "history_made_the_difference": bool(with_history.artifact_pass)
        and not without.artifact_pass,
        "grader_version": with_history.grader_version,
    }


# --- the scorer -------------------------------------------------------------------------


def score_task(task: Task, output: SystemOutput, claim_judge: ClaimJudge | None = None) -> Score:
    """Score one output against its task; deterministic unless a claim judge is supplied."""
    if task.id != output.task_id:
        raise ScoringError(f"output for task '{output.task_id}' scored against task '{task.id}'")
    notes: list[str] = []
    expected = task.expected_sources

    metrics = {
        stage: stage_metrics(stage, output.stages[stage], expected)
        for stage in STAGES
        if stage in output.stages
    }

    admitted = tuple(output.admitted_sources)
    if "admitted" in output.stages and set(output.stages["admitted"]) != set(admitted):
        notes.append("stage 'admitted' differs from the sources of admitted_passages")
    expected_admitted = tuple(s for s in expected if s in admitted)
    extraneous = tuple(s for s in admitted if s not in expected)

    claims = parse_citations(output.answer)
    reading = read_answer(task, output.answer, copied_citations(claims, output.admitted_passages))
    checks_pass = reading.passes

    signal = detect_abstention(output)
    guessed = bool(task.answer.abstain and matching.guesses(reading.text))
    outcome, abstained = _outcome(task, signal, checks_pass, bool(expected_admitted), guessed)

    if output.citations and not any(ids for _, ids in claims):
        # A system that reports its citations beside the answer cites them for all of it.
        claims = [(text, list(output.citations)) for text, _ in claims]
    cited = tuple(dict.fromkeys([*output.citations, *(i for _, ids in claims for i in ids)]))
    known_ids = {p.source_id for p in output.admitted_passages} | {
        p.chunk_id for p in output.admitted_passages
    }
    unknown = tuple(
        c for c in cited if c not in known_ids and grammar.base_source_id(c) not in known_ids
    )
    # A reader that removes unknown ids from its text reports them instead; both counts are
    # kept, since the instrument's own count of a cleaned text is zero by construction.
    reported = tuple(output.unknown_citations)
    agree = set(reported) == set(unknown)
    if not agree:
        notes.append(
            f"system reported unknown citations {sorted(reported)}, "
            f"instrument found {sorted(unknown)}"
        )
    checked = [
        check_claim(text, ids, output.admitted_passages, claim_judge)
        for text, ids in claims
        if ids
    ]
    support_required = task.question_type in SUPPORT_REQUIRED_TYPES and task.answerable
    decisive_supported = (
        _decisive_claim_supported(task, checked, claim_judge) if support_required else None
    )
    if outcome in ("correct_answer", "correct_evidenced_negative") and decisive_supported is False:
        outcome = "unsupported_claim"  # right words, but no supporting expected source cited

    artifact_results: tuple[CheckResult, ...] = ()
    artifact_source: str | None = None
    artifact_pass: bool | None = None
    harness_result: HarnessResult | None = None
    if task.answer.artifact_checks or task.answer.harness is not None:
        artifact_text, artifact_source = extract_artifact(output)
        artifact_results, harness_result = artifact_verdicts(task, artifact_text)
        artifact_pass = all(result.passed for result in artifact_results)

    passed = outcome in CORRECT_OUTCOMES and artifact_pass is not False
    return Score(
        grader_version=GRADER_VERSION,
        task_id=task.id,
        condition=output.condition,
        question_type=task.question_type,
        outcome=outcome,
        passed=passed,
        abstained=abstained,
        abstention_signal=signal,
        stage_metrics=metrics,
        admitted_sources=admitted,
        expected_admitted=expected_admitted,
        extraneous_admitted=extraneous,
        must_include_groups_matched=reading.matched,
        must_include_groups_total=len(task.answer.must_include),
        unmatched_groups=tuple(reading.unmatched),
        must_not_include_hits=tuple(reading.hits),
        answer_checks_pass=checks_pass,
        cited_sources=cited,
        unknown_citations=unknown,
        reported_unknown_citations=reported,
        unknown_citations_agree=agree,
        status_field=reading.status,
        typed_checks=reading.typed,
        support_required=support_required,
        decisive_claim_supported=decisive_supported,
        supported_claims=tuple(c for c in checked if c.supported),
        unsupported_claims=tuple(c for c in checked if not c.supported),
        uncited_claims=tuple(text for text, ids in claims if not ids),
        claim_judge=dict(claim_judge.identity) if claim_judge is not None else None,
        artifact_source=artifact_source,
        artifact_checks=artifact_results,
        artifact_pass=artifact_pass,
        usage=dict(output.usage),
        timings_ms=dict(output.timings_ms),
        notes=tuple(notes),
        harness=harness_result.to_dict() if harness_result is not None else None,
    )
