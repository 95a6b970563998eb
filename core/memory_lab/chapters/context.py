"""Chapter 6: context assembly sweeps, read and scored."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.config import Config
from memory_baseline.reading import Reader, get_reader
from memory_instrument import Task, stage_metrics
from memory_lab.chapters.chunking import wasted_overlap
from memory_lab.conditions import context_variants, sweep_factor  # noqa: F401 - called by the chapter
from memory_lab.studies.display import show_figure, show_table, summarise  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import StudyRun, index_corpus, load_task_subset, repo_path, start_study  # noqa: F401 - called by the chapter
from memory_lab.studies.traces import Trace

# -- chapter 6: context ---------------------------------------------------------------------------


def read_and_score(
    conn: psycopg.Connection, config: Config, tasks: Sequence[Task], *, condition: str,
    reader: Reader | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """Ask every task with `config`, score with the instrument, and keep cost and waste per task.

    The bridge to the instrument is the evaluation harness's `to_system_output`, so a
    sweep is scored exactly as a ladder run is.
    """
    from memory_instrument import score_task
    from memory_lab.ladders.adapter import to_system_output

    baseline = Baseline(conn, config, reader=reader)
    rows = []
    for task in tqdm(tasks, desc=condition, unit="task", disable=not progress, leave=False):
        as_of = task.as_of.isoformat() if task.as_of else None
        started = time.perf_counter()
        result = baseline.ask(task.query, as_of)
        seconds = time.perf_counter() - started
        output = to_system_output(task, condition, result.retrieval, result.context, result.answer,
                                  result.timings_ms, context_kind="retrieval")
        score = score_task(task, output)
        admitted = stage_metrics("admitted", result.context.admitted_sources, task.expected_sources)
        admitted_chars, repeated = wasted_overlap(Trace(task, result.retrieval, result.context, seconds))
        rows.append({
            "variant": condition, "task": task.id, "question_type": task.question_type,
            "passed": float(score.passed), "outcome": score.outcome,
            "admitted_recall": admitted.recall, "admitted_passages": len(result.context.admitted),
            "duplicate_drops": len(result.context.duplicate_drops),
            "budget_drops": len(result.context.budget_drops),
            "quota_drops": len(result.context.quota_drops),
            "wasted_share": round(repeated / admitted_chars, 4) if admitted_chars else 0.0,
            "prompt_tokens": result.answer.usage.prompt_tokens or result.context.prompt_tokens,
            "completion_tokens": result.answer.usage.completion_tokens,
            "reader_seconds": round(result.timings_ms.get("reader", 0.0) / 1000, 3),
            "cached": result.answer.cached,
        })
    return rows


def context_study(
    conn: psycopg.Connection, base_config: Config, tasks: Sequence[Task],
    variants: Mapping[str, Mapping[str, Any]], *, reader_name: str, run: StudyRun | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Read and score every task under each context variant, with one reader instance."""
    base = base_config.with_overrides(reader={"name": reader_name})
    reader = get_reader(base.reader)
    rows, configs = [], {}
    done: dict[str, str] = {}  # effective configuration -> the variant that already ran it
    for name, overrides in tqdm(list(variants.items()), desc="variants", unit="variant",
                                disable=not progress):
        config = base.with_overrides(**overrides)
        configs[name] = config.to_dict()
        key = json.dumps(configs[name], sort_keys=True)
        if key in done:
            # The default appears once per sweep; read it once and label the copy.
            rows += [{**row, "variant": name} for row in rows if row["variant"] == done[key]]
            continue
        done[key] = name
        rows += read_and_score(conn, config, tasks, condition=name, reader=reader, progress=progress)
    if run is not None:
        run.record("configurations", configs)
        run.record("reader", reader.identity)
    return rows
