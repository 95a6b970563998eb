"""Validate the grader against labelled answers before trusting its pass rates.

A labelled answer is an answer to one task with an expert's pass/fail label and
the reason for it. Two files hold them, in one item shape (`LabelledAnswer`):

* the probes (`fixtures/grader/probes.json`, ``{"version": 1, "probes": [...]}``):
  crafted answers to every fixture task, written beside the grader;
* labelled answer sets (``{"version": 1, "convention": ..., "items": [...]}``, e.g.
  the tuning set `fixtures/grader/tuning/answers.json`): real answers from runs and
  answers imitating other systems and people, across corpora, each naming its task
  file, its answer source and the phenomenon it shows. Unless an item names its
  `admitted_sources`, the system admitted exactly the task's expected sources.

`validate_grader` scores each one with `score_task` exactly as a run would (the
passages the reader saw are whole files of the corpus) and compares the verdict
with the label: agreement, false-pass rate (answers labelled wrong that pass) and
false-fail rate, each with a 95% Wilson score interval, per question type, per
answer-source family, per phenomenon, and the items it still gets wrong.

Why Wilson, and why by hand: a few dozen labels per cell, and rates near 0 or 1,
are where the normal approximation gives intervals outside [0, 1] or of zero
width; Wilson's stays inside and is honest at the edges. It is five lines, and
the instrument depends on nothing of the lab (scipy is in the lab's extra), so it
computes it itself; the tests check it against `scipy.stats.binomtest`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .outputs import Passage, SystemOutput
from .scoring import ClaimJudge, Score, score_task
from .tasks import TaskSet

PROBE_FILE_VERSION = 1
LABELLED_FILE_VERSION = 1
LABELS = ("pass", "fail")
Z_95 = 1.959963984540054  # the two-sided 95% normal quantile
_PROBE_FIELDS = {"id", "task_id", "kind", "answer", "abstained", "label", "reason", "admitted",
                 "citations", "reported_unknown_citations"}
_ITEM_REQUIRED = {"id", "corpus", "task_file", "task_id", "answer_source", "phenomenon",
                  "answer", "cited_sources", "abstained", "label", "reason"}
_ITEM_OPTIONAL = {"admitted_sources", "note"}
_FAMILY_END = re.compile(r"[/(]")

# Where a task's source text comes from: a corpus folder, or a reader of source ids (for
# sources that are not files, such as a ``path@commit`` version read from git).
SourceReader = Callable[[str], str]
Corpus = str | Path | SourceReader


class ProbeFileError(ValueError):
    """A labelled-answer file breaks its format; the message names the item and the field."""


@dataclass(frozen=True)
class LabelledAnswer:
    """One answer to one task, labelled pass or fail by an expert, with the reason."""

    id: str
    task_id: str
    kind: str  # the probe kind, or the phenomenon the answer shows
    answer: str
    abstained: bool
    label: str
    reason: str
    admitted: tuple[str, ...] | None = None  # None: the task's expected sources
    citations: tuple[str, ...] = ()
    reported_unknown_citations: tuple[str, ...] = ()
    source: str = "probe"  # who or what wrote the answer (`answer_source`)
    task_file: str | None = None  # None: the one task set validated against
    corpus: str | None = None

    @property
    def source_family(self) -> str:
        return source_family(self.source)


Probe = LabelledAnswer  # the probes' name for a labelled answer


def source_family(answer_source: str) -> str:
    """``real:qwen-1.5b/structured (oracle-source; ...)`` -> ``real:qwen-1.5b``: the part
    before the first '/' or '('."""
    return _FAMILY_END.split(answer_source, maxsplit=1)[0].strip()


def load_probes(path: str | Path) -> list[LabelledAnswer]:
    """Read a probe file (``{"version": 1, "probes": [...]}``)."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    if document.get("version") != PROBE_FILE_VERSION:
        raise ProbeFileError(f"{path}: field 'version' must be {PROBE_FILE_VERSION}")
    probes: list[LabelledAnswer] = []
    for position, raw in enumerate(document.get("probes", [])):
        where = f"probe '{raw.get('id', f'#{position}')}'"
        unknown = sorted(set(raw) - _PROBE_FIELDS)
        if unknown:
            raise ProbeFileError(f"{where}: unknown field '{unknown[0]}'")
        _check_label(raw, where)
        admitted = raw.get("admitted")
        probes.append(LabelledAnswer(
            id=raw["id"], task_id=raw["task_id"], kind=raw["kind"], answer=raw["answer"],
            abstained=bool(raw.get("abstained", False)), label=raw["label"],
            reason=raw["reason"], admitted=tuple(admitted) if admitted is not None else None,
            citations=tuple(raw.get("citations", ())),
            reported_unknown_citations=tuple(raw.get("reported_unknown_citations", ())),
        ))
    return probes


