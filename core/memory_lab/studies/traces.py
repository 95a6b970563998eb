"""One retrieval condition over a task set: traces without reading, stage metrics, variants."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.config import Config
from memory_baseline.context import ContextTrace
from memory_baseline.reading import Reader
from memory_baseline.retrieval import RetrievalResult
from memory_instrument import Task, stage_metrics
from memory_lab.studies.setup import RETRIEVAL_STAGES, StudyRun

# -- one retrieval condition over a task set ---------------------------------------------


@dataclass(frozen=True)
class Trace:
    """Retrieval and the context decision for one task under one configuration."""

    task: Task
    retrieval: RetrievalResult
    context: ContextTrace
    seconds: float


def trace_tasks(conn: psycopg.Connection, config: Config, tasks: Sequence[Task], *, reader: Reader,
                label: str = "", progress: bool = False) -> list[Trace]:
    """Retrieve and assemble (no reading) for every task: the cheap part of the pipeline."""
    baseline = Baseline(conn, config, reader=reader)
    traces = []
    for task in tqdm(tasks, desc=label or "retrieve", unit="task", disable=not progress, leave=False):
        as_of = task.as_of.isoformat() if task.as_of else None
        started = time.perf_counter()
        found = baseline.search(task.query, as_of)
        traces.append(Trace(task, found.retrieval, found.context, time.perf_counter() - started))
    return traces


def stage_row(trace: Trace, ks: Sequence[int]) -> dict[str, Any]:
    """Source-level recall@k and reciprocal rank of every stage, plus sizes and timings."""
    expected = trace.task.expected_sources
    row: dict[str, Any] = {"task": trace.task.id, "question_type": trace.task.question_type}
    for stage_name in RETRIEVAL_STAGES:
        stage = trace.retrieval.stage(stage_name)
        if stage is None:
            continue
        ranked = stage.source_ids
        for k in ks:
            row[f"{stage_name}_R@{k}"] = stage_metrics(stage_name, ranked[:k], expected).recall
        row[f"{stage_name}_RR"] = stage_metrics(stage_name, ranked, expected).reciprocal_rank
        row[f"{stage_name}_ms"] = round(stage.ms, 2)
    fused = trace.retrieval.stage("fused")
    row["union_size"] = len(fused.candidates) if fused else None
    admitted = stage_metrics("admitted", trace.context.admitted_sources, expected)
    row["admitted_recall"] = admitted.recall
    row["admitted_passages"] = len(trace.context.admitted)
    row["prompt_tokens"] = trace.context.prompt_tokens
    dense = trace.retrieval.stage("dense")
    row["encode_ms"] = dense.detail.get("encode_ms") if dense else None
    row["search_ms"] = round(trace.seconds * 1000, 2)
    return row


def run_variants(
    conn: psycopg.Connection, base_config: Config, tasks: Sequence[Task],
    variants: Mapping[str, Mapping[str, Any]], *, reader: Reader, ks: Sequence[int] = (1, 5, 10),
    run: StudyRun | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """One row per (variant, task); a variant is a set of configuration overrides by section."""
    rows = []
    configs = {}
    for name, overrides in tqdm(list(variants.items()), desc="variants", unit="variant",
                                disable=not progress):
        config = base_config.with_overrides(**overrides)
        configs[name] = config.to_dict()
        for trace in trace_tasks(conn, config, tasks, reader=reader, label=name, progress=progress):
            rows.append({"variant": name, **stage_row(trace, ks)})
    if run is not None:
        run.record("configurations", configs)
    return rows
