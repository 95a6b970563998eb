"""Chapter 7: the ladder's cost rows and the latest run of a kind."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .setup import repo_path

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
