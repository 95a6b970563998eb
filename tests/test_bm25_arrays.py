"""BM25 posting arrays: exact top-k through deltas, tombstones, compaction, crashes; health sees drift.

The index holds the fixture history's real text, chunked as ingest chunks it;
the vectors are arbitrary (nothing here searches them). Every ranking from the
arrays is compared with `Store.lexical_bm25_exhaustive`, which scores every
matching chunk from its own tsvector in SQL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import FIXTURE_HISTORY, FIXTURE_TASKS

from memory_baseline.chunking import chunk_text
from memory_baseline.config import Config
from memory_baseline.health import check_health
from memory_baseline.ingest import discover
from memory_baseline.refresh import chunk_row
from memory_baseline.server import connect
from memory_baseline.store import Store, bm25, query_terms
from memory_baseline.store.bm25 import postings as posting_arrays

REPRESENTATION = "bm25-test"
DIMENSION = 8
K1, B = 1.2, 0.75


def fixture_sources():
    return sorted(discover(FIXTURE_HISTORY, max_bytes=Config().max_file_bytes).sources,
                  key=lambda r: r.source_id)


def write_sources(store: Store, records, suffix: str = "") -> None:
    """Each source is its own INSERT statement, so every source adds delta segments."""
    with store.conn.transaction():
        store.lock_for_write()
        for record in records:
            pieces = chunk_text(record.source_id, record.text + suffix, Config().chunking)
            rows = [chunk_row(record.source_id, c.chunk_id, c.ordinal, c.start, c.end, c.section,
                              c.text, np.ones(DIMENSION, dtype=np.float32)) for c in pieces]
            store.replace_source(record.source_id, record.kind, record.content_hash + suffix,
                                 record.size_bytes, record.artifact_time, REPRESENTATION, rows)


@pytest.fixture(params=["large segments cached", "every segment cached"])
def segment_cache(request, monkeypatch):
    """The process's segment cache as shipped, or one that keeps every segment: the fixture's
    segments are small, so the second exercises the version check on every fetch."""
    cache = bm25.SegmentCache(max_bytes=posting_arrays.SEGMENT_CACHE.max_bytes,
                              min_postings=1 if request.param == "every segment cached"
                              else posting_arrays.SEGMENT_CACHE.min_postings)
    monkeypatch.setattr(posting_arrays, "SEGMENT_CACHE", cache)
    return cache


@pytest.fixture()
def store(conn, index_name, segment_cache):
    store = Store(conn, index_name)
    store.create(DIMENSION)
    with conn.transaction():
        store.ensure_representation(REPRESENTATION, {"policy": "test"}, {"name": "test"}, DIMENSION)
    write_sources(store, fixture_sources())
    return store


def queries(store: Store) -> list[list[str]]:
    tasks = json.loads(FIXTURE_TASKS.read_text())["tasks"]
    found = [query_terms(store, t["query"]) for t in tasks]
    return [terms for terms in found if terms] + [["postgr", "event", "store"], ["the"], ["zzznothing"]]


def assert_same_ranking(arrays, exhaustive) -> None:
    """Same chunks in the same order; where scores tie (to 1e-9) the order within the tie may differ."""
    assert len(arrays) == len(exhaustive)
    assert [h.score for h in arrays] == pytest.approx([h.score for h in exhaustive], rel=1e-9)
    groups_a: dict[float, set[str]] = {}
    groups_e: dict[float, set[str]] = {}
    for hit in arrays:
        groups_a.setdefault(round(hit.score, 9), set()).add(hit.chunk_id)
    for hit in exhaustive:
        groups_e.setdefault(round(hit.score, 9), set()).add(hit.chunk_id)
    last = round(exhaustive[-1].score, 9) if exhaustive else None
    for score, ids in groups_e.items():
        if score != last:  # the last tie group may be cut differently by the limit
            assert groups_a.get(score) == ids


def assert_exact(store: Store, limit: int = 30, name_weight: float = 1.0) -> int:
    compared = 0
    for terms in queries(store):
        arrays = store.lexical_bm25(terms, limit, K1, B, name_weight)
        exhaustive = store.lexical_bm25_exhaustive(terms, limit, K1, B, name_weight)
        assert_same_ranking(arrays, exhaustive)
        compared += bool(exhaustive)
    return compared


def healthy(conn, index: str) -> bool:
    report = check_health(conn, index, REPRESENTATION, expect_hnsw=False)
    failed = [c for c in report.checks if not c.ok and c.severity == "error"]
    assert not failed, failed
    return True


def test_array_top_k_equals_exhaustive_sql(store, conn):
    backlog = store.bm25_backlog()
    assert backlog["multi_segment_terms"] > 0  # one delta per source: uncompacted
    assert assert_exact(store) > 10
    assert assert_exact(store, limit=5, name_weight=0.0) > 10
    assert healthy(conn, store.index)
    store.compact_bm25()
    assert store.bm25_backlog() == {"multi_segment_terms": 0, "dirty_terms": 0, "tombstones": 0,
                                    "segments": store.bm25_backlog()["segments"]}
    assert assert_exact(store) > 10
    assert healthy(conn, store.index)


def test_deltas_and_tombstones_are_exact_before_and_after_compaction(store, conn):
    store.compact_bm25()
    records = fixture_sources()
    write_sources(store, records[::3], suffix="\nAddendum: the zanzibarquux cache was rejected again.\n")
    with conn.transaction():
        store.remove_sources([r.source_id for r in records[1::7]])
    backlog = store.bm25_backlog()
    assert backlog["tombstones"] > 0 and backlog["dirty_terms"] > 0
    assert assert_exact(store) > 10
    assert healthy(conn, store.index)
    done = store.compact_bm25(terms_per_transaction=50)
    assert done["transactions"] > 2 and done["tombstones_cleared"] == backlog["tombstones"]
    after = store.bm25_backlog()
    assert after["multi_segment_terms"] == after["dirty_terms"] == after["tombstones"] == 0
    assert assert_exact(store) > 10
    assert healthy(conn, store.index)


def test_a_write_is_visible_to_the_next_query_on_another_connection(store, conn, database_url):
    record = fixture_sources()[0]
    with connect(database_url) as reader:
        other = Store(reader, store.index)
        assert other.lexical_bm25(["zanzibarquux"], 10, K1, B) == []
        write_sources(store, [record], suffix="\nzanzibarquux\n")
        assert {h.source_id for h in other.lexical_bm25(["zanzibarquux"], 10, K1, B)} == {record.source_id}
        with conn.transaction():
            store.remove_sources([record.source_id])
        assert other.lexical_bm25(["zanzibarquux"], 10, K1, B) == []
        assert all(h.source_id != record.source_id
                   for h in other.lexical_bm25(query_terms(other, record.text[:200]), 50, K1, B))


def test_cached_segments_are_served_only_while_the_snapshot_sees_their_row(store, conn, segment_cache):
    if segment_cache.min_postings > 1:
        pytest.skip("the fixture's segments are below the shipped cache's size floor")
    terms = ["event", "store", "postgr"]
    first = store.lexical_bm25(terms, 30, K1, B)
    held = segment_cache.held(store._cache_scope(), terms)
    assert held and segment_cache.nbytes > 0
    assert store.lexical_bm25(terms, 30, K1, B) == first  # served from the cache
    store.compact_bm25()  # merged terms get new rows; their cached versions are no longer seen
    visible = {r[0] for r in conn.execute(
        f"SELECT segment::text || ':' || xmin::text FROM \"{store.index}\".bm25_segments "
        "WHERE lexeme = ANY(%s)", (terms,)).fetchall()}
    assert set(held) - visible and visible - set(held)  # merged terms: old versions gone, new ones sent
    assert_same_ranking(store.lexical_bm25(terms, 30, K1, B),
                        store.lexical_bm25_exhaustive(terms, 30, K1, B, 1.0))


def test_health_fails_when_an_array_disagrees_with_the_statistics(store, conn):
    store.compact_bm25()
    with conn.transaction():
        conn.execute(f'UPDATE "{store.index}".bm25_segments SET postings = substring(postings from 9) '
                     "WHERE lexeme = 'event'")
    report = check_health(conn, store.index, REPRESENTATION, expect_hnsw=False)
    failed = {c.name for c in report.checks if not c.ok}
    assert "bm25_arrays_df" in failed and "bm25_arrays_postings" in failed and not report.ok


COMPACTOR = textwrap.dedent("""
    import os, signal, sys
    from memory_baseline.server import connect
    from memory_baseline.store import Store
    from memory_baseline.store.bm25 import segments

    index, mode, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = [0]
    merge = segments.merge_segments

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def counted(*args, **kwargs):  # mid-transaction: after the DELETE, during the COPY
        calls[0] += 1
        if mode == "mid" and calls[0] == at:
            die()
        return merge(*args, **kwargs)

    segments.merge_segments = counted
    with connect(sys.argv[4]) as conn:
        Store(conn, index).compact_bm25(
            terms_per_transaction=7,
            on_batch=lambda terms: die() if mode == "between" and terms >= at else None)
