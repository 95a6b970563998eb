"""The result sections of the README and the benchmarks page, rendered from the artifacts they cite.

A figure typed by hand into a README drifts from the run it came from. Each
results section of README.md sits between markers,

    <!-- results:NAME -->
    ...rendered text...
    <!-- /results:NAME -->

and is rendered here from one committed artifact, whose path the section
names. `memory-lab study readme` rewrites the sections of every document in
`DOCUMENTS` in place; tests/test_readme.py fails when a committed document differs
from what the artifacts render, so a changed result cannot be published with a
stale README or benchmarks page.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

SCIFACT = Path("benchmarks/results/scifact.json")
READER_CEILING = Path("benchmarks/results/reader-ceiling.json")
READER_CHOICE = Path("benchmarks/results/reader-choice.json")
DOWNSTREAM = Path("benchmarks/results/downstream-ladder.json")
LATENCY = Path("benchmarks/results/latency.json")
RETRIEVAL_LADDER = Path("benchmarks/results/retrieval-ladder.json")
ANSWER_LADDER = Path("benchmarks/results/answer-ladder.json")
COMPRESSION_SCREEN = Path("benchmarks/results/compression.json")
COMPRESSION_READING = Path("benchmarks/results/compression-reading.json")
SCALE = Path("benchmarks/results/scale.json")
REPRODUCTION = Path("benchmarks/results/book-reproduction.json")
DOCUMENTS = (Path("README.md"), Path("book/benchmarks.md"))
PUBLISHED_RUNS = Path("book/published/runs")

_SECTION = re.compile(r"(<!-- results:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=name) -->)",
                      re.DOTALL)


def without_results_sections(text: str) -> str:
    """The document with its rendered sections emptied: what was written by hand."""
    return _SECTION.sub(lambda m: m.group(1) + m.group(4), text)


class ReadmeError(ValueError):
    """A results section names an artifact that is missing or a renderer that does not exist."""


def _load(root: Path, path: Path) -> dict[str, Any]:
    target = root / path
    if not target.is_file():
        raise ReadmeError(f"README cites {path}, which is not committed")
    return json.loads(target.read_text(encoding="utf-8"))


def _markdown(frame: pd.DataFrame) -> str:
    """A GitHub table (pandas' `to_markdown` needs `tabulate`, which this project does not use)."""
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def scifact(root: Path) -> str:
    document = _load(root, SCIFACT)
    beir = document["beir"]
    rows = []
    for name, result in beir["conditions"].items():
        metrics, latency = result["metrics"], result.get("latency") or {}
        timing = (f"{latency['p50_ms']:,.0f} / {latency['p95_ms']:,.0f}"
                  if latency.get("p50_ms") is not None else "")
        rows.append({"condition": f"`{name}`", "nDCG@10": f"{metrics['nDCG@10']:.3f}",
                     "R@100": f"{metrics['R@100']:.3f}", "RR@10": f"{metrics['RR@10']:.3f}",
                     "p50 / p95 ms": timing})
    best_name, best = max(beir["conditions"].items(), key=lambda item: item[1]["metrics"]["nDCG@10"])
    published = document.get("published") or beir.get("published") or {}
    beaten = [n for n, p in published.items() if p["nDCG@10"] < best["metrics"]["nDCG@10"]]
    not_beaten = [f"{n} ({p['nDCG@10']:.3f})" for n, p in published.items()
                  if p["nDCG@10"] >= best["metrics"]["nDCG@10"]]
    verdict = (f"The best condition here, `{best_name}` at {best['metrics']['nDCG@10']:.3f}, is above "
               f"{len(beaten)} of the {len(published)} published figures")
    verdict += f" and not above {', '.join(not_beaten)}." if not_beaten else "."
    lines = [
        f"BEIR SciFact, {beir['split']} split, {beir['queries']} queries, embedder "
        f"`{beir['embedder']['name']}`, metrics by {beir['metric_tool']}; from `{SCIFACT}` "
        f"(run `{beir['run_dir']}`, finished {document['finished'][:10]}; the machine's load "
        "is in that file, so compare latencies within the table only).",
        "",
        _markdown(pd.DataFrame(rows)),
        "",
        "Published for comparison: " + "; ".join(f"{n} {p['nDCG@10']:.3f}" for n, p in published.items())
        + ". " + verdict,
    ]
    return "\n".join(lines) + "\n"


def reader_ceiling(root: Path) -> str:
    document = _load(root, READER_CEILING)
    rows = pd.DataFrame(document["by_split"])
    rows = rows[(rows["corpus"] == "fixture") & (rows["condition"] == "oracle-source")]
    passed = rows.pivot(index="style", columns="split", values="passed")
    cases = rows.pivot(index="style", columns="split", values="cases")
    cost = rows[rows["split"] == "all"].set_index("style")
    chosen = document["dev_choice"]["style"]
    table = []
    for style in passed.index:
        label = f"`{style}`" + (" (chosen on the fixture's dev tasks)" if style == chosen else "")
        table.append({"style": label,
                      **{f"{split} (of {int(cases.loc[style, split])})": int(passed.loc[style, split])
                         for split in ("dev", "test", "all")},
                      "model s / answer": f"{cost.loc[style, 'seconds_per_answer']:.1f}",
                      "calls / answer": f"{cost.loc[style, 'calls_per_answer']:.2f}"})
    return (f"Oracle-source passes on the fixture's tasks per split, from `{READER_CEILING}` "
            f"(study `{document['study']}`):\n\n" + _markdown(pd.DataFrame(table)) + "\n")


def reader_choice(root: Path) -> str:
    """The default style chosen on pooled dev tasks of four corpora, then its test figures."""
    from memory_lab.chapters.reader import choice_tables, earlier_defaults

    document = _load(root, READER_CHOICE)
    dev, test = document["dev"], document["test"]
    tables = choice_tables(document)
    styles = [{"style": f"`{row.pop('style')}`" + (" (chosen)" if row.pop("chosen") else ""), **row}
              for row in tables["styles"]]
    paired = [{"step": f"`{row.pop('upper')}` − `{row.pop('lower')}`", **row} for row in tables["paired"]]
    text = (f"The reading style chosen on the pooled dev tasks of {', '.join(dev['corpora'])} "
            f"(`oracle-source` context, reader `{document['reader']}`), from `{READER_CHOICE}` "
            f"(studies {', '.join(f'`{s}`' for s in dev['studies'])}"
            f"{_read_again(dev.get('replaced', []))}):\n\n"
            + _markdown(pd.DataFrame(styles)) + "\n\nThe chosen style against the others, "
            "paired on the same dev tasks:\n\n" + _markdown(pd.DataFrame(paired)) + "\n")
    if test is None:
        return text + "\nThe test tasks have not been read yet.\n"
    studies = test.get("studies") or [test["study"]]
    text += (f"\n`{test['style']}` on the test tasks, where nothing was chosen (studies "
             f"{', '.join(f'`{s}`' for s in studies)}{_read_again(test.get('replaced', []))}); lowest corpus "
             f"{test['lowest']:.2f}, gap between best and worst corpus {test['gap']:.2f}:\n\n"
             + _markdown(pd.DataFrame(tables["test"])) + "\n")
    for line in earlier_defaults(document):
        text += "\n" + line + "\n"
    return text


def _read_again(replaced: list[dict[str, Any]]) -> str:
    """Which tasks a later study read again (their evidence corrected), and in which styles."""
    groups: dict[tuple[str, int, str], list[str]] = {}
    for r in replaced:
        groups.setdefault((r["corpus"], r["tasks"], r["replaced_by"]), []).append(f"`{r['style']}`")
    return "".join(f"; {tasks} {corpus} tasks read again in {', '.join(styles)} by `{study}`, which "
                   "replaces the earlier reading" for (corpus, tasks, study), styles in groups.items())


def published_ladder(root: Path) -> str:
    """The published chapter 7 run: passes per rung with bootstrap 95% intervals from its own cases."""
    from memory_lab.intervals import pass_rates
    from memory_lab.ladders.reports import load_run

    runs = sorted((root / PUBLISHED_RUNS).glob("*/*/scorecard.json"))
    if not runs:
        raise ReadmeError(f"no published ladder run under {PUBLISHED_RUNS}")
    path = runs[-1]
    document = json.loads(path.read_text(encoding="utf-8"))
    cells = pd.DataFrame(document["scorecard"]["cells"])
    manifest, cases = load_run(path.parent)
    present = list(dict.fromkeys(cells["condition"]))
    order = [c for c in manifest.get("condition_order", []) if c in present] or present
    table = [{"condition": f"`{r.condition}`" + (" (test tasks)" if r.condition == "best" else ""),
              "passed": r.passed, "of": r.cases,
              "pass rate [95%]": f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}]"}
             for r in pass_rates(cases, order, per_type=False)]
    relative = path.relative_to(root).as_posix()
    return (f"The published ladder, from `{relative}` (grader `{document['grader_version']}`; "
            f"{len({c['task_id'] for c in cases})} tasks; bootstrap 95% intervals over them):\n\n"
            + _markdown(pd.DataFrame(table)) + "\n")


