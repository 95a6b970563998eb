"""`best`: the retrieval settings tuned on a task file's dev split, never on its test split.

A small grid (`BEST_GRID`) is scored by mean recall of expected sources at the admitted stage,
then mean MRR there, then fewer prompt tokens; the grid, every dev score and the choice go into
the run's manifest.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.config import Config
from memory_baseline.context_sources import (
    Prefetched,
)
from memory_baseline.embedders import Embedder, get_embedder
from memory_baseline.reading import Reader
from memory_baseline.retrieval import Retriever
from memory_instrument import (
    Task,
    stage_metrics,
)
from memory_lab.conditions import EvaluationError, condition_config

# The grid `best` searches on the dev split; blend ignores rrf_k, so it is not repeated.
BEST_GRID: dict[str, tuple] = {
    "fusion": ("rrf", "blend"),
    "rrf_k": (10, 60),
    "per_path_candidates": (20, 50),
    "max_passages": (4, 6, 8),
}


class QueryCachingEmbedder:
    """An embedder that encodes each distinct query once per run.

    Several conditions (and every point of a tuning grid) search the same questions;
    the vector of a question does not depend on the condition, so re-encoding it only
    costs time. The first encoding's duration is kept (`first_encode_ms`) so that a
    latency figure can still include one honest query encoding.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.identity = inner.identity
        self._vectors: dict[str, Any] = {}
        self.first_encode_ms: dict[str, float] = {}

    def __contains__(self, query: str) -> bool:
        return query in self._vectors

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False):
        return self.inner.embed_documents(texts, progress=progress)

    def embed_query(self, text: str):
        if text not in self._vectors:
            started = time.perf_counter()
            self._vectors[text] = self.inner.embed_query(text)
            self.first_encode_ms[text] = (time.perf_counter() - started) * 1000
        return self._vectors[text]


# -- tuning `best` on the dev split ---------------------------------------------------------


@dataclass(frozen=True)
class BestChoice:
    overrides: dict[str, dict[str, Any]]
    dev_task_ids: tuple[str, ...]
    scores: tuple[dict[str, Any], ...]
    grid: dict[str, tuple] = field(default_factory=lambda: dict(BEST_GRID))
    criterion: str = ("mean recall of expected sources at the admitted stage, then mean MRR at "
                      "the admitted stage, then fewer prompt tokens, then grid order")

    def to_dict(self) -> dict[str, Any]:
        return {"grid": {k: list(v) for k, v in self.grid.items()}, "criterion": self.criterion,
                "dev_task_ids": list(self.dev_task_ids), "dev_scores": list(self.scores),
                "choice": self.overrides}


def _grid() -> list[dict[str, Any]]:
    settings = []
    for fusion in BEST_GRID["fusion"]:
        for rrf_k in BEST_GRID["rrf_k"] if fusion == "rrf" else (None,):
            for per_path in BEST_GRID["per_path_candidates"]:
                retrieval = {"fusion": fusion, "per_path_candidates": per_path}
                if rrf_k is not None:
                    retrieval["rrf_k"] = rrf_k
                settings.append(retrieval)
    return settings


def tune_best(
    conn: psycopg.Connection, base: Config, tasks: Sequence[Task], reader: Reader,
    *, embedder: Embedder | None = None, progress: bool = False,
) -> BestChoice:
    """Grid-search `best` on the tasks whose `metadata.split` is `dev` (never any other)."""
    dev = [t for t in tasks if t.metadata.get("split") == "dev"]
    scored_dev = [t for t in dev if t.expected_sources]
    if not scored_dev:
        raise EvaluationError("condition best is tuned on dev tasks, but the task file has no "
                              "task with metadata.split = 'dev' and expected sources")
    hybrid = condition_config("hybrid", base)
    embedder = embedder or QueryCachingEmbedder(get_embedder(base.embedder))
    scores: list[dict[str, Any]] = []
    grid = _grid()
    bar = tqdm(total=len(grid) * len(scored_dev), desc="tune best (dev)", disable=not progress)
    for retrieval in grid:
        config = hybrid.with_overrides(retrieval=retrieval)
        retriever = Retriever(conn, config, embedder=embedder)
        results = []
        for task in scored_dev:
            results.append((task, retriever.retrieve(task.query)))
            bar.update(1)
        for max_passages in BEST_GRID["max_passages"]:
            baseline = Baseline(conn, config.with_overrides(context={"max_passages": max_passages}),
                                reader=reader, retriever=retriever)
            recalls, mrrs, tokens = [], [], []
            for task, result in results:
                as_of = task.as_of.isoformat() if task.as_of else None
                trace = baseline.search(task.query, as_of, source=Prefetched(result)).context
                ranked = [p.source_id for p in sorted(trace.admitted, key=lambda p: p.rank)]
                metrics = stage_metrics("admitted", ranked, task.expected_sources)
                recalls.append(metrics.recall or 0.0)
                mrrs.append(metrics.reciprocal_rank or 0.0)
                tokens.append(trace.prompt_tokens)
            scores.append({
                "retrieval": retrieval, "context": {"max_passages": max_passages},
                "recall_admitted": round(sum(recalls) / len(recalls), 4),
                "mrr_admitted": round(sum(mrrs) / len(mrrs), 4),
                "mean_prompt_tokens": round(sum(tokens) / len(tokens), 1),
            })
    bar.close()
    best = max(enumerate(scores), key=lambda item: (item[1]["recall_admitted"],
                                                    item[1]["mrr_admitted"],
                                                    -item[1]["mean_prompt_tokens"], -item[0]))[1]
    overrides = {"retrieval": dict(best["retrieval"]), "context": dict(best["context"])}
    return BestChoice(overrides, tuple(t.id for t in scored_dev), tuple(scores))


# -- non-retrieval context sources -----------------------------------------------------------
