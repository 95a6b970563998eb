"""``bench scale``: one million chunks in the embedded server.

Load time and storage (posting arrays included), the HNSW build, recall@10 of
HNSW against exact search at several ``ef_search`` values, BM25 top-30 from the
posting arrays with its parts and its exactness on every query, and the whole
hybrid retrieval (real query encoding included) at a few ``ef_search`` values.
The build is expensive and deterministic: `build_only` makes and keeps it,
`reuse` times a kept one (the machine's load average is recorded either side
of the timed part).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from tqdm.auto import tqdm

from memory_baseline.config import Config, EmbedderConfig
from memory_baseline.embedders import get_embedder
from memory_baseline.retrieval import Retriever
from memory_baseline.store import Store, data_directory, query_terms
from memory_lab.bench.common import BenchError, machine_description, timed
from memory_lab.bench.exactness import Reference, bm25_queries
from memory_lab.bench.latency import encoder_query_latency
from memory_lab.bench.synthetic import (
    EncodingQueryEmbedder,
    VectorModel,
    build_hnsw,
    enough_queries,
    load_corpus,
    query_vectors,
    recombined_corpus,
    storage,
    vector_statistics,
)
from memory_lab.stats import latency_summary

SCALE_BUILD_KEY = "bench_scale_build"


def bench_scale(
    conn: psycopg.Connection,
    *,
    chunks: int = 1_000_000,
    queries: int = 200,
    ef_search: Sequence[int] = (10, 20, 40, 64, 100, 200, 400),
    hybrid_ef_search: Sequence[int] = (40, 100, 200),
    m: int = 16,
    ef_construction: int = 64,
    maintenance_work_mem: str = "4GB",
    parallel_workers: int = 1,
    exact_sql_queries: int = 5,
    seed: int = 5,
    index: str = "bench_scale",
    keep: bool = False,
    reuse: bool = False,
    build_only: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Load `chunks` chunks, build HNSW, and measure recall@10 and latency against ef_search.

    `reuse` times an index kept by an earlier `keep` run (the build is deterministic);
    `build_only` stops after the build, so the timed part can run when the machine is quiet.
    """
    if chunks < 100 or queries < 1:
        raise BenchError("chunks must be at least 100 and queries at least 1")
    model = VectorModel(seed=seed)
    document: dict[str, Any] = {
        "benchmark": "scale", "machine": machine_description(conn),
        "parameters": {"chunks": chunks, "queries": queries, "ef_search": list(ef_search),
                       "hybrid_ef_search": list(hybrid_ef_search), "m": m,
                       "ef_construction": ef_construction,
                       "maintenance_work_mem": maintenance_work_mem,
                       "max_parallel_maintenance_workers": parallel_workers, "seed": seed,
                       "load": "binary COPY, 10k rows per transaction (the triggers append BM25 "
                               "delta segments), then compaction; GIN dropped during the load "
                               "and rebuilt after"},
        "vectors": model.describe(),
    }
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        t0 = time.perf_counter()
        corpus = recombined_corpus(chunks, seed, Path(tmp), pool_docs=min(20_000, max(chunks, 200)))
        timings["generate_text"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vectors = np.concatenate([model.sample(min(100_000, chunks - s), stream=s)
                              for s in range(0, chunks, 100_000)])
    timings["generate_vectors"] = time.perf_counter() - t0
    document["vectors"]["statistics"] = vector_statistics(vectors)
    query_texts = enough_queries(corpus.queries, queries, seed)
    vectors_of_queries = query_vectors(model, query_texts)
    encoder = get_embedder(EmbedderConfig())
    embedder = EncodingQueryEmbedder(model, vectors_of_queries, encoder)
    document["corpus"] = corpus.description
    existing = Store(conn, index)
    if reuse and existing.exists() and existing.has_hnsw() \
            and existing.counts()["chunks"] == chunks and existing.get_meta(SCALE_BUILD_KEY):
        # The build is deterministic in (chunks, seed, m, ef_construction): keep its record.
        document.update(existing.get_meta(SCALE_BUILD_KEY))
        document["reused_index"] = True
    else:
        disk_before = _disk_free(conn)
        load = load_corpus(conn, index, corpus, vectors, embedder, bulk=True, progress=progress)
        load["total"] = round(sum(v for k, v in load.items() if k != "bm25_compacted_terms"), 2)
        build = {
            "load_seconds": load,
            "hnsw": build_hnsw(conn, index, m=m, ef_construction=ef_construction,
                               maintenance_work_mem=maintenance_work_mem,
                               parallel_workers=parallel_workers),
            "storage": storage(conn, index, chunks),
            "disk_free_gb": {"before": disk_before, "after_build": _disk_free(conn)},
            "build_machine": machine_description(conn),
            "build_finished": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with conn.transaction():
            existing.set_meta(SCALE_BUILD_KEY, build)
        document.update(build)
    if build_only:
        document["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        return document

    # Exact ground truth in numpy (the same cosine ranking pgvector computes).
    store = Store(conn, index)
    rep_id = store.representations_in_use().popitem()[0]
    matrix = np.stack([vectors_of_queries[q] for q in query_texts])
    truth = []
    ids = np.asarray([c.chunk_id for c in corpus.chunks])
    for start in range(0, len(matrix), 50):
        scores = matrix[start:start + 50] @ vectors.T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        truth.extend(set(ids[row]) for row in top)
    del vectors

    settings = Config(index=index).retrieval
    document["load_average_before_timing"] = list(os.getloadavg())
    term_lists = [query_terms(store, q) for q in query_texts]
    t0 = time.perf_counter()
    reference = Reference.read(store, [t for terms in term_lists for t in terms])
    document["bm25_reference_read_seconds"] = round(time.perf_counter() - t0, 1)
    document["bm25"] = bm25_queries(store, term_lists, k=settings.per_path_candidates,
                                    k1=settings.bm25_k1, b=settings.bm25_b,
                                    name_weight=settings.bm25_name_weight, reference=reference)
    del reference
    document["bm25_fetch_plan"] = store.explain_lexical_bm25(max(term_lists, key=len)).splitlines()

    exact_ms = [timed(lambda v=matrix[i]: store.dense(v, 10, rep_id, plan="exact"))[1]
                for i in range(min(exact_sql_queries, len(matrix)))]
    document["dense_exact_sql"] = latency_summary(exact_ms)

    curve = []
    for ef in ef_search:
        recalls, top10_ms, top30_ms = [], [], []
        for i, vector in enumerate(matrix):
            (hits, _), ms = timed(lambda v=vector, e=ef: store.dense(v, 10, rep_id, plan="hnsw",
                                                                      ef_search=e))
            top10_ms.append(ms)
            recalls.append(len({h.chunk_id for h in hits} & truth[i]) / 10)
            top30_ms.append(timed(lambda v=vector, e=ef: store.dense(v, 30, rep_id, plan="hnsw",
                                                                      ef_search=e))[1])
        curve.append({"ef_search": ef, "recall_at_10": round(float(np.mean(recalls)), 4),
                      "recall_at_10_min": round(float(np.min(recalls)), 2),
                      "dense_top10": latency_summary(top10_ms),
                      "dense_top30_ef_at_least_30": latency_summary(top30_ms)})
    config = Config(index=index)
    for point in curve:
        if point["ef_search"] not in hybrid_ef_search:
            continue
        retriever = Retriever(
            conn, config.with_overrides(retrieval={"hnsw_ef_search": point["ef_search"]}),
            embedder=embedder)
        hybrid_ms, lexical_ms, dense_stage_ms, encode_ms = [], [], [], []
        for query in tqdm(query_texts, desc=f"hybrid ef={point['ef_search']}",
                          disable=not progress):
            result, ms = timed(lambda q=query, r=retriever: r.retrieve(q))
            hybrid_ms.append(ms)
            lexical_ms.append(result.stage("lexical").ms)
            dense_stage_ms.append(result.stage("dense").ms)
            encode_ms.append(result.stage("dense").detail["encode_ms"])
        point["hybrid"] = latency_summary(hybrid_ms)
        point["hybrid_encode"] = latency_summary(encode_ms)
        point["hybrid_lexical_stage"] = latency_summary(lexical_ms)
        point["hybrid_dense_stage"] = latency_summary(dense_stage_ms)
        retriever.close()
    document["curve"] = curve
    document["load_average_after_timing"] = list(os.getloadavg())
    document["encoder_query"] = encoder_query_latency(query_texts, encoder)
    meeting = [p for p in curve if "hybrid" in p and p["recall_at_10"] >= 0.95
               and p["hybrid"]["p95_ms"] <= 100]
    document["goal"] = {"bm25_p95_ms": 60, "recall_at_10": 0.95, "hybrid_p95_ms": 100,
                        "hybrid_includes": "real MiniLM query encoding",
                        "met_at_ef_search": [p["ef_search"] for p in meeting]}
    document["generation_seconds"] = {k: round(v, 2) for k, v in timings.items()}
    if not keep:
        store.drop()
        document["disk_free_gb"]["after_drop"] = _disk_free(conn)
    document["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    return document


def _disk_free(conn: psycopg.Connection) -> float | None:
    """Free space (GB) on the file system of the server's data directory, when it is local."""
    try:
        data_dir = data_directory(conn)
        stats = os.statvfs(data_dir)
    except (psycopg.Error, OSError):
        return None
    return round(stats.f_bavail * stats.f_frsize / 2**30, 1)




def figure(document: dict[str, Any], plt: Any) -> Any:
    curve = document["curve"]
    figure, axis = plt.subplots(figsize=(7, 4))
    recalls = [p["recall_at_10"] for p in curve]
    dense = [p["dense_top10"]["p95_ms"] for p in curve]
    axis.plot(dense, recalls, marker="o", label="HNSW top 10 alone (p95)")
    for point, x in zip(curve, dense, strict=True):
        axis.annotate(f"ef {point['ef_search']}", (x, point["recall_at_10"]), fontsize=7,
                      xytext=(3, -9), textcoords="offset points")
    with_hybrid = [p for p in curve if "hybrid" in p]
    if with_hybrid:
        axis.plot([p["hybrid"]["p95_ms"] for p in with_hybrid],
                  [p["recall_at_10"] for p in with_hybrid], marker="s",
                  label="hybrid retrieval incl. query encoding, top 30 (p95)")
    axis.axhline(0.95, color="red", linestyle=":", linewidth=1)
    axis.axvline(100, color="red", linestyle=":", linewidth=1)
    axis.set_xscale("log")
    axis.set_xlabel("p95 latency, ms (log)")
    axis.set_ylabel("recall@10 vs exact")
    bm25 = document.get("bm25", {}).get("lexical_bm25", {})
    axis.set_title(f"{document['parameters']['chunks']:,} chunks, HNSW m={document['hnsw']['m']} "
                   f"ef_construction={document['hnsw']['ef_construction']}; "
                   f"BM25 top 30 p50/p95 {bm25.get('p50_ms', 0):.1f}/{bm25.get('p95_ms', 0):.1f} ms")
    axis.legend(fontsize=8, loc="lower right")
    return figure


