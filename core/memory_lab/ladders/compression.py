"""The compression condition read at answer level: does cutting the reader's context buy time
without losing passes?

`bench compression` screened sentence compression without reading (how many tokens it cuts, how
many evidence quotes survive) and chose the share kept, 0.6, on the dev tasks of the fixture and
the PEPs. This reads the same dev tasks twice with the default reader: `oracle-source` (each
expected file whole) and `oracle-source-compressed` (each file cut to its sentences nearest the
question), and reports both pass rates with bootstrap intervals, their paired difference, the
prompt tokens and the seconds an answer. The compressed condition admits the same sources, so
recall at admitted is the same by construction; the question is the pass rate.

The `oracle-source` answers were read by the answer ladder and are in the committed answer cache
(`benchmarks/answer-cache`, read first here as the book does), so their seconds were measured
in that study's runs, on the same machine kind, not beside these: prompt tokens are the cost
measure that does not move with the machine's load.

    memory-lab study compression-reading run [STUDY_DIR]
    memory-lab study compression-reading summarise STUDY_DIR
        (writes benchmarks/results/compression-reading.json)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_lab import intervals
from memory_lab.ladders import study_cli
from memory_lab.studies.setup import display_path, repo_path

READER = "qwen-1.5b"
# The style the committed study read with; pinned, so that resuming or reproducing it reads
# the same prompts when the configured default changes (chapter 9 chose `itemised` later).
STYLE = "structured"
CONDITIONS = ("oracle-source", "oracle-source-compressed")
CORPORA = ("fixture", "peps")  # the corpora the screen chose the share on
SPLIT = "dev"
COMMITTED_ANSWERS = "benchmarks/answer-cache"


def run(study_dir: str | Path | None = None, *, runs_root: str | Path = "benchmarks/runs",
        progress: bool = True) -> Path:
    """Read both conditions on each corpus's dev tasks; resume `study_dir` when given."""
    from memory_baseline.answer_cache import READ_FIRST_ENV

    found = {name: paths for name, paths in study_cli.standard_corpora((), 0).items() if name in CORPORA}
    study = study_cli.open_study(study_dir, runs_root, "compression-reading",
                                 {"conditions": list(CONDITIONS), "reader": READER, "split": SPLIT}, found)
    runs: list[dict[str, Any]] = study.manifest.setdefault("runs", [])
    before = os.environ.get(READ_FIRST_ENV)
    layers = [p for p in (before or "").split(os.pathsep) if p]
    os.environ[READ_FIRST_ENV] = os.pathsep.join(dict.fromkeys([*layers, str(repo_path(COMMITTED_ANSWERS))]))
    try:
        _read(study, runs, found, progress)
    finally:  # the committed layer is this study's, not the calling process's
        if before is None:
            os.environ.pop(READ_FIRST_ENV, None)
        else:
            os.environ[READ_FIRST_ENV] = before
    study.finish()
    return study.run_dir


def _read(study: Any, runs: list[dict[str, Any]], found: Mapping[str, tuple[Path, Path]],
          progress: bool) -> None:
    """One evaluation run per corpus, each recorded in the study as it completes."""
    from memory_baseline.config import Config
    from memory_baseline.server import connect
    from memory_lab.ladders.evaluation import run_evaluation

    with connect() as conn:
        for corpus, (history, tasks) in found.items():
            if any(r["slot"] == corpus for r in runs):
                continue
            slot = study.run_dir / "runs" / corpus
            started = sorted(p.parent for p in slot.glob("*/manifest.json"))
            config = Config(index=f"compression_{corpus}").with_overrides(reader={"style": STYLE})
            run_dir = run_evaluation(conn, config, tasks, history,
                                     list(CONDITIONS), runs_root=slot, reader_name=READER, split=SPLIT,
                                     progress=progress, resume=started[-1] if started else None)
            runs.append({"slot": corpus, "corpus": corpus, "conditions": list(CONDITIONS),
                         "run_dir": display_path(run_dir), "status": "complete"})
            study.record("runs", runs)


def _cost(members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Prompt and completion tokens over every answer; seconds over the answers the model read
    (an abstention with nothing to read makes no call)."""
    read = [c for c in members if c.get("answer_calls")]
    seconds = [c.get("answer_seconds") or 0.0 for c in read]
    return {"cases": len(members),
            "prompt_tokens": round(statistics.fmean(c["tokens"]["prompt"] for c in members), 1),
            "completion_tokens": round(statistics.fmean(c["tokens"]["completion"] for c in members), 1),
            "mean_seconds_per_answer": round(statistics.fmean(seconds), 1) if seconds else None,
            "median_seconds_per_answer": round(statistics.median(seconds), 1) if seconds else None,
            "answers_from_cache": sum(bool(c.get("cache_hit")) for c in members)}


def summarise(study_dir: str | Path) -> dict[str, Any]:
    """Pass rates with intervals (pooled and per corpus), the paired difference, and the cost."""
    cases = study_cli.study_cases(study_dir)
    if not cases:
        raise ValueError(f"{study_dir} holds no case yet")
    names = sorted({c["corpus"] for c in cases})
    comparison = [(CONDITIONS[1], CONDITIONS[0])]
    scopes = {"all": cases, **{n: [c for c in cases if c["corpus"] == n] for n in names}}
    study = repo_path(study_dir)
    manifest = json.loads((study / "manifest.json").read_text(encoding="utf-8"))
    differences = intervals.ladder_differences(cases, comparison, per_type=False)
    return {"study": display_path(study), "complete": manifest.get("status") == "complete",
            "split": SPLIT, "reader": READER,
            "tasks": len({c["task_id"] for c in cases}),
            "tasks_per_corpus": {n: len({c["task_id"] for c in scopes[n]}) for n in names},
            "rates": {scope: [r.to_dict() for r in intervals.pass_rates(members, CONDITIONS, per_type=False)]
                      for scope, members in scopes.items()},
            "paired": {scope: [d.to_dict() for d in intervals.ladder_differences(members, comparison,
                                                                                  per_type=False)]
                       for scope, members in scopes.items()},
            "reading": intervals.reading(differences),
            "cost": [{"condition": condition, "corpus": scope,
                      **_cost([c for c in members if c["condition"] == condition])}
                     for scope, members in scopes.items() for condition in CONDITIONS
                     if any(c["condition"] == condition for c in members)]}


def main(argv: list[str] | None = None) -> int:
    return study_cli.main(argv, description=__doc__.splitlines()[0], kind="compression reading", run=run,
                          summarise=summarise, default_out="benchmarks/results/compression-reading.json")


if __name__ == "__main__":
    sys.exit(main())
