"""Validate the grader against expert-labelled answers before trusting its pass rates.

The probes (`fixtures/grader/probes.json`) are crafted answers to every task,
each labelled pass or fail by reading the ledger and the history, with a reason.
`validate_grader` scores each one with `score_task` exactly as a run would
(the passages the reader saw are whole files of the corpus) and compares the
verdict with the label: agreement, false-pass rate (answers labelled wrong that
pass) and false-fail rate, per question type, and the probes it still gets wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .outputs import Passage, SystemOutput
from .scoring import ClaimJudge, Score, score_task
from .tasks import TaskSet

PROBE_FILE_VERSION = 1
LABELS = ("pass", "fail")
_PROBE_FIELDS = {"id", "task_id", "kind", "answer", "abstained", "label", "reason", "admitted",
                 "citations", "reported_unknown_citations"}


class ProbeFileError(ValueError):
    """A probe file breaks its format; the message names the probe and the field."""


@dataclass(frozen=True)
class Probe:
    id: str
    task_id: str
    kind: str
    answer: str
    abstained: bool
    label: str
    reason: str
    admitted: tuple[str, ...] | None = None  # None: the task's expected sources
    citations: tuple[str, ...] = ()
    reported_unknown_citations: tuple[str, ...] = ()


def load_probes(path: str | Path) -> list[Probe]:
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    if document.get("version") != PROBE_FILE_VERSION:
        raise ProbeFileError(f"{path}: field 'version' must be {PROBE_FILE_VERSION}")
    probes: list[Probe] = []
    for position, raw in enumerate(document.get("probes", [])):
        where = f"probe '{raw.get('id', f'#{position}')}'"
        unknown = sorted(set(raw) - _PROBE_FIELDS)
        if unknown:
            raise ProbeFileError(f"{where}: unknown field '{unknown[0]}'")
        if raw.get("label") not in LABELS:
            raise ProbeFileError(f"{where}: field 'label' must be 'pass' or 'fail'")
        if not str(raw.get("reason", "")).strip():
            raise ProbeFileError(f"{where}: field 'reason' is required")
        admitted = raw.get("admitted")
        probes.append(Probe(
            id=raw["id"], task_id=raw["task_id"], kind=raw["kind"], answer=raw["answer"],
            abstained=bool(raw.get("abstained", False)), label=raw["label"],
            reason=raw["reason"], admitted=tuple(admitted) if admitted is not None else None,
            citations=tuple(raw.get("citations", ())),
            reported_unknown_citations=tuple(raw.get("reported_unknown_citations", ())),
        ))
    return probes


def probe_output(probe: Probe, tasks: TaskSet, corpus_root: str | Path) -> SystemOutput:
    """The SystemOutput a system giving this answer would report (whole files admitted)."""
    task = tasks.get(probe.task_id)
    admitted = probe.admitted if probe.admitted is not None else task.expected_sources
    root = Path(corpus_root)
    passages = [
        Passage(source_id=s, chunk_id=f"{s}#0", text=(root / s).read_text(encoding="utf-8"))
        for s in admitted
    ]
    return SystemOutput(
        task_id=task.id, condition="probe", answer=probe.answer, abstained=probe.abstained,
        stages={"admitted": list(admitted)}, admitted_passages=passages,
        citations=list(probe.citations),
        unknown_citations=list(probe.reported_unknown_citations),
    )


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

    def to_dict(self) -> dict[str, Any]:
        return {"probes": self.total, "true_pass": self.true_pass, "false_fail": self.false_fail,
                "false_pass": self.false_pass, "true_fail": self.true_fail,
                "agreement": self.agreement, "false_pass_rate": self.false_pass_rate,
                "false_fail_rate": self.false_fail_rate}


@dataclass
class Validation:
    grader_version: str
    overall: Confusion
    by_question_type: dict[str, Confusion]
    by_kind: dict[str, Confusion]
    misjudged: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "grader_version": self.grader_version,
            "overall": self.overall.to_dict(),
            "by_question_type": {k: v.to_dict() for k, v in self.by_question_type.items()},
            "by_kind": {k: v.to_dict() for k, v in self.by_kind.items()},
            "misjudged": self.misjudged,
        }


def validate_grader(
    probes: Iterable[Probe], tasks: TaskSet, corpus_root: str | Path,
    claim_judge: ClaimJudge | None = None,
) -> Validation:
    """Score every probe and compare the grader's verdict with the expert label."""
    overall = Confusion()
    by_type: dict[str, Confusion] = {}
    by_kind: dict[str, Confusion] = {}
    misjudged: list[dict[str, Any]] = []
    version = ""
    for probe in probes:
        task = tasks.get(probe.task_id)
        score: Score = score_task(task, probe_output(probe, tasks, corpus_root), claim_judge)
        version = score.grader_version
        for table in (overall, by_type.setdefault(task.question_type, Confusion()),
                      by_kind.setdefault(probe.kind, Confusion())):
            table.add(probe.label, score.passed)
        if score.passed != (probe.label == "pass"):
            misjudged.append({
                "id": probe.id, "question_type": task.question_type, "label": probe.label,
                "grader": "pass" if score.passed else "fail", "outcome": score.outcome,
                "answer": probe.answer, "reason": probe.reason, "grader_evidence": _evidence(score),
            })
    return Validation(version, overall, dict(sorted(by_type.items())),
                      dict(sorted(by_kind.items())), misjudged)


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
