"""Hybrid retrieval overlaps its two paths, returns what the sequential path returns, sees writes at once."""

from __future__ import annotations

import shutil

from conftest import FIXTURE_HISTORY

from memory_baseline.refresh import sync
from memory_baseline.retrieval import Retriever

QUERIES = ("Where did we discuss the event-store backend?", "Which error code does the broker log?",
           "adr-007 decision on PostgreSQL")


def test_overlapped_hybrid_equals_sequential_and_sees_the_next_write(tmp_path, conn, config, minilm):
    corpus = tmp_path / "history"
    shutil.copytree(FIXTURE_HISTORY, corpus)
    sync(conn, config, str(corpus), remove_missing=True, embedder=minilm)
    retriever = Retriever(conn, config, embedder=minilm)
    try:
        for query in QUERIES:
            overlapped = retriever.retrieve(query)
            with conn.transaction():  # inside a transaction the paths run in turn on this connection
                sequential = retriever.retrieve(query)
            assert overlapped.stage("lexical").detail["overlapped_with_dense"] is True
            assert sequential.stage("lexical").detail["overlapped_with_dense"] is False
            for name in ("lexical", "dense", "fused"):
                assert overlapped.stage(name).candidates == sequential.stage(name).candidates
            # Passage rows the paths brought along are the rows a separate read returns.
            assert overlapped.passages == retriever._passages(list(overlapped.passages))

        assert not retriever.retrieve("zanzibarquux").stage("lexical").candidates
        changed = corpus / "decisions" / "adr-009.md"
        changed.write_text(changed.read_text() + "\nAddendum: the zanzibarquux cache stays rejected.\n")
        sync(conn, config, str(corpus), remove_missing=True, embedder=minilm)
        found = retriever.retrieve("zanzibarquux").stage("lexical")
        assert found.detail["overlapped_with_dense"] is True
        assert {c.source_id for c in found.candidates} == {"decisions/adr-009.md"}

        changed.unlink()
        sync(conn, config, str(corpus), remove_missing=True, embedder=minilm)
        assert not retriever.retrieve("zanzibarquux").stage("lexical").candidates
    finally:
        retriever.close()


def test_dense_hits_with_their_passage_rows_are_the_plain_dense_hits(tmp_path, conn, config, minilm):
    from memory_baseline.store import Store

    sync(conn, config, str(FIXTURE_HISTORY), remove_missing=True, embedder=minilm)
    store = Store(conn, config.index)
    representation = store.representations_in_use().popitem()[0]
    for query in QUERIES:
        vector = minilm.embed_query(query)
        rows: dict[str, dict] = {}
        plain, _ = store.dense(vector, 30, representation)
        with_rows, _ = store.dense(vector, 30, representation, passage_rows=rows)
        assert with_rows == plain
        assert rows == store.chunk_texts([hit.chunk_id for hit in plain])
