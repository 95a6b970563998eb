"""Generated corpora, synthetic vectors and their bulk load, for the latency and scale benchmarks.

Embedding 100k real chunks with MiniLM would take hours on two cores, so these
benchmarks write real generated *text* (BM25 statistics, posting arrays,
tsvectors and the GIN index are exactly what ingest builds, rows made by
ingest's own `refresh.chunk_row`) with **synthetic vectors**: a clustered,
anisotropic Gaussian mixture in 384 dimensions whose spectrum decays like that
of sentence embeddings, unit-normalised. Query vectors are new draws near the
same clusters; the real encoder's query cost is measured separately (and, in
the whole-retrieval figures, paid in full by `EncodingQueryEmbedder`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from tqdm.auto import tqdm

from memory_baseline.chunking import chunk_text, sentence_boundaries
from memory_baseline.config import Config
from memory_baseline.embedders import Embedder, EmbedderIdentity
from memory_baseline.ingest import discover
from memory_baseline.refresh import chunk_row, open_index
from memory_baseline.store import ChunkRow, Store
from memory_lab.bench.common import BenchError

DIMENSION = 384


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


class EncodingQueryEmbedder(SyntheticQueryEmbedder):
    """Pays the real encoder's query cost, then returns the query's synthetic vector.

    The index holds synthetic vectors, so the HNSW query must use one; this makes a
    whole `Retriever.retrieve` cost what it would with the real encoder.
    """

    def __init__(self, model: VectorModel, query_vectors: dict[str, np.ndarray],
                 encoder: Embedder) -> None:
        super().__init__(model, query_vectors)
        self.encoder = encoder

    def embed_query(self, text: str) -> np.ndarray:
        self.encoder.embed_query(text)
        return super().embed_query(text)


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
    seconds = Store(conn, index).build_hnsw(
        m=m, ef_construction=ef_construction, maintenance_work_mem=maintenance_work_mem,
        parallel_workers=parallel_workers, rebuild=True)
    return {"seconds": round(seconds, 2), "m": m, "ef_construction": ef_construction,
            "maintenance_work_mem": maintenance_work_mem,
            "max_parallel_maintenance_workers": parallel_workers}


def storage(conn: psycopg.Connection, index: str, chunks: int) -> dict[str, Any]:
    """Bytes on disk per table (with its indexes and TOAST) and per chunk."""
    sizes = Store(conn, index).storage()
    return {**sizes, "bytes_per_chunk": round(sizes["total_bytes"] / max(chunks, 1), 1),
            "postings_per_chunk": round(sizes["postings"] / max(chunks, 1), 1)}


def query_vectors(model: VectorModel, queries: Sequence[str]) -> dict[str, np.ndarray]:
    vectors = model.sample(len(queries), stream=10_000)
    return {q: vectors[i] for i, q in enumerate(queries)}


def enough_queries(questions: Sequence[str], count: int, seed: int) -> list[str]:
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


