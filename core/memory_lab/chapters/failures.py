"""Chapter 8: where the evidence was lost, read from the case records."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.config import Config
from memory_baseline.context import ContextTrace
from memory_baseline.passages import Passage
from memory_baseline.retrieval import RetrievalResult
from memory_baseline.store import Store
from memory_instrument import Task, load_tasks
from memory_lab.chapters.ladder import latest_run  # noqa: F401 - called by the chapter
from memory_lab.studies.display import show_figure, show_table  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import (
    StudyError,
    display_path,
    repo_path,
    run_caption,  # noqa: F401 - called by the chapter
)

# -- chapter 8: where the evidence was lost ----------------------------------------------------------

LOSS_STAGES = ("never indexed", "not a candidate", "fused out", "reranked out", "not admitted",
               "admitted but misread")


def loss_stage(
    expected_source: str, indexed_sources: set[str], retrieval: RetrievalResult,
    context: ContextTrace, *, rerank_top_n: int,
) -> str:
    """The pipeline stage at which one expected source dropped out (or 'admitted but misread').

    Read from the trace, never guessed: a source absent from the index was never
    indexed; present but in neither path's list was not a candidate; in a path's
    list but below what the next stage looked at was fused out (the reranker's head
    when one ran, otherwise the passages assembly considered); lifted into the
    reranker's head but then placed where assembly never looked was reranked out;
    considered by assembly but dropped (budget, duplicate, quota) was not admitted.
    """
    if expected_source in context.admitted_sources:
        return "admitted but misread"
    if expected_source not in indexed_sources:
        return "never indexed"
    path_sources = {c.source_id for name in ("lexical", "dense")
                    if (stage := retrieval.stage(name)) for c in stage.candidates}
    if expected_source not in path_sources:
        return "not a candidate"
    fused = retrieval.stage("fused")
    fused_rank = min((c.rank for c in fused.candidates if c.source_id == expected_source), default=None)
    never_considered = set(context.not_considered)
    final_chunks = [c for c in retrieval.final.candidates if c.source_id == expected_source]
    considered = [c for c in final_chunks if c.chunk_id not in never_considered]
    if retrieval.reranker_ran:
        if fused_rank is None or fused_rank > rerank_top_n:
            return "fused out"
        return "not admitted" if considered else "reranked out"
    return "not admitted" if considered else "fused out"


def diagnose_case(
    task: Task, passed: bool, indexed_sources: set[str], retrieval: RetrievalResult | None,
    context: ContextTrace, *, rerank_top_n: int,
) -> dict[str, Any]:
    """Per expected source, where it was lost; the task's stage is the earliest loss."""
    if not task.expected_sources or retrieval is None:
        stages = {}
        stage = "admitted but misread" if not passed else "passed"
    else:
        stages = {s: loss_stage(s, indexed_sources, retrieval, context, rerank_top_n=rerank_top_n)
                  for s in task.expected_sources}
        stage = "passed" if passed else min(stages.values(), key=LOSS_STAGES.index)
    return {"task": task.id, "question_type": task.question_type, "passed": passed,
            "stage": stage, "per_source": stages}


def recorded_context(case: Mapping[str, Any]) -> ContextTrace:
    """The context decision of a case record (admitted passages without their text)."""
    recorded = case["context"]
    admitted = tuple(Passage(p["chunk_id"], p["source_id"], "", None, "", None, p["rank"],
                             p.get("truncated", False)) for p in case["admitted"])
    return ContextTrace(
        admitted=admitted, duplicate_drops=tuple(recorded["duplicate_drops"]),
        budget_drops=tuple(recorded["budget_drops"]), quota_drops=tuple(recorded["quota_drops"]),
        not_considered=tuple(recorded["not_considered"]), truncated=recorded.get("truncated"),
        prompt_tokens=recorded["prompt_tokens"], token_budget=recorded["token_budget"],
        max_passages=recorded["max_passages"], order=recorded.get("order", "rank"),
        oversize_policy=recorded.get("oversize_policy", "truncate"), tokenizer=recorded["tokenizer"])


def diagnose_run(
    conn: psycopg.Connection, run_dir: str | Path, condition: str, *, progress: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Where each failed task of `condition` in a ladder run lost its evidence, with the trace.

    The case record says what the reader saw, how the instrument scored it and, since
    case records keep every stage's chunk-level ranking, the whole trace: the diagnosis
    reads it and searches nothing. Runs written before that (no ``retrieval`` in the
    case) are diagnosed by rerunning retrieval and assembly with the condition's
    recorded configuration on the same index; `trace_source` says which, and
    `trace_matches` whether a rerun admitted the same sources as the recorded case.
    """
    from memory_lab.ladders.reports import load_run

    manifest, cases = load_run(repo_path(run_dir))
    if condition not in manifest.get("conditions", {}):
        raise StudyError(f"run {display_path(run_dir)} has no condition {condition!r}; it has "
                         f"{sorted(manifest.get('conditions', {}))}")
    if manifest["conditions"][condition].get("context_source") != "retrieval":
        raise StudyError(f"condition {condition!r} does not retrieve; choose a retrieval condition")
    config = Config.from_dict(manifest["conditions"][condition]["config"])
    tasks = {t.id: t for t in load_tasks(manifest["tasks"]["path"])}
    failed = [c for c in cases if c["condition"] == condition and not c["score"]["passed"]]
    indexed = set(Store(conn, config.index).sources())
    baseline = Baseline(conn, config)
    rows: list[dict[str, Any]] = []
    traces: dict[str, dict[str, Any]] = {}
    for case in tqdm(failed, desc="diagnose", unit="case", disable=not progress, leave=False):
        task = tasks[case["task_id"]]
        if case.get("retrieval"):
            retrieval, context, trace_source = (RetrievalResult.from_dict(case["retrieval"]),
                                                recorded_context(case), "case record")
        else:
            found = baseline.search(task.query, case.get("as_of"))
            retrieval, context, trace_source = found.retrieval, found.context, "rerun"
        diagnosis = diagnose_case(task, False, indexed, retrieval, context,
                                  rerank_top_n=config.rerank.top_n)
        recorded = case["stages"].get("admitted", [])
        diagnosis.update({
            "outcome": case["score"]["outcome"],
            "trace_source": trace_source,
            "trace_matches": set(recorded) == set(context.admitted_sources),
        })
        rows.append(diagnosis)
        traces[task.id] = {
            "query": task.query, "as_of": case.get("as_of"), "expected": list(task.expected_sources),
            "answer": case["answer"], "outcome": case["score"]["outcome"],
            "stages": {s.name: s.source_ids[:10] for s in retrieval.stages},
            "admitted": context.admitted_sources, "not_considered": len(context.not_considered),
            "budget_drops": list(context.budget_drops), "duplicate_drops": list(context.duplicate_drops),
        }
    return rows, traces