def load_labelled_answers(path: str | Path) -> list[LabelledAnswer]:
    """Read a labelled-answer set (``{"version": 1, "items": [...]}``), or a probe file."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    if "probes" in document:
        return load_probes(path)
    if document.get("version") != LABELLED_FILE_VERSION:
        raise ProbeFileError(f"{path}: field 'version' must be {LABELLED_FILE_VERSION}")
    items: list[LabelledAnswer] = []
    for position, raw in enumerate(document.get("items", [])):
        where = f"item '{raw.get('id', f'#{position}')}'"
        unknown = sorted(set(raw) - _ITEM_REQUIRED - _ITEM_OPTIONAL)
        if unknown:
            raise ProbeFileError(f"{where}: unknown field '{unknown[0]}'")
        missing = sorted(_ITEM_REQUIRED - set(raw))
        if missing:
            raise ProbeFileError(f"{where}: field '{missing[0]}' is required")
        _check_label(raw, where)
        if not isinstance(raw["abstained"], bool):
            raise ProbeFileError(f"{where}: field 'abstained' must be true or false")
        admitted = raw.get("admitted_sources")
        items.append(LabelledAnswer(
            id=raw["id"], task_id=raw["task_id"], kind=raw["phenomenon"], answer=raw["answer"],
            abstained=raw["abstained"], label=raw["label"], reason=raw["reason"],
            admitted=tuple(admitted) if admitted is not None else None,
            citations=tuple(raw["cited_sources"]), source=raw["answer_source"],
            task_file=raw["task_file"], corpus=raw["corpus"],
        ))
    return items


def _check_label(raw: Mapping[str, Any], where: str) -> None:
    if raw.get("label") not in LABELS:
        raise ProbeFileError(f"{where}: field 'label' must be 'pass' or 'fail'")
    if not str(raw.get("reason", "")).strip():
        raise ProbeFileError(f"{where}: field 'reason' is required")


def _reader(corpus: Corpus) -> SourceReader:
    if callable(corpus):
        return corpus
    root = Path(corpus)
    return lambda source: (root / source).read_text(encoding="utf-8")


def probe_output(probe: LabelledAnswer, tasks: TaskSet, corpus_root: Corpus) -> SystemOutput:
    """The SystemOutput a system giving this answer would report (whole files admitted)."""
    task = tasks.get(probe.task_id)
    admitted = probe.admitted if probe.admitted is not None else task.expected_sources
    read = _reader(corpus_root)
    passages = [Passage(source_id=s, chunk_id=f"{s}#0", text=read(s)) for s in admitted]
    return SystemOutput(
        task_id=task.id, condition="probe", answer=probe.answer, abstained=probe.abstained,
        stages={"admitted": list(admitted)}, admitted_passages=passages,
        citations=list(probe.citations),
        unknown_citations=list(probe.reported_unknown_citations),
    )


# --- rates and their intervals -------------------------------------------------------


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion (None without trials)."""
    if trials <= 0:
        return None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Confusion:
    """Counts of expert label against grader verdict."""

    true_pass: int = 0  # labelled pass, grader passes
    false_fail: int = 0  # labelled pass, grader fails
    false_pass: int = 0  # labelled fail, grader passes
    true_fail: int = 0  # labelled fail, grader fails

    def add(self, label: str, passed: bool) -> None:
        if label == "pass":
            if passed:
                self.true_pass += 1
            else:
                self.false_fail += 1
        elif passed:
            self.false_pass += 1
        else:
            self.true_fail += 1

    @property
    def total(self) -> int:
        return self.true_pass + self.false_fail + self.false_pass + self.true_fail

    @property
    def agreement(self) -> float | None:
        return (self.true_pass + self.true_fail) / self.total if self.total else None

    @property
    def false_pass_rate(self) -> float | None:
        """Share of answers labelled wrong that the grader passes."""
        wrong = self.false_pass + self.true_fail
        return self.false_pass / wrong if wrong else None

    @property
    def false_fail_rate(self) -> float | None:
        right = self.true_pass + self.false_fail
        return self.false_fail / right if right else None

    def intervals(self) -> dict[str, tuple[float, float] | None]:
        wrong, right = self.false_pass + self.true_fail, self.true_pass + self.false_fail
        return {"agreement": wilson_interval(self.true_pass + self.true_fail, self.total),
                "false_pass_rate": wilson_interval(self.false_pass, wrong),
                "false_fail_rate": wilson_interval(self.false_fail, right)}

    def to_dict(self) -> dict[str, Any]:
        ci = {f"{name}_ci": list(bounds) if bounds else None
              for name, bounds in self.intervals().items()}
        return {"probes": self.total, "true_pass": self.true_pass, "false_fail": self.false_fail,
                "false_pass": self.false_pass, "true_fail": self.true_fail,
                "agreement": self.agreement, "false_pass_rate": self.false_pass_rate,
                "false_fail_rate": self.false_fail_rate, **ci}


