"""LoCoMo at answer level: a stratified sample of questions read with and without memory.

Reading costs a minute or more an answer on two cores, so the answer level reads a
fixed sample (seeded) of at least 200 questions: the same number from every LoCoMo
category, spread over all ten conversations. Each is read under `no-memory` (the
question alone), `hybrid` (the baseline's retrieval) and `oracle-source` (the sessions
that hold the evidence), by `run_evaluation`, one evaluation run per conversation
(its own index), so an interrupted study resumes where it stopped.

Each answer is scored twice: by the instrument (the task file's phrase groups and
typed expectations), and by LoCoMo's own metric (`corpora.locomo.locomo_metric`), the
one its published token-F1 figures use. Before LoCoMo's metric sees an answer, the
reader's status field and bracketed source citations are removed (they are not part
of what the answer says). LoCoMo's adversarial rule wants the words "not mentioned"
or "no information available", which its prompt offered as a choice; our reader
abstains with "insufficient evidence", so the results give the metric both as
written and with an abstention counted as "not mentioned".

    memory-lab study locomo answers run [STUDY_DIR] [--reader NAME] [--size 200]
    memory-lab study locomo answers summarise STUDY_DIR [--out benchmarks/results/locomo-answers.json]
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_instrument import Task, load_tasks, write_task_file
from memory_instrument.matching import split_status
from memory_lab.chapters.peps import bootstrap_mean, read_cases
from memory_lab.corpora.locomo import CATEGORIES, CONVERSATIONS, DEFAULT_OUT, layout, locomo_metric
from memory_lab.ladders import study_cli
from memory_lab.ladders.locomo_retrieval import RUNS_ROOT, index_name
from memory_lab.studies.setup import display_path, repo_path

CONDITIONS = ("no-memory", "hybrid", "oracle-source")
SAMPLE_SIZE = 200
SEED = 20261208
RESULTS = "benchmarks/results/locomo-answers.json"
# A citation is a bracket of source ids (no spaces inside an id): "[sessions/session-03.md]",
# "[a.md, b.md]"; a shared photo's "[shares a photo: ...]" is text and stays.
_CITATION = re.compile(r"\s*\[[^\]\s]+(?:,\s*[^\]\s]+)*\]")


def stratified_sample(tasks: Sequence[Task], size: int = SAMPLE_SIZE, seed: int = SEED) -> list[Task]:
    """`size` tasks, as many from each category as the others (the first categories take any
    remainder), each category's share dealt round-robin over the conversations.

    Within a conversation and category the order is a seeded shuffle; each category starts
    its deal at a different conversation, so even a sample of ten covers ten conversations.
    """
    rng = random.Random(seed)
    order = [f"conv-{c}" for c in CONVERSATIONS]
    chosen: list[Task] = []
    categories = sorted(CATEGORIES)
    for position, category in enumerate(categories):
        quota = size // len(categories) + (position < size % len(categories))
        piles = []
        for conversation in order:
            pile = sorted((t for t in tasks if t.metadata["conversation"] == conversation
                           and t.metadata["locomo_category"] == category), key=lambda t: t.id)
            rng.shuffle(pile)
            piles.append(pile)
        start = (position * 2) % len(order)
        piles = piles[start:] + piles[:start]
        taken = 0
        while taken < quota and any(piles):
            for pile in piles:
                if pile and taken < quota:
                    chosen.append(pile.pop(0))
                    taken += 1
    rank = {name: i for i, name in enumerate(order)}
    return sorted(chosen, key=lambda t: (rank[t.metadata["conversation"]], t.id))


def run(study_dir: str | Path | None = None, *, reader: str | None = None, size: int = SAMPLE_SIZE,
        seed: int = SEED, data_dir: str | Path = DEFAULT_OUT, runs_root: str | Path = RUNS_ROOT,
        progress: bool = True) -> Path:
    """Read the sample under every condition; resume `study_dir` when given."""
    from memory_baseline.config import Config
    from memory_baseline.server import connect
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.studies.setup import StudyRun, start_study

    found = {layout(repo_path(data_dir), c).name: layout(repo_path(data_dir), c) for c in CONVERSATIONS}
    missing = [p.tasks for p in found.values() if not p.tasks.is_file()]
    if missing:
        raise FileNotFoundError(f"{missing[0]} is missing: run `memory-lab study locomo import` first")
    pooled = [t for p in found.values() for t in load_tasks(p.tasks)]
    sample = stratified_sample(pooled, size, seed)
    parameters = {"conditions": list(CONDITIONS), "reader": reader or Config().reader.name,
                  "sample": {"size": size, "seed": seed, "task_ids": [t.id for t in sample]},
                  "data": display_path(repo_path(data_dir))}
    if study_dir is None:
        study = start_study(runs_root, "locomo-answers", parameters,
                            corpora={n: p.history for n, p in found.items()})
    else:
        run_dir = repo_path(study_dir)
        study = StudyRun("locomo-answers", run_dir,
                         json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")))
        if study.manifest["parameters"]["sample"]["task_ids"] != parameters["sample"]["task_ids"] \
                or study.manifest["parameters"]["reader"] != parameters["reader"]:
            raise ValueError(f"{run_dir} read another sample or reader; start a new study")
    runs: list[dict[str, Any]] = study.manifest.setdefault("runs", [])
    with connect() as conn:
        for name, paths in found.items():
            chosen = [t for t in sample if t.metadata["conversation"] == name]
            if not chosen or any(r["conversation"] == name for r in runs):
                continue
            tasks_path = study.run_dir / "tasks" / f"{name}.json"
            if not tasks_path.is_file():
                write_task_file(chosen, tasks_path)
            slot = study.run_dir / "runs" / name
            started = sorted(p.parent for p in slot.glob("*/manifest.json"))
            run_dir = run_evaluation(conn, Config(index=index_name(name)), tasks_path, paths.history,
                                     list(CONDITIONS), runs_root=slot, reader_name=reader,
                                     resume=started[-1] if started else None, progress=progress)
            runs.append({"conversation": name, "run_dir": display_path(run_dir), "tasks": len(chosen)})
            study.record("runs", runs)
    study.finish()
    return study.run_dir


# -- scoring ------------------------------------------------------------------------------------


def prediction_text(answer: str) -> str:
    """The answer as LoCoMo's metric reads it: no status field, no bracketed citations."""
    _, rest = split_status(answer)
    return _CITATION.sub("", rest).strip()