def downstream_ladder(root: Path) -> str:
    document = _load(root, DOWNSTREAM)
    rows = []
    for row in document["downstream_by_condition"]:
        interval = ("" if row["condition"] == row["control"]
                    else f"{row['gain']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]")
        rows.append({"condition": f"`{row['condition']}`", "passed": f"{row['passed']} of {row['tasks']}",
                     "paired difference vs control [95%]": interval,
                     "prompt tokens": f"{row['mean_prompt_tokens']:,.0f}",
                     "s / answer": f"{row['mean_answer_seconds']:.0f}"})
    return (f"Downstream work products executed by their harnesses, {len(document['tasks'])} tasks, "
            f"reader `{document['reader']}` ({document['style']}), grader `{document['grader_version']}`, "
            f"from `{DOWNSTREAM}` (run `{document['run']}`); the control `no-memory` is asked in the "
            "same style and format, without history:\n\n" + _markdown(pd.DataFrame(rows)) + "\n")


def _interval(summary: dict[str, Any]) -> str:
    if summary.get("mean") is None:
        return "–"
    return f"{summary['mean']:.3f} [{summary['low']:.3f}, {summary['high']:.3f}]"


def retrieval_ladder(root: Path) -> str:
    document = _load(root, RETRIEVAL_LADDER)
    order = ("lexical", "dense", "hybrid", "best")
    overall = sorted((r for r in document["table"] if r["corpus"] == "all" and r["question_type"] == "all"),
                     key=lambda r: order.index(r["condition"]) if r["condition"] in order else 99)
    rows = [{"condition": f"`{r['condition']}`", "tasks": r["recall_at_admitted"]["n"],
             "recall at candidates [95%]": _interval(r["recall_at_candidates"]),
             "recall at admitted [95%]": _interval(r["recall_at_admitted"])} for r in overall]
    paired = [{"step": f"`{p['upper']}` − `{p['lower']}`", "tasks": p["tasks"],
               "admitted recall difference [95%]":
                   f"{p['difference']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]",
               "separated": "yes" if p["separated"] else "no"}
              for p in document["paired"] if p["corpus"] == "all" and p["stage"] == "admitted"]
    corpora = ", ".join(f"{name} {count}" for name, count in document["tasks_per_corpus"].items())
    return (f"Retrieval level, {document['tasks']} tasks ({corpora}), from `{RETRIEVAL_LADDER}` "
            f"(study `{document['study']}`); tasks with expected sources count, `best` on test "
            "tasks only:\n\n" + _markdown(pd.DataFrame(rows)) + "\n\nPaired on the same tasks:\n\n"
            + _markdown(pd.DataFrame(paired)) + "\n")


