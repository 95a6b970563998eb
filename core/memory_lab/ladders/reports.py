"""A run directory's scorecard, summary rows and text report, rebuilt from its `cases.jsonl`.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memory_instrument import (
    OUTCOMES,
    CheckResult,
    ClaimCheck,
    Score,
    Scorecard,
    StageMetrics,
    build_scorecard,
    downstream_gain,
)
from memory_lab.conditions import EvaluationError
from memory_lab.ladders.downstream_tasks import (
    MATCHED_CONTROL,
    downstream_gains_by_condition,
    downstream_table_text,
)
from memory_lab.runs import (
    RunError,
    read_manifest,
    write_json,
)

OUTCOME_LABELS = OUTCOMES


def _read_cases(path: Path) -> list[dict[str, Any]]:
    """Records of cases.jsonl; a torn last line (an interrupted write) is dropped from the file."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    cases = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if number == len(lines):
                path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases),
                                encoding="utf-8")
                break
            raise EvaluationError(f"{path}:{number}: not a JSON record ({exc.msg})") from exc
    return cases


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest and the case records of a run directory."""
    run_dir = Path(run_dir)
    try:
        manifest = read_manifest(run_dir)
    except RunError as exc:
        raise EvaluationError(str(exc)) from None
    return manifest, _read_cases(run_dir / "cases.jsonl")


def report(run_dir: str | Path) -> Scorecard:
    """The scorecard of a run, rebuilt from its cases.jsonl by the instrument."""
    _, cases = load_run(run_dir)
    return build_scorecard(cases)


def score_from_dict(data: dict[str, Any]) -> Score:
    """Rebuild a `Score` from its `to_dict` form (as stored in cases.jsonl)."""
    def metric(d: dict[str, Any]) -> StageMetrics:
        return StageMetrics(**{**d, "ranked_sources": tuple(d["ranked_sources"]),
                               "found_expected": tuple(d["found_expected"]),
                               "missing_expected": tuple(d["missing_expected"])})

    def claim(d: dict[str, Any]) -> ClaimCheck:
        return ClaimCheck(**{**d, "cited_ids": tuple(d["cited_ids"])})

    tuples = ("admitted_sources", "expected_admitted", "extraneous_admitted",
              "must_not_include_hits", "cited_sources", "unknown_citations",
              "reported_unknown_citations", "uncited_claims", "notes")
    return Score(**{
        **data,
        **{name: tuple(data[name]) for name in tuples},
        "unmatched_groups": tuple(tuple(g) for g in data["unmatched_groups"]),
        "stage_metrics": {k: metric(v) for k, v in data["stage_metrics"].items()},
        "supported_claims": tuple(claim(c) for c in data["supported_claims"]),
        "unsupported_claims": tuple(claim(c) for c in data["unsupported_claims"]),
        "artifact_checks": tuple(CheckResult(**c) for c in data["artifact_checks"]),
    })


def downstream_gains(
    cases: Iterable[dict[str, Any]], baseline_condition: str = "no-memory"
) -> list[dict[str, Any]]:
    """For each downstream task, each condition's artifact-check gain over no-memory."""
    by_task: dict[str, dict[str, dict[str, Any]]] = {}
    for case in cases:
        if case["question_type"] == "downstream" and case["score"].get("artifact_checks"):
            by_task.setdefault(case["task_id"], {})[case["condition"]] = case
    gains = []
    for per_condition in by_task.values():
        without = per_condition.get(baseline_condition)
        if without is None:
            continue
        for name, case in per_condition.items():
            if name != baseline_condition:
                gains.append(downstream_gain(score_from_dict(case["score"]),
                                             score_from_dict(without["score"])))
    return gains


