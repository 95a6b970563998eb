"""Refresh: failed observations keep history, encoder switches leave one representation,
git history stays searchable after the checkout changes. Real PostgreSQL, real encoders."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from refresh_support import bm25

from memory_baseline import cli, ingest
from memory_baseline.chunking import chunk_text
from memory_baseline.config import EmbedderConfig
from memory_baseline.embedders import get_embedder
from memory_baseline.health import check_health
from memory_baseline.refresh import CARRIED_OVER_KEY, representation_id, sync
from memory_baseline.store import Store, StoreError

DECISION_V1 = ("# Event store\n\nDate: 2024-07-01\n\nWe keep the event store in SQLite with one "
               "writer process. Write contention is acceptable at current volume.\n")
LONG_NOTE = "".join(
    f"Paragraph {n}: the importer retries failed batches with exponential backoff and "
    f"records attempt {n} in the shipment audit table before giving up.\n\n"
    for n in range(40)
)


def run_cli(capsys, *argv: str) -> tuple[int, dict]:
    code = cli.main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def make_corpus(root: Path) -> Path:
    root.mkdir()
    (root / "decision.md").write_text(DECISION_V1)
    (root / "importer.md").write_text(LONG_NOTE)
    (root / "ops").mkdir()
    (root / "ops" / "runbook.md").write_text("# Runbook\n\nRestart the projector after a deploy.\n")
    (root / "ops" / "oncall.txt").write_text("On-call rotates weekly between the two teams.\n")
    return root


class CountingEmbedder:
    """A real embedder that also records every text it was asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.embedded: list[str] = []

    def embed_documents(self, texts, *, progress: bool = False):
        self.embedded.extend(texts)
        return self.inner.embed_documents(texts, progress=progress)

    def embed_query(self, text: str):
        return self.inner.embed_query(text)


def stored_chunk_texts(conn, index: str) -> list[str]:
    return sorted(r[0] for r in conn.execute(f'SELECT text FROM "{index}".chunks'))


def test_unreadable_file_stays_searchable_and_is_reported(tmp_path, capsys, conn, config, minilm):
    corpus = make_corpus(tmp_path / "corpus")
    code, first = run_cli(capsys, "ingest", str(corpus), "--index", config.index, "--json")
    assert code == 0 and len(first["added"]) == 4

    (corpus / "decision.md").write_bytes(b"# Event store\n\n\xff\xfe\xc3\x28 torn write\n")
    code, report = run_cli(capsys, "refresh", str(corpus), "--index", config.index, "--json")
    assert code == 0  # a failed observation is a warning, not a failed check
    assert report["failed_observations"] == [{"source_id": "decision.md", "reason": "invalid-utf8"}]
    assert report["removed"] == [] and report["changed"] == []
    assert {"added", "changed", "reembedded", "removed", "seconds"} <= set(report)
    warning = next(c for c in report["health"]["checks"] if c["name"] == "failed_observations")
    assert not warning["ok"] and warning["severity"] == "warning"

    store = Store(conn, config.index)
    assert bm25(store, "SQLite single writer process contention")[0].source_id == "decision.md"
    assert "one writer process" in store.source_chunks("decision.md")[0]["text"]
    assert store.sources()["decision.md"].observation_status == "failed"

    (corpus / "decision.md").write_text(DECISION_V1.replace("SQLite", "PostgreSQL"))
    code, report = run_cli(capsys, "refresh", str(corpus), "--index", config.index, "--json")
    assert report["changed"] == ["decision.md"] and report["failed_observations"] == []
    assert store.sources()["decision.md"].observation_status == "ok"

    (corpus / "decision.md").unlink()
    code, report = run_cli(capsys, "refresh", str(corpus), "--index", config.index, "--json")
    assert code == 0 and report["removed"] == ["decision.md"]


