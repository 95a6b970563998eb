"""Aggregate per-case scores into a condition x question-type scorecard.

Every cell keeps the task ids it was computed from (and which of them passed,
and which got each outcome), so any number in a report can be traced back to
the case records in `cases.jsonl`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .metrics import mean
from .scoring import OUTCOMES
from .tasks import QUESTION_TYPES

ALL_TYPES = "all"


class ScorecardError(ValueError):
    """A case record cannot be aggregated (missing field, duplicate case, ...)."""


@dataclass(frozen=True)
class Cell:
    """Aggregates over the cases of one condition and one question type (or 'all')."""

    condition: str
    question_type: str
    task_ids: tuple[str, ...]
    passed_task_ids: tuple[str, ...]
    outcome_task_ids: dict[str, tuple[str, ...]]
    mean_recall_admitted: float | None
    mean_recall_candidates: float | None
    mean_mrr_candidates: float | None
    unknown_citations: int
    unsupported_claims: int
    mean_prompt_tokens: float | None
    mean_seconds: float | None
    grader_versions: tuple[str, ...] = field(default=())
    # What the systems reported about their own unknown citations (a reader that removes
    # them from its text reports them here; the instrument's count of that text is zero).
    reported_unknown_citations: int = 0

    @property
    def cases(self) -> int:
        return len(self.task_ids)

    @property
    def passed(self) -> int:
        return len(self.passed_task_ids)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.cases if self.cases else None

    @property
    def outcome_counts(self) -> dict[str, int]:
        return {label: len(self.outcome_task_ids.get(label, ())) for label in OUTCOMES}

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "question_type": self.question_type,
            "cases": self.cases,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "outcome_counts": self.outcome_counts,
            "mean_recall_admitted": self.mean_recall_admitted,
            "mean_recall_candidates": self.mean_recall_candidates,
            "mean_mrr_candidates": self.mean_mrr_candidates,
            "unknown_citations": self.unknown_citations,
            "reported_unknown_citations": self.reported_unknown_citations,
            "unsupported_claims": self.unsupported_claims,
            "mean_prompt_tokens": self.mean_prompt_tokens,
            "mean_seconds": self.mean_seconds,
            "grader_versions": list(self.grader_versions),
            "task_ids": list(self.task_ids),
            "passed_task_ids": list(self.passed_task_ids),
            "outcome_task_ids": {k: list(v) for k, v in self.outcome_task_ids.items()},
        }


@dataclass(frozen=True)
class Scorecard:
    """Cells keyed by (condition, question type); question type 'all' sums a condition."""

    conditions: tuple[str, ...]
    question_types: tuple[str, ...]
    cells: dict[tuple[str, str], Cell]

    def cell(self, condition: str, question_type: str = ALL_TYPES) -> Cell | None:
        return self.cells.get((condition, question_type))

    def to_dict(self) -> dict[str, Any]:
        return {
            "conditions": list(self.conditions),
            "question_types": list(self.question_types),
            "cells": [cell.to_dict() for cell in self.cells.values()],
        }

    def to_text(self) -> str:
        """Two plain-text tables: pass counts by type, then detail per condition."""
        columns = [*self.question_types, ALL_TYPES]
        pass_rows = [["condition", *columns]]
        for condition in self.conditions:
            row = [condition]
            for qtype in columns:
                cell = self.cell(condition, qtype)
                row.append(f"{cell.passed}/{cell.cases}" if cell else "-")
            pass_rows.append(row)

        detail_header = [
            "condition", "pass", *_OUTCOME_ABBREVIATIONS.values(),
            "R@adm", "R@cand", "MRR@cand", "unk.cit", "unk.rep", "unsup.cl", "prompt tok", "sec",
        ]
        detail_rows = [detail_header]
        for condition in self.conditions:
            cell = self.cells[(condition, ALL_TYPES)]
            counts = cell.outcome_counts
            detail_rows.append([
                condition,
                f"{cell.passed}/{cell.cases}",
                *(str(counts[label]) for label in _OUTCOME_ABBREVIATIONS),
                _fmt(cell.mean_recall_admitted),
                _fmt(cell.mean_recall_candidates),
                _fmt(cell.mean_mrr_candidates),
                str(cell.unknown_citations),
                str(cell.reported_unknown_citations),
                str(cell.unsupported_claims),
                _fmt(cell.mean_prompt_tokens, digits=0),
                _fmt(cell.mean_seconds, digits=1),
            ])
        legend = ", ".join(f"{short}={label}" for label, short in _OUTCOME_ABBREVIATIONS.items())
        versions = sorted({v for cell in self.cells.values() for v in cell.grader_versions})
        # Scores from different grader versions answer different questions; say so loudly.
        version_line = (
            f"grader: {versions[0]}" if len(versions) == 1
            else f"WARNING: mixed grader versions {versions}"
        )
        return "\n".join([
            version_line,
            "Passed / cases by condition and question type",
            _render(pass_rows),
            "",
            "All question types, per condition",
            _render(detail_rows),
            f"outcomes: {legend}",
        ])


_OUTCOME_ABBREVIATIONS = {
    "correct_answer": "ok",
    "correct_evidenced_negative": "ok-neg",
    "correct_abstention": "ok-abst",
    "false_abstention": "false-abst",
    "missed_evidence_abstention": "missed-ev",
    "unsupported_answer": "unsup-ans",
    "unsupported_claim": "unsup-claim",
    "wrong_answer": "wrong",
}


def build_scorecard(records: Iterable[Mapping[str, Any]]) -> Scorecard:
    """Aggregate case records (`condition`, `question_type`, `task_id`, `score` dict)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    seen_cases: set[tuple[str, str]] = set()
    conditions: list[str] = []
    present_types: set[str] = set()
    for position, record in enumerate(records):
        for key in ("condition", "question_type", "task_id", "score"):
            if key not in record:
                raise ScorecardError(f"record #{position}: field '{key}' is required")
        condition, qtype, task_id = record["condition"], record["question_type"], record["task_id"]
        if (condition, task_id) in seen_cases:
            raise ScorecardError(
                f"record #{position}: task '{task_id}' appears twice under condition '{condition}'"
            )
        score = record["score"]
        owner = (score.get("task_id", task_id), score.get("condition", condition))
        if owner != (task_id, condition):
            raise ScorecardError(
                f"record #{position}: score belongs to task '{score.get('task_id')}' "
                f"({score.get('condition')}), record says '{task_id}' ({condition})"
            )
        seen_cases.add((condition, task_id))
        if condition not in conditions:
            conditions.append(condition)
        present_types.add(qtype)
        groups.setdefault((condition, qtype), []).append(record)
        groups.setdefault((condition, ALL_TYPES), []).append(record)

    known = [t for t in QUESTION_TYPES if t in present_types]
    question_types = tuple(known + sorted(present_types - set(known)))
    cells = {
        (condition, qtype): _cell(condition, qtype, groups[(condition, qtype)])
        for condition in conditions
        for qtype in (*question_types, ALL_TYPES)
        if (condition, qtype) in groups
    }
    return Scorecard(tuple(conditions), question_types, cells)


