"""The PEP corpus with the past versions its temporal tasks turn on.

The PEP snapshot (`../shared/data/peps/corpus`) holds every PEP as of 2026-08-22
only. A temporal task asks what a PEP's status was on a past date ("What was the
status of PEP 572 on 2018-05-01?" -> Draft), so no reader can answer it from the
snapshot: under `oracle-source` the reader is handed today's file, "Status: Final".
That is right for a memory that reads only the snapshot, and wrong for a study of
reading, which must hand the reader the evidence that answers.

This module builds the slice a history-reading memory (`ingest --git`) would hold
for those tasks: the snapshot plus each version a temporal task names
(`metadata.history_version`, `path@sha12`, the id `ingest --git` gives a version),
read from a git mirror of python/peps and dated by its commit. `history_tasks`
writes the matching task file: each temporal task expects its version, and its
evidence is the version's `Status:` line; every other task is unchanged, so its
oracle prompt (and its cached answer) is the same as on the snapshot.

Why not `ingest --git` itself: the snapshot is the `peps/` folder of the
repository, and the PEPs lived at the repository root before 2023, so a subfolder
history would miss most of the versions; and the whole history (11,594 commits)
is hours of embedding for twelve tasks.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_baseline.hashing import content_digest
from memory_baseline.ingest import Discovery, SourceRecord, decode_text, discover, source_kind
from memory_instrument import Task, load_tasks


class PepHistoryError(ValueError):
    """A version cannot be read from the mirror, or a task names none."""


# The first history citation of a temporal task's notes: the version that set the status the
# question asks for, as `path@sha12`, with the path the file had at that commit. The notes,
# not `metadata.history_version`, are the authority: tests/test_pep_tasks.py replays them
# against the mirror, and for PEP 484 the metadata names today's `.rst` where the file was
# `pep-0484.txt` then (the id `ingest --git` gives is the path at the commit).
_HISTORY = re.compile(r"history: ([\w/.-]+\.(?:rst|txt)@[0-9a-f]{12}):\d+: Status: (\w+)")


def temporal_versions(tasks: Sequence[Task]) -> dict[str, tuple[str, str]]:
    """Task id -> (`path@sha12` version, the status it holds) for every temporal task."""
    versions = {}
    for task in tasks:
        if task.question_type != "temporal":
            continue
        found = _HISTORY.search(task.notes or "")
        if not found:
            raise PepHistoryError(f"temporal task {task.id}: its notes cite no history version")
        versions[task.id] = (found.group(1), found.group(2))
    return versions


def _git(mirror: Path, *args: str) -> bytes:
    try:
        return subprocess.run(["git", "-C", str(mirror), *args], check=True,
                              capture_output=True).stdout
    except subprocess.CalledProcessError as exc:
        message = exc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PepHistoryError(f"git {' '.join(args)} failed in {mirror}: "
                              f"{message[-1] if message else exc.returncode}") from None


def read_version(mirror: str | Path, version: str) -> SourceRecord:
    """One `path@sha12` version from the mirror, dated by its commit's author date."""
    mirror = Path(mirror)
    path, sha = version.rsplit("@", 1)
    kind = source_kind(path)
    if kind is None:
        raise PepHistoryError(f"{version}: {path} is not a kind of file the baseline reads")
    data = _git(mirror, "show", f"{sha}:{path}")
    text, not_text = decode_text(data)
    if not_text:
        raise PepHistoryError(f"{version} is not text ({not_text})")
    authored = _git(mirror, "show", "-s", "--format=%aI", sha).decode().strip()
    return SourceRecord(source_id=version, path=f"{mirror}/{path}@{sha}", kind=kind, text=text,
                        content_hash=content_digest(data), size_bytes=len(data),
                        artifact_time=datetime.fromisoformat(authored))