def locomo_scores(task: Task, case: Mapping[str, Any]) -> dict[str, float]:
    """LoCoMo's metric on one answer: as written, and with an abstention read as "not mentioned"."""
    category = task.metadata["locomo_category"]
    text = prediction_text(case["answer"])
    strict = locomo_metric(text, task.metadata.get("locomo_answer"), category)
    abstained = bool(case["score"].get("abstained"))
    mapped = 1.0 if category == 5 and abstained else strict
    return {"locomo_f1": strict, "locomo_f1_abstention_as_not_mentioned": mapped}


def summarise(study_dir: str | Path, data_dir: str | Path = DEFAULT_OUT) -> dict[str, Any]:
    """Instrument pass rate and LoCoMo's metric per condition and category, with 95% intervals."""
    study_dir = repo_path(study_dir)
    manifest = json.loads((study_dir / "manifest.json").read_text(encoding="utf-8"))
    tasks: dict[str, Task] = {}
    for path in sorted((study_dir / "tasks").glob("*.json")):
        tasks.update({t.id: t for t in load_tasks(path)})
    cases, readers = [], {}
    for slot in sorted((study_dir / "runs").glob("*")):
        for run_dir in sorted(p.parent for p in slot.glob("*/cases.jsonl")):
            run_manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
            readers[slot.name] = run_manifest.get("models", {}).get("reader")
            cases += read_cases(run_dir)
    rows = []
    for case in cases:
        task = tasks[case["task_id"]]
        rows.append({"condition": case["condition"], "category": task.metadata["locomo_category"],
                     "conversation": task.metadata["conversation"],
                     "passed": float(bool(case["score"]["passed"])), **locomo_scores(task, case)})
    population = _population(data_dir)
    table = []
    measures = ("passed", "locomo_f1", "locomo_f1_abstention_as_not_mentioned")
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition]
        if not mine:
            continue
        for category in ["all", *sorted(CATEGORIES)]:
            members = [r for r in mine if category == "all" or r["category"] == category]
            if not members:
                continue
            entry = {"condition": condition, "category": str(category),
                     "category_name": CATEGORIES.get(category, "every category (sample mean)"),
                     "questions": len(members)}
            for measure in measures:
                entry["instrument_pass" if measure == "passed" else measure] = bootstrap_mean(
                    [r[measure] for r in members])
            table.append(entry)
        if population:
            table.append(_weighted(condition, mine, population, measures))
    return {
        "study": display_path(study_dir), "complete": manifest.get("status") == "complete",
        "code_version": manifest.get("code_version"), "started": manifest.get("started"),
        "finished": manifest.get("finished"),
        "sample": {k: v for k, v in manifest["parameters"]["sample"].items() if k != "task_ids"},
        "questions": len({c["task_id"] for c in cases}), "cases": len(cases),
        "conditions": list(CONDITIONS),
        "readers": list({json.dumps(r, sort_keys=True): r for r in readers.values()}.values()),
        "scoring": {
            "instrument_pass": "the instrument's verdict (phrase groups and typed expectations of the "
                               "imported task file; adversarial questions pass by abstaining)",
            "locomo_f1": "LoCoMo's metric (task_eval/evaluation.py at commit 9228632 of "
                         "snap-research/locomo) on the answer without its status field and citations",
            "locomo_f1_abstention_as_not_mentioned": "the same, with an abstention on an adversarial "
                                                     "question read as 'not mentioned'",
            "category_weighted": "the per-category means weighted by each category's share of the 1,982 "
                                 "tasks (the sample takes the same number from every category)",
            "interval": "percentile bootstrap 95% over questions (2,000 resamples, seeded)",
        },
        "table": table,
    }


