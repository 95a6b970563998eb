"""Benchmarks of the baseline's cost and scale: each writes one JSON result and one figure.

Four benchmarks (`memory-baseline bench NAME`, or `python -m memory_lab.bench NAME`):

- ``ingest``: wall time of `refresh.sync` on a generated world, against the time the
  encoder alone needs to embed exactly the same chunk texts in the same process
  (warm model, alternating order over repeats), with the per-phase breakdown.
- ``latency``: p50/p95 of every retrieval stage over generated worlds of 10k and 100k
  chunks (lexical BM25 and ts_rank_cd, dense exact and HNSW, fusion, the whole
  `Retriever.retrieve`, context assembly), MiniLM's query encoding, and on a few
  queries the reranker and the reader's prompt processing and generation. The BM25
  query's slowest plan (`EXPLAIN ANALYZE`) is kept.
- ``scale``: one million chunks in the embedded server: load time, storage per chunk,
  HNSW build time, recall@10 of HNSW against exact search at several ``ef_search``
  values, and the hybrid query's latency at each.
- ``scifact``: retrieval quality of every condition on BEIR SciFact beside the
  published figures (`beir.run_beir`), plus the BM25 stage's latency there.

Embedding 100k real chunks with MiniLM would take hours on two cores, so the latency
and scale benchmarks write real generated *text* (BM25 statistics, tsvectors and the
GIN index are exactly what ingest builds) with **synthetic vectors**: a clustered,
anisotropic Gaussian mixture in 384 dimensions whose spectrum decays like that of
sentence embeddings, unit-normalised. Query vectors are new draws near the same
clusters; the real encoder's query cost is measured separately. Every result says so.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from tqdm.auto import tqdm

from memory_baseline.chunking import chunk_text, sentence_boundaries
from memory_baseline.config import Config, EmbedderConfig, ReaderConfig, RerankConfig
from memory_baseline.embedders import EmbedderIdentity, get_embedder
from memory_baseline.ingest import discover
from memory_baseline.refresh import chunk_row, open_index, sync
from memory_baseline.retrieval import Retriever, query_terms
from memory_baseline.store import ChunkRow, Store

RESULTS_DIR = Path("benchmarks") / "results"
DIMENSION = 384
BENCHMARKS = ("ingest", "latency", "scale", "scifact")
SCALE_BUILD_KEY = "bench_scale_build"


class BenchError(ValueError):
    """A benchmark was asked for with impossible parameters."""


# -- results ---------------------------------------------------------------------


def machine_description(conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """What the numbers were measured on (the machine may have been shared: say so)."""
    memory_gb = None
    with contextlib.suppress(ValueError, OSError, AttributeError):  # not every platform has these
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    described: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    if conn is not None:
        described["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        described["pgvector"] = row[0] if row else None
        described["postgres_settings"] = {
            name: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0]
            for name in ("shared_buffers", "work_mem", "maintenance_work_mem", "effective_cache_size",
                         "max_parallel_workers_per_gather", "max_parallel_maintenance_workers", "jit")
        }
    return described


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean/max of a list of milliseconds (numpy's linear interpolation)."""
    if not values_ms:
        return {"n": 0}
    values = np.asarray(values_ms, dtype=np.float64)
    return {
        "n": int(values.size),
        "p50_ms": round(float(np.percentile(values, 50)), 3),
        "p95_ms": round(float(np.percentile(values, 95)), 3),
        "mean_ms": round(float(values.mean()), 3),
        "max_ms": round(float(values.max()), 3),
    }


