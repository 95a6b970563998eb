"""``bench ingest``: `refresh.sync` wall time against the encoder alone on the same chunk texts.

Same process, warm model, alternating order over repeats, with the per-phase
breakdown (the index phase includes the HNSW build, BM25 compaction and VACUUM
ANALYZE).
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.chunking import chunk_text
from memory_baseline.config import Config
from memory_baseline.embedders import get_embedder
from memory_baseline.ingest import discover
from memory_baseline.refresh import sync
from memory_baseline.store import Store
from memory_lab.bench.common import BenchError, machine_description
from memory_lab.stats import percentile


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
    sync_median = percentile([r["seconds"] for r in sync_runs], 50)
    encode_median = percentile([r["seconds"] for r in encode_runs], 50)
    phases = {name: round(percentile([r["phases"].get(name, 0.0) for r in sync_runs], 50), 3)
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




def figure(document: dict[str, Any], plt: Any) -> Any:
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


