"""Run directories and their manifests: the one place a result records where it came from.

Every experiment — a ladder evaluation, a chapter's study, a BEIR run, a
benchmark — writes a `manifest.json` with the same header: what kind of run,
when, which code (commit and whether the tree was dirty), on which machine,
with which effective configuration. A figure that cannot name its manifest is
not published. A run directory is created fresh and never reused; a
manifest is replaced atomically, so an interrupted run leaves the old one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import secrets
import subprocess
from datetime import UTC, datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.jsonable import jsonable
from memory_baseline.redaction import redact
from memory_baseline.store import server_description

MANIFEST = "manifest.json"


class RunError(ValueError):
    """A run directory cannot be created or read as asked."""


def now() -> str:
    return datetime.now(UTC).isoformat()


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code_version() -> dict[str, Any]:
    """The code a result came from: the package version and, in a checkout, the commit.

    `dirty` is True when tracked files differ from the commit (`git status
    --porcelain --untracked-files=no`); a published result must come from a
    clean tree. Outside a checkout only the package version is known.
    """
    try:
        package = importlib_metadata.version("memory-baseline")
    except importlib_metadata.PackageNotFoundError:
        package = None
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    dirty = bool(status) if status is not None else None
    describe = _git("describe", "--always", "--dirty") if commit else None
    return {"git": describe, "commit": commit, "dirty": dirty, "package": package}


def machine_description(conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """What the numbers were measured on (the machine may have been shared: the load says so)."""
    memory_gb = None
    with contextlib.suppress(ValueError, OSError, AttributeError):  # not every platform has these
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    described: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    if conn is not None:
        described.update(server_description(conn))
    return described


def corpus_digest(corpus_dir: str | Path) -> str:
    """sha256 over every file's relative path and bytes, in sorted path order."""
    root = Path(corpus_dir).resolve()
    digest = hashlib.sha256()
    for path in sorted((p for p in root.rglob("*") if p.is_file()),
                       key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def manifest_header(kind: str, *, run_id: str | None = None, config: Any = None,
                    conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """The fields every manifest and results file starts with."""
    header: dict[str, Any] = {"kind": kind}
    if run_id is not None:
        header["run_id"] = run_id
    header.update({"status": "running", "started": now(), "finished": None,
                   "code_version": code_version(), "machine": machine_description(conn)})
    if config is not None:
        header["config"] = jsonable(config)
    return header


def new_run_dir(runs_root: str | Path, prefix: str = "") -> Path:
    """A fresh `<runs_root>/<prefix><UTC timestamp>-<random>` folder; never an existing one."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = Path(runs_root) / f"{prefix}{stamp}-{secrets.token_hex(3)}"
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise RunError(f"run directory {run_dir} already exists; refusing to overwrite") from None
    return run_dir


def write_json(path: Path, document: Any) -> None:
    """Write `document` to `path` atomically (a reader sees the old or the new file).

    A configured credential (a `DATABASE_URL` password, say) is masked, as on every
    output path (`memory_baseline.redaction`).
    """
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    text = json.dumps(jsonable(document), indent=2, ensure_ascii=False) + "\n"
    temporary.write_text(redact(text, shapes=False), encoding="utf-8")
    temporary.replace(path)


def start_run(runs_root: str | Path, kind: str, *, prefix: str = "", config: Any = None,
              conn: psycopg.Connection | None = None, **facts: Any) -> tuple[Path, dict[str, Any]]:
    """Create a run directory and write its manifest (header plus `facts`); return both."""
    run_dir = new_run_dir(runs_root, prefix)
    manifest = manifest_header(kind, run_id=run_dir.name, config=config, conn=conn)
    manifest.update(jsonable(facts))
    write_json(run_dir / MANIFEST, manifest)
    return run_dir, manifest


def finish_run(run_dir: Path, manifest: dict[str, Any], **facts: Any) -> None:
    """Mark the run complete (with any last facts) and rewrite its manifest."""
    manifest.update(jsonable(facts))
    manifest["finished"] = now()
    manifest["status"] = "complete"
    write_json(run_dir / MANIFEST, manifest)


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise RunError(f"{run_dir} is not a run directory (no {MANIFEST})")
    return json.loads(path.read_text(encoding="utf-8"))
