"""Recall at candidates and at admitted per question type, with bootstrap intervals, from a run.

Reads a run directory of `memory-lab evaluate` (its `cases.jsonl`), and for
each retrieval condition reports, per question type and split, the mean recall
of expected sources at the ``candidates`` stage (the fused list) and at the
``admitted`` stage (what the reader saw), each with a percentile bootstrap 95%
interval over tasks (numpy, seeded). It also checks the named-document rule:
for every task whose question names a document by its number ("PEP 572"), the
first admitted passage comes from that document's file.

    memory-lab study named-recall RUN_DIR --out benchmarks/results/peps-retrieval.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from memory_baseline.identifiers import document_keys, file_keys
from memory_lab.stats import bootstrap_interval
from memory_lab.studies.display import pivot, show_figure, show_table  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import display_path, repo_path, run_caption  # noqa: F401 - called by the chapter

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261203
STAGES = ("candidates", "admitted")


def bootstrap_mean(values: list[float], samples: int = BOOTSTRAP_SAMPLES,
                   seed: int = BOOTSTRAP_SEED) -> dict:
    """Mean with a percentile bootstrap 95% interval (resampling tasks with replacement)."""
    if not values:
        return {"mean": None, "low": None, "high": None, "n": 0}
    low, high = bootstrap_interval(values, resamples=samples, seed=seed)
    return {"mean": round(float(np.mean(values)), 4), "low": round(low, 4),
            "high": round(high, 4), "n": len(values)}


def read_cases(run_dir: Path) -> list[dict]:
    path = run_dir / "cases.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir} has no cases.jsonl (not a run directory)")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def named_document_check(case: dict) -> dict | None:
    """None when the query names no document; else whether the first admitted passage is it."""
    keys = {key for key in document_keys(case["query"]) if "#" in key}  # not version keys
    if not keys:
        return None
    admitted = case.get("admitted") or []
    first = admitted[0]["source_id"] if admitted else None
    ok = first is not None and bool(keys & set(file_keys(first)))
    return {"task_id": case["task_id"], "condition": case["condition"], "named": sorted(keys),
            "first_admitted": first, "ok": ok}


def summarise(cases: list[dict]) -> dict:
    by_condition: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        if case.get("context_source") == "retrieval":
            by_condition[case["condition"]].append(case)
    conditions = {}
    checks = []
    for condition, rows in sorted(by_condition.items()):
        groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for row in rows:
            metrics = row["score"]["stage_metrics"]
            for split in (row.get("split") or "all", "all"):
                for question_type in (row["question_type"], "all"):
                    for stage in STAGES:
                        if stage in metrics:
                            groups[(split, question_type)][stage].append(metrics[stage]["recall"])
            check = named_document_check(row)
            if check is not None:
                checks.append(check)
        table = {}
        for (split, question_type), stages in sorted(groups.items()):
            table.setdefault(split, {})[question_type] = {
                f"recall_at_{stage}": bootstrap_mean(stages[stage]) for stage in STAGES}
        conditions[condition] = table
    failures = [c for c in checks if not c["ok"]]
    return {
        "conditions": conditions,
        "named_document_first": {"checked": len(checks), "failures": failures,
                                 "holds": not failures},
        "bootstrap": {"samples": BOOTSTRAP_SAMPLES, "seed": BOOTSTRAP_SEED,
                      "interval": "percentile 95%, tasks resampled with replacement"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--out", default=None, help="write the JSON document here")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    try:
        cases = read_cases(run_dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    document = {"run_dir": str(run_dir), "run_id": manifest.get("run_id", run_dir.name),
                **summarise(cases)}
    text = json.dumps(document, indent=2) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0 if document["named_document_first"]["holds"] else 1


if __name__ == "__main__":
    sys.exit(main())
