"""The retrieval-level ladder: every task of every corpus, no LLM reading.

The answer-level ladder costs a minute or more an answer; what retrieval finds costs
milliseconds. This runs the retrieval rungs (`lexical`, `dense`, `hybrid`, `best`)
with the extractive reader over the fixture, the PEPs and generated worlds, one
evaluation run per corpus inside one study directory (resumable: pass it back), then
`hybrid-reranked` (the 0.5B LLM judge over hybrid's top 20) per corpus in a slot of
its own, last because the judge costs seconds a passage (its scores are cached), and
summarises recall of the expected sources at the fused candidates and at what the
reader was admitted, with bootstrap 95% intervals, per corpus, per question type and
pooled, plus paired differences between rungs on the same tasks. `best` is tuned on
each task file's dev tasks and reported on its test tasks only.

    memory-lab study retrieval-ladder run [STUDY_DIR]
    memory-lab study retrieval-ladder summarise STUDY_DIR --out benchmarks/results/retrieval-ladder.json

(`cited` is left out: it measures the reader, and the extractive reader here is not
the one the answer-level ladder uses.)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_lab.chapters.peps import bootstrap_mean
from memory_lab.ladders import study_cli
from memory_lab.stats import bootstrap_interval
from memory_lab.studies.setup import display_path, repo_path

CONDITIONS = ("lexical", "dense", "hybrid", "best")
RERANKED = "hybrid-reranked"
# Adjacent rungs compared on the same tasks.
COMPARISONS = (("dense", "lexical"), ("hybrid", "lexical"), ("hybrid", "dense"), ("best", "hybrid"),
               (RERANKED, "hybrid"))
STAGES = ("candidates", "admitted")
WORLD_SEEDS = (21, 22, 23)
WORLD_DOCS = 400


def corpora(worlds_root: str | Path = "benchmarks/worlds") -> dict[str, tuple[Path, Path]]:
    """name -> (history folder, task file): the fixture, the PEPs and three 400-document worlds."""
    return study_cli.standard_corpora(WORLD_SEEDS, WORLD_DOCS, worlds_root)


def phases(names: Sequence[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(slot, corpus, conditions) in running order: the cheap rungs everywhere, then the reranked."""
    return [(name, name, CONDITIONS) for name in names] + [(f"{name}.reranked", name, (RERANKED,))
                                                          for name in names]


def run(study_dir: str | Path | None = None, *, runs_root: str | Path = "benchmarks/runs",
        progress: bool = True) -> Path:
    """Evaluate every corpus under the retrieval rungs; resume `study_dir` when given."""
    from memory_baseline.config import Config
    from memory_baseline.server import connect
    from memory_lab.conditions import DEFAULT_RERANKER
    from memory_lab.ladders.evaluation import run_evaluation

    found = corpora()
    study = study_cli.open_study(study_dir, runs_root, "retrieval-ladder",
                                 {"conditions": list(CONDITIONS), "reader": "extractive"}, found)
    # Added after the first study's cheap rungs were done: recorded so a resumed study says so.
    study.manifest["parameters"].setdefault("reranked", {"condition": RERANKED, "reranker": DEFAULT_RERANKER})
    runs: list[dict[str, Any]] = study.manifest.setdefault("runs", [])
    with connect() as conn:
        for slot_name, name, conditions in phases(list(found)):
            if any(r.get("slot", r["corpus"]) == slot_name for r in runs):
                continue
            history, tasks = found[name]
            slot = study.run_dir / "runs" / slot_name
            started = sorted(p.parent for p in slot.glob("*/manifest.json"))
            config = Config(index=f"retrieval_ladder_{name}")
            run_dir = run_evaluation(conn, config, tasks, history, list(conditions), runs_root=slot,
                                     reader_name="extractive", reranker_name=DEFAULT_RERANKER,
                                     progress=progress, resume=started[-1] if started else None)
            runs.append({"slot": slot_name, "corpus": name, "run_dir": display_path(run_dir),
                         "status": "complete"})
            study.record("runs", runs)
    study.finish()
    return study.run_dir


def _recalls(cases: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], float]:
    """(condition, corpus/task, stage) -> recall, for retrieval cases with expected sources."""
    out = {}
    for case in cases:
        if case.get("context_source") != "retrieval":
            continue
        metrics = case["score"].get("stage_metrics", {})
        for stage in STAGES:
            if stage in metrics and metrics[stage].get("recall") is not None:
                out[(case["condition"], case["task_id"], stage)] = float(metrics[stage]["recall"])
    return out


def _reported(case: Mapping[str, Any]) -> bool:
    """`best` is tuned on dev tasks, so only its test tasks are reported."""
    return case["condition"] != "best" or case.get("split") == "test"


def summarise(study_dir: str | Path) -> dict[str, Any]:
    """Recall at candidates and admitted with intervals: pooled, per corpus, per question type."""
    study_dir = repo_path(study_dir)
    manifest = json.loads((study_dir / "manifest.json").read_text(encoding="utf-8"))
    # Unfinished slots too (the reranked rung reads for hours); the manifest's status says which.
    cases = study_cli.study_cases(study_dir)  # task ids keyed corpus/task
    cases = [c for c in cases if _reported(c)]
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for case in cases:
        for corpus in ("all", case["corpus"]):
            for kind in ("all", case["question_type"]):
                groups.setdefault((corpus, kind, case["condition"]), []).append(case)
    table = []
    for (corpus, kind, condition), members in sorted(groups.items()):
        recalls = _recalls(members)
        row = {"corpus": corpus, "question_type": kind, "condition": condition,
               "tasks": len({c["task_id"] for c in members})}
        for stage in STAGES:
            row[f"recall_at_{stage}"] = bootstrap_mean([v for (_, _, s), v in recalls.items() if s == stage])
        table.append(row)
    paired = []
    recalls = _recalls(cases)
    for corpus in ["all", *sorted({c["corpus"] for c in cases})]:
        for upper, lower in COMPARISONS:
            for stage in STAGES:
                tasks = sorted({t for (c, t, s) in recalls if c == upper and s == stage
                                and (corpus == "all" or t.startswith(corpus + "/"))}
                               & {t for (c, t, s) in recalls if c == lower and s == stage})
                if not tasks:
                    continue
                diffs = [recalls[(upper, t, stage)] - recalls[(lower, t, stage)] for t in tasks]
                low, high = bootstrap_interval(diffs)
                paired.append({"corpus": corpus, "upper": upper, "lower": lower, "stage": stage,
                               "tasks": len(tasks), "difference": round(float(np.mean(diffs)), 4),
                               "low": round(low, 4), "high": round(high, 4),
                               "separated": low > 0 or high < 0})
    pooled = {c["task_id"] for c in cases}
    return {"study": display_path(study_dir), "manifest": manifest, "tasks": len(pooled),
            "complete": manifest.get("status") == "complete",
            "tasks_per_corpus": {name: len({c["task_id"] for c in cases if c["corpus"] == name})
                                 for name in sorted({c["corpus"] for c in cases})},
            "note": "best is tuned on each task file's dev tasks; its rows hold test tasks only",
            "table": table, "paired": paired}


def main(argv: list[str] | None = None) -> int:
    return study_cli.main(argv, description=__doc__.splitlines()[0], kind="retrieval-level ladder", run=run,
                          summarise=summarise, default_out="benchmarks/results/retrieval-ladder.json")


if __name__ == "__main__":
    sys.exit(main())