def answer_ladder(root: Path) -> str:
    """Pass rates with intervals, pooled and per corpus, and the paired steps, of the answer ladder."""
    document = _load(root, ANSWER_LADDER)
    order = ("no-memory", "hybrid", "best", "oracle-source", "full-history")
    corpora = [name for name in document["rates"] if name != "all"]
    cells = {(scope, r["condition"]): r for scope, rows in document["rates"].items()
             for r in rows if r["question_type"] == "all"}
    rows = []
    for condition in (c for c in order if ("all", c) in cells):
        pooled = cells[("all", condition)]
        rows.append({"condition": f"`{condition}`", "tasks": pooled["cases"],
                     "pass rate [95%]": f"{pooled['rate']:.2f} [{pooled['low']:.2f}, {pooled['high']:.2f}]",
                     **{name: (f"{cells[(name, condition)]['passed']}/{cells[(name, condition)]['cases']}"
                               if (name, condition) in cells else "–") for name in corpora}})
    paired = [{"step": f"`{p['upper']}` − `{p['lower']}`", "tasks": p["tasks"],
               "difference [95%]": f"{p['difference']:+.2f} [{p['low']:+.2f}, {p['high']:+.2f}]",
               "McNemar p": f"{p['mcnemar_p']:.3g}", "separated": "yes" if p["separated"] else "no"}
              for p in document["paired"] if p["question_type"] == "all"]
    counts = ", ".join(f"{name} {count}" for name, count in document["tasks_per_corpus"].items())
    status = ("complete" if document["complete"] else
              "unfinished: the rows hold the cases read so far, and the study resumes from them")
    return (f"Answer level, {document['tasks']} tasks ({counts}), from `{ANSWER_LADDER}` (study "
            f"`{document['study']}`, {status}); `best` on test tasks only:\n\n"
            + _markdown(pd.DataFrame(rows)) + "\n\nPaired on the same tasks:\n\n"
            + _markdown(pd.DataFrame(paired)) + "\n")


