"""Foundation: ingest with provenance, idempotence, health, bad input, the CLI contract."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import FIXTURE_HISTORY

from memory_baseline import cli
from memory_baseline.health import check_health
from memory_baseline.refresh import sync
from memory_baseline.store import Store


def run_cli(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    document = json.loads(captured.out) if "--json" in argv and captured.out.strip() else None
    return code, document, captured.err


def test_ingest_fixture_then_again_changes_nothing(capsys, config):
    code, first, _ = run_cli(capsys, "ingest", str(FIXTURE_HISTORY), "--index", config.index, "--json")
    assert code == 0
    assert first["chunks_written"] > 0 and len(first["added"]) >= 20
    assert {"discover", "chunk", "embed", "write", "index", "total"} <= set(first["seconds"])
    code, second, _ = run_cli(capsys, "ingest", str(FIXTURE_HISTORY), "--index", config.index, "--json")
    assert code == 0
    assert second["changed_anything"] is False
    assert second["unchanged"] == len(first["added"])
    assert second["chunks_written"] == 0


def test_health_passes_then_fails_on_orphan_and_foreign_chunks(capsys, conn, config, minilm):
    report = sync(conn, config, str(FIXTURE_HISTORY), remove_missing=False, embedder=minilm)
    code, health, _ = run_cli(capsys, "health", "--index", config.index, "--json")
    assert code == 0 and health["ok"] is True

    store = Store(conn, config.index)
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    with conn.transaction():
        # An orphan cannot be made through the foreign key; bypass it as a broken tool would.
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(
            f'INSERT INTO "{config.index}".chunks (chunk_id, source_id, ordinal, char_start, '
            "char_end, text, content_hash, representation_id, embedding) "
            "VALUES ('ghost#0', 'ghost.md', 0, 0, 5, 'ghost', 'h', %s, %s)",
            (report.representation_id, vector),
        )
    code, health, _ = run_cli(capsys, "health", "--index", config.index, "--json")
    assert code == 1
    failed = {c["name"] for c in health["checks"] if not c["ok"]}
    assert "orphan_chunks" in failed

    with conn.transaction():
        # Triggers were bypassed on insert, so bypass them on delete too (else BM25 stats drift,
        # which health would rightly report).
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(f'DELETE FROM "{config.index}".chunks WHERE chunk_id = %s', ("ghost#0",))
    code, _, _ = run_cli(capsys, "health", "--index", config.index, "--json")
    assert code == 0

    any_source = next(iter(store.sources()))
    with conn.transaction():
        store.ensure_representation("foreign-rep", {"policy": "fixed"}, {"name": "other"}, 384)
        conn.execute(
            f'INSERT INTO "{config.index}".chunks (chunk_id, source_id, ordinal, char_start, '
            "char_end, text, content_hash, representation_id, embedding) "
            "VALUES ('foreign#0', %s, 99, 0, 5, 'foreign text', 'h', 'foreign-rep', %s)",
            (any_source, vector),
        )
    code, health, _ = run_cli(capsys, "health", "--index", config.index, "--json")
    assert code == 1
    failed = {c["name"] for c in health["checks"] if not c["ok"]}
    assert {"foreign_representation", "single_representation"} <= failed


def test_bad_files_are_reported_and_good_ones_ingested(tmp_path, conn, config, minilm):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Notes\n\nDate: 2024-07-10\n\nWe chose PostgreSQL.\n")
    (corpus / "also-good.log").write_text("2024-07-22T09:00:00 cutover finished\n")
    (corpus / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00" * 20)
    (corpus / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (corpus / "empty.md").write_text("")
    (corpus / "huge.txt").write_text("x" * (30 * 1024 * 1024))
    (corpus / "image.png").write_bytes(b"\x89PNG\r\n")
    outside = tmp_path / "secret.md"
    outside.write_text("outside the root")
    os.symlink(outside, corpus / "link-out.md")
    os.symlink(corpus / "loop", corpus / "loop")  # a symlink to itself

    report = sync(conn, config, str(corpus), remove_missing=False, embedder=minilm)
    assert sorted(report.added) == ["also-good.log", "good.md"]
    reasons = {s["path"]: s["reason"] for s in report.skipped}
    assert reasons["binary.txt"] == "binary"
    assert reasons["latin1.md"] == "invalid-utf8"
    assert reasons["empty.md"] == "empty"
    assert reasons["huge.txt"] == "too-large"
    assert reasons["image.png"] == "binary"
    assert reasons["link-out.md"] == "outside-root"
    stored = Store(conn, config.index).sources()
    assert set(stored) == {"good.md", "also-good.log"}
    assert stored["good.md"].artifact_time.date().isoformat() == "2024-07-10"
    assert stored["also-good.log"].artifact_time.date().isoformat() == "2024-07-22"
    assert check_health(conn, config.index, report.representation_id).ok


@pytest.mark.parametrize(
    "argv",
    [
        ["health", "--index", "x; DROP TABLE y"],
        ["ingest", "fixtures/history", "--index", 'a"b'],
        ["init", "--index", "Robert'); DROP SCHEMA public; --"],
    ],
)
def test_hostile_index_names_are_refused_before_any_sql(capsys, conn, argv):
    schemas_before = conn.execute("SELECT count(*) FROM pg_namespace").fetchone()[0]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "invalid index name" in err
    assert conn.execute("SELECT count(*) FROM pg_namespace").fetchone()[0] == schemas_before


def test_bad_usage_is_one_line_exit_2(capsys, tmp_path):
    assert cli.main(["ingest", str(tmp_path / "missing")]) == 2
    assert cli.main(["no-such-command"]) == 2
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert all(line.startswith("memory-baseline: error:") for line in err.splitlines())


def test_chunks_keep_exact_spans_in_the_store(conn, config, minilm):
    sync(conn, config, str(FIXTURE_HISTORY), remove_missing=False, embedder=minilm)
    store = Store(conn, config.index)
    for source_id in list(store.sources())[:10]:
        text = (FIXTURE_HISTORY / source_id).read_text(encoding="utf-8").removeprefix("\ufeff")
        for chunk in store.source_chunks(source_id):
            assert text[chunk["char_start"]:chunk["char_end"]] == chunk["text"]
