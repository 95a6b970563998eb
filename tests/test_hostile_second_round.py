"""Nothing lost, nothing leaked, never the wrong process: the second hostile round.

One section per numbered finding, against the real PostgreSQL server and the
real MiniLM encoder:

1. a credential from `DATABASE_URL` is masked on every output path, URLs the
   parser rejects included (errors, `--debug` tracebacks, `server status`);
2. configuration floats must be finite and meaningful (NaN, inf);
3. the embedded server acts only on a process it can prove is its postmaster;
   a stale, empty or garbage `postmaster.pid` is reported and moved aside;
4. a file written again during or just after its read is a failed observation;
5. an escaped undecodable name never stands for a real file of that spelling;
6. `search` escapes control characters of file names;
7. a full disk while the query encoder's trace is kept costs the trace, not the process;
8. `--config` must be a regular file of sensible size;
9. invalid query bytes, a library handle whose server went away, a directory
   replaced by a link.

Tests that stop, start or fake the embedded server use a home of their own
(`private_home`), never the shared server other tests use.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from hostile_support import assert_one_line_error, cli_run, corpus_of, note

from memory_baseline import ingest as ingest_module
from memory_baseline.config import Config, ConfigError
from memory_baseline.models import models_home
from memory_baseline.refresh import sync
from memory_baseline.store import Store

REPO = Path(__file__).resolve().parents[1]
PYTHON_ENV = {"PYTHONPATH": str(REPO / "core")}


def run_module(*argv: str | bytes, env: dict[str, str] | None = None,
               timeout: float = 180, text: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """`python -m memory_baseline ...` as a user runs it (this tree's code)."""
    return subprocess.run([sys.executable, "-m", "memory_baseline", *argv], capture_output=True,
                          env={**os.environ, **PYTHON_ENV, **(env or {})}, timeout=timeout,
                          text=text, **kwargs)


# -- 1. secrets on every output path -------------------------------------------------------

REJECTED_URLS = {
    "percent": ("postgresql://memuser:50%off@127.0.0.1:1/memory", "50%off"),
    "space": ("postgresql://memuser:pass word@127.0.0.1:1/memory", "pass word"),
    "quote": ("host=127.0.0.1 port=1 password='un terminated", "un terminated"),
}


@pytest.mark.parametrize("shape", sorted(REJECTED_URLS))
def test_a_password_the_url_parser_rejects_is_never_printed(capsys, monkeypatch, index_name,
                                                           shape):
    url, password = REJECTED_URLS[shape]
    monkeypatch.setenv("DATABASE_URL", url)
    for argv in (["health", "--index", index_name], ["search", "anything", "--index", index_name],
                 ["init", "--index", index_name]):
        code, out, err = cli_run(capsys, *argv)
        assert_one_line_error(code, err)
        assert password not in out + err, (argv, err)
    code, out, err = cli_run(capsys, "server", "status")
    assert code == 0 and password not in out + err, out
    code, out, err = cli_run(capsys, "server", "status", "--json")
    assert password not in out + err and json.loads(out)["kind"] == "external"


def test_a_debug_traceback_holds_no_password(tmp_path):
    url, password = REJECTED_URLS["percent"]
    done = run_module("health", "--debug", env={"DATABASE_URL": url})
    assert done.returncode != 0
    assert "Traceback" in done.stderr  # --debug still shows where it failed
    assert password not in done.stdout + done.stderr, done.stderr
    url = "postgresql://memuser:Sup3rSecretPw@127.0.0.1:1/memory"
    done = run_module("search", "a question", "--debug", env={"DATABASE_URL": url})
    assert "Sup3rSecretPw" not in done.stdout + done.stderr, done.stderr


# -- 2. configuration values are finite and mean something -----------------------------------

NON_FINITE = [
    ("max_remove_share", "nan"),
    ("[retrieval]\nbm25_k1", "nan"),
    ("[retrieval]\nbm25_b", "nan"),
    ("[retrieval]\nblend_weight", "nan"),
    ("[context]\ncompression_keep", "nan"),
    ("[retrieval]\nbm25_k1", "inf"),
    ("[retrieval]\nbm25_name_weight", "inf"),
    ("[reader]\ntemperature", "inf"),
]


@pytest.mark.parametrize(("key", "value"), NON_FINITE)
def test_nan_and_inf_are_refused_at_load(tmp_path, capsys, key, value):
    path = tmp_path / "bad.toml"
    path.write_text(f"{key} = {value}\n")
    with pytest.raises(ConfigError, match="finite"):
        Config.load(path)
    code, _, err = cli_run(capsys, "health", "--config", str(path))
    assert_one_line_error(code, err)


def test_values_whose_combination_cannot_work_are_refused(tmp_path):
    for toml in ("[retrieval]\nlexical = \"none\"\ndense = false\n",
                 "[reader]\ncontext_window = 512\nmax_answer_tokens = 512\n"):
        path = tmp_path / "bad.toml"
        path.write_text(toml)
        with pytest.raises(ConfigError):
            Config.load(path)


def test_a_nan_removal_share_cannot_turn_a_refresh_into_a_mass_deletion(tmp_path, capsys, config,
                                                                          conn, minilm):
    root = corpus_of(tmp_path / "corpus", [f"note-{n}.md" for n in range(48)])
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    for n in range(40):
        (root / f"note-{n}.md").unlink()
    path = tmp_path / "nan.toml"
    path.write_text("max_remove_share = nan\n")
    code, out, err = cli_run(capsys, "refresh", str(root), "--index", config.index,
                             "--config", str(path))
    assert_one_line_error(code, err)
    assert len(Store(conn, config.index).sources()) == 48


# -- 3. the embedded server acts only on its own postmaster ------------------------------------

@pytest.fixture(scope="module")
def private_home(tmp_path_factory):
    """A MEMORY_BASELINE_HOME with an embedded server of its own (models shared by a link)."""
    home = tmp_path_factory.mktemp("private-home")
    shared_models = models_home()
    shared_models.mkdir(parents=True, exist_ok=True)
    (home / "models").symlink_to(shared_models)
    yield home
    stop_every_postmaster_of(home / "pgdata")
    shutil.rmtree(home, ignore_errors=True)


def stop_every_postmaster_of(pgdata: Path) -> None:
    """End the servers this module started in `pgdata` (by their own pid, never by name)."""
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "-D" in cmdline and cmdline[cmdline.index("-D") + 1:][:1] == [str(pgdata)]:
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal.SIGINT)
                process.wait(20)