def summary_rows(scorecard: Scorecard) -> list[dict[str, Any]]:
    rows = []
    for (condition, qtype), cell in scorecard.cells.items():
        counts = cell.outcome_counts
        rows.append({
            "condition": condition, "question_type": qtype, "n": cell.cases,
            "passed": cell.passed, "pass_rate": _round(cell.pass_rate),
            **{label: counts[label] for label in OUTCOME_LABELS},
            "mean_recall_candidates": _round(cell.mean_recall_candidates),
            "mean_recall_admitted": _round(cell.mean_recall_admitted),
            "mean_mrr_candidates": _round(cell.mean_mrr_candidates),
            "mean_prompt_tokens": _round(cell.mean_prompt_tokens, 1),
            "mean_seconds": _round(cell.mean_seconds),
        })
    return rows


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def report_document(run_dir: str | Path) -> dict[str, Any]:
    """Everything `report` shows, as one JSON-ready document."""
    manifest, cases = load_run(run_dir)
    scorecard = build_scorecard(cases)
    return {
        "run_id": manifest.get("run_id"),
        "status": manifest.get("status"),
        "grader_version": manifest.get("grader_version"),
        "scorecard": scorecard.to_dict(),
        "downstream_gains": downstream_gains(cases),
        "downstream_by_condition": [row.to_dict() for row in downstream_gains_by_condition(cases)],
        "full_history_input": _full_history_input(cases),
        "best": (manifest.get("best") or {}).get("choice"),
    }


def _full_history_input(cases: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    full = [c for c in cases if c["condition"] == "full-history"]
    if not full:
        return None
    tokens = [c["context"]["prompt_tokens"] for c in full]
    return {"token_budget": full[0]["context"]["token_budget"],
            "mean_prompt_tokens": round(sum(tokens) / len(tokens), 1), "max_prompt_tokens": max(tokens),
            "admitted_sources": len(full[0]["admitted"]),
            "cut_sources": full[0]["context"]["cut_sources"]}


def report_text(run_dir: str | Path) -> str:
    """The scorecard tables, then the downstream gains over no-memory and the full-history size."""
    document = report_document(run_dir)
    lines = [f"run {document['run_id']} ({document['status']})", report(run_dir).to_text()]
    if document["downstream_gains"]:
        lines += ["", "Downstream tasks: artifact checks passed, with history vs no-memory"]
        for gain in document["downstream_gains"]:
            lines.append(f"  {gain['task_id']:<32} {gain['with_condition']:<18} "
                         f"{gain['checks_passed_with']}/{gain['checks_total']} vs "
                         f"{gain['checks_passed_without']}/{gain['checks_total']} "
                         f"(gain {gain['gain']:+d})")
    manifest, cases = load_run(run_dir)
    table = downstream_table_text(downstream_gains_by_condition(cases),
                                  matched=manifest.get("no_memory_control") == MATCHED_CONTROL)
    if table:
        lines += ["", *table]
    full = document["full_history_input"]
    if full:
        lines += ["", f"full-history input: mean {full['mean_prompt_tokens']} prompt tokens "
                      f"(max {full['max_prompt_tokens']}, budget {full['token_budget']}); "
                      f"{full['admitted_sources']} sources admitted, {len(full['cut_sources'])} cut"]
    if document["best"]:
        lines += ["", f"best (tuned on dev): {json.dumps(document['best'], sort_keys=True)}"]
    return "\n".join(lines)


def write_reports(run_dir: str | Path) -> Scorecard:
    """(Re)write summary.csv, scorecard.txt and scorecard.json from cases.jsonl."""
    run_dir = Path(run_dir)
    scorecard = report(run_dir)
    rows = summary_rows(scorecard)
    with (run_dir / "summary.csv").open("w", encoding="utf-8", newline="") as handle:
        columns = ["condition", "question_type", "n", "passed", "pass_rate", *OUTCOME_LABELS,
                   "mean_recall_candidates", "mean_recall_admitted", "mean_mrr_candidates",
                   "mean_prompt_tokens", "mean_seconds"]
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "scorecard.txt").write_text(report_text(run_dir) + "\n", encoding="utf-8")
    write_json(run_dir / "scorecard.json", report_document(run_dir))
    return scorecard
