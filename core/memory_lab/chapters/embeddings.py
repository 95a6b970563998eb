"""Chapter 3: encoders compared on a world and a BEIR subset."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.config import Config
from memory_baseline.reading import Reader
from memory_baseline.store import Store
from memory_instrument import Task
from memory_lab.chapters.ingest import storage_bytes
from memory_lab.studies.display import show_figure, show_table, summarise  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import (  # noqa: F401 - called by the chapter
    StudyRun,
    display_path,
    index_corpus,
    load_task_subset,
    prepare_world,
    reader_for,
    repo_path,
    start_study,
)
from memory_lab.studies.traces import stage_row, trace_tasks

# -- chapter 3: encoders ------------------------------------------------------------------------


def embedding_study(
    conn: psycopg.Connection, base_config: Config, corpus_dir: str | Path, tasks: Sequence[Task],
    embedders: Sequence[str], *, index_prefix: str, reader: Reader, ks: Sequence[int] = (1, 5, 10),
    run: StudyRun | None = None, progress: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Dense-only retrieval quality, query latency, indexing time and storage per encoder.

    Returns (per-task rows, per-encoder cost rows). Each encoder gets its own index,
    so vectors of two encoders never meet, and search is exact, so a difference is the
    encoder's and not the approximate index's. An encoder that cannot be built here (an
    Ollama model without a server) gives a cost row with the reason, not a crash.
    """
    from memory_baseline.embedders import get_embedder

    task_rows, cost_rows, identities, configs = [], [], {}, {}
    for name in embedders:
        config = base_config.with_overrides(
            index=f"{index_prefix}_{name.replace('-', '_')}", embedder={"name": name},
            retrieval={"lexical": "none", "dense": True, "identifier_priority": False,
                       "dense_plan": "exact"})
        try:
            embedder = get_embedder(config.embedder)
        except ValueError as exc:
            cost_rows.append({"embedder": name, "error": str(exc).splitlines()[0]})
            continue
        identities[name] = embedder.identity.to_dict()
        configs[name] = config.to_dict()
        served_before = getattr(embedder, "served", 0)
        report = index_corpus(conn, config, corpus_dir, progress=progress)
        traces = trace_tasks(conn, config, tasks, reader=reader, label=name, progress=progress)
        for trace in traces:
            row = stage_row(trace, ks)
            task_rows.append({"embedder": name, "task": row["task"],
                              "question_type": row["question_type"],
                              **{f"R@{k}": row[f"dense_R@{k}"] for k in ks}, "RR": row["dense_RR"]})
        encode = [t.retrieval.stage("dense").detail.get("encode_ms", 0.0) for t in traces]
        search = [t.retrieval.stage("dense").ms for t in traces]
        sizes = storage_bytes(conn, config.index)
        chunks = Store(conn, config.index).counts()["chunks"]
        cost_rows.append({
            "embedder": name, "dimension": embedder.identity.dimension,
            "max_tokens": embedder.identity.max_tokens, "chunks": chunks,
            "embed_seconds": report.seconds.get("embed"),
            "reembedded_now": len(report.added) + len(report.changed) + len(report.reembedded),
            # under the book's vector cache, embed seconds cover only the vectors encoded now
            "vectors_from_cache": getattr(embedder, "served", 0) - served_before,
            "query_encode_p50_ms": round(statistics.median(encode), 1) if encode else None,
            "dense_search_p50_ms": round(statistics.median(search), 1) if search else None,
            "vector_bytes": chunks * embedder.identity.dimension * 4,
            "hnsw_bytes": sizes["hnsw"],
        })
    if run is not None:
        run.record("embedders", identities)
        run.record("configurations", configs)
    return task_rows, cost_rows


def beir_subset(beir_dir: str | Path, out_root: str | Path, *, max_queries: int, max_docs: int,
                split: str = "test", seed: int = 7) -> Path:
    """A smaller BEIR folder: the first `max_queries` judged queries, their relevant documents,
    and seeded random other documents up to `max_docs`. Written once, then reused.

    A smoke run cannot embed 5,183 abstracts per encoder; a subset keeps the task's
    shape (every query has its judged documents among distractors) at a fraction of it.
    """
    import random

    from memory_lab.corpora.beir import load_dataset, read_qrels

    source = repo_path(beir_dir)
    dataset = load_dataset(source)
    name = f"beir-{dataset.name}-q{max_queries}-d{max_docs}-s{seed}"
    target = repo_path(out_root) / name
    if (target / "corpus.jsonl").is_file():
        return target
    qrels = read_qrels(source / "qrels" / f"{split}.tsv")
    query_ids = [q for q in sorted(qrels, key=lambda q: (len(q), q)) if q in dataset.queries][:max_queries]
    relevant = {doc for q in query_ids for doc in qrels[q]}
    records = [json.loads(line) for line in (source / "corpus.jsonl").read_text("utf-8").splitlines()
               if line.strip()]
    others = [r for r in records if str(r["_id"]) not in relevant]
    rng = random.Random(seed)
    keep = relevant | {str(r["_id"]) for r in rng.sample(others, max(0, min(len(others),
                                                                        max_docs - len(relevant))))}
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            if str(record["_id"]) in keep:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (target / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for qid in query_ids:
            handle.write(json.dumps({"_id": qid, "text": dataset.queries[qid]}) + "\n")
    with (target / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for qid in query_ids:
            for doc, score in qrels[qid].items():
                handle.write(f"{qid}\t{doc}\t{score}\n")
    return target


def beir_embedding_rows(
    conn: psycopg.Connection, base_config: Config, beir_dir: str | Path, embedders: Sequence[str],
    *, runs_root: str | Path, max_queries: int | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """Dense-only BEIR metrics per encoder, each from its own `beir` run directory."""
    from memory_lab.corpora.beir import run_beir

    rows = []
    for name in embedders:
        config = base_config.with_overrides(embedder={"name": name}, retrieval={"dense_plan": "exact"})
        document = run_beir(conn, config, repo_path(beir_dir), ["dense"], runs_root=repo_path(runs_root),
                            max_queries=max_queries, progress=progress)
        result = document["conditions"]["dense"]
        rows.append({"embedder": name, "queries": document["queries"], **result["metrics"],
                     "p50_ms": result["latency"]["p50_ms"],
                     "run": display_path(document["run_dir"])})
    return rows
