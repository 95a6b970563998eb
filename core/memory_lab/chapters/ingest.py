"""Chapter 1: the corpus and the index (inventory, chunk statistics, health, storage)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.chunking import chunk_text
from memory_baseline.config import ChunkingConfig, Config
from memory_baseline.health import check_health
from memory_baseline.ingest import discover
from memory_baseline.representation import representation_id
from memory_baseline.store import HNSW_INDEX, Store
from memory_lab.studies.display import show_figure, show_table  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import index_corpus, repo_path, start_study  # noqa: F401 - called by the chapter

# -- chapter 1: the corpus and the index ---------------------------------------------------


def corpus_inventory(corpus_dir: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Sources per kind (files, bytes, how many state their own date) and the files not read."""
    found = discover(repo_path(corpus_dir))
    kinds: dict[str, dict[str, Any]] = {}
    for source in found.sources:
        row = kinds.setdefault(source.kind, {"kind": source.kind, "files": 0, "bytes": 0, "dated": 0})
        row["files"] += 1
        row["bytes"] += source.size_bytes
        row["dated"] += source.artifact_time is not None
    rows = sorted(kinds.values(), key=lambda r: (-r["files"], r["kind"]))
    not_read = [{"path": s.path, "reason": s.reason} for s in found.skipped]
    not_read += [{"path": f.source_id, "reason": f"failed: {f.reason}"} for f in found.failed]
    return rows, not_read


def chunk_statistics(
    corpus_dir: str | Path, policies: Sequence[str], *, target_chars: int, overlap_chars: int,
) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """Chunk counts and sizes per policy, and how many stored characters are repeats (overlap)."""
    found = discover(repo_path(corpus_dir))
    rows, sizes = [], {}
    for policy in policies:
        config = ChunkingConfig(policy=policy, target_chars=target_chars, overlap_chars=overlap_chars)
        lengths: list[int] = []
        stored = covered = 0
        over_target = 0
        for source in found.sources:
            chunks = chunk_text(source.source_id, source.text, config)
            lengths += [c.end - c.start for c in chunks]
            stored += sum(c.end - c.start for c in chunks)
            covered += _union_length([(c.start, c.end) for c in chunks])
            over_target += sum(1 for c in chunks if c.end - c.start > target_chars)
        sizes[policy] = lengths
        rows.append({
            "policy": policy, "chunks": len(lengths),
            "mean_chars": round(statistics.fmean(lengths), 1) if lengths else None,
            "median_chars": statistics.median(lengths) if lengths else None,
            "max_chars": max(lengths, default=None),
            "over_target": over_target,
            "repeated_share": round(1 - covered / stored, 3) if stored else None,
        })
    return rows, sizes


def _union_length(spans: Iterable[tuple[int, int]]) -> int:
    total, end = 0, -1
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def health_rows(conn: psycopg.Connection, config: Config) -> tuple[bool, list[dict[str, Any]]]:
    from memory_baseline.embedders import get_embedder

    expected = representation_id(config, get_embedder(config.embedder))
    report = check_health(conn, config.index, expected, expect_hnsw=config.hnsw_build)
    rows = [{"check": c.name, "result": "ok" if c.ok else ("warning" if c.severity == "warning"
                                                            else "FAILED"), "detail": c.detail}
            for c in report.checks]
    return report.ok, rows


def storage_bytes(conn: psycopg.Connection, index: str) -> dict[str, int]:
    """On-disk size of the index's tables and indexes (PostgreSQL's own accounting)."""
    store = Store(conn, index)
    store.require()
    sizes = store.storage()
    return {"chunks_total": sizes["bytes"]["chunks"],
            "gin": sizes["index_bytes"].get("chunks_tsv_gin", 0),
            "hnsw": sizes["index_bytes"].get(HNSW_INDEX, 0),
            "bm25_postings": sizes["bytes"]["bm25_segments"]}
