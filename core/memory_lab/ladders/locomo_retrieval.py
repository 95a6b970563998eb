"""LoCoMo at retrieval level: does the baseline find the turns that answer each question?

Every question with evidence (1,982 of LoCoMo's 1,986; `corpora.locomo`) is searched
in its own conversation's index under `lexical`, `dense`, `hybrid` and `best`, with
the extractive reader's prompt for context assembly, so no model reads anything.
Two units are scored at two stages:

- evidence *sessions*: the instrument's recall of expected sources (`stage_metrics`),
  at ``candidates`` (the fused list) and ``admitted`` (what a reader would see);
- evidence *turns*: a turn counts when a candidate (or admitted) chunk's character span
  contains the turn's line (`dia_map.json`); an admitted chunk cut to the token budget
  counts only for what it kept.

LoCoMo has no dev/test split of its own, so conversations 1-5 of the release are dev
and 6-10 test. `best` searches `tuning.BEST_GRID` on the dev conversations with
`tune_best`'s criterion, pooled over their questions (each searched in its own index),
and is run and reported on the test conversations only; the other conditions run on all.

    memory-lab study locomo retrieval [STUDY_DIR]
    memory-lab study locomo summarise STUDY_DIR [--out benchmarks/results/locomo-retrieval.json]

A study directory (under `benchmarks/locomo/runs`, which git ignores: its rows name the
questions) holds `manifest.json` and `cases.jsonl`, one row per question and condition,
appended as they are searched, so an interrupted study resumes where it stopped.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory_instrument import Task, load_tasks, stage_metrics
from memory_lab.chapters.peps import bootstrap_mean
from memory_lab.corpora.locomo import CATEGORIES, CONVERSATIONS, DEFAULT_OUT, layout
from memory_lab.ladders import study_cli
from memory_lab.stats import bootstrap_interval
from memory_lab.studies.setup import display_path, repo_path

CONDITIONS = ("lexical", "dense", "hybrid", "best")
TUNED = "best"
READER = "extractive"
RUNS_ROOT = "benchmarks/locomo/runs"
RESULTS = "benchmarks/results/locomo-retrieval.json"
UNITS = ("session", "turn")
STAGES = ("candidates", "admitted")
# Depths of the fused chunk list also reported, so a figure counted in retrieved units of
# another size can be set beside ours (a chunk here holds several turns).
TOP_K = (1, 5, 10, 25)
COMPARISONS = (("dense", "lexical"), ("hybrid", "lexical"), ("hybrid", "dense"), ("best", "hybrid"),
               ("best", "lexical"))


def index_name(conversation: str) -> str:
    return f"locomo_{conversation.removeprefix('conv-')}"


@dataclass(frozen=True)
class Span:
    source: str
    start: int
    end: int

    def within(self, source: str, start: int, end: int) -> bool:
        return self.source == source and start <= self.start and self.end <= end


def load_dia_map(path: str | Path) -> dict[str, Span]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {dia: Span(v["source"], v["start"], v["end"]) for dia, v in raw.items()}


def case_row(task: Task, condition: str, found: Any, turns: Mapping[str, Span]) -> dict[str, Any]:
    """One question under one condition: what was found of its sessions and turns, and where.

    `found` is a `Baseline.search` result. Ranks are 1-based positions in the fused
    chunk list (the first chunk of a session, the first chunk containing a turn).
    """
    retrieval, context = found.retrieval, found.context
    fused = retrieval.stage("fused")
    chunks = [(c.chunk_id, retrieval.passages[c.chunk_id]) for c in fused.candidates]
    admitted = sorted(context.admitted, key=lambda p: p.rank)
    admitted_spans = []
    for passage in admitted:
        stored = retrieval.passages[passage.chunk_id]
        end = stored.char_start + len(passage.text) if passage.truncated else stored.char_end
        admitted_spans.append((stored.source_id, stored.char_start, end))
    evidence = list(task.metadata["evidence"])
    expected = list(task.expected_sources)

    session_rank = {s: next((i for i, (_, p) in enumerate(chunks, 1) if p.source_id == s), None)
                    for s in expected}
    turn_rank = {d: next((i for i, (_, p) in enumerate(chunks, 1)
                          if turns[d].within(p.source_id, p.char_start, p.char_end)), None)
                 for d in evidence}
    turn_admitted = [d for d in evidence if any(turns[d].within(*span) for span in admitted_spans)]
    admitted_sources = list(dict.fromkeys(p.source_id for p in admitted))
    at_candidates = stage_metrics("candidates", fused.source_ids, expected)
    at_admitted = stage_metrics("admitted", admitted_sources, expected)
    return {
        "task_id": task.id, "conversation": task.metadata["conversation"],
        "split": task.metadata["split"], "category": task.metadata["locomo_category"],
        "condition": condition, "expected_sources": expected, "evidence": evidence,
        "session_rank": session_rank, "session_admitted": list(at_admitted.found_expected),
        "turn_rank": turn_rank, "turn_admitted": turn_admitted,
        "recall": {
            "session_candidates": at_candidates.recall, "session_admitted": at_admitted.recall,
            "turn_candidates": sum(r is not None for r in turn_rank.values()) / len(evidence),
            "turn_admitted": len(turn_admitted) / len(evidence),
        },
        "candidate_chunks": len(chunks), "admitted_passages": len(admitted),
        "prompt_tokens": context.prompt_tokens, "truncated": context.truncated is not None,
    }


# -- best, tuned on the dev conversations -------------------------------------------------------


def tune_best_pooled(conn: Any, bases: Mapping[str, Any], tasks: Mapping[str, Sequence[Task]],
                     reader: Any, embedder: Any, *, progress: bool = True) -> dict[str, Any]:
    """`tuning.tune_best` over several indexes: one grid, the dev questions of every conversation.

    `bases` maps a conversation to its base configuration (its index), `tasks` to its
    dev tasks. Each grid point is scored by the mean over all those questions, so the
    criterion and the grid are `tune_best`'s; only the pooling over indexes is added.
    """
    from tqdm.auto import tqdm

    from memory_baseline.baseline import Baseline
    from memory_baseline.context_sources import Prefetched
    from memory_baseline.retrieval import Retriever
    from memory_lab.conditions import condition_config
    from memory_lab.ladders.tuning import BEST_GRID, _grid

    grid = _grid()
    total = sum(len(v) for v in tasks.values())
    bar = tqdm(total=len(grid) * total, desc="tune best (dev conversations)", disable=not progress)
    scores = []
    for retrieval in grid:
        per_limit: dict[int, list[tuple[float, float, int]]] = {m: [] for m in BEST_GRID["max_passages"]}
        for name, base in bases.items():
            config = condition_config("hybrid", base).with_overrides(retrieval=retrieval)
            retriever = Retriever(conn, config, embedder=embedder)
            results = []
            for task in tasks[name]:
                results.append((task, retriever.retrieve(task.query)))
                bar.update(1)
            for limit in BEST_GRID["max_passages"]:
                baseline = Baseline(conn, config.with_overrides(context={"max_passages": limit}),
                                    reader=reader, retriever=retriever)
                for task, result in results:
                    as_of = task.as_of.isoformat() if task.as_of else None
                    trace = baseline.search(task.query, as_of, source=Prefetched(result)).context
                    ranked = [p.source_id for p in sorted(trace.admitted, key=lambda p: p.rank)]
                    metrics = stage_metrics("admitted", ranked, task.expected_sources)
                    per_limit[limit].append((metrics.recall or 0.0, metrics.reciprocal_rank or 0.0,
                                             trace.prompt_tokens))
            retriever.close()
        for limit, values in per_limit.items():
            recalls, mrrs, tokens = zip(*values, strict=True)
            scores.append({"retrieval": retrieval, "context": {"max_passages": limit},
                           "recall_admitted": round(float(np.mean(recalls)), 4),
                           "mrr_admitted": round(float(np.mean(mrrs)), 4),
                           "mean_prompt_tokens": round(float(np.mean(tokens)), 1)})
    bar.close()
    chosen = max(enumerate(scores), key=lambda item: (item[1]["recall_admitted"], item[1]["mrr_admitted"],
                                                      -item[1]["mean_prompt_tokens"], -item[0]))[1]
    return {"grid": {k: list(v) for k, v in BEST_GRID.items()},
            "criterion": "tune_best's: mean recall of expected sources at admitted, then mean MRR there, "
                         "then fewer prompt tokens, then grid order; pooled over the dev conversations' "
                         "questions, each searched in its own conversation's index",
            "dev_conversations": list(bases), "dev_questions": total, "dev_scores": scores,
            "choice": {"retrieval": dict(chosen["retrieval"]), "context": dict(chosen["context"])}}


# -- the study ----------------------------------------------------------------------------------


def _conversations(data_dir: str | Path) -> dict[str, Any]:
    found = {}
    for conversation in CONVERSATIONS:
        paths = layout(repo_path(data_dir), conversation)
        if not paths.tasks.is_file():
            raise FileNotFoundError(f"{paths.tasks} is missing: run `memory-lab study locomo import` first")
        found[paths.name] = paths
    return found


def _turns_in_no_chunk(conn: Any, config: Any, tasks: Sequence[Task], turns: Mapping[str, Span]) -> list[str]:
    """Evidence turns that no chunk of the index contains whole (turn recall cannot reach them)."""
    from memory_baseline.store import Store

    store = Store(conn, config.index)
    spans: dict[str, list[tuple[int, int]]] = {}
    missing = []
    for dia in sorted({d for t in tasks for d in t.metadata["evidence"]}):
        span = turns[dia]
        if span.source not in spans:
            spans[span.source] = [(r["char_start"], r["char_end"]) for r in store.source_chunks(span.source)]
        if not any(span.within(span.source, s, e) for s, e in spans[span.source]):
            missing.append(dia)
    return missing


def run(study_dir: str | Path | None = None, *, data_dir: str | Path = DEFAULT_OUT,
        runs_root: str | Path = RUNS_ROOT, progress: bool = True) -> Path:
    """Search every question under every condition; resume `study_dir` when given."""
    from tqdm.auto import tqdm

    from memory_baseline.baseline import Baseline
    from memory_baseline.config import Config
    from memory_baseline.context_sources import Retrieved
    from memory_baseline.embedders import get_embedder
    from memory_baseline.reading import get_reader
    from memory_baseline.retrieval import Retriever
    from memory_baseline.server import connect
    from memory_lab.conditions import condition_config
    from memory_lab.ladders.tuning import QueryCachingEmbedder
    from memory_lab.studies.setup import StudyRun, index_corpus, start_study

    found = _conversations(data_dir)
    if study_dir is None:
        study = start_study(runs_root, "locomo-retrieval",
                            {"conditions": list(CONDITIONS), "reader": READER,
                             "data": display_path(repo_path(data_dir)),
                             "tuned_on": [n for n, p in found.items() if p.split == "dev"],
                             "reported_on_test_only": [TUNED]},
                            corpora={n: p.history for n, p in found.items()})
    else:
        run_dir = repo_path(study_dir)
        study = StudyRun("locomo-retrieval", run_dir,
                         json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")))
    cases_path = study.run_dir / "cases.jsonl"
    done = set()
    if cases_path.is_file():
        with cases_path.open(encoding="utf-8") as handle:
            done = {(row["task_id"], row["condition"]) for row in map(json.loads, filter(str.strip, handle))}

    bases = {n: Config(index=index_name(n)).with_overrides(reader={"name": READER}) for n in found}
    tasks = {n: list(load_tasks(p.tasks)) for n, p in found.items()}
    turns = {n: load_dia_map(p.dia_map) for n, p in found.items()}
    reader = get_reader(next(iter(bases.values())).reader)
    embedder = QueryCachingEmbedder(get_embedder(next(iter(bases.values())).embedder))
    with connect() as conn:
        indexes = study.manifest.get("indexes", {})
        for name, paths in found.items():
            report = index_corpus(conn, bases[name], paths.history, progress=progress)
            indexes[name] = {"index": bases[name].index, "added": len(report.added),
                             "changed": len(report.changed), "unchanged": report.unchanged,
                             "evidence_turns_in_no_chunk": _turns_in_no_chunk(conn, bases[name], tasks[name],
                                                                               turns[name])}
        study.record("indexes", indexes)
        tuned = None
        bar = tqdm(total=sum(len(tasks[n]) * (len(CONDITIONS) - (found[n].split == "dev"))
                             for n in found) - len(done),
                   desc="locomo retrieval", unit="question", disable=not progress)
        with cases_path.open("a", encoding="utf-8") as handle:
            # The untuned conditions first, so a long tuning never holds their results back.
            for condition in [c for c in CONDITIONS if c != TUNED] + [TUNED]:
                if condition == TUNED:
                    if not study.manifest.get("best"):
                        dev = [n for n, p in found.items() if p.split == "dev"]
                        study.record("best", tune_best_pooled(
                            conn, {n: bases[n] for n in dev},
                            {n: [t for t in tasks[n] if t.expected_sources] for n in dev},
                            reader, embedder, progress=progress))
                    tuned = study.manifest["best"]["choice"]
                for name in found:
                    todo = [t for t in tasks[name] if (t.id, condition) not in done]
                    if not todo or (condition == TUNED and found[name].split != "test"):
                        continue
                    config = condition_config(condition, bases[name], tuned=tuned)
                    retriever = Retriever(conn, config, embedder=embedder)
                    baseline = Baseline(conn, config, reader=reader, retriever=retriever)
                    for task in todo:
                        as_of = task.as_of.isoformat() if task.as_of else None
                        result = baseline.search(task.query, as_of, source=Retrieved(retriever))
                        handle.write(json.dumps(case_row(task, condition, result, turns[name])) + "\n")
                        handle.flush()
                        bar.update(1)
                    retriever.close()
        bar.close()
        first = bases[next(iter(found))]
        study.record("effective_configs", {c: condition_config(c, first, tuned=tuned).to_dict()
                                           for c in CONDITIONS})
    study.finish()
    return study.run_dir


# -- the results file ---------------------------------------------------------------------------


def read_rows(study_dir: str | Path) -> list[dict[str, Any]]:
    path = repo_path(study_dir) / "cases.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: not a LoCoMo retrieval study")
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _measures(row: Mapping[str, Any]) -> dict[str, float]:
    """Every per-question measure the results report, by name."""
    out = {f"{unit}_recall_at_{stage}": float(row["recall"][f"{unit}_{stage}"])
           for unit in UNITS for stage in STAGES}
    for k in TOP_K:
        for unit, ranks in (("session", row["session_rank"]), ("turn", row["turn_rank"])):
            hits = sum(r is not None and r <= k for r in ranks.values())
            out[f"{unit}_recall_at_top{k}_chunks"] = hits / len(ranks)
    return out


def _scopes(row: Mapping[str, Any]) -> list[str]:
    return ["all", "test"] if row["split"] == "test" else ["all"]


def _chunk_count(history: Path) -> int | None:
    """Chunks the default chunker cuts the conversation into (what a fused list is drawn from)."""
    from memory_baseline.chunking import chunk_text
    from memory_baseline.config import Config

    if not history.is_dir():
        return None
    chunking = Config().chunking
    return sum(len(chunk_text(f"sessions/{p.name}", p.read_text(encoding="utf-8"), chunking))
               for p in sorted((history / "sessions").glob("*.md")))


def summarise(study_dir: str | Path, data_dir: str | Path = DEFAULT_OUT) -> dict[str, Any]:
    """Recall of evidence sessions and turns at candidates and admitted, with 95% intervals,
    per condition, per category and overall; `best` on test conversations only."""
    study_dir = repo_path(study_dir)
    manifest = json.loads((study_dir / "manifest.json").read_text(encoding="utf-8"))
    rows = read_rows(study_dir)
    groups: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    context: dict[str, list[tuple[int, int, int]]] = {}
    for row in rows:
        measures = _measures(row)
        categories = ["all", str(row["category"])] + (["1-4"] if row["category"] != 5 else [])
        for scope in _scopes(row):
            if row["condition"] == TUNED and scope != "test":
                continue
            for category in categories:
                groups.setdefault((row["condition"], scope, category), []).append(measures)
        context.setdefault(row["condition"], []).append(
            (row["candidate_chunks"], row["admitted_passages"], row["prompt_tokens"]))
    order = {c: i for i, c in enumerate(CONDITIONS)}
    category_order = {c: i for i, c in enumerate(["all", "1-4", "1", "2", "3", "4", "5"])}
    table = []
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][1] != "all", order.get(kv[0][0], 99),
                                                     category_order[kv[0][2]]))
    for (condition, scope, category), members in ordered:
        row = {"condition": condition, "scope": scope, "category": category,
               "category_name": CATEGORIES.get(int(category)) if category.isdigit() else
               ("every category" if category == "all" else "answerable (1-4)"),
               "questions": len(members)}
        for name in members[0]:
            row[name] = bootstrap_mean([m[name] for m in members])
        table.append(row)
    paired = _paired(rows)
    indexes = manifest.get("indexes", {})
    import_path = repo_path(data_dir) / "import.json"
    imported = json.loads(import_path.read_text(encoding="utf-8")) if import_path.is_file() else {}
    return {
        "study": display_path(study_dir), "complete": manifest.get("status") == "complete",
        "code_version": manifest.get("code_version"), "machine": manifest.get("machine"),
        "started": manifest.get("started"), "finished": manifest.get("finished"),
        "questions": len({r["task_id"] for r in rows}),
        "data": {"release": imported.get("source"), "questions": imported.get("questions"),
                 "tasks": imported.get("tasks"),
                 "excluded": [{k: e[k] for k in ("task", "category", "reason")}
                              for e in imported.get("excluded", [])],
                 "evidence_repaired": len(imported.get("evidence_repaired", [])),
                 "conversations": {n: {**{k: c[k] for k in ("split", "sessions", "turns", "tasks")},
                                       "chunks": _chunk_count(layout(repo_path(data_dir), n).history)}
                                   for n, c in imported.get("conversations", {}).items()}},
        "setup": {"conditions": list(CONDITIONS), "reader": READER + " (token counting for assembly only)",
                  "split": "conversations 1-5 (conv-26, 30, 41, 42, 43) dev, 6-10 test",
                  "best": {k: manifest.get("best", {}).get(k)
                           for k in ("criterion", "dev_questions", "choice")},
                  "effective_configs": manifest.get("effective_configs"),
                  "evidence_turns_in_no_chunk": {n: len(v.get("evidence_turns_in_no_chunk", []))
                                                 for n, v in indexes.items()}},
        "definitions": {
            "session_recall": "share of the question's evidence sessions (expected sources) in the stage",
            "turn_recall": "share of the question's evidence turns whose line lies inside a chunk of the "
                           "stage (an admitted chunk cut to the budget counts for what it kept)",
            "candidates": "the fused list (every chunk either path returned)",
            "admitted": "the passages context assembly admitted for the reader",
            "top_k_chunks": "the first k chunks of the fused list",
            "interval": "percentile bootstrap 95% over questions (2,000 resamples, seeded)",
            "scope": "all: every conversation; test: conversations 6-10 (best is reported there only)",
        },
        "table": table, "paired": paired,
        "context": {c: {"mean_candidate_chunks": round(float(np.mean([v[0] for v in vals])), 1),
                        "mean_admitted_passages": round(float(np.mean([v[1] for v in vals])), 2),
                        "mean_prompt_tokens": round(float(np.mean([v[2] for v in vals])), 1)}
                    for c, vals in sorted(context.items(), key=lambda kv: order.get(kv[0], 99))},
    }


def _paired(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Paired differences between conditions on the same questions, with bootstrap intervals."""
    values: dict[tuple[str, str], dict[str, float]] = {}
    split_of = {}
    for row in rows:
        values[(row["condition"], row["task_id"])] = _measures(row)
        split_of[row["task_id"]] = row["split"]
    out = []
    for upper, lower in COMPARISONS:
        shared = sorted(t for (c, t) in values if c == upper and (lower, t) in values
                        and (TUNED not in (upper, lower) or split_of[t] == "test"))
        if not shared:
            continue
        for unit in UNITS:
            for stage in STAGES:
                name = f"{unit}_recall_at_{stage}"
                diffs = [values[(upper, t)][name] - values[(lower, t)][name] for t in shared]
                low, high = bootstrap_interval(diffs)
                out.append({"upper": upper, "lower": lower, "measure": name, "questions": len(shared),
                            "scope": "test" if TUNED in (upper, lower) else "all",
                            "difference": round(float(np.mean(diffs)), 4), "low": round(low, 4),
                            "high": round(high, 4), "separated": low > 0 or high < 0})
    return out


def main(argv: list[str]) -> int:
    """`retrieval [STUDY_DIR]` or `summarise STUDY_DIR [--out]` (the locomo study's first word)."""
    import argparse

    parser = argparse.ArgumentParser(prog="memory-lab study locomo", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("retrieval", help="run (or resume) the retrieval-level study")
    go.add_argument("study_dir", nargs="?")
    go.add_argument("--data", default=DEFAULT_OUT, help="where `locomo import` wrote the corpora")
    go.add_argument("--runs-root", default=RUNS_ROOT)
    report = sub.add_parser("summarise", help="write the results file of a study (finished or not)")
    report.add_argument("study_dir")
    report.add_argument("--data", default=DEFAULT_OUT)
    report.add_argument("--out", default=RESULTS)
    args = parser.parse_args(argv)
    if args.command == "retrieval":
        try:
            print(run(args.study_dir, data_dir=args.data, runs_root=args.runs_root))
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    return study_cli.summarise_to(lambda: summarise(args.study_dir, args.data), repo_path(args.out),
                                  failure=f"cannot summarise {args.study_dir} as the LoCoMo retrieval study",
                                  done=lambda d: f"{d['questions']} questions -> {args.out}")