def write_result(name: str, document: dict[str, Any], out_dir: str | Path = RESULTS_DIR) -> Path:
    """Write `<out_dir>/<name>.json` and, where the benchmark has one, `<name>.png`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{name}.json"
    json_path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    plot = FIGURES.get(name)
    if plot is not None:
        import matplotlib

        # A script has no display; notebooks keep their own backend.
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure = plot(document, plt)
        figure.savefig(out / f"{name}.png", dpi=120, bbox_inches="tight")
        plt.close(figure)
        document["figure"] = str(out / f"{name}.png")
    return json_path


# -- synthetic vectors -------------------------------------------------------------


@dataclass(frozen=True)
class VectorModel:
    """A clustered Gaussian mixture on the unit sphere, with a decaying spectrum.

    Standard deviation along the i-th principal axis is proportional to i^-`decay`,
    so most variance lives in a few dozen directions, as with sentence embeddings;
    isotropic noise in 384 dimensions would make nearest neighbours meaningless and
    HNSW recall unrealistically poor. `spread` is the noise norm relative to the
    centroids' (both before normalisation).
    """

    dimension: int = DIMENSION
    clusters: int = 1000
    decay: float = 0.5
    spread: float = 0.8
    seed: int = 0

    def _draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        basis, scales = _axes(self)
        return (rng.standard_normal((count, self.dimension)).astype(np.float32) * scales) @ basis.T

    def centroids(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed + 1)
        return _unit(self._draw(rng, self.clusters))

    def sample(self, count: int, stream: int) -> np.ndarray:
        """`count` unit vectors; the same (count, stream) always gives the same vectors."""
        rng = np.random.default_rng([self.seed, 2, stream])
        centroids = self.centroids()
        assignment = rng.integers(0, self.clusters, size=count)
        return _unit(centroids[assignment] + self.spread * self._draw(rng, count))

    def describe(self) -> dict[str, Any]:
        return {"kind": "synthetic clustered anisotropic Gaussian mixture, unit-normalised",
                "dimension": self.dimension, "clusters": self.clusters,
                "spectrum": f"std along axis i proportional to i^-{self.decay}",
                "noise_to_centroid_norm": self.spread, "seed": self.seed}


@functools.cache
def _axes(model: VectorModel) -> tuple[np.ndarray, np.ndarray]:
    """A random orthonormal basis and the per-axis standard deviations (cached per model)."""
    rng = np.random.default_rng(model.seed)
    basis, _ = np.linalg.qr(rng.standard_normal((model.dimension, model.dimension)))
    scales = np.arange(1, model.dimension + 1, dtype=np.float64) ** -model.decay
    scales /= np.sqrt((scales**2).sum())  # a draw has expected norm 1
    return basis.astype(np.float32), scales.astype(np.float32)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def vector_statistics(vectors: np.ndarray, sample: int = 2000, seed: int = 0) -> dict[str, float]:
    """Nearest-neighbour and random-pair cosines of a sample, so readers can judge realism."""
    rng = np.random.default_rng(seed)
    picked = vectors[rng.choice(len(vectors), size=min(sample, len(vectors)), replace=False)]
    nearest = np.full(len(picked), -1.0, dtype=np.float32)
    for start in range(0, len(vectors), 100_000):
        block = picked @ vectors[start:start + 100_000].T
        block[block > 0.99999] = -1.0  # the sample itself
        nearest = np.maximum(nearest, block.max(axis=1))
    pairs = (picked[: len(picked) // 2] * picked[len(picked) // 2: 2 * (len(picked) // 2)]).sum(1)
    return {"nearest_neighbour_cosine_p50": round(float(np.median(nearest)), 3),
            "random_pair_cosine_mean": round(float(pairs.mean()), 3)}


class SyntheticQueryEmbedder:
    """Stands in for the encoder at query time: each benchmark query has a fixed vector.

    Only the identity and `embed_query` are used by `Retriever`; documents were
    written with vectors of the same `VectorModel`, so the representation matches.
    """

    def __init__(self, model: VectorModel, query_vectors: dict[str, np.ndarray]) -> None:
        self.identity = EmbedderIdentity(
            name="synthetic", model="clustered-gaussian", revision=f"seed-{model.seed}",
            dimension=model.dimension, normalized=True, query_prefix="", document_prefix="",
            max_tokens=0,
        )
        self._vectors = query_vectors

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        raise BenchError("the synthetic embedder only serves the benchmark's query vectors")

    def embed_query(self, text: str) -> np.ndarray:
        try:
            return self._vectors[text]
        except KeyError:
            raise BenchError(f"no synthetic vector for query {text[:60]!r}") from None


# -- synthetic corpora ----------------------------------------------------------------


@dataclass(frozen=True)
class SourceSpec:
    source_id: str
    kind: str
    content_hash: str
    size_bytes: int
    artifact_time: datetime | None


@dataclass(frozen=True)
class TextChunk:
    """A chunk's text and place, before it gets a vector."""

    chunk_id: str
    source_id: str
    ordinal: int
    char_start: int
    char_end: int
    section: str | None
    text: str


@dataclass(frozen=True)
class GeneratedCorpus:
    sources: list[SourceSpec]
    chunks: list[TextChunk]
    queries: list[str]
    description: dict[str, Any]


def world_corpus(docs: int, max_chunks: int | None, seed: int, workdir: Path,
                 config: Config | None = None) -> GeneratedCorpus:
    """A generated world, parsed and chunked exactly as ingest does, capped at `max_chunks`.

    Sources are taken whole in a seeded random order until the cap; the task
    questions of the world are the queries.
    """
    from memory_instrument.world import WorldParams, generate_world

    config = config or Config()
    manifest = generate_world(WorldParams(seed=seed, docs=docs), workdir / f"world-{docs}-{seed}")
    discovery = discover(manifest.history_dir, max_bytes=config.max_file_bytes)
    records = sorted(discovery.sources, key=lambda r: r.source_id)
    random.Random(seed).shuffle(records)
    sources: list[SourceSpec] = []
    chunks: list[TextChunk] = []
    for record in records:
        pieces = chunk_text(record.source_id, record.text, config.chunking)
        if max_chunks is not None and len(chunks) + len(pieces) > max_chunks:
            pieces = pieces[: max_chunks - len(chunks)]
        if not pieces:
            continue
        sources.append(SourceSpec(record.source_id, record.kind, record.content_hash,
                                  record.size_bytes, record.artifact_time))
        chunks.extend(TextChunk(c.chunk_id, c.source_id, c.ordinal, c.start, c.end, c.section, c.text)
                      for c in pieces)
        if max_chunks is not None and len(chunks) >= max_chunks:
            break
    tasks = json.loads(Path(manifest.tasks_path).read_text(encoding="utf-8"))["tasks"]
    queries = list(dict.fromkeys(t["query"] for t in tasks))
    return GeneratedCorpus(sources, chunks, queries, {
        "kind": "generated world (memory_instrument.world), ingest's parser and chunker",
        "world_docs": docs, "world_seed": seed, "sources": len(sources), "chunks": len(chunks),
        "mean_chunk_chars": round(statistics.fmean(len(c.text) for c in chunks), 1),
        "queries": "the world's task questions",
    })


