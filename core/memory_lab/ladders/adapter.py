"""The one bridge between the library and the instrument: an `AskResult` as a `SystemOutput`.

Stages mean the same thing in every condition: ``candidates`` is the fused list (source ids,
rank order), ``reranked`` exists only when a reranker ran, ``admitted`` is what the reader saw,
``cited`` what the answer cites.
"""

from __future__ import annotations

from memory_baseline.context import ContextTrace
from memory_baseline.reading import Answer
from memory_baseline.retrieval import RetrievalResult
from memory_instrument import Passage as InstrumentPassage
from memory_instrument import (
    SystemOutput,
    Task,
)


def to_system_output(
    task: Task, condition: str, retrieval: RetrievalResult | None, context: ContextTrace,
    answer: Answer, timings_ms: dict[str, float], *, context_kind: str,
) -> SystemOutput:
    """The instrument's view of one case; the artifact is left for the instrument to extract."""
    stages: dict[str, list[str]] = {}
    if retrieval is not None:
        fused = retrieval.stage("fused")
        stages["candidates"] = fused.source_ids if fused else []
        reranked = retrieval.stage("reranked")
        # The retriever may record a pass-through "reranked" stage; only a real rerank counts.
        if reranked is not None and not reranked.detail.get("pass_through", False):
            stages["reranked"] = reranked.source_ids
    ranked_admitted = sorted(context.admitted, key=lambda p: p.rank)
    stages["admitted"] = list(dict.fromkeys(p.source_id for p in ranked_admitted))
    stages["cited"] = list(answer.citations)
    usage = answer.usage
    return SystemOutput(
        task_id=task.id, condition=condition, answer=answer.text, abstained=answer.abstained,
        stages=stages,
        admitted_passages=[InstrumentPassage(p.source_id, p.chunk_id, p.text)
                           for p in context.admitted],
        citations=list(answer.citations), unknown_citations=list(answer.unknown_citations),
        artifact=None,
        usage={"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
               "calls": usage.calls, "seconds": round(usage.seconds, 4)},
        timings_ms=dict(timings_ms),
        metadata={"context_source": context_kind, "cache_hit": answer.cached,
                  "reader": answer.reader.get("name")},
    )