def compression(root: Path) -> str:
    """The no-reading screen of sentence compression, then its answer-level reading."""
    screen = _load(root, COMPRESSION_SCREEN)
    kept = [{"corpus": r["corpus"], "keep": r["keep"], "dev tasks": r["tasks"],
             "prompt tokens after / before": f"{r['token_ratio']:.2f}",
             "evidence quotes kept": f"{r['evidence_kept']:.2f} of {r['evidence_quotes']}",
             "tasks with all their evidence": r["tasks_with_all_evidence"]} for r in screen["summary"]]
    text = (f"The screen, without reading (`{COMPRESSION_SCREEN}`, {screen['parameters']['context']}):\n\n"
            + _markdown(pd.DataFrame(kept)) + "\n")
    if not (root / COMPRESSION_READING).is_file():
        return text + "\nNot read at answer level yet.\n"
    reading = _load(root, COMPRESSION_READING)
    cost = {(c["corpus"], c["condition"]): c for c in reading["cost"]}
    rows = []
    for scope, rates in reading["rates"].items():
        for r in rates:
            c = cost[(scope, r["condition"])]
            rows.append({"corpus": scope, "condition": f"`{r['condition']}`",
                         "passed": f"{r['passed']} of {r['cases']}",
                         "pass rate [95%]": f"{r['rate']:.2f} [{r['low']:.2f}, {r['high']:.2f}]",
                         "prompt tokens": f"{c['prompt_tokens']:,.0f}",
                         "median s / answer": "–" if c["median_seconds_per_answer"] is None
                         else f"{c['median_seconds_per_answer']:.0f}"})
    paired = [{"corpus": scope, "tasks": p["tasks"],
               "difference [95%]": f"{p['difference']:+.2f} [{p['low']:+.2f}, {p['high']:+.2f}]",
               "McNemar p": f"{p['mcnemar_p']:.3g}", "separated": "yes" if p["separated"] else "no"}
              for scope, steps in reading["paired"].items() for p in steps]
    status = "complete" if reading["complete"] else "unfinished: the rows hold the cases read so far"
    return (text + f"\nRead on the {reading['split']} tasks by `{reading['reader']}`, from "
            f"`{COMPRESSION_READING}` (study `{reading['study']}`, {status}); the whole-file answers "
            "come from the answer ladder's committed cache, so their seconds were measured in that "
            "study:\n\n" + _markdown(pd.DataFrame(rows))
            + "\n\n`oracle-source-compressed` − `oracle-source`, paired on the same tasks:\n\n"
            + _markdown(pd.DataFrame(paired)) + "\n")


def _ms(summary: dict[str, Any] | None) -> str:
    if not summary or summary.get("p50_ms") is None:
        return "–"
    return f"{summary['p50_ms']:,.1f} / {summary['p95_ms']:,.1f}"


def _goal(value: float | None, goal: float) -> str:
    if value is None:
        return "not measured"
    return f"{value:,.1f} ms, goal ≤ {goal:g}: {'met' if value <= goal else 'missed'}"


def _load_average(document: dict[str, Any], key: str = "load_average_before_timing") -> str:
    values = document.get(key) or (document.get("machine") or {}).get("load_average") or []
    return " / ".join(f"{v:.1f}" for v in values[:3]) if values else "unknown"


