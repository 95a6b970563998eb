"""The answer-level ladder: the LLM reader on every task of several corpora.

Twelve fixture tasks, where one task is eight points, separate nothing. This
reads every task of the fixture, the PEPs and two generated
worlds under `no-memory`, `hybrid`, `best` and `oracle-source` with the default
reader, then `full-history` on every fixture task (its input is the oldest history up
to the reader's window, the same for every question of a corpus and as-of
date). Full-history reads those shared sources once (the reader's prefix
cache), which saves the prefill but not the slow generation at that length; the
last slot reads the first COLD_CHECK_TASKS fixture prompts again from scratch (`full-history-cold`), so
the summary says what the cache saved and whether it changed an answer. One
evaluation run per (corpus, phase) inside one study directory; every case is
appended as it is read, so an interrupted study resumes where it stopped (pass the
study directory back). Answers come from the answer cache when the same reader
has read the same prompt before (the reader studies read `oracle-source` on these
tasks already).

The summary pools the corpora (task ids are keyed by corpus), gives every rung's
pass rate with a bootstrap 95% interval, pooled, per corpus and per question type,
the paired differences of adjacent rungs on the same tasks (`memory_lab.intervals`),
the reading sentences computed from them, and each rung's cost. `best` is tuned on
each task file's dev tasks, and read and reported on its test tasks only.

    memory-lab study answer-ladder run [STUDY_DIR]
    memory-lab study answer-ladder summarise STUDY_DIR --out benchmarks/results/answer-ladder.json
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_lab import intervals
from memory_lab.chapters.peps import bootstrap_mean
from memory_lab.ladders import study_cli
from memory_lab.studies.setup import display_path, repo_path

READER = "qwen-1.5b"
# The style the committed study read with; pinned, so that resuming or reproducing it reads
# the same prompts when the configured default changes (chapter 9 chose `itemised` later).
STYLE = "structured"
CONDITIONS = ("no-memory", "hybrid", "best", "oracle-source")
FULL_HISTORY = "full-history"
# full-history fills the reader's window: even with the prefix read once, generating at that length
# costs the 1.5B minutes an answer on 2 cores (the summary's cost table says how many), so it reads the
# fixture's tasks, and not every corpus.
FULL_HISTORY_CORPORA = ("fixture",)
COLD_CHECK_CORPUS = "fixture"
COLD = "full-history-cold"
STAGES = ("candidates", "admitted", "cited")  # where stage recall is measured
COLD_CHECK_TASKS = 3  # each cold read prefills the whole window: about 16 minutes an answer
WORLD_SEEDS = (7, 11)
WORLD_DOCS = 60
ORDER = (*CONDITIONS, FULL_HISTORY)
COMPARISONS: tuple[tuple[str, str], ...] = (
    ("hybrid", "no-memory"), ("best", "hybrid"), ("oracle-source", "best"),
    ("oracle-source", "hybrid"), ("full-history", "hybrid"), ("full-history", "oracle-source"),
)


def corpora(worlds_root: str | Path = "benchmarks/worlds") -> dict[str, tuple[Path, Path]]:
    """name -> (history folder, task file): the fixture, the PEPs and two 60-document worlds."""
    return study_cli.standard_corpora(WORLD_SEEDS, WORLD_DOCS, worlds_root)


def phases(names: Sequence[str]) -> list[tuple[str, str, tuple[str, ...], int | None]]:
    """(slot, corpus, conditions, task limit) in reading order: the ladder on every corpus, then
    full-history, then the cold check of its first prompts."""
    ladder: list[tuple[str, str, tuple[str, ...], int | None]] = [
        (name, name, CONDITIONS, None) for name in names]
    history = [name for name in FULL_HISTORY_CORPORA if name in names]
    cold = [(f"{COLD_CHECK_CORPUS}.{COLD}", COLD_CHECK_CORPUS, (COLD,), COLD_CHECK_TASKS)]
    return (ladder + [(f"{name}.{FULL_HISTORY}", name, (FULL_HISTORY,), None) for name in history]
            + (cold if COLD_CHECK_CORPUS in names else []))


def run(study_dir: str | Path | None = None, *, runs_root: str | Path = "benchmarks/runs",
        progress: bool = True) -> Path:
    """Read every phase in turn; resume `study_dir` (and its unfinished run) when given."""
    from memory_baseline.config import Config
    from memory_baseline.server import connect
    from memory_lab.ladders.evaluation import run_evaluation

    found = corpora()
    study = study_cli.open_study(study_dir, runs_root, "answer-ladder",
                                 {"conditions": list(CONDITIONS), "reader": READER,
                                  "full_history_on": list(FULL_HISTORY_CORPORA)}, found)
    runs: list[dict[str, Any]] = study.manifest.setdefault("runs", [])
    # Both widened while the first study ran (the prefix cache made full-history cheap): recorded
    # here, so a resumed study's manifest says what it reads.
    study.manifest["parameters"]["full_history_on"] = list(FULL_HISTORY_CORPORA)
    study.manifest["parameters"].setdefault("cold_check", {"condition": COLD, "corpus": COLD_CHECK_CORPUS,
                                                           "tasks": COLD_CHECK_TASKS})
    with connect() as conn:
        for slot_name, corpus, conditions, limit in phases(list(found)):
            if any(r["slot"] == slot_name for r in runs):
                continue
            history, tasks = found[corpus]
            slot = study.run_dir / "runs" / slot_name
            started = sorted(p.parent for p in slot.glob("*/manifest.json"))
            config = Config(index=f"answer_ladder_{corpus}").with_overrides(reader={"style": STYLE})
            run_dir = run_evaluation(conn, config, tasks, history,
                                     list(conditions), runs_root=slot, reader_name=READER, limit=limit,
                                     progress=progress, resume=started[-1] if started else None,
                                     test_only=[c for c in conditions if c == "best"])
            runs.append({"slot": slot_name, "corpus": corpus, "conditions": list(conditions),
                         "run_dir": display_path(run_dir), "status": "complete"})
            study.record("runs", runs)
    study.finish()
    return study.run_dir


def _reported(case: Mapping[str, Any]) -> bool:
    """`best` is tuned on dev tasks, so only its test tasks are reported."""
    return case["condition"] != "best" or case.get("split") == "test"


def _cost(members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean prompt tokens, and model seconds over the answers that called the model."""
    read = [c for c in members if c.get("answer_calls")]
    return {"prompt_tokens": round(statistics.fmean(c["tokens"]["prompt"] for c in members), 1),
            "max_prompt_tokens": max(c["tokens"]["prompt"] for c in members),
            "seconds_per_answer": round(statistics.fmean(c.get("answer_seconds") or 0.0 for c in read), 1)
            if read else 0.0,
            "answers_from_cache": sum(bool(c.get("cache_hit")) for c in members)}