def _cell(condition: str, qtype: str, records: list[Mapping[str, Any]]) -> Cell:
    outcome_ids: dict[str, list[str]] = {}
    for record in records:
        outcome_ids.setdefault(record["score"]["outcome"], []).append(record["task_id"])
    scores = [record["score"] for record in records]
    return Cell(
        condition=condition,
        question_type=qtype,
        task_ids=tuple(r["task_id"] for r in records),
        passed_task_ids=tuple(r["task_id"] for r in records if r["score"]["passed"]),
        outcome_task_ids={label: tuple(ids) for label, ids in outcome_ids.items()},
        mean_recall_admitted=mean(_stage_value(s, "admitted", "recall") for s in scores),
        mean_recall_candidates=mean(_stage_value(s, "candidates", "recall") for s in scores),
        mean_mrr_candidates=mean(_stage_value(s, "candidates", "reciprocal_rank") for s in scores),
        unknown_citations=sum(len(s.get("unknown_citations", ())) for s in scores),
        reported_unknown_citations=sum(
            len(s.get("reported_unknown_citations", ())) for s in scores
        ),
        unsupported_claims=sum(len(s.get("unsupported_claims", ())) for s in scores),
        mean_prompt_tokens=mean(s.get("usage", {}).get("prompt_tokens") for s in scores),
        mean_seconds=mean(s.get("usage", {}).get("seconds") for s in scores),
        grader_versions=tuple(sorted({str(s.get("grader_version")) for s in scores})),
    )


def _stage_value(score: Mapping[str, Any], stage: str, name: str) -> float | None:
    metrics = score.get("stage_metrics", {}).get(stage)
    return metrics.get(name) if metrics else None


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _render(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
             for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)