LATENCY_STAGES = (
    ("query_terms", "query terms (lexemes + identifiers)"),
    ("lexical_bm25", "lexical BM25, top 30 (posting arrays)"),
    ("query_encoding", "query encoding (MiniLM as `embed_query` runs it, one thread)"),
    ("dense_hnsw", "dense HNSW, top 30"),
    ("fusion", "fusion (RRF, identifier priority; the paths bring their passage rows)"),
    ("retrieve_lexical_stage", "BM25 stage inside the hybrid query (overlapped)"),
    ("retrieve_dense_stage", "dense stage inside the hybrid query (encoding + HNSW)"),
    ("retrieve_total", "whole `Retriever.retrieve`, query encoding included"),
    ("assembly", "context assembly (exact token counts)"),
    ("lexical_tsrank_cd", "lexical `ts_rank_cd`, top 30 (first 20 queries)"),
    ("dense_exact", "dense exact, top 30 (first 20 queries)"),
)


def latency_stages(root: Path) -> str:
    document = _load(root, LATENCY)
    sizes = document["sizes"]
    rows = []
    for key, label in LATENCY_STAGES:
        row = {"stage, p50 / p95 ms": label}
        for size, entry in sizes.items():
            row[f"{int(size):,} chunks"] = _ms(entry["stages"].get(key))
        rows.append(row)
    biggest = sizes[max(sizes, key=int)]
    goals = document.get("goals_at_100k", {})
    exact = [f"{e['bm25']['exact_match']['identical_top_k']} of {e['bm25']['exact_match']['queries']} "
             f"at {int(size):,}" for size, e in sizes.items() if "exact_match" in e.get("bm25", {})]
    loads = ", ".join(f"{_load_average(e)} at {int(size):,}" for size, e in sizes.items())
    bm25_p95 = biggest["stages"]["lexical_bm25"].get("p95_ms")
    total_p95 = biggest["stages"]["retrieve_total"].get("p95_ms")
    return "\n".join([
        f"From `{LATENCY}` (finished {document['finished'][:16]}; load average before timing: {loads}).",
        "",
        _markdown(pd.DataFrame(rows)),
        "",
        f"At {int(max(sizes, key=int)):,} chunks: BM25 p95 "
        f"{_goal(bm25_p95, goals.get('lexical_bm25_p95_ms', 10))}; "
        f"whole hybrid retrieval p95 {_goal(total_p95, goals.get('retrieve_total_p95_ms', 30))}. "
        f"BM25 top 30 identical to exhaustive scoring: {', '.join(exact)} queries.",
    ]) + "\n"


INGEST = Path("benchmarks/results/ingest.json")


def ingest_ratio(root: Path) -> str:
    d = _load(root, INGEST)
    share = d["non_encoder_share_of_ingest"] * 100
    return (f"Ingest of {d['chunks']} chunks took {d['ingest_seconds']:.1f} s against "
            f"{d['encoder_alone_seconds']:.1f} s for the encoder alone on the same chunk texts: "
            f"{d['ratio']:.2f} times (goal ≤ {d['goal_ratio']}); everything but embedding is "
            f"{share:.1f}% of it (from `{INGEST}`, finished {d['finished'][:10]}).\n")


def encoder_threads(root: Path) -> str:
    query = _load(root, LATENCY)["encoder_query"]
    two = query["two_threads_first_20"]
    path = query.get("production_path", "eager")
    rows = [{"query encoding": f"as the pipeline calls it (`embed_query`, {path})",
             "p50 / p95 ms": _ms(query["production"])},
            {"query encoding": "the eager model, one torch thread", "p50 / p95 ms": _ms(query["one_thread"])},
            {"query encoding": f"the eager model, two torch threads (first {two['n']} queries)",
             "p50 / p95 ms": _ms(two)}]
    return (f"From `{LATENCY}` (`encoder_query`): the pipeline's p50 is "
            f"{query['production_p50_over_one_thread_p50']:.2f} times the one-thread model's.\n\n"
            + _markdown(pd.DataFrame(rows)) + "\n")


