"""The oracle context sources: what a perfect retriever would hand the reader.

``oracle-span`` gives each evidence quote of the task with a sentence of context on each side,
``oracle-source`` the whole expected files, ``full-history`` every source in artifact-date order.
They read the task's labels, so they live in the lab, never in the library.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from memory_baseline.chunking import sentence_boundaries
from memory_baseline.ingest import SourceRecord
from memory_baseline.passages import Passage
from memory_instrument import (
    Task,
)
from memory_lab.conditions import EvaluationError

SPAN_CONTEXT_SENTENCES = 1
SPAN_CONTEXT_MAX_CHARS = 400


def _passage(record: SourceRecord, start: int, end: int, chunk_id: str) -> Passage:
    return Passage(
        chunk_id=chunk_id, source_id=record.source_id, text=record.text[start:end], section=None,
        kind=record.kind,
        artifact_date=record.artifact_time.date().isoformat() if record.artifact_time else None,
        char_start=start, char_end=end, line_start=record.text.count("\n", 0, start) + 1,
        line_end=record.text.count("\n", 0, max(start, end - 1)) + 1,
    )


def _corpus_record(corpus: dict[str, SourceRecord], source_id: str, task: Task) -> SourceRecord:
    record = corpus.get(source_id)
    if record is None:
        raise EvaluationError(f"task '{task.id}': source {source_id!r} is not in the corpus")
    return record


def _span_with_context(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole sentences plus one neighbouring sentence each side (capped)."""
    starts = sentence_boundaries(text)
    first = bisect_right(starts, start) - 1
    after = bisect_left(starts, end)  # first sentence starting at or after the quote's end
    wide_start = starts[max(0, first - SPAN_CONTEXT_SENTENCES)]
    stop_index = after + SPAN_CONTEXT_SENTENCES
    wide_end = starts[stop_index] if stop_index < len(starts) else len(text)
    return (max(wide_start, start - SPAN_CONTEXT_MAX_CHARS),
            min(wide_end, end + SPAN_CONTEXT_MAX_CHARS))


def oracle_span_passages(task: Task, corpus: dict[str, SourceRecord]) -> list[Passage]:
    """The minimal evidence: each quote widened by a sentence, overlapping spans merged.

    An answerable task without evidence quotes falls back to its whole expected sources
    (recorded in the case); an abstention task gets nothing.
    """
    if not task.answer.evidence:
        return oracle_source_passages(task, corpus)
    spans: dict[str, list[tuple[int, int]]] = {}
    for span in task.answer.evidence:
        record = _corpus_record(corpus, span.source, task)
        at = record.text.find(span.quote)
        if at < 0:
            raise EvaluationError(
                f"task '{task.id}': evidence quote not found in {span.source}: {span.quote[:60]!r}"
            )
        spans.setdefault(span.source, []).append(_span_with_context(record.text, at, at + len(span.quote)))
    passages = []
    for source_id, ranges in spans.items():
        merged: list[list[int]] = []
        for start, end in sorted(ranges):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        record = corpus[source_id]
        passages.extend(_passage(record, s, e, f"{source_id}@{s}-{e}") for s, e in merged)
    return passages


def oracle_source_passages(task: Task, corpus: dict[str, SourceRecord]) -> list[Passage]:
    """The whole expected files, in the task's order."""
    return [_passage(record, 0, len(record.text), f"{record.source_id}#all")
            for record in (_corpus_record(corpus, s, task) for s in task.expected_sources)]


def full_history_passages(corpus: dict[str, SourceRecord]) -> list[Passage]:
    """Every source, oldest artifact date first; undated sources last, then by path."""
    ordered = sorted(corpus.values(), key=lambda r: (r.artifact_time is None,
                                                     r.artifact_time.isoformat() if r.artifact_time else "",
                                                     r.source_id))
    return [_passage(r, 0, len(r.text), f"{r.source_id}#all") for r in ordered]


# -- the adapter ---------------------------------------------------------------------------------
