"""``bench encoder-threads``: which torch thread count each encoder job should use.

Single-query encoding and batch encoding (ingest) with 1 and with 2 torch
threads, interleaved and alternating order, so load drift hits every variant
alike. The figures decide `memory_baseline.embedders.QUERY_THREADS` and
`INGEST_THREADS`; the machine's load average is recorded, because the answer
depends on whether another job holds a core.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from memory_baseline.config import EmbedderConfig
from memory_baseline.embedders import get_embedder
from memory_lab.bench.common import BenchError, machine_description, timed
from memory_lab.stats import latency_summary

QUERY = "Where did we discuss the event-store backend, and why was it rejected?"


def bench_encoder_threads(*, repeats: int = 6, queries_per_repeat: int = 15, batch: int = 32,
                          thread_counts: tuple[int, ...] = (1, 2)) -> dict[str, Any]:
    """Query latency and batch throughput of MiniLM at each thread count."""
    import torch

    if repeats < 1 or queries_per_repeat < 1 or batch < 1:
        raise BenchError("repeats, queries per repeat and batch must be at least 1")
    encoder = get_embedder(EmbedderConfig())
    model = encoder._model  # the raw model: the production wrappers pin their own threads
    # Chunk-sized passages (about 2,000 characters, the chunker's target), truncated at 256 tokens.
    passage = ("The shipment service kept its event store in PostgreSQL after the team compared "
               "a dedicated log, measured replay times and weighed the operational cost. ") * 14
    documents = [passage[i % 50:] for i in range(batch)]
    query_ms: dict[int, list[float]] = {n: [] for n in thread_counts}
    docs_per_second: dict[int, list[float]] = {n: [] for n in thread_counts}
    previous = torch.get_num_threads()
    loads = [os.getloadavg()]
    try:
        for n in thread_counts:  # warm every variant once
            torch.set_num_threads(n)
            model.encode([QUERY], show_progress_bar=False)
            model.encode(documents[:4], show_progress_bar=False)
        for repeat in range(repeats):
            order = thread_counts if repeat % 2 == 0 else tuple(reversed(thread_counts))
            for n in order:
                torch.set_num_threads(n)
                for _ in range(queries_per_repeat):
                    query_ms[n].append(timed(lambda: model.encode(
                        [QUERY], normalize_embeddings=True, show_progress_bar=False))[1])
                t0 = time.perf_counter()
                model.encode(documents, batch_size=batch, normalize_embeddings=True,
                             show_progress_bar=False)
                docs_per_second[n].append(batch / (time.perf_counter() - t0))
            loads.append(os.getloadavg())
    finally:
        torch.set_num_threads(previous)
    results = {
        str(n): {"query": latency_summary(query_ms[n]),
                 "batch_docs_per_second": {
                     "median": round(float(sorted(docs_per_second[n])[len(docs_per_second[n]) // 2]), 2),
                     "all": [round(v, 2) for v in docs_per_second[n]]}}
        for n in thread_counts
    }
    best_query = min(thread_counts, key=lambda n: results[str(n)]["query"]["p50_ms"])
    best_batch = max(thread_counts, key=lambda n: results[str(n)]["batch_docs_per_second"]["median"])
    return {
        "benchmark": "encoder-threads", "machine": machine_description(),
        "embedder": encoder.identity.to_dict(),
        "parameters": {"repeats": repeats, "queries_per_repeat": queries_per_repeat, "batch": batch,
                       "thread_counts": list(thread_counts), "query": QUERY,
                       "passage_chars": len(passage)},
        "threads": results, "best_for_query": best_query, "best_for_batch": best_batch,
        "load_average_during": [list(x) for x in loads],
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }
