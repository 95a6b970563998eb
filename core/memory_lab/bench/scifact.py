"""``bench scifact``: quality of every condition on BEIR SciFact, and the BM25 stage's latency there."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.config import Config
from memory_baseline.retrieval import query_terms
from memory_baseline.store import Store

from ..stats import latency_summary
from .common import machine_description, timed
from .exactness import same_top_k


def bench_scifact(
    conn: psycopg.Connection,
    *,
    beir_dir: str | Path,
    conditions: Sequence[str] | None = None,
    max_queries: int | None = None,
    runs_root: str | Path = "runs",
    embedder: str = "minilm",
    progress: bool = True,
) -> dict[str, Any]:
    """`beir.run_beir` on SciFact, plus the BM25 stage's latency, exactness and slowest plan there.

    `embedder` names the index's encoder; lexical conditions do not depend on it,
    so a lexical-only check may index with a faster one (``minilm-int8``).
    """
    from .. import beir

    chosen = tuple(conditions) if conditions else beir.DEFAULT_BEIR_CONDITIONS
    base = Config().with_overrides(embedder={"name": embedder})
    result = beir.run_beir(conn, base, beir_dir, chosen, runs_root=runs_root,
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
    identical = 0
    for qid in query_ids:
        terms = query_terms(store, dataset.queries[qid])
        hits, ms = timed(lambda t=terms: store.lexical_bm25(t, 100, settings.bm25_k1, settings.bm25_b,
                                                             settings.bm25_name_weight))
        bm25_ms.append((ms, terms))
        exhaustive = store.lexical_bm25_exhaustive(terms, 100, settings.bm25_k1, settings.bm25_b,
                                                   settings.bm25_name_weight)
        identical += same_top_k([(h.chunk_id, h.score) for h in hits],
                                [(h.chunk_id, h.score) for h in exhaustive])
    slowest_ms, slowest_terms = max(bm25_ms, key=lambda pair: pair[0])
    return {
        "benchmark": "scifact", "machine": machine_description(conn),
        "parameters": {"beir_dir": str(beir_dir), "conditions": list(chosen),
                       "max_queries": max_queries, "embedder": embedder},
        "table": [{"condition": name, **r["metrics"], "p50_ms": r["latency"].get("p50_ms"),
                   "p95_ms": r["latency"].get("p95_ms")} for name, r in result["conditions"].items()],
        "published": result.get("published", {}),
        "bm25_stage_top100": latency_summary([ms for ms, _ in bm25_ms]),
        "bm25_top100_identical_to_exhaustive_sql": {"queries": len(query_ids), "identical": identical},
        "bm25_slowest": {"ms": round(slowest_ms, 3), "terms": slowest_terms,
                         "explain_analyze": store.explain_lexical_bm25(slowest_terms).splitlines()},
        "beir": result,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
    }



def figure(document: dict[str, Any], plt: Any) -> Any:
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