@pytest.fixture()
def own_server(private_home, monkeypatch):
    """The private home selected; its server running and its pid file back in place."""
    from memory_baseline import server

    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(private_home))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    server.database_url()
    return private_home / "pgdata"


@pytest.fixture()
def bystander():
    """A live process that is not PostgreSQL (this test's own, ended afterwards)."""
    process = subprocess.Popen(["sleep", "600"])
    yield process
    process.kill()
    process.wait()


def fake_pid_file(pgdata: Path, pid: int) -> None:
    """A well-formed postmaster.pid naming `pid` (the real file's other lines kept)."""
    lines = (pgdata / "postmaster.pid").read_text().splitlines()
    lines[0] = str(pid)
    (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")


def test_server_stop_never_signals_a_process_that_is_not_our_postmaster(own_server, bystander,
                                                                        capsys):
    from memory_baseline import server

    pgdata = own_server
    assert server.stop()
    (pgdata / "postmaster.pid").write_text(f"{bystander.pid}\n{pgdata}\n1700000000\n5432\n"
                                           f"{pgdata}\n\n  1234  5678\nready   \n")
    code, out, err = cli_run(capsys, "server", "status", "--json")
    assert code == 0 and json.loads(out)["running"] is False, out
    code, out, err = cli_run(capsys, "server", "stop")
    time.sleep(0.2)
    assert bystander.poll() is None, "server stop signalled an unrelated process"
    assert len((out + err).strip().splitlines()) == 1, out + err
    assert str(bystander.pid) in out + err
    code, out, err = cli_run(capsys, "server", "start", "--json")
    assert code == 0 and json.loads(out)["running"] is True, err


def test_a_pid_file_rewritten_under_a_running_server_is_not_followed(own_server, bystander,
                                                                     capsys):
    from memory_baseline import server

    fake_pid_file(own_server, bystander.pid)
    code, out, err = cli_run(capsys, "server", "stop")
    assert code in (0, 2) and len((out + err).strip().splitlines()) == 1, out + err
    assert bystander.poll() is None
    server.stop()  # whatever the pid file says, our own postmaster can be stopped


@pytest.mark.parametrize("content", [b"", b"\n", b"12", b"garbage\nnot a pid file\n",
                                     b"\x00\xff\xfe", b"-5\n/x\n"])
def test_an_empty_or_garbage_pid_file_is_moved_aside_not_fatal(own_server, capsys, content):
    from memory_baseline import server

    pgdata = own_server
    server.stop()
    (pgdata / "postmaster.pid").write_bytes(content)
    started = run_module("server", "start", "--json",  # a new process, as every command is
                         env={"MEMORY_BASELINE_HOME": str(pgdata.parent)})
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["running"] is True
    assert list(pgdata.glob("postmaster.pid.*")), "the damaged pid file was not kept aside"
    with server.connect() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


# -- 4. read stability --------------------------------------------------------------------------

def two_halves(round_: int) -> tuple[str, str]:
    text = (f"# Journal {round_}\n\n" + "The first half names the alpha decision. " * 30 + "\n\n"
            + "The second half names the omega decision. " * 30 + "\n")
    middle = len(text) // 2
    return text[:middle], text[middle:]


@pytest.mark.parametrize("moment", ["during-the-read", "just-after-the-read"])
def test_a_file_written_again_around_its_read_is_a_failed_observation(
    tmp_path, conn, config, minilm, monkeypatch, moment
):
    root = corpus_of(tmp_path / "corpus", ["journal.md", "other.md", "third.md"])
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    journal = root / "journal.md"
    first, second = two_halves(1)
    handle = journal.open("w")
    handle.write(first)
    handle.flush()
    original_read, original_source = ingest_module._read_at_most, ingest_module.read_source

    def finish() -> None:
        if not handle.closed:
            handle.write(second)
            handle.close()

    def read_then_write(descriptor, limit):  # the writer's second write lands mid-read
        data = original_read(descriptor, limit)
        finish()
        return data

    def source_then_write(root_, path, relative, **kwargs):  # ... or right after the read
        outcome = original_source(root_, path, relative, **kwargs)
        if relative == "journal.md":
            finish()
        return outcome

    if moment == "during-the-read":
        monkeypatch.setattr(ingest_module, "_read_at_most", read_then_write)
    else:
        monkeypatch.setattr(ingest_module, "read_source", source_then_write)
    report = sync(conn, config, root, remove_missing=True, embedder=minilm)
    finish()
    stored = Store(conn, config.index).sources()["journal.md"]
    assert stored.content_hash != hashlib.sha256(first.encode()).hexdigest(), "half stored"
    assert "journal.md" in {f.source_id for f in report.failed_observations}
    monkeypatch.undo()
    report = sync(conn, config, root, remove_missing=True, embedder=minilm)
    assert Store(conn, config.index).sources()["journal.md"].content_hash == hashlib.sha256(
        (first + second).encode()).hexdigest()


def test_a_two_write_writer_racing_refresh_never_leaves_half_a_file(tmp_path, conn, config,
                                                                    minilm):
    root = corpus_of(tmp_path / "corpus", ["journal.md", "other.md", "third.md"])
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    halves_stored = 0
    for round_ in range(6):
        first, second = two_halves(round_)
        handle = (root / "journal.md").open("w")
        handle.write(first)
        handle.flush()
        writer = threading.Timer(0.02, lambda h=handle, s=second: (h.write(s), h.close()))
        writer.start()
        sync(conn, config, root, remove_missing=True, embedder=minilm)
        writer.join()
        stored = Store(conn, config.index).sources()["journal.md"].content_hash
        halves_stored += stored == hashlib.sha256(first.encode()).hexdigest()
    assert halves_stored == 0


# -- 5. escaped names --------------------------------------------------------------------------

def test_a_real_name_spelled_like_an_escaped_one_is_never_pruned(tmp_path, conn, config, minilm):
    root = corpus_of(tmp_path / "corpus", ["notes/plain.md", "notes/other.md"])
    (root / "notes" / "bad\\xff.md").write_text(note("literal backslash"))
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    with open(os.fsencode(root / "notes") + b"/bad\xff.md", "w") as undecodable:
        undecodable.write(note("undecodable"))
    kept = sync(conn, config, root, remove_missing=True, embedder=minilm)
    assert "notes/bad\\xff.md" not in {f.source_id for f in kept.failed_observations}
    pruned = sync(conn, config, root, remove_missing=True, embedder=minilm, prune=True)
    assert "notes/bad\\xff.md" not in pruned.pruned + pruned.removed
    assert "notes/bad\\xff.md" in Store(conn, config.index).sources()


# -- 6. terminal escapes in search output ------------------------------------------------------

def test_search_escapes_control_characters_in_file_names(tmp_path, capsys, index_name):
    root = corpus_of(tmp_path / "corpus", ["plain.md"])
    (root / "\x1b]0;pwned\x07title.md").write_text(note("terminal title"))
    code, _, err = cli_run(capsys, "ingest", str(root), "--index", index_name)
    assert code == 0, err
    code, out, err = cli_run(capsys, "search", "terminal title decision", "--index", index_name,
                             "--reader", "extractive")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07title.md" in out


# -- 7. a full disk while keeping the query encoder's trace --------------------------------------

def can_mount_in_a_private_namespace() -> bool:
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs "
                            "/mnt"], capture_output=True)
    return probe.returncode == 0