""")


@pytest.mark.parametrize(("mode", "at"), [("mid", 3), ("mid", 40), ("between", 7), ("between", 60)])
def test_kill_9_during_compaction_leaves_an_index_health_passes(store, conn, database_url, mode, at):
    records = fixture_sources()
    write_sources(store, records[::2], suffix="\nzanzibarquux rewrite\n")
    with conn.transaction():
        store.remove_sources([r.source_id for r in records[1::5]])
    before = store.bm25_backlog()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run([sys.executable, "-c", COMPACTOR, store.index, mode, str(at), database_url],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == -signal.SIGKILL, result.stderr
    deadline = time.monotonic() + 30  # the server ends the dead client's session and aborts it
    while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' "
                       "AND query LIKE '%%bm25_segments%%'").fetchone()[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    after_kill = store.bm25_backlog()
    assert after_kill["tombstones"] == before["tombstones"]  # cleared only when all terms are merged
    assert healthy(conn, store.index)
    assert assert_exact(store) > 10
    store.compact_bm25()
    assert store.bm25_backlog()["tombstones"] == 0
    assert healthy(conn, store.index)
    assert assert_exact(store) > 10


def test_a_version_1_index_is_refused_by_readers_and_upgraded_by_writers(store, conn):
    from memory_baseline.store import StoreError

    expected = [store.lexical_bm25(terms, 30, K1, B) for terms in queries(store)]
    with conn.transaction():  # the version-1 layout: no arrays, one row per posting
        for table in ("bm25_segments", "bm25_tombstones", "bm25_dirty_terms"):
            conn.execute(f'DROP TABLE "{store.index}".{table}')
        conn.execute(f'CREATE TABLE "{store.index}".postings (lexeme text, chunk_key bigint)')
    with pytest.raises(StoreError, match="refresh"):
        store.require()
    with conn.transaction():
        assert store.create(DIMENSION) is False  # exists; upgraded in place
    store.require()
    assert [store.lexical_bm25(terms, 30, K1, B) for terms in queries(store)] == expected
    assert healthy(conn, store.index)


def test_maxscore_pruning_returns_the_exhaustive_top_k():
    """Posting arrays where pruning must engage (rare terms, then very common ones), tombstones too."""
    rng = np.random.default_rng(7)
    n = 200_000
    lengths = rng.integers(5, 400, size=n)
    dfs = {"rare1": 40, "rare2": 300, "rare3": 2_000, "common1": 80_000, "common2": 120_000,
           "common3": 150_000}
    terms, reference = [], np.zeros(n)
    tombstones = rng.choice(n, size=500, replace=False).astype(np.int64)
    avgdl = lengths.mean()
    for lexeme, df in dfs.items():
        keys = np.sort(rng.choice(n, size=df, replace=False))
        tf = rng.integers(1, 6, size=df)
        named = rng.random(df) < 0.01
        postings = np.zeros(df, dtype=bm25.POSTING)
        postings["key"], postings["tf"], postings["length"] = keys, np.where(named, -tf, tf), lengths[keys]
        half = df // 2  # two segments, as a delta leaves them
        terms.append(bm25.TermPostings(lexeme, df, (bm25.encode(postings[:half]),
                                                    bm25.encode(postings[half:]))))
        weight = bm25.idf(n, df)
        reference[keys] += weight * (tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[keys] / avgdl))
                                     + 2.5 * named)
    reference[tombstones] = 0.0
    fetched = bm25.Fetched(n, int(lengths.sum()), tuple(terms), tombstones)
    order = np.lexsort((np.arange(n), -reference))[:30]
    expected = [(int(i), float(reference[i])) for i in order]
    found = bm25.top_k(fetched, 30, 1.2, 0.75, 2.5)
    assert [key for key, _ in found] == [key for key, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=1e-12)
    subset = bm25.Fetched(n, int(lengths.sum()), tuple(terms[3:]), tombstones)  # common terms only
    only_common = bm25.top_k(subset, 10, 1.2, 0.75, 2.5)
    assert all(key not in set(tombstones.tolist()) for key, _ in only_common) and len(only_common) == 10