def test_read_errors_vanishing_files_and_unlistable_folders_lose_nothing(
    tmp_path, monkeypatch, conn, config, minilm
):
    corpus = make_corpus(tmp_path / "corpus")
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    before = Store(conn, config.index).sources()

    real_open, real_scandir = ingest.open_under_root, os.scandir

    def faulty_open(root: Path, relative: str) -> int:
        if relative == "importer.md":
            raise OSError(errno.EIO, os.strerror(errno.EIO), relative)
        if relative == "decision.md":
            (root / relative).unlink()  # deleted between the listing and the read
        return real_open(root, relative)

    def faulty_scandir(path="."):
        if Path(path).name == "ops":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_scandir(path)

    monkeypatch.setattr(ingest, "open_under_root", faulty_open)
    monkeypatch.setattr(os, "scandir", faulty_scandir)
    report = sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    monkeypatch.undo()

    failed = {f.source_id: f.reason for f in report.failed_observations}
    assert set(failed) == {"importer.md", "decision.md", "ops/runbook.md", "ops/oncall.txt"}
    assert "Input/output error" in failed["importer.md"]
    assert failed["decision.md"] == "vanished during the read"
    assert failed["ops/runbook.md"].startswith("unlistable: PermissionError")
    assert report.removed == [] and not report.changed_anything
    store = Store(conn, config.index)
    after = store.sources()
    assert {k: v.content_hash for k, v in after.items()} == {
        k: v.content_hash for k, v in before.items()}
    assert {v.observation_status for v in after.values()} == {"failed"}
    assert bm25(store, "projector deploy")[0].source_id == "ops/runbook.md"
    health = check_health(conn, config.index, report.representation_id)
    assert health.ok and health.counts["failed_observations"] == 4

    # Observed again: the vanished file is truly gone now, the rest are readable.
    report = sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    assert report.removed == ["decision.md"] and report.failed_observations == []
    assert {v.observation_status for v in store.sources().values()} == {"ok"}


def test_ingest_adds_and_updates_but_only_refresh_removes(tmp_path, conn, config, minilm):
    corpus = make_corpus(tmp_path / "corpus")
    sync(conn, config, corpus, remove_missing=False, embedder=minilm)
    (corpus / "ops" / "oncall.txt").unlink()
    report = sync(conn, config, corpus, remove_missing=False, embedder=minilm)
    assert report.removed == [] and "ops/oncall.txt" in Store(conn, config.index).sources()
    report = sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    assert report.removed == ["ops/oncall.txt"]
    assert "ops/oncall.txt" not in Store(conn, config.index).sources()


def test_encoder_switch_reembeds_every_chunk_once_and_health_sees_one_representation(
    tmp_path, capsys, conn, config, minilm
):
    corpus = make_corpus(tmp_path / "corpus")
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    chunk_texts = stored_chunk_texts(conn, config.index)
    assert len(chunk_texts) > 4  # the long note has several chunks

    int8 = CountingEmbedder(get_embedder(EmbedderConfig(name="minilm-int8")))
    switched = config.with_overrides(embedder={"name": "minilm-int8"})
    report = sync(conn, switched, corpus, remove_missing=True, embedder=int8)
    assert sorted(int8.embedded) == chunk_texts  # every chunk, exactly once
    assert sorted(report.reembedded) == sorted(Store(conn, config.index).sources())
    assert report.chunks_written == len(chunk_texts) and report.changed == []
    new_rep = representation_id(switched, int8)
    health = check_health(conn, config.index, new_rep)
    assert health.ok and health.representations == {new_rep: len(chunk_texts)}

    int8.embedded.clear()
    again = sync(conn, switched, corpus, remove_missing=True, embedder=int8)
    assert int8.embedded == [] and not again.changed_anything

    # Back to MiniLM through the command line; health then reports one representation.
    code, report = run_cli(capsys, "refresh", str(corpus), "--index", config.index, "--json")
    assert code == 0 and report["chunks_written"] == len(chunk_texts)
    code, health = run_cli(capsys, "health", "--index", config.index, "--json")
    assert code == 0 and health["representations"] == {
        representation_id(config, minilm): len(chunk_texts)}