def test_a_full_disk_while_keeping_the_trace_is_not_an_abort(tmp_path, index_name, database_url):
    if shutil.which("unshare") is None or not can_mount_in_a_private_namespace():
        pytest.skip("needs a private mount namespace (unshare --mount) to fill a disk")
    root = corpus_of(tmp_path / "corpus", ["plain.md", "other.md"])
    done = run_module("ingest", str(root), "--index", index_name,
                      env={"DATABASE_URL": database_url})
    assert done.returncode == 0, done.stderr
    traced = (models_home() / "traced").resolve()
    traced.mkdir(parents=True, exist_ok=True)
    # A 64 KiB tmpfs over the trace folder, visible to this one command only: the trace
    # (tens of MB) cannot be kept, whatever the real disk holds.
    script = (f"mount -t tmpfs -o size=64k tmpfs '{traced}' && exec \"$@\"")
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sh", sys.executable, "-m", "memory_baseline",
         "search", "plain decision", "--index", index_name, "--reader", "extractive"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, **PYTHON_ENV, "DATABASE_URL": database_url})
    assert done.returncode in (0, 2), (done.returncode, done.stderr[-2000:])
    assert done.returncode == 0 or len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "terminate called" not in done.stderr and "c10::Error" not in done.stderr


def test_no_space_left_is_one_line_and_exit_2(tmp_path):
    if shutil.which("unshare") is None or not can_mount_in_a_private_namespace():
        pytest.skip("needs a private mount namespace (unshare --mount) to fill a disk")
    full = tmp_path / "full"
    full.mkdir()
    script = f"mount -t tmpfs -o size=16k tmpfs '{full}' && exec \"$@\""
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sh", sys.executable, "-m", "memory_lab",
         "world", "generate", str(full / "world"), "--seed", "1", "--docs", "40"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **PYTHON_ENV})
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "no space left on the device" in done.stderr.lower()
    assert "unexpected" not in done.stderr


