"""``bench latency``: p50/p95 of every retrieval stage at several corpus sizes.

Generated worlds of 10k and 100k chunks (`synthetic.world_corpus`: ingest's
parser and chunker, ingest's rows, synthetic vectors). Per query, in turn:
query terms, BM25 top-k from the posting arrays (with its fetch, scoring and
id-lookup parts, and its exactness against exhaustive scoring, see
`exactness`), the real MiniLM query encoding, HNSW, fusion, the whole
`Retriever.retrieve` *including* the real query encoding (its lexical and dense
paths overlapped), and context assembly. The slow comparison rankers
(``ts_rank_cd`` and exact dense search) are timed on a sample of queries only:
each takes about a second at 100k. The encoder's own one-thread latency is
measured in the same run, interleaved with the production path, so the two are
compared under the same load.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.config import Config, EmbedderConfig, ReaderConfig, RerankConfig
from memory_baseline.embedders import Embedder, get_embedder
from memory_baseline.retrieval import Retriever
from memory_baseline.store import Store, query_terms
from memory_lab.bench.common import BenchError, machine_description, timed
from memory_lab.bench.exactness import Reference, bm25_queries
from memory_lab.bench.synthetic import (
    EncodingQueryEmbedder,
    SyntheticQueryEmbedder,
    VectorModel,
    build_hnsw,
    enough_queries,
    load_corpus,
    query_vectors,
    storage,
    world_corpus,
)
from memory_lab.stats import latency_summary

SLOW_RANKER_QUERIES = 20


def stage_latencies(
    conn: psycopg.Connection, index: str, queries: Sequence[str], embedder: EncodingQueryEmbedder,
    *, depth: int = 30, warmup: int = 10, progress: bool = True,
) -> dict[str, Any]:
    """Per-stage milliseconds over `queries`, every stage run for every query in turn."""
    config = Config(index=index)
    settings = config.retrieval
    retriever = Retriever(conn, config, embedder=embedder)
    store = retriever.store
    rep_id = retriever.representation_id
    from memory_baseline.context import assemble, candidates_in_order
    from memory_baseline.reading import ExtractiveReader, build_messages

    counter_reader = ExtractiveReader(ReaderConfig(name="extractive"))
    times: dict[str, list[float]] = {name: [] for name in (
        "query_terms", "query_encoding", "dense_hnsw", "fusion", "retrieve_total",
        "retrieve_lexical_stage", "retrieve_dense_stage", "assembly", "lexical_tsrank_cd",
        "dense_exact")}
    union_sizes: list[int] = []
    warmup_queries = list(queries[:warmup])
    sample = warmup_queries + list(queries)
    term_lists = []
    for position, query in enumerate(tqdm(sample, desc=f"queries {index}", disable=not progress)):
        record = position >= len(warmup_queries)
        terms, t_terms = timed(lambda q=query: query_terms(store, q))
        _, t_encode = timed(lambda q=query: embedder.encoder.embed_query(q))
        vector = SyntheticQueryEmbedder.embed_query(embedder, query)
        _, t_hnsw = timed(lambda v=vector: store.dense(v, depth, rep_id, plan="hnsw",
                                                        ef_search=settings.hnsw_ef_search))
        result, t_total = timed(lambda q=query: retriever.retrieve(q))
        passages = candidates_in_order(result)

        def count(chosen, q=query):
            return counter_reader.count_prompt_tokens(build_messages(q, chosen, None))

        _, t_assembly = timed(lambda p=passages, c=count: assemble(
            p, config.context, c, tokenizer=counter_reader.tokenizer_name))
        slow = record and position - len(warmup_queries) < SLOW_RANKER_QUERIES
        if slow:
            times["lexical_tsrank_cd"].append(timed(lambda t=terms: store.lexical_tsrank_cd(t, depth))[1])
            times["dense_exact"].append(timed(lambda v=vector: store.dense(v, depth, rep_id,
                                                                           plan="exact"))[1])
        if not record:
            continue
        term_lists.append(terms)
        for name, value in (("query_terms", t_terms), ("query_encoding", t_encode),
                            ("dense_hnsw", t_hnsw), ("fusion", result.stage("fused").ms),
                            ("retrieve_total", t_total),
                            ("retrieve_lexical_stage", result.stage("lexical").ms),
                            ("retrieve_dense_stage", result.stage("dense").ms),
                            ("assembly", t_assembly)):
            times[name].append(value)
        union_sizes.append(result.stage("fused").detail["union_size"])
    retriever.close()
    reference = Reference.read(store, [t for terms in term_lists for t in terms])
    bm25 = bm25_queries(store, term_lists, k=depth, k1=settings.bm25_k1, b=settings.bm25_b,
                        name_weight=settings.bm25_name_weight, reference=reference, warmup=warmup)
    stages = {name: latency_summary(values) for name, values in times.items()}
    stages["lexical_bm25"] = bm25["lexical_bm25"]
    return {
        "queries": len(queries), "warmup_queries": len(warmup_queries), "depth": depth,
        "ef_search": settings.hnsw_ef_search, "slow_ranker_queries": SLOW_RANKER_QUERIES,
        "stages": stages, "bm25": bm25,
        "mean_fused_union": round(statistics.fmean(union_sizes), 1),
        "bm25_mean_terms": round(statistics.fmean(len(t) for t in term_lists), 1),
        "bm25_fetch_plan": store.explain_lexical_bm25(max(term_lists, key=len)).splitlines(),
        "notes": ("retrieve_total is Retriever.retrieve including the real MiniLM query "
                  "encoding (EncodingQueryEmbedder) with the lexical path overlapped on a second "
                  "connection; its lexical stage includes query_terms, its dense stage the "
                  "encoding; assembly counts tokens with the extractive reader's tokenizer; "
                  f"lexical_tsrank_cd and dense_exact over the first {SLOW_RANKER_QUERIES} "
                  "queries only"),
    }


def encoder_query_latency(queries: Sequence[str], encoder: Embedder | None = None,
                          warmup: int = 5) -> dict[str, Any]:
    """MiniLM's production `embed_query` against its own one- and two-thread latency, interleaved.

    The one-thread figure sets torch to one thread and calls the eager model directly;
    the production path (a frozen trace of the same weights when it verifies, see
    `memory_baseline.embedders`) must stay within 2x of it on a busy machine.
    """
    import torch

    encoder = encoder or get_embedder(EmbedderConfig())
    model = getattr(encoder, "_model", None)
    for query in queries[:warmup]:
        encoder.embed_query(query)

    def raw(query: str, threads: int) -> float:
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return timed(lambda: model.encode([query], normalize_embeddings=True,
                                              show_progress_bar=False))[1]
        finally:
            torch.set_num_threads(previous)

    production, one, two = [], [], []
    for query in queries:
        production.append(timed(lambda q=query: encoder.embed_query(q))[1])
        if model is not None:
            one.append(raw(query, 1))
    if model is not None:
        two = [raw(query, 2) for query in queries[:20]]
    out = {"embedder": encoder.identity.to_dict(), "production": latency_summary(production),
           "production_path": getattr(encoder, "query_path", "eager"),
           "torch_threads_at_rest": torch.get_num_threads()}
    if one:
        out["one_thread"] = latency_summary(one)
        out["two_threads_first_20"] = latency_summary(two)
        out["production_p50_over_one_thread_p50"] = round(
            out["production"]["p50_ms"] / out["one_thread"]["p50_ms"], 3)
    return out


def llm_stage_latencies(
    conn: psycopg.Connection, index: str, queries: Sequence[str],
    embedder: SyntheticQueryEmbedder, *, reranker: str, reader: str,
) -> dict[str, Any]:
    """Reranker and reader cost on a few queries (each costs seconds to minutes on 2 cores)."""
    from memory_baseline.baseline import Baseline
    from memory_baseline.reading import get_reader
    from memory_baseline.rerank import get_reranker

    out: dict[str, Any] = {"queries": len(queries)}
    try:
        config = Config(index=index, rerank=RerankConfig(name=reranker),
                        reader=ReaderConfig(name=reader, cache=False))
        rerank_model = get_reranker(config.rerank)
        retriever = Retriever(conn, config, embedder=embedder, reranker=rerank_model)
        rerank_ms = []
        for query in queries:
            result = retriever.retrieve(query)
            rerank_ms.append(result.stage("reranked").ms)
        out["rerank"] = {"reranker": rerank_model.identity, "top_n": config.rerank.top_n,
                         **latency_summary(rerank_ms)}
    except Exception as exc:  # a missing model or package: report it, keep the other figures
        out["rerank"] = {"skipped": f"{type(exc).__name__}: {exc}"}
    try:
        config = Config(index=index, reader=ReaderConfig(name=reader, cache=False))
        reader_model = get_reader(config.reader)
        baseline = Baseline(conn, config, reader=reader_model,
                            retriever=Retriever(conn, config, embedder=embedder))
        rows = []
        for query in queries:
            asked = baseline.ask(query)
            usage = asked.answer.usage
            rows.append({"assembly_ms": asked.timings_ms.get("assembly"),
                         "prompt_tokens": usage.prompt_tokens,
                         "completion_tokens": usage.completion_tokens,
                         "prompt_ms": usage.prompt_seconds * 1000,
                         "generation_ms": usage.generation_seconds * 1000,
                         "reader_ms": asked.timings_ms.get("reader")})
        out["reader"] = {
            "reader": reader_model.identity,
            "assembly_exact_tokens": latency_summary([r["assembly_ms"] or 0.0 for r in rows]),
            "prompt_processing": latency_summary([r["prompt_ms"] for r in rows]),
            "generation": latency_summary([r["generation_ms"] for r in rows]),
            "reader_total": latency_summary([r["reader_ms"] for r in rows]),
            "per_query": rows,
        }
    except Exception as exc:
        out["reader"] = {"skipped": f"{type(exc).__name__}: {exc}"}
    return out


def bench_latency(
    conn: psycopg.Connection,
    *,
    sizes: Sequence[int] = (10_000, 100_000),
    queries: int = 200,
    seed: int = 11,
    llm_queries: int = 0,
    reranker: str = "llm-qwen-0.5b",
    reader: str = "qwen-1.5b",
    index_prefix: str = "bench_latency",
    keep: bool = False,
    reuse: bool = False,
    build_only: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Per-stage p50/p95 at each corpus size (chunks), on generated text + synthetic vectors.

    `build_only` loads and keeps the indexes and times nothing, so the timing can run
    later (`reuse`) on a machine that is not also building.

    `reuse` keeps an index left by an earlier run with `keep` (same sizes and seed:
    the corpus and vectors are deterministic) instead of loading it again.
    """
    if any(size < 50 for size in sizes) or queries < 1:
        raise BenchError("sizes must be at least 50 chunks and queries at least 1")
    model = VectorModel(seed=seed)
    encoder = get_embedder(EmbedderConfig())
    document: dict[str, Any] = {
        "benchmark": "latency", "machine": machine_description(conn),
        "parameters": {"sizes": list(sizes), "queries": queries, "seed": seed,
                       "llm_queries": llm_queries, "reranker": reranker, "reader": reader,
                       "config": Config().retrieval.__dict__},
        "vectors": model.describe(), "sizes": {},
        "goals_at_100k": {"lexical_bm25_p95_ms": 10, "retrieve_total_p95_ms": 30},
    }
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        for size in sizes:
            index = f"{index_prefix}_{size}"
            corpus = world_corpus(min(max(size + size // 20, 20), 100_000), size, seed, Path(tmp))
            query_texts = enough_queries(corpus.queries, queries, seed)
            embedder = EncodingQueryEmbedder(model, query_vectors(model, query_texts), encoder)
            existing = Store(conn, index)
            if reuse and existing.exists() and existing.has_hnsw() \
                    and existing.counts()["chunks"] == len(corpus.chunks):
                t0 = time.perf_counter()
                existing.analyze()
                load = {"reused_index": True, "vacuum_analyze": round(time.perf_counter() - t0, 3)}
                hnsw = {"reused_index": True}
            else:
                vectors = model.sample(len(corpus.chunks), stream=size)
                load = load_corpus(conn, index, corpus, vectors, embedder, progress=progress)
                hnsw = build_hnsw(conn, index, maintenance_work_mem="1GB")
            if build_only:
                document["sizes"][str(size)] = {"corpus": corpus.description, "load_seconds": load,
                                                "hnsw": hnsw, "kept_index": index}
                continue
            entry: dict[str, Any] = {
                "corpus": corpus.description, "load_seconds": load, "hnsw": hnsw,
                "storage": storage(conn, index, len(corpus.chunks)),
                "load_average_before_timing": list(_load_average()),
                **stage_latencies(conn, index, query_texts, embedder, progress=progress),
                "load_average_after_timing": list(_load_average()),
            }
            if llm_queries > 0 and size == max(sizes):
                entry["llm_stages"] = llm_stage_latencies(
                    conn, index, query_texts[:llm_queries], embedder, reranker=reranker,
                    reader=reader)
            document["sizes"][str(size)] = entry
            if not keep:
                Store(conn, index).drop()
    if build_only:
        document["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        return document
    document["encoder_query"] = encoder_query_latency(query_texts, encoder)
    document["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    return document


def _load_average() -> tuple[float, float, float]:
    import os

    return os.getloadavg()


def figure(document: dict[str, Any], plt: Any) -> Any:
    sizes = list(document["sizes"])
    stages = ["query_terms", "lexical_bm25", "query_encoding", "dense_hnsw", "fusion",
              "retrieve_total", "assembly", "lexical_tsrank_cd", "dense_exact"]
    figure, axis = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / (2 * len(sizes))
    for i, size in enumerate(sizes):
        stats = document["sizes"][size]["stages"]
        for j, key in enumerate(("p50_ms", "p95_ms")):
            offset = (2 * i + j) * width - 0.4 + width / 2
            axis.bar([k + offset for k in range(len(stages))],
                     [max(stats.get(s, {}).get(key, 0.0), 1e-3) for s in stages], width,
                     label=f"{int(size):,} chunks {key[:3]}")
    axis.axhline(10, color="red", linestyle=":", linewidth=1)
    axis.axhline(30, color="red", linestyle="--", linewidth=1)
    axis.set_yscale("log")
    axis.set_xticks(range(len(stages)))
    axis.set_xticklabels(stages, rotation=25, ha="right", fontsize=8)
    axis.set_ylabel("ms (log)")
    axis.set_title("Retrieval stages (generated text, synthetic vectors, real query encoding);\n"
                   "red: 10 ms (BM25 goal) and 30 ms (hybrid goal) at 100k")
    axis.legend(fontsize=8)
    return figure


