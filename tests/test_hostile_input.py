"""Nothing lost, nothing leaked, no tracebacks, under hostile input.

One section per numbered failure of the issue, each against the real
PostgreSQL server and the real MiniLM encoder:

1. an indexed source that can no longer be used, for any reason, keeps its last
   good content; only a real deletion or `--prune` removes it; a refresh that
   would empty or mostly empty the index is refused;
2. an empty corpus path or index name is bad input;
3. reads cannot be raced out of the root or into a FIFO; hard links are judged
   by the opened file;
4. one search, one snapshot;
5. reserved schema names are refused;
6. an over-long path is skipped, not fatal;
7. every failure is one line (exit 2), concurrent first writes wait, a lost
   connection is reported and recovered from, secrets are never printed;
8. discovery limits, git progress;
9. escaped names, `--git` on a subfolder, rewritten history, UTF-16.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hostile_support import assert_one_line_error, cli_run, corpus_of, note
from refresh_support import bm25

from memory_baseline import cli
from memory_baseline.config import CHOICES, Config, ConfigError
from memory_baseline.health import check_health
from memory_baseline.ingest import MAX_SOURCE_ID_BYTES, discover, read_source
from memory_baseline.refresh import RefreshRefused, sync
from memory_baseline.retrieval import Retriever
from memory_baseline.server import connect
from memory_baseline.store import Store

REPO = Path(__file__).resolve().parents[1]


# -- 1. unusable sources keep their last good content ------------------------------------

UNUSABLE = ["emptied", "blanked", "binary", "too-large", "fifo", "outside-link", "directory",
            "dir-link", "socket", "hard-link-out"]


def make_unusable(root: Path, outside: Path, name: str) -> None:
    path = root / f"{name}.md"
    if name == "emptied":
        path.write_bytes(b"")  # truncated, caught before the writer writes again
    elif name == "blanked":
        path.write_text(" \n\t\n")
    elif name == "binary":
        path.write_bytes(b"\x00\x01\x02binary now")
    elif name == "too-large":
        path.write_text("big " * 5000)
    elif name == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif name == "outside-link":
        path.unlink()
        path.symlink_to(outside / "secret.md")
    elif name == "directory":
        path.unlink()
        path.mkdir()
        (path / "inner.md").write_text(note("inner"))
    elif name == "dir-link":
        path.unlink()
        path.symlink_to(outside)
    elif name == "socket":
        path.unlink()
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif name == "hard-link-out":
        path.unlink()
        os.link(outside / "secret.md", path)


def test_every_unusable_indexed_source_keeps_its_last_good_content_until_pruned(
    tmp_path, conn, config, minilm
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The outside secret must never be indexed.\n")
    root = corpus_of(tmp_path / "corpus", [f"{n}.md" for n in UNUSABLE] + [
        "keep-one.md", "keep-two.md", "gone.md"])
    first = sync(conn, config, root, remove_missing=True, embedder=minilm)
    assert len(first.added) == len(UNUSABLE) + 3
    for name in UNUSABLE:
        make_unusable(root, outside, name)
    (root / "gone.md").unlink()
    small = config.with_overrides(max_file_bytes=4000)

    report = sync(conn, small, root, remove_missing=True, embedder=minilm)
    failed = {f.source_id: f.reason for f in report.failed_observations}
    assert report.removed == ["gone.md"]
    assert set(failed) == {f"{n}.md" for n in UNUSABLE}, failed
    assert failed["fifo.md"].startswith("not-a-regular-file")
    assert failed["outside-link.md"].startswith("outside-root")
    assert failed["hard-link-out.md"].startswith("outside-root")
    assert failed["directory.md"].startswith("the path is now a directory")
    assert failed["too-large.md"].startswith("too-large")
    store = Store(conn, config.index)
    for name in UNUSABLE:  # still searchable by its last good wording
        topic = name.replace("-", " ")
        assert f"{name}.md" in {h.source_id for h in bm25(store, f"{topic} decision held", 30)}
    assert not bm25(store, "secret must never")
    assert check_health(conn, config.index, report.representation_id).ok

    pruned = sync(conn, small, root, remove_missing=True, embedder=minilm, prune=True)
    assert set(pruned.pruned) == {f"{n}.md" for n in UNUSABLE}
    assert set(store.sources()) == {"keep-one.md", "keep-two.md", "directory.md/inner.md"}


def test_a_file_caught_mid_write_is_never_removed(tmp_path, conn, config, minilm):
    root = corpus_of(tmp_path / "corpus", ["journal.md", "other.md", "third.md"])
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    for round_ in range(5):
        with (root / "journal.md").open("w") as handle:  # truncated; the write is still pending
            report = sync(conn, config, root, remove_missing=True, embedder=minilm)
            handle.write(note(f"journal round {round_}"))
        assert "journal.md" not in report.removed
        assert "journal.md" in Store(conn, config.index).sources()


def test_a_refresh_of_an_empty_folder_or_a_wrong_path_is_refused_without_prune(
    tmp_path, conn, config, minilm
):
    root = corpus_of(tmp_path / "corpus", [f"note-{n}.md" for n in range(10)])
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RefreshRefused, match="holds no readable sources"):
        sync(conn, config, empty, remove_missing=True, embedder=minilm)
    elsewhere = corpus_of(tmp_path / "elsewhere", ["note-0.md", "unrelated.md"])
    with pytest.raises(RefreshRefused, match="would remove 9 of 10"):
        sync(conn, config, elsewhere, remove_missing=True, embedder=minilm)
    assert len(Store(conn, config.index).sources()) == 10
    lenient = config.with_overrides(max_remove_share=1.0)
    with pytest.raises(RefreshRefused):  # an empty folder needs --prune whatever the share
        sync(conn, lenient, empty, remove_missing=True, embedder=minilm)
    report = sync(conn, config, empty, remove_missing=True, embedder=minilm, prune=True)
    assert len(report.removed) == 10 and not Store(conn, config.index).sources()


# -- config values ------------------------------------------------------------------------

@pytest.mark.parametrize(("toml", "message"), [
    ("max_file_bytes = -1", "max_file_bytes = -1 is out of range"),
    ("hnsw_build = \"no\"", "hnsw_build = 'no' must be of type bool"),
    ("[retrieval]\nper_path_candidates = -5", "per_path_candidates = -5 is out of range"),
    ("[chunking]\ntarget_chars = \"big\"", "target_chars = 'big' must be of type int"),
    ("[retrieval]\nfusion = \"max\"", "fusion = 'max' is not one of: rrf, blend"),
    ("[context]\norder = \"random\"", "order = 'random' is not one of: rank, best-at-edges, date"),
    ("[reader]\nstyle = \"poem\"", "style = 'poem' is not one of: plain, dated, structured"),
    ("max_remove_share = 1.5", "max_remove_share = 1.5 is out of range"),
    ("[chunking]\ntarget_chars = 100\noverlap_chars = 100", "must be smaller"),
])
def test_config_values_are_typed_and_checked_at_load(tmp_path, capsys, toml, message):
    path = tmp_path / "bad.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        Config.load(path)
    code, _, err = cli_run(capsys, "health", "--config", str(path))
    assert_one_line_error(code, err)
    assert message in err


def test_the_allowed_names_are_the_modules_registries():
    from memory_baseline.chunking import CHUNKER_VERSIONS
    from memory_baseline.context import ORDERS
    from memory_baseline.reading import STYLES

    assert set(CHOICES["chunking.policy"]) == set(CHUNKER_VERSIONS)
    assert set(CHOICES["context.order"]) == set(ORDERS)
    assert set(CHOICES["reader.style"]) == set(STYLES)


# -- 2. empty paths and names -------------------------------------------------------------

def test_an_empty_path_or_index_name_is_bad_input(tmp_path, capsys, monkeypatch, index_name):
    monkeypatch.chdir(corpus_of(tmp_path / "cwd", ["here.md"]))
    for argv in (["refresh", "", "--index", index_name], ["ingest", " ", "--index", index_name],
                 ["refresh", str(tmp_path / "missing"), "--index", index_name],
                 ["refresh", ".", "--index", ""], ["init", "--index", ""]):
        code, out, err = cli_run(capsys, *argv)
        assert_one_line_error(code, err)
        assert out == ""
    with connect() as conn:
        assert not Store(conn, index_name).exists()
        assert not Store(conn, "default").exists() or "here.md" not in Store(conn, "default").sources()


# -- 3. check-then-read races ----------------------------------------------------------------

def test_reads_raced_by_a_swapper_never_leave_the_root_nor_block(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text("OUTSIDE content that must never be returned.\n")
    inside_text = "Inside content of the swapped note.\n"
    stop = threading.Event()

    def swap() -> None:
        serial = 0
        while not stop.is_set():
            serial += 1
            staged = root / f".staged-{serial}"
            kind = serial % 3
            if kind == 0:
                staged.write_text(inside_text)
            elif kind == 1:
                staged.symlink_to(outside)
            else:
                os.mkfifo(staged)
            os.replace(staged, root / "note.md")

    swapper = threading.Thread(target=swap)
    swapper.start()
    outcomes: dict[str, int] = {}
    slowest = 0.0
    try:
        deadline = time.monotonic() + 4
        reads = 0
        while time.monotonic() < deadline or reads < 2000:
            t0 = time.perf_counter()
            outcome = read_source(root.resolve(), root / "note.md", "note.md", max_bytes=10_000)
            slowest = max(slowest, time.perf_counter() - t0)
            reads += 1
            text = getattr(outcome, "text", "")
            assert "OUTSIDE" not in text
            key = type(outcome).__name__ + ":" + getattr(outcome, "reason", "ok").split(":")[0]
            outcomes[key] = outcomes.get(key, 0) + 1
    finally:
        stop.set()
        swapper.join()
    print(f"\n{reads} raced reads: {outcomes}; slowest {slowest * 1000:.1f} ms")
    assert slowest < 1.0
    assert outcomes.get("SourceRecord:ok", 0) > 0


def test_a_hard_link_to_an_outside_file_is_not_indexed_but_one_inside_is(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text("A file outside the corpus.\n")
    os.link(outside, root / "linked-out.md")
    (root / "original.md").write_text("A file inside the corpus.\n")
    os.link(root / "original.md", root / "twin.md")
    found = discover(root)
    assert {s.source_id for s in found.sources} == {"original.md", "twin.md"}
    assert {s.path: s.reason for s in found.skipped} == {"linked-out.md": "outside-root"}


# -- 4. one snapshot per search --------------------------------------------------------------

def test_a_refresh_committing_between_ranking_and_reading_the_text_is_not_seen(
    tmp_path, conn, config, minilm, database_url, monkeypatch
):
    root = corpus_of(tmp_path / "corpus", [])
    for n in range(6):
        (root / f"plan-{n}.md").write_text(f"The alphaword plan number {n} keeps one writer.\n")
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    lexical_only = config.with_overrides(retrieval={"dense": False})
    retriever = Retriever(conn, lexical_only)
    original = Retriever._passages

    def refresh_in_between(self, chunk_ids, known=None):
        # Another writer commits after the ranking statement and before the text is read.
        for n in range(6):
            (root / f"plan-{n}.md").write_text(f"The betaword plan number {n} keeps one writer.\n")
        with connect(database_url) as writer:
            sync(writer, config, root, remove_missing=True, embedder=minilm)
        return original(self, chunk_ids, known)

    monkeypatch.setattr(Retriever, "_passages", refresh_in_between)
    result = retriever.retrieve("alphaword plan")
    assert result.final.candidates
    for candidate in result.final.candidates:
        assert "alphaword" in result.passages[candidate.chunk_id].text


# -- 5. system schemas --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["public", "information_schema", "pg_catalog", "pg_toast", "pg_x"])
def test_system_schemas_are_refused_as_index_names(capsys, name):
    with pytest.raises(ConfigError, match="reserved"):
        Config(index=name)
    code, _, err = cli_run(capsys, "init", "--index", name)
    assert_one_line_error(code, err)
    with connect() as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s "
                            "AND tablename = 'chunks'", (name,)).fetchone()[0] == 0


# -- 6. over-long paths --------------------------------------------------------------------------

def make_deep(root: Path, total_bytes: int) -> str:
    """A file whose relative path is about `total_bytes` long, made through directory fds."""
    part = "d" * 200
    depth = total_bytes // (len(part) + 1)
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(part, dir_fd=directory)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=directory)
            os.close(directory)
            directory = inner
        handle = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=directory)
        os.write(handle, b"The deepest note of all.\n")
        os.close(handle)
    finally:
        os.close(directory)
    return "/".join([part] * depth + ["deep.md"])


@pytest.mark.parametrize("length", [2_100, 5_000])  # past the lexeme limit; past PATH_MAX
def test_an_over_long_path_is_skipped_with_a_reason_and_the_corpus_still_refreshes(
    tmp_path, conn, config, minilm, length
):
    root = corpus_of(tmp_path / "corpus", ["short.md"])
    make_deep(root, length)
    for _ in range(2):
        report = sync(conn, config, root, remove_missing=True, embedder=minilm)
        assert "path-too-long" in {s["reason"] for s in report.skipped}
    assert set(Store(conn, config.index).sources()) == {"short.md"}
    assert check_health(conn, config.index, report.representation_id).ok
    assert MAX_SOURCE_ID_BYTES < 2046
    shutil.rmtree(root, ignore_errors=True)  # rmtree copes with the depth; tmp_path may not


# -- 7. one-line failures, concurrent writers, lost connections, secrets -------------------------

def test_two_first_writes_of_a_new_index_wait_for_each_other(tmp_path, config, minilm,
                                                             database_url):
    from memory_baseline.refresh import open_index

    root = corpus_of(tmp_path / "corpus", [f"note-{n}.md" for n in range(8)])
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def first_refresh() -> None:
        try:
            with connect(database_url) as own:
                barrier.wait()
                sync(own, config, root, remove_missing=True, embedder=minilm)
        except BaseException as exc:
            errors.append(exc)

    def init() -> None:
        try:
            with connect(database_url) as own:
                barrier.wait()
                open_index(own, config, minilm)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=first_refresh), threading.Thread(target=first_refresh),
               threading.Thread(target=init)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    with connect(database_url) as conn:
        assert len(Store(conn, config.index).sources()) == 8


def test_a_connection_lost_mid_refresh_is_one_line_and_the_next_command_recovers(
    tmp_path, capsys, monkeypatch, config, database_url
):
    from memory_baseline import store as store_module

    root = corpus_of(tmp_path / "corpus", [f"note-{n}.md" for n in range(5)])
    original = store_module.Store.replace_source
    calls = {"n": 0}

    def terminate_own_backend(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # as an administrator (or a crash) would, mid-transaction
            pid = self.conn.info.backend_pid
            with connect(database_url) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(store_module.Store, "replace_source", terminate_own_backend)
    code, _, err = cli_run(capsys, "refresh", str(root), "--index", config.index)
    assert_one_line_error(code, err)
    assert "connection" in err
    monkeypatch.setattr(store_module.Store, "replace_source", original)
    code, out, err = cli_run(capsys, "refresh", str(root), "--index", config.index, "--json")
    assert code == 0, err
    assert len(json.loads(out)["added"]) == 5


def test_bad_database_urls_and_failures_are_one_line_and_secrets_stay_hidden(
    capsys, monkeypatch, index_name
):
    monkeypatch.setenv("DATABASE_URL", "not a url")
    code, _, err = cli_run(capsys, "init", "--index", index_name)
    assert_one_line_error(code, err)
    monkeypatch.setenv("DATABASE_URL", "postgresql://ada:hunter2secret@127.0.0.1:1/nowhere")
    code, out, err = cli_run(capsys, "server", "status", "--json")
    assert code == 0 and "hunter2secret" not in out + err
    assert json.loads(out)["url"] == "postgresql://ada:***@127.0.0.1:1/nowhere"
    code, out, err = cli_run(capsys, "health", "--index", index_name)
    assert_one_line_error(code, err)
    assert "hunter2secret" not in out + err


def test_an_unexpected_error_is_one_line_unless_debug(capsys, monkeypatch, index_name):
    def explode(args):
        raise KeyError("surprise")

    monkeypatch.setitem(cli.COMMANDS, "health", (explode, lambda p: None, "health"))
    code, _, err = cli_run(capsys, "health", "--index", index_name)
    assert_one_line_error(code, err)
    assert "--debug" in err
    with pytest.raises(KeyError):
        cli.main(["health", "--index", index_name, "--debug"])


def test_a_role_without_create_gets_one_line(tmp_path, capsys, monkeypatch, database_url,
                                            index_name):
    role = f"reader_{index_name}"
    with connect(database_url) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'")
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        params = conninfo_to_dict(database_url)
        params.update(user=role, password=f"pw-{role}")
        monkeypatch.setenv("DATABASE_URL", make_conninfo(**params))
        code, out, err = cli_run(capsys, "init", "--index", index_name)
        assert_one_line_error(code, err)
        assert f"pw-{role}" not in out + err
    finally:
        with connect(database_url) as admin:
            admin.execute(f"DROP ROLE {role}")


# -- 8. discovery limits and git progress -----------------------------------------------------

def test_discovery_limits_refuse_a_corpus_too_big_to_index(tmp_path, capsys, index_name):
    root = corpus_of(tmp_path / "corpus", [f"note-{n}.md" for n in range(6)])
    limits = tmp_path / "limits.toml"
    limits.write_text("max_files = 5\n")
    code, _, err = cli_run(capsys, "ingest", str(root), "--index", index_name, "--config",
                           str(limits))
    assert_one_line_error(code, err)
    assert "more than 5 files" in err
    limits.write_text("max_corpus_bytes = 200\n")
    code, _, err = cli_run(capsys, "ingest", str(root), "--index", index_name, "--config",
                           str(limits))
    assert_one_line_error(code, err)
    assert "more than 200 bytes" in err
    with connect() as conn:
        assert not Store(conn, index_name).exists()


def git(repo: Path, *args: str) -> str:
    environment = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
                   "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
                   "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    return subprocess.run(["git", "-C", str(repo), *args], env=environment, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def two_folder_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    (repo / "service").mkdir(parents=True)
    (repo / "website").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "service" / "design.md").write_text("The service keeps one writer process.\n")
    (repo / "website" / "copy.md").write_text("The website copy praises the landing page.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Start both folders")
    (repo / "service" / "design.md").write_text("The service moved to two writer processes.\n")
    (repo / "website" / "copy.md").write_text("The website copy was rewritten for launch.\n")
    git(repo, "commit", "-q", "-am", "Revise both folders")
    return repo


def test_git_progress_in_text_and_a_summary_in_json(two_folder_repo, capsys, index_name):
    code, out, err = cli_run(capsys, "ingest", str(two_folder_repo), "--git", "--index", index_name)
    assert code == 0, err
    assert "git: 2 commits read" in err and "historical versions observed" in err
    code, out, err = cli_run(capsys, "refresh", str(two_folder_repo), "--git", "--index",
                             index_name, "--json")
    assert code == 0 and "git:" not in err
    summary = json.loads(out)["discovery"]
    assert summary["commits"] == 2 and summary["versions"] == 2 and summary["seconds"] >= 0


def test_git_on_a_subfolder_indexes_that_folders_history_only(two_folder_repo, conn, config,
                                                              minilm):
    report = sync(conn, config, two_folder_repo / "service", remove_missing=True, embedder=minilm,
                  git=True)
    sources = Store(conn, config.index).sources()
    assert not any("website" in s or "copy.md" in s for s in sources), sorted(sources)
    assert "design.md" in sources
    assert sum(1 for s in sources if s.startswith("design.md@")) == 1
    assert report.discovery["subfolder"] == "service"


def test_rewritten_history_keeps_what_was_indexed_unless_pruned(two_folder_repo, conn, config,
                                                                minilm):
    repo = two_folder_repo
    git(repo, "checkout", "-q", "-b", "experiment")
    (repo / "service" / "spike.md").write_text("The zeppelin spike tried a queue per writer.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Spike the zeppelin queue")
    git(repo, "commit", "-q", "--amend", "-m", "Spike the zeppelin queue (amended later)")
    amended_head = git(repo, "rev-parse", "HEAD")[:12]
    sync(conn, config, repo, remove_missing=True, embedder=minilm, git=True)
    store = Store(conn, config.index)
    assert f"commit@{amended_head}" in store.sources()

    git(repo, "commit", "-q", "--amend", "-m", "Spike the zeppelin queue (amended twice)")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "-D", "experiment")
    report = sync(conn, config, repo, remove_missing=True, embedder=minilm, git=True)
    failed = {f.source_id: f.reason for f in report.failed_observations}
    assert failed[f"commit@{amended_head}"].startswith("no longer reachable")
    assert "service/spike.md" in store.sources()  # deleted with the branch: kept as history
    assert bm25(store, "zeppelin spike queue")[0].source_id in failed
    pruned = sync(conn, config, repo, remove_missing=True, embedder=minilm, git=True, prune=True)
    assert f"commit@{amended_head}" in pruned.pruned
    assert f"commit@{amended_head}" not in store.sources()


# -- 9. smaller ---------------------------------------------------------------------------------

def test_control_characters_in_file_names_are_escaped_in_text_output(tmp_path, capsys, index_name):
    root = corpus_of(tmp_path / "corpus", ["plain.md"])
    (root / "\x1b[31mred\x07.png").write_bytes(b"\x89PNG")
    code, out, err = cli_run(capsys, "ingest", str(root), "--index", index_name)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred\\x07.png" in out


def test_utf16_with_a_bom_is_read_as_text(tmp_path, conn, config, minilm):
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "windows.txt").write_bytes("\ufeffThe Windows note mentions the kiosk rollout.\n"
                                       .encode("utf-16-le"))
    (root / "big-endian.txt").write_bytes("The big-endian note mentions the kiosk.\n"
                                          .encode("utf-16"))
    found = discover(root)
    assert {s.source_id for s in found.sources} == {"windows.txt", "big-endian.txt"}
    report = sync(conn, config, root, remove_missing=True, embedder=minilm)
    assert sorted(report.added) == ["big-endian.txt", "windows.txt"]
    assert bm25(Store(conn, config.index), "kiosk rollout")[0].source_id == "windows.txt"


def test_the_cli_module_runs_as_a_process_with_one_line_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "memory_baseline", "refresh", "", "--index", "x"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "core")},
        timeout=120,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