# -- 8. --config on special files ----------------------------------------------------------------

def test_a_fifo_or_a_device_as_config_is_refused_at_once(tmp_path):
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)

    def limit_memory() -> None:  # a reader of /dev/zero must fail fast, not take the machine
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    for path in (str(fifo), "/dev/zero", str(tmp_path)):
        try:
            done = run_module("health", "--config", path, timeout=60, text=True,
                              preexec_fn=limit_memory)
        except subprocess.TimeoutExpired:
            pytest.fail(f"--config {path} hung")
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "regular file" in done.stderr, done.stderr


def test_an_oversized_config_file_is_refused(tmp_path):
    path = tmp_path / "huge.toml"
    path.write_text("# padding\n" * 200_000)
    with pytest.raises(ConfigError, match="too large"):
        Config.load(path)


# -- 9. smaller ----------------------------------------------------------------------------------

def test_a_query_with_invalid_utf8_is_one_line_and_exit_2(tmp_path, capsys, index_name):
    root = corpus_of(tmp_path / "corpus", ["plain.md"])
    assert cli_run(capsys, "ingest", str(root), "--index", index_name)[0] == 0
    for command in ("search", "ask"):
        code, out, err = cli_run(capsys, command, "why \udcff\udcfe", "--index", index_name,
                                 "--reader", "extractive")
        assert_one_line_error(code, err)
        assert "UTF-8" in err
    done = run_module(b"search", b"why \xff", b"--index", index_name.encode(), text=False)
    assert done.returncode == 2 and b"UTF-8" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_library_handle_reconnects_after_its_server_was_stopped_elsewhere(
    own_server, tmp_path, minilm, index_name
):
    from memory_baseline import server
    from memory_baseline.baseline import Baseline

    config = Config(index=index_name).with_overrides(reader={"name": "extractive"})
    root = corpus_of(tmp_path / "corpus", ["alpha.md", "beta.md"])
    conn = server.connect()
    try:
        sync(conn, config, root, remove_missing=True, embedder=minilm)
        baseline = Baseline(conn, config)
        assert baseline.search("alpha decision").context.admitted
        stopped = run_module("server", "stop", env={"MEMORY_BASELINE_HOME": str(own_server.parent)},
                             text=True)
        assert stopped.returncode == 0, stopped.stderr
        with contextlib.suppress(Exception):  # the call that meets the closed socket may fail
            baseline.search("alpha decision")
        found = baseline.search("beta decision")  # ... the next one reconnects
        assert "beta.md" in found.context.admitted_sources
    finally:
        with contextlib.suppress(Exception):
            conn.close()
        with contextlib.suppress(Exception), server.connect() as admin:
            Store(admin, index_name).drop()


def test_a_directory_replaced_by_a_link_to_an_empty_folder_keeps_its_files(tmp_path, conn,
                                                                          config, minilm):
    root = corpus_of(tmp_path / "corpus", [f"d/note-{n}.md" for n in range(4)]
                     + [f"keep-{n}.md" for n in range(6)])
    sync(conn, config, root, remove_missing=True, embedder=minilm)
    empty = tmp_path / "outside-empty"
    empty.mkdir()
    shutil.rmtree(root / "d")
    (root / "d").symlink_to(empty)
    report = sync(conn, config, root, remove_missing=True, embedder=minilm)
    assert not report.removed, report.removed
    assert {f.source_id for f in report.failed_observations} == {f"d/note-{n}.md"
                                                                 for n in range(4)}
    assert len(Store(conn, config.index).sources()) == 10
