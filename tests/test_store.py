"""The store package: the schema from its .sql file, writes, snapshots, the HNSW builder, counts."""

from __future__ import annotations

from importlib.resources import files

import numpy as np
import psycopg
import pytest

from memory_baseline.refresh import chunk_row
from memory_baseline.server import connect
from memory_baseline.store import HNSW_INDEX, SCHEMA_VERSION, Store, StoreError, schema_ddl

DIMENSION = 8
REPRESENTATION = "store-test"
TABLES = {"meta", "representations", "sources", "chunks", "bm25_segments", "bm25_tombstones",
          "bm25_dirty_terms", "term_stats", "corpus_stats"}


def vector(seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return values / np.linalg.norm(values)


def rows(source_id: str, texts: list[str], seed: int = 0):
    spans, start = [], 0
    for text in texts:
        spans.append((start, start + len(text)))
        start += len(text) + 1
    return [chunk_row(source_id, f"{source_id}#{i}", i, a, b, None, text, vector(seed + i))
            for i, (text, (a, b)) in enumerate(zip(texts, spans, strict=True))]


def write(store: Store, source_id: str, texts: list[str], seed: int = 0) -> None:
    with store.conn.transaction():
        store.lock_for_write()
        store.replace_source(source_id, "markdown", f"hash-{source_id}-{seed}", 100, None,
                             REPRESENTATION, rows(source_id, texts, seed))


@pytest.fixture()
def store(conn, index_name):
    store = Store(conn, index_name)
    store.create(DIMENSION)
    with conn.transaction():
        store.ensure_representation(REPRESENTATION, {"chunker": "test"}, {"name": "test"}, DIMENSION)
    return store


def test_the_schema_is_created_from_the_packaged_sql_file(conn, index_name):
    assert schema_ddl() == files("memory_baseline.store").joinpath("schema.sql").read_text(encoding="utf-8")
    store = Store(conn, index_name)
    assert not store.exists()
    with pytest.raises(StoreError, match="does not exist"):
        store.require()
    assert store.create(DIMENSION) is True
    store.require()
    tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s",
                                         (index_name,)).fetchall()}
    assert tables == TABLES
    assert store.dimension() == DIMENSION and store.get_meta("schema_version") == SCHEMA_VERSION
    assert store.counts() == {"sources": 0, "chunks": 0, "failed_observations": 0}
    assert store.create(DIMENSION) is False  # already there: nothing to do
    with pytest.raises(StoreError, match="16-d"):
        store.create(16)


def test_writes_replace_a_source_whole_and_record_failed_observations(store, conn):
    write(store, "notes/a.md", ["alpha kafka topic", "beta postgres store"])
    write(store, "notes/b.md", ["gamma broker"], seed=5)
    assert store.counts() == {"sources": 2, "chunks": 3, "failed_observations": 0}
    assert store.representations_in_use() == {REPRESENTATION: 3}
    stored = store.stored_chunk_rows(["notes/a.md"])
    assert [r.text for r in stored] == ["alpha kafka topic", "beta postgres store"]
    assert np.array_equal(stored[1].embedding, vector(1))
    passage = store.chunk_texts(["notes/a.md#1"])["notes/a.md#1"]
    assert (passage["source_id"], passage["kind"], passage["char_start"]) == ("notes/a.md", "markdown", 18)

    write(store, "notes/a.md", ["alpha kafka topic, rewritten"], seed=9)  # replaced, never updated
    assert [c["text"] for c in store.source_chunks("notes/a.md")] == ["alpha kafka topic, rewritten"]
    assert store.counts()["chunks"] == 2
    with pytest.raises(psycopg.errors.RaiseException, match="immutable"), conn.transaction():
        conn.execute(f'UPDATE "{store.index}".chunks SET text = %s', ("edited",))

    with conn.transaction():
        store.mark_failed("notes/b.md", "permission denied")
    failed = store.sources()["notes/b.md"]
    assert (failed.observation_status, failed.observation_error) == ("failed", "permission denied")
    assert store.counts() == {"sources": 2, "chunks": 2, "failed_observations": 1}
    assert [c["text"] for c in store.source_chunks("notes/b.md")] == ["gamma broker"]  # last good kept
    with conn.transaction():
        store.touch_sources(["notes/b.md"])
        store.remove_sources(["notes/a.md"])
    assert store.sources()["notes/b.md"].observation_status == "ok"
    assert store.counts() == {"sources": 1, "chunks": 1, "failed_observations": 0}