def prefix_cache_check(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """full-history (prefix cache) against full-history-cold on the tasks both read: how many
    answers are the same text and the same verdict, and what each costs."""
    warm = {c["task_id"]: c for c in cases if c["condition"] == FULL_HISTORY}
    cold = {c["task_id"]: c for c in cases if c["condition"] == COLD}
    shared = sorted(set(warm) & set(cold))
    if not shared:
        return None

    def reused(case: Mapping[str, Any]) -> int:
        return (case.get("reader_trace") or {}).get("cached_prompt_tokens", 0)

    def read(members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        computed = [c for c in members if c.get("answer_calls")]
        return {"passed": sum(bool(c["score"]["passed"]) for c in members),
                "median_seconds_per_answer": round(statistics.median(
                    c["answer_seconds"] for c in computed), 1) if computed else None,
                "mean_cached_prompt_tokens": round(statistics.fmean(reused(c) for c in computed), 1)
                if computed else None,
                "mean_prompt_tokens": round(statistics.fmean(c["tokens"]["prompt"] for c in members), 1)}

    pairs = [(warm[t], cold[t]) for t in shared]
    return {"tasks": len(shared),
            "same_answer_text": sum(w["answer"] == c["answer"] for w, c in pairs),
            "same_verdict": sum(bool(w["score"]["passed"]) == bool(c["score"]["passed"]) for w, c in pairs),
            FULL_HISTORY: read([w for w, _ in pairs]), COLD: read([c for _, c in pairs]),
            "per_task": [{"task_id": t, "same_answer_text": w["answer"] == c["answer"],
                          "warm_passed": bool(w["score"]["passed"]),
                          "cold_passed": bool(c["score"]["passed"]),
                          "warm_seconds": w.get("answer_seconds"), "cold_seconds": c.get("answer_seconds"),
                          "cached_prompt_tokens": reused(w)}
                         for t, (w, c) in zip(shared, pairs, strict=True)]}


def stage_recall(cases: Sequence[Mapping[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    """Mean recall of the expected sources at each stage the rung has, with a bootstrap 95%
    interval over tasks: what retrieval found, what the reader saw, what the answer cited."""
    rows = []
    for condition in order:
        members = [c for c in cases if c["condition"] == condition]
        for stage in STAGES:
            values = [float(c["score"]["stage_metrics"][stage]["recall"]) for c in members
                      if (c["score"].get("stage_metrics") or {}).get(stage, {}).get("recall") is not None]
            if values:
                rows.append({"condition": condition, "stage": stage, **bootstrap_mean(values)})
    return rows


def summarise(study_dir: str | Path) -> dict[str, Any]:
    """Pass rates with intervals (pooled, per corpus, per type), paired steps, reading and cost."""
    everything = study_cli.study_cases(study_dir)
    check = prefix_cache_check(everything)
    cases = [c for c in everything if _reported(c) and c["condition"] != COLD]
    if not cases:
        raise ValueError(f"{study_dir} holds no case yet")
    order = [c for c in ORDER if any(case["condition"] == c for case in cases)]
    corpus_names = sorted({c["corpus"] for c in cases})
    rates = {"all": [r.to_dict() for r in intervals.pass_rates(cases, order)]}
    for name in corpus_names:
        rates[name] = [r.to_dict() for r in intervals.pass_rates(
            [c for c in cases if c["corpus"] == name], order, per_type=False)]
    differences = intervals.ladder_differences(cases, COMPARISONS)
    cost = []
    for condition in order:
        for corpus in ["all", *corpus_names]:
            members = [c for c in cases if c["condition"] == condition and corpus in ("all", c["corpus"])]
            if members:
                cost.append({"condition": condition, "corpus": corpus, "cases": len(members),
                             **_cost(members)})
    study = repo_path(study_dir)
    manifest = json.loads((study / "manifest.json").read_text(encoding="utf-8"))
    return {"study": display_path(study), "manifest": manifest,
            "complete": manifest.get("status") == "complete",
            "tasks": len({c["task_id"] for c in cases}),
            "tasks_per_corpus": {n: len({c["task_id"] for c in cases if c["corpus"] == n})
                                 for n in corpus_names},
            "note": "best is tuned on each task file's dev tasks; its rows hold test tasks only",
            "rates": rates, "paired": [d.to_dict() for d in differences],
            "reading": intervals.reading(differences, intervals.pass_rates(cases, order, per_type=False)),
            "stage_recall": stage_recall(cases, order), "cost": cost, "prefix_cache": check}


def main(argv: list[str] | None = None) -> int:
    return study_cli.main(argv, description=__doc__.splitlines()[0], kind="answer-level ladder", run=run,
                          summarise=summarise, default_out="benchmarks/results/answer-ladder.json")


if __name__ == "__main__":
    sys.exit(main())
