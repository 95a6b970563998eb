"""Chapter 2: chunking policies and the evidence they keep whole."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.chunking import CHUNKER_VERSIONS
from memory_baseline.config import Config
from memory_baseline.reading import Reader
from memory_baseline.store import Store
from memory_instrument import Task
from memory_lab.chapters.ingest import _union_length
from memory_lab.studies.display import pivot, show_figure, show_table, summarise  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import (  # noqa: F401 - called by the chapter
    StudyError,
    StudyRun,
    index_corpus,
    load_task_subset,
    prepare_world,
    reader_for,
    repo_path,
    start_study,
)
from memory_lab.studies.traces import Trace, trace_tasks

# -- chapter 2: chunking ----------------------------------------------------------------------


def available_chunkers() -> list[str]:
    return list(CHUNKER_VERSIONS)


def _covered(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    """Is [start, end) inside the union of `spans`?"""
    position = start
    for span_start, span_end in sorted(spans):
        if span_start > position:
            break
        position = max(position, span_end)
        if position >= end:
            return True
    return position >= end


def evidence_coverage(
    task: Task, spans_by_source: Mapping[str, Sequence[tuple[int, int]]], texts: Mapping[str, str],
) -> float | None:
    """Share of the task's evidence quotes wholly inside the given character spans."""
    quotes = task.answer.evidence
    if not quotes:
        return None
    hits = 0
    for span in quotes:
        text = texts.get(span.source, "")
        spans = spans_by_source.get(span.source, ())
        start = text.find(span.quote)
        while start >= 0:
            if _covered(spans, start, start + len(span.quote)):
                hits += 1
                break
            start = text.find(span.quote, start + 1)
    return hits / len(quotes)


def _admitted_spans(trace: Trace) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for passage in trace.context.admitted:
        known = trace.retrieval.passages.get(passage.chunk_id)
        if known is None:
            continue
        # A truncated passage keeps a prefix of its chunk.
        spans.setdefault(passage.source_id, []).append(
            (known.char_start, known.char_start + len(passage.text)))
    return spans


def _candidate_spans(trace: Trace, depth: int) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for candidate in trace.retrieval.final.candidates[:depth]:
        known = trace.retrieval.passages.get(candidate.chunk_id)
        if known is not None:
            spans.setdefault(known.source_id, []).append((known.char_start, known.char_end))
    return spans


def wasted_overlap(trace: Trace) -> tuple[int, int]:
    """(admitted characters, of which repeats of characters already admitted from that source)."""
    total = repeated = 0
    for spans in _admitted_spans(trace).values():
        stored = sum(end - start for start, end in spans)
        total += stored
        repeated += stored - _union_length(spans)
    return total, repeated


def chunking_study(
    conn: psycopg.Connection, base_config: Config, corpus_dir: str | Path, tasks: Sequence[Task],
    policies: Sequence[str], *, index_prefix: str, reader: Reader, candidate_depth: int = 20,
    run: StudyRun | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """Evidence coverage before and after context assembly, and wasted overlap, per policy.

    Each policy gets its own index (`<prefix>_<policy>`) over the same corpus; the
    retrieval, context and budget settings are identical. "Before" is the union of
    the top `candidate_depth` final candidates; "after" is what the reader would see.
    """
    root = repo_path(corpus_dir)
    unknown = [p for p in policies if p not in CHUNKER_VERSIONS]
    if unknown:
        raise StudyError(f"unknown chunking policy {unknown[0]!r}; available: {available_chunkers()}")
    texts = {t: (root / t).read_text(encoding="utf-8") for task in tasks
             for t in {s.source for s in task.answer.evidence} if (root / t).is_file()}
    rows, configs = [], {}
    for policy in policies:
        # Exact dense search: this study is about boundaries, and an approximate index whose
        # graph changes as sources are replaced would add noise that is not the chunker's.
        config = base_config.with_overrides(
            index=f"{index_prefix}_{policy.replace('-', '_')}", chunking={"policy": policy},
            retrieval={"dense_plan": "exact"})
        configs[policy] = config.to_dict()
        report = index_corpus(conn, config, root, progress=progress)
        counts = Store(conn, config.index).counts()
        for trace in trace_tasks(conn, config, tasks, reader=reader, label=policy, progress=progress):
            admitted_chars, repeated_chars = wasted_overlap(trace)
            row = {
                "policy": policy, "task": trace.task.id, "question_type": trace.task.question_type,
                "chunks_in_index": counts["chunks"],
                "coverage_candidates": evidence_coverage(trace.task, _candidate_spans(trace, candidate_depth),
                                                         texts),
                "coverage_admitted": evidence_coverage(trace.task, _admitted_spans(trace), texts),
                "admitted_passages": len(trace.context.admitted),
                "admitted_chars": admitted_chars,
                "repeated_chars": repeated_chars,
                "wasted_share": round(repeated_chars / admitted_chars, 4) if admitted_chars else 0.0,
                "prompt_tokens": trace.context.prompt_tokens,
                "index_seconds": report.seconds.get("total"),
            }
            row["complete_candidates"] = None if row["coverage_candidates"] is None else float(
                row["coverage_candidates"] == 1.0)
            row["complete_admitted"] = None if row["coverage_admitted"] is None else float(
                row["coverage_admitted"] == 1.0)
            rows.append(row)
    if run is not None:
        run.record("configurations", configs)
    return rows