def recombined_corpus(chunks: int, seed: int, workdir: Path, pool_docs: int = 20_000,
                      chunks_per_source: int = 8) -> GeneratedCorpus:
    """`chunks` new chunks made of sentences drawn from a generated world.

    Each chunk takes random sentences of the world until it reaches a length drawn
    from the world's own chunk lengths: the vocabulary and length distribution of
    real ingest, at any size, without repeating a chunk's text.
    """
    pool = world_corpus(pool_docs, None, seed, workdir)
    sentences: list[str] = []
    for chunk in pool.chunks:
        starts = sentence_boundaries(chunk.text)
        ends = starts[1:] + [len(chunk.text)]
        sentences.extend(s for a, b in zip(starts, ends, strict=True)
                         if len(s := chunk.text[a:b].strip()) > 3)
    sentences = list(dict.fromkeys(sentences))
    lengths = np.asarray([len(c.text) for c in pool.chunks])
    rng = np.random.default_rng(seed)
    targets = rng.choice(lengths, size=chunks)
    sentence_lengths = np.asarray([len(s) + 1 for s in sentences])
    picks = rng.integers(0, len(sentences), size=chunks * 12)
    cursor = 0
    out_chunks: list[TextChunk] = []
    sources: list[SourceSpec] = []
    for index in range(chunks):
        source_id = f"synthetic/{index // chunks_per_source:07d}.md"
        ordinal = index % chunks_per_source
        parts: list[str] = []
        length = 0
        while length < targets[index]:
            if cursor >= len(picks):
                picks = rng.integers(0, len(sentences), size=chunks * 4)
                cursor = 0
            parts.append(sentences[picks[cursor]])
            length += sentence_lengths[picks[cursor]]
            cursor += 1
        text = " ".join(parts)
        if ordinal == 0:
            sources.append(SourceSpec(source_id, "note", hashlib.sha256(source_id.encode()).hexdigest(),
                                      0, None))
        out_chunks.append(TextChunk(f"{source_id}#{ordinal}", source_id, ordinal, 0, len(text), None,
                                    text))
    return GeneratedCorpus(sources, out_chunks, pool.queries, {
        "kind": "sentences of a generated world recombined into new chunks",
        "pool_world_docs": pool_docs, "pool_sentences": len(sentences), "seed": seed,
        "sources": len(sources), "chunks": chunks, "chunks_per_source": chunks_per_source,
        "mean_chunk_chars": round(statistics.fmean(len(c.text) for c in out_chunks), 1),
        "queries": "task questions of the pool world",
    })


# -- loading ----------------------------------------------------------------------------


def chunk_rows(chunks: Sequence[TextChunk], vectors: np.ndarray) -> Iterator[ChunkRow]:
    """Store rows for generated chunks, built by the same function as ingest's (`refresh.chunk_row`)."""
    for chunk, vector in zip(chunks, vectors, strict=True):
        yield chunk_row(chunk.source_id, chunk.chunk_id, chunk.ordinal, chunk.char_start,
                        chunk.char_end, chunk.section, chunk.text, vector)