def test_a_snapshot_holds_one_state_for_this_and_a_second_connection(store, conn, database_url):
    write(store, "notes/a.md", ["alpha"])
    with store.snapshot() as snapshot_id, connect(database_url) as writer, \
            connect(database_url) as second:
        assert snapshot_id
        write(Store(writer, store.index), "notes/b.md", ["beta"])  # committed meanwhile
        assert store.counts()["sources"] == 1
        with Store(second, store.index).reading_snapshot(snapshot_id):
            assert Store(second, store.index).counts()["sources"] == 1
        assert Store(second, store.index).counts()["sources"] == 2
    assert store.counts()["sources"] == 2
    with conn.transaction(), store.snapshot() as inside:
        assert inside is None  # the caller's transaction decides what it sees


def test_one_hnsw_builder_builds_rebuilds_and_leaves_the_session_settings(store, conn):
    write(store, "notes/a.md", [f"chunk {i}" for i in range(12)])
    memory_before = conn.execute("SHOW maintenance_work_mem").fetchone()[0]
    workers_before = conn.execute("SHOW max_parallel_maintenance_workers").fetchone()[0]

    def definition() -> str:
        return conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
                            (store.index, HNSW_INDEX)).fetchone()[0]

    assert not store.has_hnsw()
    assert store.build_hnsw() >= 0
    assert store.has_hnsw() and "m='16'" in definition() and "ef_construction='64'" in definition()
    store.build_hnsw(m=8, ef_construction=32)  # present: left as it is
    assert "m='16'" in definition()
    store.build_hnsw(m=8, ef_construction=32, maintenance_work_mem="64MB", parallel_workers=0,
                     rebuild=True)
    assert "m='8'" in definition() and "ef_construction='32'" in definition()
    assert conn.execute("SHOW maintenance_work_mem").fetchone()[0] == memory_before
    assert conn.execute("SHOW max_parallel_maintenance_workers").fetchone()[0] == workers_before

    exact, lines = store.dense(vector(3), 5, REPRESENTATION, plan="exact", explain=True)
    assert exact[0].chunk_id == "notes/a.md#3" and len(exact) == 5
    assert not any(HNSW_INDEX in line for line in lines)
    hits, _ = store.dense(vector(3), 5, REPRESENTATION)
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in exact]
    store.drop_hnsw()
    assert not store.has_hnsw()


def test_line_ranges_are_stored_and_an_older_index_is_upgraded_then_rechunked(index_name, tmp_path):
    """Chunks keep the lines their span covers; an index made before that is refused by readers,
    given the columns by the next refresh, and re-chunked reusing its stored vectors."""
    from memory_baseline.config import Config
    from memory_baseline.refresh import sync

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = [f"Line {n}: the relay retried the batch {n} times before giving up." for n in range(1, 80)]
    (corpus / "log.md").write_text("# Relay\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    config = Config(index=index_name).with_overrides(chunking={"target_chars": 600, "overlap_chars": 0})
    with connect() as conn:
        sync(conn, config, corpus, remove_missing=True)
        store = Store(conn, index_name)
        text = (corpus / "log.md").read_text(encoding="utf-8")
        chunks = store.source_chunks("log.md")
        spans = conn.execute(store._q("SELECT char_start, char_end, line_start, line_end FROM {s}.chunks "
                                      "ORDER BY ordinal")).fetchall()
        assert len(spans) == len(chunks) > 2
        for start, end, first, last in spans:
            assert first == text.count("\n", 0, start) + 1 and last == text.count("\n", 0, end - 1) + 1
        before = dict(conn.execute(store._q("SELECT chunk_id, embedding::text FROM {s}.chunks")).fetchall())
        conn.execute(store._q("ALTER TABLE {s}.chunks DROP COLUMN line_start, DROP COLUMN line_end"))
        with pytest.raises(StoreError, match="line ranges"):
            store.require()
        report = sync(conn, config, corpus, remove_missing=True)
        assert report.reembedded == ["log.md"]
        store.require()
        after = dict(conn.execute(store._q("SELECT chunk_id, embedding::text FROM {s}.chunks")).fetchall())
        assert after == before  # the same chunks, their vectors reused, not re-encoded
        assert conn.execute(store._q("SELECT count(*) FROM {s}.chunks WHERE line_start IS NULL")
                            ).fetchone()[0] == 0