def test_encoder_or_chunker_switch_while_a_file_is_unreadable_carries_its_chunks_over(
    tmp_path, conn, config, minilm
):
    corpus = make_corpus(tmp_path / "corpus")
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    store = Store(conn, config.index)
    original = (corpus / "importer.md").read_bytes()
    old_chunks = store.source_chunks("importer.md")
    (corpus / "importer.md").write_bytes(original + b"\xff")  # now undecodable

    int8 = get_embedder(EmbedderConfig(name="minilm-int8"))
    switched = config.with_overrides(embedder={"name": "minilm-int8"})
    new_rep = representation_id(switched, int8)
    report = sync(conn, switched, corpus, remove_missing=True, embedder=int8)
    assert [f.source_id for f in report.failed_observations] == ["importer.md"]
    assert report.carried_over == ["importer.md"]
    assert check_health(conn, config.index, new_rep).representations == {
        new_rep: sum(1 for _ in conn.execute(f'SELECT 1 FROM "{config.index}".chunks'))}
    kept = store.stored_chunk_rows(["importer.md"])
    assert [(c.char_start, c.char_end) for c in kept] == [
        (c["char_start"], c["char_end"]) for c in old_chunks]
    fresh = int8.embed_documents([c.text for c in kept])
    assert np.allclose(np.stack([c.embedding for c in kept]), fresh, atol=1e-5)
    hits, _ = store.dense(int8.embed_query("importer retries with exponential backoff"), 3,
                          new_rep, plan="exact")
    assert hits[0].source_id == "importer.md"
    assert store.get_meta(CARRIED_OVER_KEY) == []  # same chunker: the kept chunks are exact

    # A chunker change too: boundaries are the old chunker's, so the source is listed
    # and re-chunked once it reads again, although its bytes are the stored ones.
    rechunked = switched.with_overrides(chunking={"target_chars": 600, "overlap_chars": 100})
    report = sync(conn, rechunked, corpus, remove_missing=True, embedder=int8)
    assert report.carried_over == ["importer.md"]
    assert store.get_meta(CARRIED_OVER_KEY) == ["importer.md"]
    assert check_health(conn, config.index, representation_id(rechunked, int8)).ok
    (corpus / "importer.md").write_bytes(original)
    report = sync(conn, rechunked, corpus, remove_missing=True, embedder=int8)
    assert report.reembedded == ["importer.md"] and report.failed_observations == []
    assert store.get_meta(CARRIED_OVER_KEY) == []
    expected = chunk_text("importer.md", original.decode(), rechunked.chunking)
    assert [(c["char_start"], c["char_end"]) for c in store.source_chunks("importer.md")] == [
        (c.start, c.end) for c in expected]


def test_dimension_change_rebuilds_the_vectors_and_keeps_failed_sources(
    tmp_path, conn, config, minilm
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "decision.md").write_text(DECISION_V1)
    (corpus / "runbook.md").write_text("# Runbook\n\nRestart the projector after a deploy.\n")
    sync(conn, config, corpus, remove_missing=True, embedder=minilm)
    (corpus / "runbook.md").write_bytes(b"\xff torn")

    mpnet = get_embedder(EmbedderConfig(name="mpnet"))
    wide = config.with_overrides(embedder={"name": "mpnet"})
    with pytest.raises(StoreError, match="768-d"):
        sync(conn, wide, corpus, remove_missing=False, embedder=mpnet)
    report = sync(conn, wide, corpus, remove_missing=True, embedder=mpnet)
    store = Store(conn, config.index)
    assert store.dimension() == 768 and report.hnsw_built
    assert report.reembedded == ["decision.md"] and report.carried_over == ["runbook.md"]
    rep = representation_id(wide, mpnet)
    assert check_health(conn, config.index, rep).ok
    hits, _ = store.dense(mpnet.embed_query("restart the projector"), 2, rep)
    assert hits[0].source_id == "runbook.md"