def history_discovery(snapshot: str | Path, mirror: str | Path, tasks: Sequence[Task],
                      *, max_bytes: int = 10_000_000) -> Discovery:
    """The snapshot folder plus every version the temporal tasks name."""
    mirror = Path(mirror).expanduser().resolve()
    if not (mirror / "HEAD").exists() and not (mirror / ".git").exists():
        raise PepHistoryError(f"{mirror} is not a git repository: fetch python/peps first")
    found = discover(snapshot, max_bytes=max_bytes)
    known = {record.source_id for record in found.sources}
    versions = sorted({version for version, _ in temporal_versions(tasks).values()})
    for version in versions:
        if version not in known:
            found.sources.append(read_version(mirror, version))
    found.kind = "folder+versions"
    found.summary = {"mirror": str(mirror), "versions": versions}
    return found


def history_tasks(tasks_path: str | Path, out: str | Path, *, temporal_only: bool = False) -> Path:
    """Write the task file for the slice: temporal tasks expect the version they name.

    Each temporal task's evidence becomes the version's `Status:` line; every other
    task is copied unchanged, or left out with `temporal_only`: their oracle prompts are
    the snapshot's, so a study that read them already need not read them again (the
    reader study's pooled figures take a later study's reading of a task over an earlier one).
    """
    versions = temporal_versions(load_tasks(tasks_path))
    document = json.loads(Path(tasks_path).read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = document["tasks"] if isinstance(document, dict) else document
    for row in rows:
        if row["id"] in versions:
            version, status = versions[row["id"]]
            row["expected_sources"] = [version]
            row["answer"]["evidence"] = [{"source": version, "quote": f"Status: {status}"}]
    if temporal_only:
        rows[:] = [row for row in rows if row["id"] in versions]
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    load_tasks(target)  # the derived file must still be a valid task file
    return target


def main(argv: list[str] | None = None) -> int:
    """`memory-lab study pep-history tasks|read ...` (see --help)."""
    import argparse

    from memory_baseline.config import Config
    from memory_baseline.server import connect, database_url
    from memory_lab.chapters.reader import run_reader_study

    parser = argparse.ArgumentParser(description="the PEP corpus with the versions its temporal "
                                                 "tasks name")
    sub = parser.add_subparsers(dest="command", required=True)
    tasks = sub.add_parser("tasks", help="write the task file for the slice")
    tasks.add_argument("--tasks", default="fixtures/peps/tasks.json")
    tasks.add_argument("--out", default="fixtures/peps/tasks-history.json")
    tasks.add_argument("--temporal-only", action="store_true",
                       help="only the tasks whose evidence the slice changes")
    read = sub.add_parser("read", help="a reader study (oracle-source) on the slice")
    read.add_argument("--snapshot", default="../shared/data/peps/corpus")
    read.add_argument("--mirror", default="/work/.mirror/python+peps/repo")
    read.add_argument("--tasks", default="fixtures/peps/tasks-history.json")
    read.add_argument("--styles", nargs="+", default=["structured"])
    read.add_argument("--split", choices=["dev", "test"], required=True)
    read.add_argument("--reader", default="qwen-1.5b")
    read.add_argument("--runs-root", default="benchmarks/runs")
    read.add_argument("--resume")
    args = parser.parse_args(argv)
    try:
        if args.command == "tasks":
            print(history_tasks(args.tasks, args.out, temporal_only=args.temporal_only))
            return 0
        observation = history_discovery(args.snapshot, args.mirror, load_tasks(args.tasks))
        config = Config(index="reader_study").with_overrides(reader={"name": args.reader})
        with connect(database_url()) as conn:
            study = run_reader_study(
                conn, config, {"peps": (Path(args.snapshot).resolve(), args.tasks, None)}, args.styles,
                conditions=["oracle-source"], runs_root=args.runs_root, resume=args.resume,
                split=args.split, observations={"peps": observation})
    except (PepHistoryError, OSError, ValueError) as exc:
        print(f"pep_history: {exc}")
        return 1
    print(study.run_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
