"""Chapter 7: the ladder's cost rows and the latest run of a kind."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_lab.studies.display import pivot, show_figure, show_table, table_frame  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import display_path, repo_path, run_caption, write_task_subset  # noqa: F401 - called by the chapter

# -- chapter 7: the ladder -------------------------------------------------------------------------


def ladder_cost_rows(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per condition: cases, pass rate, and what they cost (tokens, reader calls, seconds)."""
    by_condition: dict[str, list[Mapping[str, Any]]] = {}
    for case in cases:
        by_condition.setdefault(case["condition"], []).append(case)
    rows = []
    for condition, members in by_condition.items():
        n = len(members)
        rows.append({
            "condition": condition, "cases": n,
            "pass_rate": round(sum(bool(c["score"]["passed"]) for c in members) / n, 3),
            "prompt_tokens_mean": round(statistics.fmean(c["tokens"]["prompt"] for c in members), 1),
            "completion_tokens_mean": round(statistics.fmean(c["tokens"]["completion"] for c in members), 1),
            "reader_calls": int(sum(c["usage"].get("calls", 0) for c in members)),
            "seconds_total": round(sum(c["timings_ms"].get("total", 0.0) for c in members) / 1000, 2),
            "cache_hits": sum(bool(c.get("cache_hit")) for c in members),
        })
    return rows


def latest_run(runs_root: str | Path, kind: str = "evaluation") -> Path | None:
    """The most recent complete run of `kind` under `runs_root` (by start time), if any."""
    root = repo_path(runs_root)
    found = []
    for manifest_path in root.glob("*/manifest.json"):
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if manifest.get("kind") == kind and manifest.get("status") == "complete":
            found.append((manifest.get("started", ""), manifest_path.parent))
    return max(found)[1] if found else None


# -- chapter 7: the committed ladders over every task ----------------------------------------------


def _rate_text(rate: float, low: float, high: float, passed: int | None = None,
               cases: int | None = None) -> str:
    counts = f" ({passed}/{cases})" if passed is not None else ""
    return f"{rate:.2f} [{low:.2f}, {high:.2f}]{counts}"


def _difference_text(difference: float, low: float, high: float) -> str:
    return f"{difference:+.3f} [{low:+.3f}, {high:+.3f}]"


def answer_rate_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer ladder's pass rates with intervals: one row per (scope, condition, question type).

    `scope` is "all" (corpora pooled) or a corpus name; `document` is
    `memory_lab.ladders.answer.summarise`'s results file.
    """
    return [{"scope": scope, "condition": r["condition"], "question_type": r["question_type"],
             "rate": _rate_text(r["rate"], r["low"], r["high"], r["passed"], r["cases"]),
             "half_width": round((r["high"] - r["low"]) / 2, 3)}
            for scope, rows in document["rates"].items() for r in rows]


def answer_paired_rows(document: Mapping[str, Any], question_type: str = "all") -> list[dict[str, Any]]:
    """The answer ladder's paired steps on the same tasks, for one question type."""
    return [{"step": f"{d['upper']} − {d['lower']}", "tasks": d["tasks"],
             "only upper": d["only_upper"], "only lower": d["only_lower"],
             "difference": _difference_text(d["difference"], d["low"], d["high"]),
             "McNemar p": round(d["mcnemar_p"], 4), "separated": d["separated"]}
            for d in document["paired"] if d["question_type"] == question_type]


def answer_paired_type_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every paired step per question type (rows for `pivot`: step x question type)."""
    return [{"step": f"{d['upper']} − {d['lower']}", "question_type": d["question_type"],
             "difference": _difference_text(d["difference"], d["low"], d["high"]) + f" ({d['tasks']})"}
            for d in document["paired"] if d["question_type"] != "all"]


def answer_stage_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Recall of the expected sources at candidates, admitted and cited per rung (rows for
    `pivot`: condition x stage), from the answer ladder's own cases."""
    return [{"condition": r["condition"], "stage": r["stage"],
             "recall": _rate_text(r["mean"], r["low"], r["high"]) + f" ({r['n']})"}
            for r in document.get("stage_recall", [])]


def prefix_cache_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """full-history read with the prefix cache against the same prompts read cold (none yet: [])."""
    check = document.get("prefix_cache")
    if not check:
        return []
    return [{"reading": name, "tasks": check["tasks"], "passed": check[name]["passed"],
             "same answer text": check["same_answer_text"], "same verdict": check["same_verdict"],
             "median s / answer": check[name]["median_seconds_per_answer"],
             "mean prompt tokens": check[name]["mean_prompt_tokens"],
             "mean tokens from cache": check[name]["mean_cached_prompt_tokens"]}
            for name in ("full-history", "full-history-cold")]


def retrieval_rate_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The retrieval ladder's recall at candidates and at admitted, pooled and per corpus."""
    rows = []
    for r in document["table"]:
        if r["question_type"] != "all":
            continue
        for stage in ("candidates", "admitted"):
            summary = r[f"recall_at_{stage}"]
            if summary.get("mean") is not None:
                rows.append({"scope": r["corpus"], "condition": r["condition"], "stage": stage,
                             "recall": _rate_text(summary["mean"], summary["low"], summary["high"]),
                             "tasks": summary["n"]})
    return rows


def retrieval_paired_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The retrieval ladder's paired steps, corpora pooled."""
    return [{"step": f"{p['upper']} − {p['lower']}", "stage": p["stage"], "tasks": p["tasks"],
             "difference": _difference_text(p["difference"], p["low"], p["high"]),
             "separated": p["separated"]}
            for p in document["paired"] if p["corpus"] == "all"]