@dataclass
class Validation:
    grader_version: str
    overall: Confusion
    by_question_type: dict[str, Confusion]
    by_kind: dict[str, Confusion]
    misjudged: list[dict[str, Any]] = field(default_factory=list)
    by_source: dict[str, Confusion] = field(default_factory=dict)
    by_corpus: dict[str, Confusion] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "grader_version": self.grader_version,
            "overall": self.overall.to_dict(),
            "by_question_type": {k: v.to_dict() for k, v in self.by_question_type.items()},
            "by_source": {k: v.to_dict() for k, v in self.by_source.items()},
            "by_corpus": {k: v.to_dict() for k, v in self.by_corpus.items()},
            "by_kind": {k: v.to_dict() for k, v in self.by_kind.items()},
            "misjudged": self.misjudged,
        }


def _for_file(value: Any, answer: LabelledAnswer, what: str) -> Any:
    """`value` itself, or its entry for the answer's task file when it is a mapping."""
    if not isinstance(value, Mapping):
        return value
    if answer.task_file not in value:
        raise ProbeFileError(f"item '{answer.id}': no {what} given for task file "
                             f"{answer.task_file!r}")
    return value[answer.task_file]


def validate_grader(
    probes: Iterable[LabelledAnswer],
    tasks: TaskSet | Mapping[str, TaskSet],
    corpus_root: Corpus | Mapping[str, Corpus],
    claim_judge: ClaimJudge | None = None,
) -> Validation:
    """Score every labelled answer and compare the grader's verdict with the label.

    `tasks` and `corpus_root` are the task set and corpus every answer belongs to, or,
    for a set spanning several task files, mappings from the task file each item names.
    """
    overall = Confusion()
    tables: dict[str, dict[str, Confusion]] = {"type": {}, "kind": {}, "source": {},
                                               "corpus": {}}
    misjudged: list[dict[str, Any]] = []
    version = ""
    for probe in probes:
        task_set = _for_file(tasks, probe, "task set")
        task = task_set.get(probe.task_id)
        output = probe_output(probe, task_set, _for_file(corpus_root, probe, "corpus"))
        score: Score = score_task(task, output, claim_judge)
        version = score.grader_version
        keys = {"type": task.question_type, "kind": probe.kind, "source": probe.source_family,
                "corpus": probe.corpus or "fixture"}
        overall.add(probe.label, score.passed)
        for name, key in keys.items():
            tables[name].setdefault(key, Confusion()).add(probe.label, score.passed)
        if score.passed != (probe.label == "pass"):
            misjudged.append({
                "id": probe.id, "task_id": task.id, "question_type": task.question_type,
                "kind": probe.kind, "source": probe.source, "label": probe.label,
                "grader": "pass" if score.passed else "fail", "outcome": score.outcome,
                "answer": probe.answer, "reason": probe.reason, "grader_evidence": _evidence(score),
            })
    return Validation(version, overall, dict(sorted(tables["type"].items())),
                      dict(sorted(tables["kind"].items())), misjudged,
                      by_source=dict(sorted(tables["source"].items())),
                      by_corpus=dict(sorted(tables["corpus"].items())))


def _evidence(score: Score) -> dict[str, Any]:
    return {
        "unmatched_groups": [list(g) for g in score.unmatched_groups],
        "must_not_include_hits": list(score.must_not_include_hits),
        "typed_checks": [{"check": c.check, "passed": c.passed, "reason": c.reason}
                         for c in score.typed_checks],
        "abstention_signal": score.abstention_signal,
        "decisive_claim_supported": score.decisive_claim_supported,
        "artifact_pass": score.artifact_pass,
    }
