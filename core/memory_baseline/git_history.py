"""Read a git repository, history included, into source records.

An index of today's checkout is not an archive: a rewritten or deleted file
takes its old wording with it. `discover_git` therefore observes three things,
using git itself (subprocess, `git log` and `git cat-file`):

- the working tree, exactly as a folder `discover` sees it (ids are paths);
- every historical version of a supported text file, once per distinct
  content at that path, as ``<path>@<sha12>``: the 12-hex-digit abbreviation of
  the commit that first gave the path that content, dated (``artifact_time``)
  by that commit's author date. A version byte-identical to the working-tree
  file at the same path is left out (the working-tree source already holds it,
  and a duplicate would crowd search results); once the checkout diverges,
  that version appears in the next observation;
- every commit message, as ``commit@<sha12>`` (kind ``commit``), dated by its
  author date, with the full sha, the author and the paths it changed.

History is walked from HEAD and every branch, tag and remote-tracking branch
(``git log HEAD --branches --tags --remotes``), so checking out an old branch
does not make other branches' history look gone. Merge commits contribute the
changes they bring to their first parent, so a conflict resolution is kept. A
folder inside a work tree is a corpus of its own: its files, and only the
history of that folder (``git log --relative``), with paths relative to it.
Twelve hex digits are unambiguous in any repository of realistic size and keep
citations readable; the full sha is in the commit message source.

The same rules as for files apply to versions (supported type, size limit,
UTF-8 text), except that a historical blob that is not text is *skipped*, not a
failed observation: stored history never changes, so it will never read better.
A git failure (not a repository, corrupt objects) raises `GitHistoryError`
before anything is written, so a refresh never mistakes it for deletions.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .hashing import content_digest
from .ingest import (
    MAX_SOURCE_ID_BYTES,
    Discovery,
    IngestError,
    Limits,
    SkippedFile,
    SourceRecord,
    decode_text,
    discover,
    printable_path,
    source_kind,
    unsupported_reason,
)

SHORT_SHA_DIGITS = 12
COMMIT_KIND = "commit"
MAX_LISTED_PATHS = 300  # changed paths written into one commit-message source
_VERSION_ID = re.compile(r"^(?P<path>.+)@(?P<sha>[0-9a-f]{12})$")
_COMMIT_ID = re.compile(r"^commit@(?P<sha>[0-9a-f]{12})$")
_RECORD, _FIELD = "\x1e", "\x1f"
_LOG_FORMAT = "%x1e%H%x1f%P%x1f%an%x1f%aI%x1f%B%x1f"
_NULL_SHA = "0" * 40
_SYMLINK_MODE, _SUBMODULE_MODE = "120000", "160000"


class GitHistoryError(IngestError):
    """The repository cannot be read with git (bad input: exit code 2)."""


@dataclass(frozen=True)
class Change:
    status: str  # A, M, T or D (renames are reported as D + A)
    path: str
    blob: str
    mode: str


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author: str
    authored: datetime
    message: str
    changes: tuple[Change, ...]

    @property
    def short(self) -> str:
        return self.sha[:SHORT_SHA_DIGITS]


def version_id(path: str, sha: str) -> str:
    return f"{path}@{sha[:SHORT_SHA_DIGITS]}"


def commit_id(sha: str) -> str:
    return f"commit@{sha[:SHORT_SHA_DIGITS]}"


def split_history_id(source_id: str) -> tuple[str | None, str] | None:
    """`(path, sha12)` for a file version, `(None, sha12)` for a commit message, else None."""
    commit = _COMMIT_ID.match(source_id)
    if commit:
        return None, commit.group("sha")
    version = _VERSION_ID.match(source_id)
    if version and source_kind(version.group("path")) is not None:
        return version.group("path"), version.group("sha")
    return None


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_PAGER": "cat"}
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
            input=stdin, capture_output=True, env=environment, check=False,
        )
    except FileNotFoundError as exc:
        raise GitHistoryError("git is not installed (needed for --git)") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitHistoryError(
            f"git {args[0]} failed in {repo}: {message[-1] if message else done.returncode}"
        )
    return done.stdout


def repository_root(repo: str | Path) -> Path:
    """The top folder of the work tree that contains `repo`."""
    path = Path(repo).expanduser()
    if not path.is_dir():
        raise GitHistoryError(f"{repo} is not a directory")
    try:
        top = _git(path, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape").strip()
    except GitHistoryError as exc:
        raise GitHistoryError(f"{repo} is not a git work tree: {exc}") from exc
    return Path(top).resolve()


def read_commits(root: Path, subfolder: str | None = None) -> list[Commit]:
    """Every commit reachable from HEAD, branches, tags and remotes, oldest first.

    With `subfolder` (relative to the repository root), only commits that change
    it, with paths relative to it: the history of that folder alone.
    """
    revisions = ["--branches", "--tags", "--remotes"]
    if _git_ok(root, "rev-parse", "--verify", "-q", "HEAD^{commit}"):
        revisions.insert(0, "HEAD")  # a detached HEAD may be on no branch
    if not _git(root, "rev-list", "-n", "1", *revisions).strip():
        return []  # no commit yet
    scope = [f"--relative={subfolder}", *revisions, "--", subfolder] if subfolder else revisions
    raw = _git(
        root, "log", "--reverse", "--date-order", "--no-renames", "--diff-merges=first-parent",
        "--raw", "--no-abbrev", "-z", f"--format={_LOG_FORMAT}", *scope,
    )
    return [_parse_commit(block) for block in raw.split(_RECORD.encode()) if block.strip(b"\0\n")]


def _git_ok(root: Path, *args: str) -> bool:
    try:
        _git(root, *args)
    except GitHistoryError:
        return False
    return True


def _parse_commit(block: bytes) -> Commit:
    fields = block.split(_FIELD.encode())
    if len(fields) < 6:
        raise GitHistoryError("unexpected `git log` output (is this git too old? need >= 2.31)")
    sha, parents, author, authored = (f.decode("utf-8", "replace") for f in fields[:4])
    message = _FIELD.encode().join(fields[4:-1]).decode("utf-8", "replace")
    tokens = fields[-1].split(b"\0")
    changes: list[Change] = []
    position = 0
    while position < len(tokens):
        token = tokens[position].lstrip(b"\n")
        position += 1
        if not token.startswith(b":"):
            continue
        # ":<old mode> <new mode> <old blob> <new blob> <status>" then the path.
        _old_mode, new_mode, _old_blob, new_blob, status = token[1:].decode().split(" ")
        path = os.fsdecode(tokens[position])
        position += 1
        changes.append(Change(status[0], path, new_blob, new_mode))
    return Commit(
        sha=sha,
        parents=tuple(parents.split()),
        author=author,
        authored=datetime.fromisoformat(authored).astimezone(UTC),
        message=message.strip(),
        changes=tuple(changes),
    )


def _blob_sizes(root: Path, blobs: list[str]) -> dict[str, int]:
    if not blobs:
        return {}
    out = _git(root, "cat-file", "--batch-check", stdin="\n".join(blobs).encode() + b"\n")
    sizes: dict[str, int] = {}
    for line in out.decode().splitlines():
        sha, kind, size = line.split(" ")[:3]
        if kind == "blob":
            sizes[sha] = int(size)
    return sizes


def _read_blobs(root: Path, blobs: list[str]) -> dict[str, bytes]:
    """Contents of `blobs`, in one `git cat-file --batch` pass."""
    if not blobs:
        return {}
    out = _git(root, "cat-file", "--batch", stdin="\n".join(blobs).encode() + b"\n")
    contents: dict[str, bytes] = {}
    position = 0
    while position < len(out):
        header_end = out.index(b"\n", position)
        sha, _kind, size = out[position:header_end].decode().split(" ")
        start = header_end + 1
        contents[sha] = out[start:start + int(size)]
        position = start + int(size) + 1  # content is followed by a newline
    return contents


def _commit_text(commit: Commit) -> str:
    listed = [f"{c.status} {c.path}" for c in commit.changes[:MAX_LISTED_PATHS]]
    if len(commit.changes) > MAX_LISTED_PATHS:
        listed.append(f"... and {len(commit.changes) - MAX_LISTED_PATHS} more")
    head = [f"commit {commit.sha}", f"Author: {commit.author}",
            f"Date: {commit.authored.isoformat()}"]
    if len(commit.parents) > 1:
        head.append("Merge: " + " ".join(p[:SHORT_SHA_DIGITS] for p in commit.parents))
    body = commit.message or "(no commit message)"
    files = ("\n\nChanged files:\n" + "\n".join(listed)) if listed else ""
    return "\n".join(head) + "\n\n" + body + files + "\n"


def discover_git(
    repo: str | Path, *, max_bytes: int = 10_000_000, limits: Limits | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> Discovery:
    """Observe the work tree, every historical text version and every commit message.

    `repo` may be a folder inside a work tree: then that folder is the corpus
    root, and only its history is read (paths relative to it). `on_progress`
    receives a line per phase; the counts end up in `Discovery.summary`.
    """
    started = time.perf_counter()
    say = on_progress or (lambda _message: None)
    top = repository_root(repo)
    root = Path(repo).expanduser().resolve()
    subfolder = root.relative_to(top).as_posix() if root != top else None
    found = discover(root, max_bytes=max_bytes, limits=limits)
    found.kind = "git"
    say(f"git: work tree read ({len(found.sources)} files); reading the commit log")
    commits = read_commits(top, subfolder)
    say(f"git: {len(commits)} commits read; collecting historical versions")
    current = {record.source_id: record.content_hash for record in found.sources}

    first_seen: dict[tuple[str, str], Commit] = {}
    for commit in commits:
        text = _commit_text(commit)
        data = text.encode("utf-8", "replace")
        found.sources.append(SourceRecord(
            source_id=commit_id(commit.sha), path=f"{root}@{commit.sha}", kind=COMMIT_KIND,
            text=data.decode("utf-8"), content_hash=content_digest(data),
            size_bytes=len(data), artifact_time=commit.authored,
        ))
        for change in commit.changes:
            if change.status == "D" or change.blob == _NULL_SHA:
                continue
            first_seen.setdefault((change.path, change.blob), commit)

    wanted: list[tuple[str, str, Commit, str]] = []  # path, blob, commit, kind
    for (path, blob), commit in first_seen.items():
        source_id = version_id(path, commit.sha)
        change_mode = next(c.mode for c in commit.changes if c.path == path and c.blob == blob)
        kind = source_kind(path)
        if kind is None:
            found.skipped.append(SkippedFile(printable_path(source_id), unsupported_reason(path)))
        elif printable_path(path) != path:
            found.skipped.append(SkippedFile(printable_path(source_id), "undecodable-name"))
        elif len(source_id.encode("utf-8")) > MAX_SOURCE_ID_BYTES:
            found.skipped.append(SkippedFile(source_id, "path-too-long"))
        elif change_mode in (_SYMLINK_MODE, _SUBMODULE_MODE):
            found.skipped.append(SkippedFile(source_id, "symlink"
                                             if change_mode == _SYMLINK_MODE else "unsupported"))
        else:
            wanted.append((path, blob, commit, kind))

    sizes = _blob_sizes(top, sorted({blob for _, blob, _, _ in wanted}))
    small = [item for item in wanted if sizes.get(item[1], 0) <= max_bytes]
    for path, blob, commit, _ in wanted:
        if sizes.get(blob, 0) > max_bytes:
            found.skipped.append(SkippedFile(version_id(path, commit.sha), "too-large"))
    say(f"git: reading {len(small)} historical versions")
    contents = _read_blobs(top, sorted({blob for _, blob, _, _ in small}))
    for path, blob, commit, kind in small:
        source_id = version_id(path, commit.sha)
        data = contents[blob]
        text, not_text = decode_text(data)
        if not_text:
            found.skipped.append(SkippedFile(source_id, not_text))
            continue
        content_hash = content_digest(data)
        if current.get(path) == content_hash:
            found.present.add(source_id)  # the working-tree source holds these exact bytes
            continue
        found.sources.append(SourceRecord(
            source_id=source_id, path=f"{root / path}@{commit.sha}", kind=kind, text=text,
            content_hash=content_hash, size_bytes=len(data), artifact_time=commit.authored,
        ))
    versions = sum(1 for record in found.sources if record.kind != COMMIT_KIND) - len(current)
    found.summary = {"repository": str(top), "subfolder": subfolder, "commits": len(commits),
                     "versions": versions, "seconds": round(time.perf_counter() - started, 3)}
    say(f"git: {len(commits)} commits and {versions} historical versions observed in "
        f"{found.summary['seconds']:.1f} s")
    return found