def load_corpus(
    conn: psycopg.Connection,
    index: str,
    corpus: GeneratedCorpus,
    vectors: np.ndarray,
    embedder: SyntheticQueryEmbedder,
    *,
    batch: int = 10_000,
    bulk: bool = False,
    progress: bool = True,
) -> dict[str, float]:
    """Write a generated corpus with binary COPY into a fresh index; returns phase seconds.

    Every batch is one transaction whose triggers append BM25 delta segments, as
    ingest's do; compaction then merges them. `bulk` also drops the GIN index for
    the load and rebuilds it afterwards (the usual bulk-load practice).
    """
    config = Config(index=index)
    store = Store(conn, index)
    store.drop()
    store, rep_id = open_index(conn, config, embedder)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with conn.transaction():
        store.copy_sources(((s.source_id, s.kind, s.content_hash, s.size_bytes, s.artifact_time)
                            for s in corpus.sources), rep_id)
    if bulk:
        store.drop_fulltext_index()
    bar = tqdm(total=len(corpus.chunks), desc=f"load {index}", unit="chunk", disable=not progress)
    for start in range(0, len(corpus.chunks), batch):
        piece = corpus.chunks[start:start + batch]
        with conn.transaction():
            store.copy_chunks(list(chunk_rows(piece, vectors[start:start + len(piece)])), rep_id)
        bar.update(len(piece))
    bar.close()
    seconds["copy"] = time.perf_counter() - started
    t0 = time.perf_counter()
    compaction = store.compact_bm25()
    seconds["bm25_compaction"] = time.perf_counter() - t0
    if bulk:
        t0 = time.perf_counter()
        store.build_fulltext_index("2GB")
        seconds["gin_build"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.analyze()
    seconds["vacuum_analyze"] = time.perf_counter() - t0
    out = {k: round(v, 3) for k, v in seconds.items()}
    out["bm25_compacted_terms"] = compaction["terms"]
    return out


def build_hnsw(conn: psycopg.Connection, index: str, *, m: int = 16, ef_construction: int = 64,
               maintenance_work_mem: str = "1GB", parallel_workers: int = 1) -> dict[str, Any]:
    """Build the index's HNSW index with explicit memory settings; returns seconds and settings."""
    seconds = Store(conn, index).build_hnsw_with(
        m=m, ef_construction=ef_construction, maintenance_work_mem=maintenance_work_mem,
        parallel_workers=parallel_workers)
    return {"seconds": round(seconds, 2), "m": m, "ef_construction": ef_construction,
            "maintenance_work_mem": maintenance_work_mem,
            "max_parallel_maintenance_workers": parallel_workers}


def storage(conn: psycopg.Connection, index: str, chunks: int) -> dict[str, Any]:
    """Bytes on disk per table (with its indexes and TOAST) and per chunk."""
    sizes = Store(conn, index).storage()
    return {**sizes, "bytes_per_chunk": round(sizes["total_bytes"] / max(chunks, 1), 1),
            "postings_per_chunk": round(sizes["postings"] / max(chunks, 1), 1)}


# -- latency ------------------------------------------------------------------------------


def _timed(function: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = function()
    return value, (time.perf_counter() - started) * 1000


def _query_vectors(model: VectorModel, queries: Sequence[str]) -> dict[str, np.ndarray]:
    vectors = model.sample(len(queries), stream=10_000)
    return {q: vectors[i] for i, q in enumerate(queries)}


def stage_latencies(
    conn: psycopg.Connection, index: str, queries: Sequence[str], embedder: SyntheticQueryEmbedder,
    *, depth: int = 30, warmup: int = 10, progress: bool = True,
) -> dict[str, Any]:
    """Per-stage milliseconds over `queries`, every stage run for every query in turn."""
    config = Config(index=index)
    settings = config.retrieval
    retriever = Retriever(conn, config, embedder=embedder)
    store = retriever.store
    rep_id = retriever.representation_id
    from memory_baseline.context import assemble, candidates_in_order
    from memory_baseline.readers import ExtractiveReader, build_messages

    counter_reader = ExtractiveReader(ReaderConfig(name="extractive"))
    times: dict[str, list[float]] = {name: [] for name in (
        "query_terms", "lexical_bm25", "lexical_tsrank_cd", "dense_exact", "dense_hnsw", "fusion",
        "retrieve_total", "assembly")}
    bm25_by_query: list[tuple[float, list[str]]] = []
    union_sizes: list[int] = []
    warmup_queries = list(queries[:warmup])
    sample = warmup_queries + list(queries)
    for position, query in enumerate(tqdm(sample, desc=f"queries {index}", disable=not progress)):
        record = position >= len(warmup_queries)
        terms, t_terms = _timed(lambda q=query: query_terms(store, q))
        _, t_bm25 = _timed(lambda t=terms: store.lexical_bm25(t, depth, settings.bm25_k1,
                                                              settings.bm25_b,
                                                              settings.bm25_name_weight))
        _, t_tsrank = _timed(lambda t=terms: store.lexical_tsrank_cd(t, depth))
        vector = embedder.embed_query(query)
        _, t_exact = _timed(lambda v=vector: store.dense(v, depth, rep_id, plan="exact"))
        _, t_hnsw = _timed(lambda v=vector: store.dense(v, depth, rep_id, plan="hnsw",
                                                         ef_search=settings.hnsw_ef_search))
        result, t_total = _timed(lambda q=query: retriever.retrieve(q))
        passages = candidates_in_order(result)

        def count(chosen, q=query):
            return counter_reader.count_prompt_tokens(build_messages(q, chosen, None))

        _, t_assembly = _timed(lambda p=passages, c=count: assemble(
            p, config.context, c, tokenizer=counter_reader.tokenizer_name))
        if not record:
            continue
        for name, value in (("query_terms", t_terms), ("lexical_bm25", t_bm25),
                            ("lexical_tsrank_cd", t_tsrank), ("dense_exact", t_exact),
                            ("dense_hnsw", t_hnsw), ("fusion", result.stage("fused").ms),
                            ("retrieve_total", t_total), ("assembly", t_assembly)):
            times[name].append(value)
        bm25_by_query.append((t_bm25, terms))
        union_sizes.append(result.stage("fused").detail["union_size"])
    slowest_ms, slowest_terms = max(bm25_by_query, key=lambda pair: pair[0])
    plan = store.explain_lexical_bm25(slowest_terms, depth, settings.bm25_k1, settings.bm25_b,
                                      settings.bm25_name_weight)
    return {
        "queries": len(queries), "warmup_queries": len(warmup_queries), "depth": depth,
        "ef_search": settings.hnsw_ef_search,
        "stages": {name: percentiles(values) for name, values in times.items()},
        "mean_fused_union": round(statistics.fmean(union_sizes), 1),
        "bm25_slowest": {"ms": round(slowest_ms, 3), "terms": slowest_terms,
                         "explain_analyze": plan.splitlines()},
        "bm25_mean_terms": round(statistics.fmean(len(t) for _, t in bm25_by_query), 1),
        "notes": ("retrieve_total is Retriever.retrieve with a synthetic query vector (no "
                  "encoding); its lexical stage includes query_terms; assembly counts tokens "
                  "with the extractive reader's tokenizer"),
    }


def encoder_query_latency(queries: Sequence[str], warmup: int = 5) -> dict[str, Any]:
    """MiniLM's real `embed_query` cost over the benchmark's query texts."""
    embedder = get_embedder(EmbedderConfig())
    for query in queries[:warmup]:
        embedder.embed_query(query)
    times = [_timed(lambda q=q: embedder.embed_query(q))[1] for q in queries]
    return {"embedder": embedder.identity.to_dict(), **percentiles(times)}


def llm_stage_latencies(
    conn: psycopg.Connection, index: str, queries: Sequence[str],
    embedder: SyntheticQueryEmbedder, *, reranker: str, reader: str,
) -> dict[str, Any]:
    """Reranker and reader cost on a few queries (each costs seconds to minutes on 2 cores)."""
    from memory_baseline.baseline import Baseline
    from memory_baseline.readers import get_reader
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
                         **percentiles(rerank_ms)}
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
            "assembly_exact_tokens": percentiles([r["assembly_ms"] or 0.0 for r in rows]),
            "prompt_processing": percentiles([r["prompt_ms"] for r in rows]),
            "generation": percentiles([r["generation_ms"] for r in rows]),
            "reader_total": percentiles([r["reader_ms"] for r in rows]),
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
    progress: bool = True,
) -> dict[str, Any]:
    """Per-stage p50/p95 at each corpus size (chunks), on generated text + synthetic vectors.

    `reuse` keeps an index left by an earlier run with `keep` (same sizes and seed:
    the corpus and vectors are deterministic) instead of loading it again.
    """
    if any(size < 50 for size in sizes) or queries < 1:
        raise BenchError("sizes must be at least 50 chunks and queries at least 1")
    model = VectorModel(seed=seed)
    document: dict[str, Any] = {
        "benchmark": "latency", "machine": machine_description(conn),
        "parameters": {"sizes": list(sizes), "queries": queries, "seed": seed,
                       "llm_queries": llm_queries, "reranker": reranker, "reader": reader,
                       "config": Config().retrieval.__dict__},
        "vectors": model.describe(), "sizes": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        for size in sizes:
            index = f"{index_prefix}_{size}"
            corpus = world_corpus(min(max(size + size // 20, 20), 100_000), size, seed, Path(tmp))
            query_texts = _enough_queries(corpus.queries, queries, seed)
            embedder = SyntheticQueryEmbedder(model, _query_vectors(model, query_texts))
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
            entry: dict[str, Any] = {
                "corpus": corpus.description, "load_seconds": load, "hnsw": hnsw,
                "storage": storage(conn, index, len(corpus.chunks)),
                **stage_latencies(conn, index, query_texts, embedder, progress=progress),
            }
            if llm_queries > 0 and size == max(sizes):
                entry["llm_stages"] = llm_stage_latencies(
                    conn, index, query_texts[:llm_queries], embedder, reranker=reranker,
                    reader=reader)
            document["sizes"][str(size)] = entry
            if not keep:
                Store(conn, index).drop()
    document["encoder_query"] = encoder_query_latency(query_texts)
    document["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    return document


def _enough_queries(questions: Sequence[str], count: int, seed: int) -> list[str]:
    """`count` distinct query texts: the world's questions, topped up with their variants."""
    pool = list(dict.fromkeys(questions))
    rng = random.Random(seed)
    rng.shuffle(pool)
    variant = 0
    while len(pool) < count and questions:
        base = questions[variant % len(questions)]
        words = base.rstrip("?").split()
        rng.shuffle(words)
        pool.append(" ".join(words) + "?")
        pool = list(dict.fromkeys(pool))
        variant += 1
    return pool[:count]


# -- scale ----------------------------------------------------------------------------------


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
    query_texts = _enough_queries(corpus.queries, queries, seed)
    query_vectors = _query_vectors(model, query_texts)
    embedder = SyntheticQueryEmbedder(model, query_vectors)
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
    matrix = np.stack([query_vectors[q] for q in query_texts])
    truth = []
    ids = np.asarray([c.chunk_id for c in corpus.chunks])
    for start in range(0, len(matrix), 50):
        scores = matrix[start:start + 50] @ vectors.T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        truth.extend(set(ids[row]) for row in top)
    del vectors

    exact_ms = [_timed(lambda v=matrix[i]: store.dense(v, 10, rep_id, plan="exact"))[1]
                for i in range(min(exact_sql_queries, len(matrix)))]
    document["dense_exact_sql"] = percentiles(exact_ms)

    curve = []
    for ef in ef_search:
        recalls, top10_ms, top30_ms = [], [], []
        for i, vector in enumerate(matrix):
            (hits, _), ms = _timed(lambda v=vector, e=ef: store.dense(v, 10, rep_id, plan="hnsw",
                                                                      ef_search=e))
            top10_ms.append(ms)
            recalls.append(len({h.chunk_id for h in hits} & truth[i]) / 10)
            top30_ms.append(_timed(lambda v=vector, e=ef: store.dense(v, 30, rep_id, plan="hnsw",
                                                                      ef_search=e))[1])
        curve.append({"ef_search": ef, "recall_at_10": round(float(np.mean(recalls)), 4),
                      "recall_at_10_min": round(float(np.min(recalls)), 2),
                      "dense_top10": percentiles(top10_ms),
                      "dense_top30_ef_at_least_30": percentiles(top30_ms)})
    config = Config(index=index)
    for point in curve:
        if point["ef_search"] not in hybrid_ef_search:
            continue
        retriever = Retriever(
            conn, config.with_overrides(retrieval={"hnsw_ef_search": point["ef_search"]}),
            embedder=embedder)
        hybrid_ms, lexical_ms, dense_stage_ms = [], [], []
        for query in tqdm(query_texts, desc=f"hybrid ef={point['ef_search']}",
                          disable=not progress):
            result, ms = _timed(lambda q=query, r=retriever: r.retrieve(q))
            hybrid_ms.append(ms)
            lexical_ms.append(result.stage("lexical").ms)
            dense_stage_ms.append(result.stage("dense").ms)
        point["hybrid"] = percentiles(hybrid_ms)
        point["hybrid_lexical_stage"] = percentiles(lexical_ms)
        point["hybrid_dense_stage"] = percentiles(dense_stage_ms)
    document["curve"] = curve
    meeting = [p for p in curve if "hybrid" in p and p["recall_at_10"] >= 0.95
               and p["hybrid"]["p95_ms"] <= 60]
    document["goal"] = {"recall_at_10": 0.95, "hybrid_p95_ms": 60,
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
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]
        stats = os.statvfs(data_dir)
    except (psycopg.Error, OSError):
        return None
    return round(stats.f_bavail * stats.f_frsize / 2**30, 1)


# -- ingest -----------------------------------------------------------------------------------


def bench_ingest(
    conn: psycopg.Connection,
    *,
    docs: int = 400,
    seed: int = 3,
    repeats: int = 2,
    index: str = "bench_ingest",
    progress: bool = True,
) -> dict[str, Any]:
    """`sync` wall time against the encoder alone on the same chunk texts, same process."""
    from memory_instrument.world import WorldParams, generate_world

    if repeats < 1:
        raise BenchError("repeats must be at least 1")
    config = Config(index=index)
    embedder = get_embedder(config.embedder)
    embedder.embed_documents(["warm the model up", "and its tokenizer"] * 16)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        manifest = generate_world(WorldParams(seed=seed, docs=docs), Path(tmp) / "world")
        texts: list[str] = []
        for repeat in range(repeats):
            # Alternate which goes first, so drift in machine load hits both alike.
            order = ("sync", "encode") if repeat % 2 == 0 else ("encode", "sync")
            for step in order:
                if step == "encode" and not texts:
                    texts = _chunk_texts_as_sync(manifest.history_dir, config)
                if step == "sync":
                    Store(conn, index).drop()
                    t0 = time.perf_counter()
                    report = sync(conn, config, str(manifest.history_dir), remove_missing=False,
                                  embedder=embedder, progress=progress)
                    wall = time.perf_counter() - t0
                    runs.append({"repeat": repeat, "step": "sync", "seconds": round(wall, 3),
                                 "phases": report.seconds, "chunks": report.chunks_written,
                                 "sources": len(report.added)})
                else:
                    t0 = time.perf_counter()
                    embedder.embed_documents(texts, progress=progress)
                    runs.append({"repeat": repeat, "step": "encode",
                                 "seconds": round(time.perf_counter() - t0, 3), "chunks": len(texts)})
        stored = Store(conn, index).counts()["chunks"]
    Store(conn, index).drop()
    sync_runs = [r for r in runs if r["step"] == "sync"]
    encode_runs = [r for r in runs if r["step"] == "encode"]
    sync_median = statistics.median(r["seconds"] for r in sync_runs)
    encode_median = statistics.median(r["seconds"] for r in encode_runs)
    phases = {name: round(statistics.median(r["phases"].get(name, 0.0) for r in sync_runs), 3)
              for name in ("discover", "chunk", "embed", "write", "index", "total")}
    return {
        "benchmark": "ingest", "machine": machine_description(conn),
        "parameters": {"world_docs": docs, "world_seed": seed, "repeats": repeats,
                       "embedder": embedder.identity.to_dict(), "chunking": config.chunking.__dict__,
                       "hnsw_build": config.hnsw_build},
        "chunks": len(texts), "chunks_stored": stored,
        "ingest_seconds": round(sync_median, 3), "encoder_alone_seconds": round(encode_median, 3),
        "ratio": round(sync_median / encode_median, 3), "goal_ratio": 1.15,
        "non_encoder_seconds": round(phases["total"] - phases["embed"], 3),
        "non_encoder_share_of_ingest": round((phases["total"] - phases["embed"]) / phases["total"], 4),
        "encoder_docs_per_second": round(len(texts) / encode_median, 2),
        "phases_median_seconds": phases,
        "phase_notes": ("discover includes reading and parsing (kind, hash, artifact date); "
                        "index is the HNSW build plus VACUUM ANALYZE; write is COPY with the BM25 "
                        "triggers and the commit"),
        "runs": runs,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _chunk_texts_as_sync(root: Path, config: Config) -> list[str]:
    """The chunk texts `sync` embeds for `root`, in its order."""
    discovery = discover(root, max_bytes=config.max_file_bytes)
    return [c.text for record in discovery.sources
            for c in chunk_text(record.source_id, record.text, config.chunking)]


# -- SciFact -------------------------------------------------------------------------------------


def bench_scifact(
    conn: psycopg.Connection,
    *,
    beir_dir: str | Path,
    conditions: Sequence[str] | None = None,
    max_queries: int | None = None,
    runs_root: str | Path = "runs",
    progress: bool = True,
) -> dict[str, Any]:
    """`beir.run_beir` on SciFact, plus the BM25 stage's latency and slowest plan there."""
    from . import beir

    chosen = tuple(conditions) if conditions else beir.DEFAULT_BEIR_CONDITIONS
    result = beir.run_beir(conn, Config(), beir_dir, chosen, runs_root=runs_root,
                           max_queries=max_queries, progress=progress)
    dataset = beir.load_dataset(beir_dir)
    split = result["split"]
    query_ids = sorted((q for q in dataset.qrels[split] if q in dataset.queries), key=beir._natural_key)
    if max_queries is not None:
        query_ids = query_ids[:max_queries]
    index = result["index"]
    store = Store(conn, index)
    settings = Config().retrieval
    bm25_ms: list[tuple[float, list[str]]] = []
    for qid in query_ids:
        terms = query_terms(store, dataset.queries[qid])
        _, ms = _timed(lambda t=terms: store.lexical_bm25(t, 100, settings.bm25_k1, settings.bm25_b,
                                                          settings.bm25_name_weight))
        bm25_ms.append((ms, terms))
    slowest_ms, slowest_terms = max(bm25_ms, key=lambda pair: pair[0])
    return {
        "benchmark": "scifact", "machine": machine_description(conn),
        "parameters": {"beir_dir": str(beir_dir), "conditions": list(chosen),
                       "max_queries": max_queries},
        "table": [{"condition": name, **r["metrics"], "p50_ms": r["latency"].get("p50_ms"),
                   "p95_ms": r["latency"].get("p95_ms")} for name, r in result["conditions"].items()],
        "published": result.get("published", {}),
        "bm25_stage_top100": percentiles([ms for ms, _ in bm25_ms]),
        "bm25_slowest": {"ms": round(slowest_ms, 3), "terms": slowest_terms,
                         "explain_analyze": store.explain_lexical_bm25(
                             slowest_terms, 100, settings.bm25_k1, settings.bm25_b,
                             settings.bm25_name_weight).splitlines()},
        "beir": result,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# -- figures ------------------------------------------------------------------------------------


def _figure_ingest(document: dict[str, Any], plt: Any) -> Any:
    phases = document["phases_median_seconds"]
    names = ["discover", "chunk", "embed", "write", "index"]
    figure, axis = plt.subplots(figsize=(8, 2.6))
    left = 0.0
    for name in names:
        axis.barh("ingest (sync)", phases.get(name, 0.0), left=left, label=name)
        left += phases.get(name, 0.0)
    axis.barh("encoder alone", document["encoder_alone_seconds"], color="grey")
    axis.set_xlabel("seconds")
    axis.set_title(f"Ingest of {document['chunks']} chunks: ratio {document['ratio']:.2f} "
                   f"(goal <= {document['goal_ratio']})")
    axis.legend(ncol=5, fontsize=8, loc="lower right")
    return figure


def _figure_latency(document: dict[str, Any], plt: Any) -> Any:
    sizes = list(document["sizes"])
    stages = ["query_terms", "lexical_bm25", "lexical_tsrank_cd", "dense_exact", "dense_hnsw",
              "fusion", "assembly", "retrieve_total"]
    figure, axis = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / (2 * len(sizes))
    for i, size in enumerate(sizes):
        stats = document["sizes"][size]["stages"]
        for j, key in enumerate(("p50_ms", "p95_ms")):
            offset = (2 * i + j) * width - 0.4 + width / 2
            axis.bar([k + offset for k in range(len(stages))],
                     [max(stats[s].get(key, 0.0), 1e-3) for s in stages], width,
                     label=f"{int(size):,} chunks {key[:3]}")
    axis.axhline(30, color="red", linestyle=":", linewidth=1)
    axis.set_yscale("log")
    axis.set_xticks(range(len(stages)))
    axis.set_xticklabels(stages, rotation=25, ha="right", fontsize=8)
    axis.set_ylabel("ms (log)")
    axis.set_title("Retrieval stage latency (synthetic vectors, generated text); red: 30 ms")
    axis.legend(fontsize=8)
    return figure


def _figure_scale(document: dict[str, Any], plt: Any) -> Any:
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
                  label="hybrid query, BM25 + HNSW top 30 (p95)")
    axis.axhline(0.95, color="red", linestyle=":", linewidth=1)
    axis.axvline(60, color="red", linestyle=":", linewidth=1)
    axis.set_xscale("log")
    axis.set_xlabel("p95 latency, ms (log)")
    axis.set_ylabel("recall@10 vs exact")
    axis.set_title(f"{document['parameters']['chunks']:,} chunks, HNSW m={document['hnsw']['m']} "
                   f"ef_construction={document['hnsw']['ef_construction']}")
    axis.legend(fontsize=8, loc="lower right")
    return figure


def _figure_scifact(document: dict[str, Any], plt: Any) -> Any:
    rows = document["table"]
    published = document.get("published", {})
    labels = [r["condition"] for r in rows] + [f"published: {k}" for k in published]
    values = [r["nDCG@10"] for r in rows] + [v["nDCG@10"] for v in published.values()]
    colours = ["tab:blue"] * len(rows) + ["tab:grey"] * len(published)
    figure, axis = plt.subplots(figsize=(8, 0.32 * len(labels) + 1))
    axis.barh(labels[::-1], values[::-1], color=colours[::-1])
    for y, value in enumerate(values[::-1]):
        axis.text(value + 0.005, y, f"{value:.3f}", va="center", fontsize=7)
    axis.set_xlabel("nDCG@10 (SciFact test)")
    axis.tick_params(axis="y", labelsize=7)
    return figure


FIGURES: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "ingest": _figure_ingest, "latency": _figure_latency, "scale": _figure_scale,
    "scifact": _figure_scifact,
}


# -- command line ---------------------------------------------------------------------------------


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Arguments of `bench NAME`; the CLI adds these to its `bench` subcommand."""
    parser.add_argument("name", choices=BENCHMARKS, help="which benchmark to run")
    parser.add_argument("--json", action="store_true", help="print the result document on stdout")
    parser.add_argument("--out", default=str(RESULTS_DIR), help="folder for NAME.json and NAME.png")
    parser.add_argument("--queries", type=int, default=200, help="latency/scale: query count")
    parser.add_argument("--sizes", default="10000,100000", help="latency: chunk counts, comma-separated")
    parser.add_argument("--llm-queries", type=int, default=0,
                        help="latency: queries for the reranker and reader stages (slow)")
    parser.add_argument("--reranker", default="llm-qwen-0.5b", help="latency: reranker name")
    parser.add_argument("--reader", default="qwen-1.5b", help="latency: reader name")
    parser.add_argument("--chunks", type=int, default=1_000_000, help="scale: chunk count")
    parser.add_argument("--ef-search", default="10,20,40,64,100,200,400",
                        help="scale: ef_search values, comma-separated")
    parser.add_argument("--hybrid-ef-search", default="40,100,200",
                        help="scale: ef_search values at which the whole hybrid query is timed")
    parser.add_argument("--maintenance-work-mem", default="4GB", help="scale: for the HNSW build")
    parser.add_argument("--docs", type=int, default=400, help="ingest: world documents")
    parser.add_argument("--repeats", type=int, default=2, help="ingest: repeats (order alternates)")
    parser.add_argument("--beir-dir", default=os.environ.get("BEIR_SCIFACT", "data/beir-scifact"),
                        help="scifact: the BEIR folder")
    parser.add_argument("--max-queries", type=int, default=None, help="scifact: limit queries")
    parser.add_argument("--keep-index", action="store_true", help="keep the benchmark's index")
    parser.add_argument("--reuse-index", action="store_true",
                        help="latency/scale: reuse indexes kept by an earlier --keep-index run")
    parser.add_argument("--build-only", action="store_true",
                        help="scale: build and keep the index, time nothing")
    return parser


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BenchError(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise BenchError("expected at least one integer")
    return values


def run_benchmark(args: argparse.Namespace, conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """Run the benchmark `args.name` and write its JSON and figure; returns the document."""
    from memory_baseline.server import connect

    own = conn is None
    conn = conn or connect()
    progress = not args.json
    try:
        if args.name == "ingest":
            document = bench_ingest(conn, docs=args.docs, repeats=args.repeats, progress=progress)
        elif args.name == "latency":
            document = bench_latency(conn, sizes=_int_list(args.sizes), queries=args.queries,
                                     llm_queries=args.llm_queries, reranker=args.reranker,
                                     reader=args.reader, keep=args.keep_index,
                                     reuse=args.reuse_index, progress=progress)
        elif args.name == "scale":
            document = bench_scale(conn, chunks=args.chunks, queries=args.queries,
                                   ef_search=_int_list(args.ef_search),
                                   hybrid_ef_search=_int_list(args.hybrid_ef_search),
                                   maintenance_work_mem=args.maintenance_work_mem,
                                   keep=args.keep_index or args.build_only,
                                   reuse=args.reuse_index, build_only=args.build_only,
                                   progress=progress)
        elif args.name == "scifact":
            document = bench_scifact(conn, beir_dir=args.beir_dir, max_queries=args.max_queries,
                                     progress=progress)
        else:
            raise BenchError(f"unknown benchmark {args.name!r}; choose one of {BENCHMARKS}")
    finally:
        if own:
            conn.close()
    name = "scale-build" if args.name == "scale" and args.build_only else args.name
    path = write_result(name, document, args.out)
    document["result_path"] = str(path)
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = configure_parser(argparse.ArgumentParser(
        prog="memory-baseline bench", description="Run a benchmark; write its JSON and figure."))
    args = parser.parse_args(argv)
    try:
        document = run_benchmark(args)
    except (BenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(document, default=str))
    else:
        print(f"wrote {document['result_path']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
