"""Context assembly: it reads retrieval's identifier priority, and admits under the token budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory_baseline.baseline import prompt_counter
from memory_baseline.config import ContextConfig, ReaderConfig
from memory_baseline.context import TRACE_FIELDS, assemble, candidates_in_order
from memory_baseline.reading import ExtractiveReader
from memory_baseline.refresh import sync
from memory_baseline.retrieval import NAMES_FILE, RARE_IDENTIFIER, Candidate, Retriever, Stage

NAMED_FILE = "docs/adr/adr-031-use-kafka-for-events.md"
NOTES = {
    NAMED_FILE: "# Use Kafka for events\n\nStatus: superseded. We publish domain events to Kafka topics.\n",
    "docs/adr/0014-postgres-event-store.md": "# Postgres event store\n\nStatus: accepted. The event "
    "store lives in PostgreSQL.\n",
    **{f"notes/status-review-{i}.md": "# Status review\n\nWhat is the current status of ADR 31? "
       f"The status of ADR 31 (adr-031) was reviewed in meeting {i}; ADR 14 status as well.\n"
       for i in range(6)},
}
QUERY = "What is the current status of ADR 31?"


@pytest.fixture()
def retrieved(tmp_path, conn, config, minilm):
    root = tmp_path / "notes"
    for relative, text in NOTES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sync(conn, config, str(root), remove_missing=False, embedder=minilm)
    retriever = Retriever(conn, config, embedder=minilm)
    try:
        yield retriever.retrieve(QUERY)
    finally:
        retriever.close()


def demoted(result, source_id: str):
    """The result as if a reranker had put every chunk of `source_id` last."""
    final = list(result.final.candidates)
    order = [c for c in final if c.source_id != source_id] + [c for c in final if c.source_id == source_id]
    stage = Stage("reranked", tuple(Candidate(c.chunk_id, c.source_id, 0.0, i)
                                    for i, c in enumerate(order, 1)), 0.0, {"pass_through": False})
    return replace(result, stages=(*result.stages[:-1], stage))


def test_the_named_document_leads_because_retrieval_recorded_it(retrieved):
    named = [cid for cid, p in retrieved.passages.items() if p.source_id == NAMED_FILE]
    assert named and all(retrieved.priority[cid] == NAMES_FILE for cid in named)
    assert retrieved.stage("fused").detail["identifier_priority"]["promoted"] == len(retrieved.priority)

    reranked_away = demoted(retrieved, NAMED_FILE)
    assert reranked_away.final.candidates[-1].source_id == NAMED_FILE
    assert candidates_in_order(reranked_away)[0].source_id == NAMED_FILE

    # Context assembly does not re-derive the levels: without them, the final order stands,
    # and a rare identifier in a chunk's text (level 1) is no request for its document.
    final_order = [c.chunk_id for c in reranked_away.final.candidates]
    assert [p.chunk_id for p in candidates_in_order(replace(reranked_away, priority={}))] == final_order
    rare_only = replace(reranked_away, priority={cid: RARE_IDENTIFIER for cid in named})
    assert [p.chunk_id for p in candidates_in_order(rare_only)] == final_order


def test_admission_fills_the_budget_in_rank_order_and_records_every_drop(retrieved):
    reader = ExtractiveReader(ReaderConfig(name="extractive"))
    count = prompt_counter(reader, QUERY, None)
    candidates = candidates_in_order(retrieved)
    assert len(candidates) > 3
    budget = count(candidates[:2])  # exactly two passages' prompt: a third cannot fit
    trace = assemble(candidates, ContextConfig(token_budget=budget, max_passages=len(candidates)),
                     count, tokenizer="wp")
    # The admitted passages are retrieval's own, ranked by their position.
    assert list(trace.admitted) == [replace(c, rank=i) for i, c in enumerate(candidates[:2], 1)]
    assert trace.prompt_tokens == count(list(trace.admitted)) == budget
    assert set(trace.budget_drops) | set(trace.duplicate_drops) == {c.chunk_id for c in candidates[2:]}
    assert trace.truncated is None and trace.not_considered == ()
    # The trace records what the reader saw, not the chunk's span and terms.
    assert [tuple(p) for p in trace.to_dict()["admitted"]] == [TRACE_FIELDS] * 2

    limited = assemble(candidates, ContextConfig(max_passages=1), count, tokenizer="wp")
    assert [p.chunk_id for p in limited.admitted] == [candidates[0].chunk_id]
    assert limited.not_considered == tuple(c.chunk_id for c in candidates[1:])
