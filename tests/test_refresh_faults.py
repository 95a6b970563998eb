"""Fault tests of refresh on the real PostgreSQL server with the real MiniLM encoder.

- kill -9 of a refresh process at random moments: the index afterwards holds
  exactly the old or exactly the new corpus (health clean), and the next
  refresh makes it equal to a clean build;
- an exception in the middle of a sync leaves the previous version;
- queries in a loop on another connection during a refresh that changes every
  file and switches the encoder: no errors, and every snapshot holds one
  version and one representation.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psycopg
import pytest
from refresh_support import bm25, expected_state, index_state, mutate_corpus, write_corpus
from refresh_worker import APPLICATION_NAME

from memory_baseline import refresh as refresh_module
from memory_baseline.config import Config, EmbedderConfig
from memory_baseline.embedders import get_embedder
from memory_baseline.health import check_health
from memory_baseline.refresh import representation_id, sync
from memory_baseline.server import connect
from memory_baseline.store import Store

WORKER = Path(__file__).with_name("refresh_worker.py")
KILL_RUNS = 22
CORPUS_FILES = 60
WORKER_TIMEOUT_SECONDS = 180


class RefreshWorker:
    """The zygote process of `refresh_worker.py`, driven one refresh at a time."""

    def __init__(self, database_url: str, log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), database_url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
        )
        assert self._read() == {"ready": True}

    def _read(self) -> dict:
        # A hung worker must fail the test, not hang it: kill the zygote on a deadline.
        watchdog = threading.Timer(WORKER_TIMEOUT_SECONDS, self.process.kill)
        watchdog.start()
        try:
            line = self.process.stdout.readline()
        finally:
            watchdog.cancel()
        if not line:
            raise RuntimeError(f"refresh worker stopped; see {self.log_path}:\n"
                               + self.log_path.read_text()[-3000:])
        return json.loads(line)

    def refresh(self, corpus: Path, index: str, **kill_point: float | int) -> dict:
        request = {"corpus": str(corpus), "index": index, **kill_point}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def wait_until_worker_sessions_end(conn: psycopg.Connection) -> None:
    """A killed client's backend ends once it sees the closed socket; its transaction aborts."""
    deadline = time.monotonic() + 60
    while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                       (APPLICATION_NAME,)).fetchone()[0]:
        if time.monotonic() > deadline:
            raise AssertionError("the killed refresh's database session did not end")
        time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_old_or_new_then_refresh_equals_clean_build(
    tmp_path, conn, config, minilm, database_url
):
    rng = random.Random(20240710)
    corpus = tmp_path / "corpus"
    write_corpus(corpus, rng, CORPUS_FILES)
    rep = representation_id(config, minilm)
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)

    worker = RefreshWorker(database_url, tmp_path / "worker.log")
    outcomes: Counter[str] = Counter()
    consistent = 0
    try:
        mutate_corpus(corpus, rng, 0.3)
        calibration = worker.refresh(corpus, config.index)
        assert calibration.get("exit_code") == 0, (tmp_path / "worker.log").read_text()
        assert index_state(conn, config.index) == expected_state(corpus, config, rep)
        typical = {"seconds": calibration["seconds"], "statements": calibration["statements"]}

        for run in range(KILL_RUNS):
            before = index_state(conn, config.index)
            mutate_corpus(corpus, rng, rng.uniform(0.1, 0.35))
            after = expected_state(corpus, config, rep)
            # Rotate three kinds of kill point (see refresh_worker); the ranges reach past
            # a typical run, so some refreshes finish before the signal.
            mode = ("moment", "statement", "after-commit")[run % 3]
            if mode == "moment":
                point = {"kill_after": rng.uniform(0.0, 1.15 * typical["seconds"])}
            elif mode == "statement":
                point = {"kill_at_statement": rng.randint(1, int(1.15 * typical["statements"]))}
            else:
                point = {"kill_after_commit": rng.randint(0, 5)}
            result = worker.refresh(corpus, config.index, **point)
            wait_until_worker_sessions_end(conn)
            if result.get("exit_code") == 0:
                typical = {"seconds": result["seconds"], "statements": result["statements"]}

            state = index_state(conn, config.index)
            version = "old" if state == before else "new" if state == after else "MIXED"
            ending = "killed" if result.get("signal") == 9 else f"exit {result.get('exit_code')}"
            outcomes[f"{mode} {ending}: {version}"] += 1
            healthy_after_kill = check_health(conn, config.index, rep).ok

            sync(conn, config, corpus, remove_missing=True, embedder=minilm)
            repaired = (index_state(conn, config.index) == after
                        and check_health(conn, config.index, rep).ok)
            consistent += version != "MIXED" and healthy_after_kill and repaired
    finally:
        worker.close()
    print(f"\nkill -9: {consistent}/{KILL_RUNS} consistent (a refresh takes about "
          f"{typical['seconds']:.1f} s and {typical['statements']} statements; "
          f"{dict(sorted(outcomes.items()))})")

    clean = Config(index=f"{config.index}_clean")
    try:
        sync(conn, clean, corpus, remove_missing=True, embedder=minilm)
        assert index_state(conn, clean.index) == index_state(conn, config.index)
        survivor = dict(conn.execute(f'SELECT chunk_id, embedding FROM "{config.index}".chunks'))
        rebuilt = dict(conn.execute(f'SELECT chunk_id, embedding FROM "{clean.index}".chunks'))
        assert all(np.allclose(survivor[c].to_numpy(), rebuilt[c].to_numpy(), atol=1e-4)
                   for c in rebuilt)
    finally:
        Store(conn, clean.index).drop()
    assert consistent == KILL_RUNS