def scale_summary(root: Path) -> str:
    document = _load(root, SCALE)
    bm25 = document["bm25"]
    curve = document["curve"]
    hybrid = next((c for c in curve if c["ef_search"] == 100 and "hybrid" in c), None)
    parts = bm25.get("parts", {})
    rows = [
        {"measure": "BM25 top 30, segment cache as shipped", "p50 / p95 ms": _ms(bm25["lexical_bm25"])},
        {"measure": "BM25 top 30, segment cache off (same queries, paired)",
         "p50 / p95 ms": _ms(bm25.get("lexical_bm25_segment_cache_off"))},
        {"measure": "  fetch (one binary statement)", "p50 / p95 ms": _ms(parts.get("fetch"))},
        {"measure": "  scoring and top-k (numpy, MaxScore)", "p50 / p95 ms": _ms(parts.get("score_top_k"))},
        {"measure": "  chunk-id lookup", "p50 / p95 ms": _ms(parts.get("chunk_ids"))},
    ]
    if hybrid:
        rows += [
            {"measure": "hybrid retrieval, query encoding included (ef_search 100)",
             "p50 / p95 ms": _ms(hybrid["hybrid"])},
            {"measure": "  its BM25 stage", "p50 / p95 ms": _ms(hybrid.get("hybrid_lexical_stage"))},
            {"measure": "  its dense stage", "p50 / p95 ms": _ms(hybrid.get("hybrid_dense_stage"))},
        ]
    exact = bm25.get("exact_match", {})
    postings = bm25.get("postings_per_query", {})
    load, hnsw = document.get("load_seconds", {}), document.get("hnsw", {})
    storage = document.get("storage", {})
    build = []
    if load.get("total"):
        minutes = {k: load.get(k, 0) / 60 for k in ("total", "copy", "bm25_compaction", "gin_build")}
        build.append(f"load {minutes['total']:.1f} min (COPY {minutes['copy']:.1f}, BM25 compaction "
                     f"{minutes['bm25_compaction']:.1f}, GIN {minutes['gin_build']:.1f})")
    if hnsw.get("seconds"):
        build.append(f"HNSW build {hnsw['seconds'] / 60:.1f} min (m {hnsw.get('m')}, ef_construction "
                     f"{hnsw.get('ef_construction')})")
    if storage.get("total_bytes"):
        build.append(f"{storage['total_bytes'] / 1e9:.1f} GB on disk, BM25 arrays "
                     f"{storage.get('bm25_array_bytes', 0) / 1e6:,.0f} MB "
                     f"({storage.get('postings', 0):,} postings)")
    hybrid_p95 = hybrid["hybrid"]["p95_ms"] if hybrid else None
    return "\n".join([
        f"From `{SCALE}` ({document['parameters']['chunks']:,} chunks, {document['parameters']['queries']} "
        f"queries, finished {document.get('finished', '')[:16]}; load average before timing "
        f"{_load_average(document)}, after {_load_average(document, 'load_average_after_timing')}).",
        "",
        _markdown(pd.DataFrame(rows)),
        "",
        f"BM25 p95 {_goal(bm25['lexical_bm25'].get('p95_ms'), 60)}; hybrid p95 {_goal(hybrid_p95, 100)}. "
        f"BM25 top 30 identical to exhaustive scoring on {exact.get('identical_top_k')} of "
        f"{exact.get('queries')} queries; a query touches {postings.get('mean', 0):,.0f} postings on average "
        f"({postings.get('max', 0):,} at most). Build: {'; '.join(build) or 'reused index'}.",
    ]) + "\n"


def scale_curve(root: Path) -> str:
    document = _load(root, SCALE)
    rows = []
    for point in document["curve"]:
        rows.append({"ef_search": point["ef_search"], "recall@10": f"{point['recall_at_10']:.3f}",
                     "HNSW top 10, p50 / p95 ms": _ms(point.get("dense_top10")),
                     "hybrid, p50 / p95 ms": _ms(point.get("hybrid"))})
    return f"HNSW recall@10 against exact search, from `{SCALE}`:\n\n" + _markdown(pd.DataFrame(rows)) + "\n"