# -- git history ------------------------------------------------------------------------

def git(repo: Path, *args: str, date: str | None = None) -> str:
    environment = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
                   "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
                   "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    if date:
        environment |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    done = subprocess.run(["git", "-C", str(repo), *args], env=environment, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture()
def rewritten_repo(tmp_path) -> tuple[Path, str, str]:
    """A repository where a decision was rewritten and a benchmark note deleted."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "notes").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "docs" / "decision.md").write_text(DECISION_V1)
    (repo / "notes" / "benchmark.md").write_text(
        "# Benchmark\n\nThe SQLite prototype stalled at ninety writes per second under load.\n")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Record the SQLite decision and benchmark",
        date="2024-07-01T10:00:00+00:00")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "docs" / "decision.md").write_text(
        "# Event store\n\nThe event store moves to PostgreSQL; the single-writer setup is gone.\n")
    git(repo, "rm", "-q", "notes/benchmark.md")
    git(repo, "commit", "-q", "-am", "Move the event store to PostgreSQL",
        date="2024-07-10T09:30:00+00:00")
    second = git(repo, "rev-parse", "HEAD")
    return repo, first, second


def test_ingest_git_finds_rewritten_and_deleted_wording_cited_by_commit(
    rewritten_repo, conn, config, minilm
):
    repo, first, second = rewritten_repo
    report = sync(conn, config, repo, remove_missing=False, embedder=minilm, git=True)
    assert report.corpus_kind == "git"
    store = Store(conn, config.index)
    sources = store.sources()
    assert set(sources) == {
        "docs/decision.md",  # the checkout
        f"docs/decision.md@{first[:12]}", f"notes/benchmark.md@{first[:12]}",  # history
        f"commit@{first[:12]}", f"commit@{second[:12]}",  # messages
    }  # decision.md@second equals the checkout, so it is not stored twice
    assert {s["path"]: s["reason"] for s in report.skipped}[f"logo.png@{first[:12]}"] == "binary"

    old = bm25(store, "SQLite one writer process contention")[0]
    assert old.source_id == f"docs/decision.md@{first[:12]}"
    assert sources[old.source_id].artifact_time == datetime(2024, 7, 1, 10, tzinfo=UTC)
    deleted = bm25(store, "prototype stalled ninety writes")[0]
    assert deleted.source_id == f"notes/benchmark.md@{first[:12]}"
    message = bm25(store, "move event store PostgreSQL commit")
    assert f"commit@{second[:12]}" in {h.source_id for h in message}
    assert sources[f"commit@{second[:12]}"].artifact_time == datetime(2024, 7, 10, 9, 30, tzinfo=UTC)
    # A citation, as printed, finds its source first.
    cited = f"docs/decision.md@{first[:12]}"
    assert bm25(store, cited)[0].source_id == cited
    assert check_health(conn, config.index, report.representation_id).ok


def test_refresh_git_keeps_history_when_the_checkout_loses_a_file(
    rewritten_repo, conn, config, minilm
):
    repo, first, second = rewritten_repo
    sync(conn, config, repo, remove_missing=True, embedder=minilm, git=True)
    (repo / "docs" / "decision.md").unlink()  # deleted in the checkout, not committed

    report = sync(conn, config, repo, remove_missing=True, embedder=minilm, git=True)
    assert report.removed == ["docs/decision.md"]
    assert report.added == [f"docs/decision.md@{second[:12]}"]
    store = Store(conn, config.index)
    assert bm25(store, "moves to PostgreSQL single-writer")[0].source_id == (
        f"docs/decision.md@{second[:12]}")
    assert f"docs/decision.md@{first[:12]}" in store.sources()

    with pytest.raises(StoreError, match="refresh it with --git"):
        sync(conn, config, repo, remove_missing=True, embedder=minilm)
    assert len(store.sources()) == 5
