"""``bench scifact``: quality of every condition on BEIR SciFact, and the BM25 stage's latency there."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.config import Config
from memory_baseline.embedders import get_embedder
from memory_baseline.store import Store, query_terms
from memory_lab.bench.common import machine_description, timed
from memory_lab.bench.exactness import same_top_k
from memory_lab.ladders.tuning import QueryCachingEmbedder
from memory_lab.stats import latency_summary


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
    from memory_lab.corpora import beir

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
        terms = query_terms(store, dataset.queries[qid], settings.identifier_fragments)
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



# The identifier rules the train split chooses between (retrieval.rare_identifier_max_chunks,
# retrieval.identifier_fragments); the first values are the pipeline defaults before the choice.
RARE_MAX_CHUNKS_GRID = (3, 0, 1, 10, 100)
FRAGMENT_CHOICES = (True, False)
HEURISTIC_CONDITIONS = ("lexical-bm25", "hybrid-bm25")


def bench_scifact_train(
    conn: psycopg.Connection,
    *,
    beir_dir: str | Path,
    max_queries: int | None = None,
    embedder: str = "minilm",
    progress: bool = True,
) -> dict[str, Any]:
    """Choose the two identifier rules on SciFact's *train* queries, never its test split.

    Every (rare threshold, fragments) pair runs `lexical-bm25` and `hybrid-bm25` over
    every train query with judgements; the choice maximises their mean nDCG@10, ties
    going to the earlier grid value (today's default). The test split is measured
    afterwards, once, by ``bench scifact`` with the chosen defaults.
    """
    from memory_lab.corpora import beir

    base = Config().with_overrides(embedder={"name": embedder})
    dataset, index, source_to_doc, _ = beir.prepare_index(conn, base, beir_dir, progress=progress)
    train = dataset.qrels.get("train")
    if not train:
        raise beir.BeirError(f"{dataset.root}/qrels/train.tsv is missing or empty")
    query_ids = sorted((q for q in train if q in dataset.queries), key=beir._natural_key)
    if max_queries is not None:
        query_ids = query_ids[:max_queries]
    queries = {qid: dataset.queries[qid] for qid in query_ids}
    qrels = {qid: train[qid] for qid in query_ids}
    cached = QueryCachingEmbedder(get_embedder(index.embedder))
    rows: list[dict[str, Any]] = []
    for fragments in FRAGMENT_CHOICES:
        for rare in RARE_MAX_CHUNKS_GRID:
            row: dict[str, Any] = {"rare_identifier_max_chunks": rare, "identifier_fragments": fragments}
            for name in HEURISTIC_CONDITIONS:
                config = beir.beir_condition_config(name, index, depth=100).with_overrides(
                    retrieval={"rare_identifier_max_chunks": rare, "identifier_fragments": fragments})
                ranked = beir.run_condition(conn, config, queries, source_to_doc, embedder=cached,
                                            label=f"train {name} rare<={rare} fragments={fragments}",
                                            progress=progress)
                row[name] = beir.evaluate_rankings(qrels, ranked.rankings)
            row["mean_nDCG@10"] = round(sum(row[n]["nDCG@10"] for n in HEURISTIC_CONDITIONS)
                                        / len(HEURISTIC_CONDITIONS), 4)
            rows.append(row)
    chosen = max(rows, key=lambda r: r["mean_nDCG@10"])  # max keeps the first of equals
    defaults = Config().retrieval
    return {
        "benchmark": "scifact-train", "machine": machine_description(conn),
        "parameters": {"beir_dir": str(beir_dir), "split": "train", "queries": len(queries),
                       "conditions": list(HEURISTIC_CONDITIONS), "embedder": embedder,
                       "rare_identifier_max_chunks": list(RARE_MAX_CHUNKS_GRID),
                       "identifier_fragments": list(FRAGMENT_CHOICES),
                       "criterion": "mean nDCG@10 of the conditions on train; "
                                    "ties to the earlier grid value"},
        "rows": rows,
        "chosen": {"rare_identifier_max_chunks": chosen["rare_identifier_max_chunks"],
                   "identifier_fragments": chosen["identifier_fragments"]},
        "defaults_in_code": {"rare_identifier_max_chunks": defaults.rare_identifier_max_chunks,
                             "identifier_fragments": defaults.identifier_fragments},
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