def test_an_error_midway_through_a_sync_leaves_the_previous_version(
    tmp_path, conn, config, minilm, monkeypatch
):
    rng = random.Random(7)
    corpus = tmp_path / "corpus"
    write_corpus(corpus, rng, 12)
    rep = representation_id(config, minilm)
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    before = index_state(conn, config.index)

    mutate_corpus(corpus, rng, 0.5)
    monkeypatch.setattr(refresh_module, "WRITE_BATCH_CHUNKS", 2)  # several batches

    def fail_after_first_batch(chunks_written: int) -> None:
        raise RuntimeError(f"injected failure after {chunks_written} chunks were written")

    with pytest.raises(RuntimeError, match="injected failure"):
        sync(conn, config, corpus, remove_missing=True, embedder=minilm,
             on_batch_written=fail_after_first_batch)
    assert index_state(conn, config.index) == before
    assert check_health(conn, config.index, rep).ok

    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    assert index_state(conn, config.index) == expected_state(corpus, config, rep)


def test_queries_during_a_refresh_see_one_consistent_version(
    tmp_path, conn, config, minilm, database_url
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = 40
    for n in range(files):
        (corpus / f"note-{n:03d}.md").write_text(
            f"# Note {n}\n\nThe oldwording plan for component {n} keeps a single writer.\n")
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    old_rep = representation_id(config, minilm)

    int8 = get_embedder(EmbedderConfig(name="minilm-int8"))
    switched = config.with_overrides(embedder={"name": "minilm-int8"})
    new_rep = representation_id(switched, int8)
    assert new_rep != old_rep
    query = "which plan keeps a single writer"
    query_vectors = {old_rep: minilm.embed_query(query), new_rep: int8.embed_query(query)}

    snapshots: Counter[str] = Counter()
    errors: list[BaseException] = []
    first_snapshot_seen, refresh_done = threading.Event(), threading.Event()

    def snapshot(reader: psycopg.Connection, store: Store) -> str:
        """Run every kind of query in one snapshot and check what they saw agrees."""
        with reader.transaction():
            old_hits = bm25(store, "oldwording", limit=100)
            new_hits = bm25(store, "newwording", limit=100)
            dense = {rep: store.dense(vector, 10, rep, plan=plan)[0]
                     for rep, vector in query_vectors.items() for plan in ("hnsw", "exact")
                     if plan == "exact" or store.has_hnsw()}
            reps = [r[0] for r in reader.execute(
                f'SELECT DISTINCT representation_id FROM "{config.index}".chunks')]
            returned = {h.chunk_id for h in old_hits + new_hits} | {
                h.chunk_id for hits in dense.values() for h in hits}
            present = {r[0] for r in reader.execute(
                f'SELECT chunk_id FROM "{config.index}".chunks WHERE chunk_id = ANY(%s)',
                (list(returned),))}
            sources = reader.execute(
                f'SELECT count(*) FROM "{config.index}".sources').fetchone()[0]
        assert returned <= present, "a query returned chunks missing from its own snapshot"
        assert len(reps) == 1, f"two representations visible at once: {reps}"
        assert sources == files
        version = "old" if reps == [old_rep] else "new"
        current_hits, stale_hits = (old_hits, new_hits) if version == "old" else (new_hits, old_hits)
        assert len(current_hits) == files and not stale_hits
        current_rep = old_rep if version == "old" else new_rep
        for rep, hits in ((r, dense.get(r, [])) for r in query_vectors):
            assert len(hits) == (10 if rep == current_rep else 0)
        return version

    def read_in_a_loop() -> None:
        with connect(database_url) as reader:
            reader.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            store = Store(reader, config.index)
            try:
                while True:
                    done_before = refresh_done.is_set()
                    snapshots[snapshot(reader, store)] += 1
                    first_snapshot_seen.set()
                    if done_before:
                        return
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
                first_snapshot_seen.set()

    for n in range(files):
        (corpus / f"note-{n:03d}.md").write_text(
            f"# Note {n}\n\nThe newwording plan for component {n} keeps a single writer.\n")
    reader_thread = threading.Thread(target=read_in_a_loop)
    reader_thread.start()
    try:
        first_snapshot_seen.wait(timeout=120)
        report = sync(conn, switched, corpus, remove_missing=True, embedder=int8)
    finally:
        refresh_done.set()
        reader_thread.join(timeout=120)
    if errors:
        raise errors[0]
    assert len(report.changed) == files
    assert snapshots["old"] >= 1 and snapshots["new"] >= 1
    print(f"\nreader snapshots during refresh: {dict(snapshots)}")
    assert check_health(conn, config.index, new_rep).ok