def reproduction(root: Path) -> str:
    """What the README's main command took on a fresh clone (`memory_lab.book.reproduction`)."""
    document = _load(root, REPRODUCTION)
    answers, machine = document["answers"], document["machine"]
    layers = ", ".join(f"{count} from `{layer}`" for layer, count in sorted(answers["by_layer"].items()))
    chapters = [{"chapter": name, "seconds": f"{seconds:,.0f}"}
                for name, seconds in document["chapters"].items()]
    verdict = "within" if document["within_goal"] else "over"
    load = machine.get("load_average") or ["?"]
    return (f"`{document['command']}` on a fresh clone of `{document['commit'][:7]}` with a memory home of "
            f"its own, from `{REPRODUCTION}`: {document['book_seconds'] / 60:.1f} minutes on "
            f"{machine['cpu_count']} cores (load average {load[0]} when it started; the install before it "
            f"{(document['install_seconds'] or 0) / 60:.1f} minutes), {verdict} the goal of "
            f"{document['goal_minutes']}. Answers and reranker scores: {answers['from_cache']} from the "
            f"committed caches ({layers or 'none'}), {answers['computed']} computed, "
            f"{answers['refused']} refused"
            + (f"; document vectors: {document['vectors']['from_cache']} from the vector "
               f"caches, {document['vectors']['computed']} computed" if document.get("vectors") else "")
            + (f". Tables and text outputs that differ from the published chapters (timings aside): "
               f"{sum(document['differing_outputs'].values())}" if "differing_outputs" in document else "")
            + ". Seconds per chapter (the build "
            f"{document['build_seconds']:,.0f} s):"
            "\n\n" + _markdown(pd.DataFrame(chapters)) + "\n")


MCP = Path("benchmarks/results/mcp.json")


def mcp_latency(root: Path) -> str:
    """Warm search through the MCP server against a cold CLI search, and ask's first token."""
    document = _load(root, MCP)
    rows = []
    for name, entry in document["indexes"].items():
        if not entry.get("warm_mcp"):
            rows.append({"index": name, "chunks": "–", "warm MCP search, p50 / p95 ms": "not measured",
                         "cold CLI search, p50 / p95 ms": entry.get("why", "–")})
            continue
        rows.append({"index": name, "chunks": f"{entry['chunks']:,}",
                     "warm MCP search, p50 / p95 ms": _ms(entry["warm_mcp"]["round_trip_ms"]),
                     "cold CLI search, p50 / p95 ms": _ms(entry["cold_cli"]["wall_ms"])})
    lines = [f"From `{MCP}` ({document['queries_per_index']} searches through one server per index, "
             f"{document['cold_queries_per_index']} CLI processes; load average "
             f"{_load_average(document)} when it started):", "", _markdown(pd.DataFrame(rows))]
    first = document.get("first_token") or []
    if first:
        lines += ["", "`ask` streamed on the fixture (qwen-1.5b, answer cache off): time to the first token "
                  "beside the prompt it had to read first:", "",
                  _markdown(pd.DataFrame([{
                      "prompt tokens": f"{r['prompt_tokens']:,}",
                      "first token, s": f"{r['first_token_seconds']:.1f}",
                      "runtime prefill, s": f"{r['runtime_prefill_seconds']:.1f}",
                      "prefill tokens/s": f"{r['prefill_tokens_per_second']:.0f}"
                      if r.get("prefill_tokens_per_second") else "–",
                      "whole answer, s": f"{r['answer_seconds']:.1f}"} for r in first]))]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Path], str]] = {
    "scifact": scifact, "reader-ceiling": reader_ceiling, "reader-choice": reader_choice,
    "ladder": published_ladder,
    "downstream": downstream_ladder, "retrieval-ladder": retrieval_ladder, "answer-ladder": answer_ladder,
    "latency": latency_stages, "scale": scale_summary,
    "scale-curve": scale_curve, "encoder": encoder_threads,
    "ingest": ingest_ratio, "reproduction": reproduction, "compression": compression,
    "mcp": mcp_latency,
}


def render(text: str, root: Path) -> str:
    """`text` with every results section re-rendered from its artifact."""
    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in RENDERERS:
            raise ReadmeError(f"README has a results section {name!r} with no renderer; "
                              f"known: {', '.join(RENDERERS)}")
        return match.group(1) + RENDERERS[name](root) + match.group(4)

    return _SECTION.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0] if argv else ".").resolve()
    for relative in DOCUMENTS:
        document = root / relative
        text = document.read_text(encoding="utf-8")
        rendered = render(text, root)
        if rendered != text:
            document.write_text(rendered, encoding="utf-8")
            print(f"rewrote the results sections of {document}")
        else:
            print(f"{document} is up to date with its artifacts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