def _population(data_dir: str | Path) -> dict[int, int]:
    path = repo_path(data_dir) / "import.json"
    if not path.is_file():
        return {}
    counts: dict[int, int] = {}
    for conversation in json.loads(path.read_text(encoding="utf-8"))["conversations"].values():
        for category, n in conversation["tasks_per_category"].items():
            counts[int(category)] = counts.get(int(category), 0) + n
    return counts


def _weighted(condition: str, rows: Sequence[Mapping[str, Any]], population: Mapping[int, int],
              measures: Sequence[str]) -> dict[str, Any]:
    """Per-category means weighted to LoCoMo's own category mix (no interval: a point estimate)."""
    present = [c for c in sorted(population) if any(r["category"] == c for r in rows)]
    total = sum(population[c] for c in present)
    entry: dict[str, Any] = {"condition": condition, "category": "weighted",
                             "category_name": "every category, weighted to LoCoMo's mix",
                             "questions": len(rows)}
    for measure in measures:
        value = sum(population[c] / total * float(np.mean([r[measure] for r in rows if r["category"] == c]))
                    for c in present)
        entry["instrument_pass" if measure == "passed" else measure] = {"mean": round(value, 4)}
    return entry


def main(argv: list[str]) -> int:
    """`run [STUDY_DIR] [--reader NAME] [--size N]` or `summarise STUDY_DIR [--out]`."""
    import argparse

    parser = argparse.ArgumentParser(prog="memory-lab study locomo answers",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="read (or resume) the sample")
    go.add_argument("study_dir", nargs="?")
    go.add_argument("--reader", default=None, help="default: the configuration's reader")
    go.add_argument("--size", type=int, default=SAMPLE_SIZE, help="questions in the sample")
    go.add_argument("--seed", type=int, default=SEED)
    go.add_argument("--data", default=DEFAULT_OUT)
    go.add_argument("--runs-root", default=RUNS_ROOT)
    report = sub.add_parser("summarise", help="write the results file of a study (finished or not)")
    report.add_argument("study_dir")
    report.add_argument("--data", default=DEFAULT_OUT)
    report.add_argument("--out", default=RESULTS)
    args = parser.parse_args(argv)
    if args.command == "run":
        try:
            print(run(args.study_dir, reader=args.reader, size=args.size, seed=args.seed,
                      data_dir=args.data, runs_root=args.runs_root))
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    return study_cli.summarise_to(lambda: summarise(args.study_dir, args.data), repo_path(args.out),
                                  failure=f"cannot summarise {args.study_dir} as the LoCoMo answer study",
                                  done=lambda d: f"{d['cases']} answers -> {args.out}")
