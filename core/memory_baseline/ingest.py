"""Discover and read a corpus into source records with provenance.

A source is a readable, non-empty UTF-8 (or BOM-marked UTF-16) text file under
the corpus root, opened without following any link out of it; its id
is the path relative to that root (POSIX separators). For each source we keep
what is ordinary retrieval metadata and nothing interpretive: a kind derived
from the file name, the SHA-256 of its bytes, its size, and a timestamp when
the artifact itself states one. Anything that cannot be read is *reported*
with a reason — binary, invalid UTF-8, empty, too large, unsupported type, a
link (symbolic or hard) leading outside the root, a path too long to name a
source, an I/O error — never a crash and never silently dropped. A file that
was read before and now fails, for any of these reasons, is a failed observation,
not a deletion (see `memory_baseline.refresh`); so is every indexed file under
a directory that could not be listed, which `Discovery.unlisted` records.

A read is kept only if the file held still: its size, modification time and
inode are the same before and after the read, and a file modified moments
before its read is looked at again after a short settle window
(`SETTLE_SECONDS`), since a writer that truncates and rewrites in two writes
leaves a well-formed first half. A file that moved is a failed read, retried
by the next observation; half a file is never a source.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from .hashing import content_digest

TEXT_SUFFIXES = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".rst": "restructuredtext",
    ".rest": "restructuredtext", ".adoc": "asciidoc", ".asciidoc": "asciidoc", ".asc": "asciidoc",
    ".log": "log", ".json": "json", ".jsonl": "json", ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml", ".ini": "config", ".cfg": "config", ".conf": "config", ".env": "config",
    ".py": "code", ".js": "code", ".ts": "code", ".tsx": "code", ".jsx": "code", ".go": "code",
    ".rs": "code", ".java": "code", ".kt": "code", ".c": "code", ".h": "code", ".cpp": "code",
    ".hpp": "code", ".cs": "code", ".rb": "code", ".php": "code", ".sh": "code", ".sql": "code",
    ".swift": "code", ".scala": "code",
    # Type stubs and Cython: a Python package's interface and its C implementation.
    ".pyi": "code", ".pyx": "code", ".pxd": "code",
}
# Formats that are never text: reported as `binary` without being opened, so the report
# says why a repository's images and slide decks are not in the index.
BINARY_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff", ".pdf",
    ".pptx", ".ppt", ".odp", ".docx", ".doc", ".odt", ".xlsx", ".xls", ".ods", ".zip", ".gz",
    ".tgz", ".bz2", ".xz", ".7z", ".tar", ".whl", ".jar", ".so", ".dll", ".exe", ".pyc", ".woff",
    ".woff2", ".ttf", ".otf", ".mp3", ".mp4", ".wav", ".mov", ".drawio",
})
SPECIAL_NAMES = {"dockerfile": "code", "makefile": "code", "readme": "text", "license": "text"}
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox"}

# File-name conventions visible in the collection. The kind is a label for
# filtering and display; it is never used as an authority boost in ranking.
_KIND_BY_NAME = [
    (re.compile(r"(^|/)(adr|decision)[-_]?\d+", re.I), "decision-record"),
    (re.compile(r"(^|/)session[-_]?\d+", re.I), "session"),
]


class IngestError(ValueError):
    """The corpus root itself is unusable (missing, not a directory)."""


@dataclass(frozen=True)
class SourceRecord:
    source_id: str
    path: str  # absolute path at observation time
    kind: str
    text: str
    content_hash: str
    size_bytes: int
    artifact_time: datetime | None
    # (device, inode, size, mtime_ns) of the file as read, to see whether it held still.
    observed: tuple[int, int, int, int] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SkippedFile:
    path: str  # relative to the root where possible
    reason: str  # binary | empty | too-large | unsupported | outside-root | path-too-long
    #             | undecodable-name | not-a-regular-file | directory-link
    #             | symlink (a link stored in git history)
    #             | hidden-folder | ignored-folder (a folder not walked; its path ends in "/")


@dataclass(frozen=True)
class FailedRead:
    """A supported file that exists but could not be read this time."""

    source_id: str
    reason: str


@dataclass
class Discovery:
    """What one observation of a corpus found.

    `unlisted` holds directories (relative paths, "." for the root) whose listing
    failed: files indexed under them were not observed, so they are not absent.
    `kind` is "folder" for a directory walk and "git" for a repository's history.
    `present` holds ids known to exist that were deliberately not emitted as
    sources (a git version byte-identical to its working-tree file); `summary`
    holds counts a long observation reports (git: commits, versions, seconds).
    """

    root: Path
    sources: list[SourceRecord] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    failed: list[FailedRead] = field(default_factory=list)
    unlisted: list[FailedRead] = field(default_factory=list)
    kind: str = "folder"
    present: set[str] = field(default_factory=set)
    summary: dict[str, object] = field(default_factory=dict)


def source_kind(relative: str) -> str | None:
    """Kind of a supported file from its name, or None when the type is unsupported."""
    name = relative.rsplit("/", 1)[-1]
    suffix = os.path.splitext(name)[1].lower()
    base = TEXT_SUFFIXES.get(suffix) or SPECIAL_NAMES.get(name.lower().split(".")[0] if not suffix else "")  # noqa: E501
    if base is None:
        return None
    for pattern, kind in _KIND_BY_NAME:
        if pattern.search(relative):
            return kind
    return base


def unsupported_reason(relative: str) -> str:
    """Why a file of no supported kind is skipped: `binary` for known binary formats."""
    return "binary" if os.path.splitext(relative)[1].lower() in BINARY_SUFFIXES else "unsupported"


def printable_path(relative: str) -> str:
    """`relative` with undecodable file-name bytes shown as escapes (safe for JSON and SQL)."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# A source id is also a search term of its own chunks (`name_terms`), and PostgreSQL
# refuses a lexeme over 2,046 bytes ("word is too long"), which would roll back a whole
# refresh every time. Longer relative paths are skipped with a reason; the margin leaves
# room for a git version's "@<sha12>" and case folding that lengthens a name.
MAX_SOURCE_ID_BYTES = 1024
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a terminal device
# must not become ours. fstat on the descriptor then decides what was opened.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}


class LimitExceeded(IngestError):
    """The corpus is larger than the configured discovery limits (bad input, exit code 2)."""


@dataclass(frozen=True)
class Limits:
    """Discovery limits: files listed and bytes read, before the corpus is refused."""

    max_files: int | None = None
    max_total_bytes: int | None = None


def iter_candidate_files(
    root: Path,
    unlisted: list[FailedRead] | None = None,
    skipped: list[SkippedFile] | None = None,
) -> Iterator[tuple[Path, str]]:
    """Walk `root` without following directory links (a link loop cannot hang us).

    A directory that cannot be listed is appended to `unlisted` rather than
    skipped in silence (os.walk's default), so its files are never taken for gone;
    a link to a directory is reported in `skipped`, and so is a directory whose
    relative path is already too long to name a source.
    """

    def listing_failed(error: OSError) -> None:
        if unlisted is None:
            return
        where = os.path.relpath(error.filename, root) if error.filename else "."
        unlisted.append(FailedRead(
            printable_path(Path(where).as_posix()),
            f"unlistable: {error.__class__.__name__}: {error.strerror}",
        ))

    for directory, subdirs, files in os.walk(root, onerror=listing_failed, followlinks=False):
        kept = []
        for name in sorted(subdirs):
            relative = (Path(directory) / name).relative_to(root).as_posix()
            if name in SKIP_DIRS or name.startswith("."):
                # Not walked, but said: a user should see that `.github/` was left out.
                if skipped is not None:
                    reason = "ignored-folder" if name in SKIP_DIRS else "hidden-folder"
                    skipped.append(SkippedFile(printable_path(relative) + "/", reason))
            elif (Path(directory) / name).is_symlink():
                if skipped is not None:
                    skipped.append(SkippedFile(printable_path(relative), "directory-link"))
            elif len(os.fsencode(relative)) > MAX_SOURCE_ID_BYTES:
                if skipped is not None:
                    skipped.append(SkippedFile(printable_path(relative), "path-too-long"))
            else:
                kept.append(name)
        subdirs[:] = kept
        for name in sorted(files):
            path = Path(directory) / name
            yield path, path.relative_to(root).as_posix()


def discover(
    root: str | Path, *, max_bytes: int = 10_000_000, limits: Limits | None = None
) -> Discovery:
    """Read every supported file under `root` into a `SourceRecord`, reporting the rest.

    Past `limits` (files listed, bytes read) the whole corpus is refused with
    `LimitExceeded` before anything is written: a half-read corpus would look like
    deletions to a refresh.
    """
    root_path = Path(root).expanduser()
    if not root_path.is_dir():
        raise IngestError(f"corpus root {root} is not a directory")
    root_path = root_path.resolve()
    limits = limits or Limits()
    found = Discovery(root=root_path)
    candidates = list(_bounded(iter_candidate_files(root_path, found.unlisted, found.skipped),
                               limits.max_files, root_path))
    names_by_identity = _names_by_identity(candidates)
    total_bytes = 0
    for path, relative in candidates:
        outcome = read_source(root_path, path, relative, max_bytes=max_bytes,
                              names_by_identity=names_by_identity)
        if isinstance(outcome, SourceRecord):
            found.sources.append(outcome)
            total_bytes += outcome.size_bytes
            if limits.max_total_bytes is not None and total_bytes > limits.max_total_bytes:
                raise LimitExceeded(
                    f"{root_path} holds more than {limits.max_total_bytes:,} bytes of text "
                    "(config max_corpus_bytes): index a smaller folder or raise the limit"
                )
        elif isinstance(outcome, FailedRead):
            found.failed.append(outcome)
        else:
            found.skipped.append(outcome)
    _settle(found)
    return found


# A writer's second write usually follows its first within milliseconds; a file modified
# this recently when it was read is looked at again once this much time has passed.
SETTLE_SECONDS = 0.1


def _settle(found: Discovery) -> None:
    """Turn sources modified just before their read, and changed since, into failed reads.

    One wait for the whole observation (not one per file): until the most recent of
    those modification times is `SETTLE_SECONDS` old, never longer than that.
    """
    window = int(SETTLE_SECONDS * 1e9)
    now = time.time_ns()
    recent = [r for r in found.sources if r.observed and now - r.observed[3] < window]
    if not recent:
        return
    latest = max(r.observed[3] for r in recent)  # type: ignore[index]
    time.sleep(max(0.0, min(latest + window - time.time_ns(), window)) / 1e9)
    moved = {r.source_id for r in recent if _stamp_of(r.path) != r.observed}
    if moved:
        found.sources = [r for r in found.sources if r.source_id not in moved]
        found.failed += [FailedRead(s, "changed just after the read (still being written?)")
                         for s in sorted(moved)]


def _stamp(status: os.stat_result) -> tuple[int, int, int, int]:
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _stamp_of(path: str) -> tuple[int, int, int, int] | None:
    try:
        return _stamp(os.stat(path))
    except OSError:
        return None


def _bounded(
    candidates: Iterator[tuple[Path, str]], max_files: int | None, root: Path
) -> Iterator[tuple[Path, str]]:
    for count, candidate in enumerate(candidates, 1):
        if max_files is not None and count > max_files:
            raise LimitExceeded(
                f"{root} holds more than {max_files:,} files (config max_files): "
                "index a smaller folder or raise the limit"
            )
        yield candidate


def _names_by_identity(candidates: list[tuple[Path, str]]) -> dict[tuple[int, int], int]:
    """How many names under the root each multiply-linked file has (by device and inode)."""
    counts: dict[tuple[int, int], int] = {}
    for path, _ in candidates:
        try:
            status = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
            identity = (status.st_dev, status.st_ino)
            counts[identity] = counts.get(identity, 0) + 1
    return counts


def open_under_root(root: Path, relative: str) -> int:
    """A descriptor of `relative`, resolved one component at a time from `root`.

    No component may be a link (O_NOFOLLOW at every step, each directory opened
    relative to the previous one's descriptor, as openat does), so a path swapped
    for a link between a check and the open cannot lead outside the root: it fails
    with ELOOP/ENOTDIR instead. The caller owns the returned descriptor.
    """
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EINVAL, "not a plain relative path", relative)
    directory = os.open(root, _DIRECTORY_FLAGS)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIRECTORY_FLAGS, dir_fd=directory)
            os.close(directory)
            directory = inner
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=directory)
    finally:
        os.close(directory)


def _open_source(root: Path, path: Path, relative: str) -> int | SkippedFile | FailedRead:
    """Open the file itself, or the target of a link that stays inside the root."""
    try:
        return open_under_root(root, relative)
    except OSError as exc:
        if exc.errno not in _LINK_ERRNOS:
            raise
    # A link on the way: resolve it, refuse a target outside the root, then open the
    # target by the same no-follow walk (a link swapped in meanwhile fails there too).
    try:
        target = path.resolve(strict=True)
    except FileNotFoundError:
        return FailedRead(relative, "broken link")
    except (OSError, RuntimeError) as exc:  # RuntimeError: a link loop (Python < 3.13)
        return FailedRead(relative, f"unreadable: link loop or bad link: {exc.__class__.__name__}")
    if not target.is_relative_to(root):
        return SkippedFile(relative, "outside-root")
    if target == root:
        return SkippedFile(relative, "directory-link")
    try:
        return open_under_root(root, target.relative_to(root).as_posix())
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            return FailedRead(relative, "changed during the read (a link appeared on its path)")
        raise


def read_source(
    root: Path, path: Path, relative: str, *, max_bytes: int,
    names_by_identity: dict[tuple[int, int], int] | None = None,
) -> SourceRecord | SkippedFile | FailedRead:
    """Read one candidate file safely: never outside the root, never blocking.

    What is judged is the opened descriptor (fstat), not the name: a FIFO, device
    or socket swapped in is not read, and a file with more hard links than
    `names_by_identity` counts under the root (its other names lie outside) is
    refused like a link that leaves the root. Without `names_by_identity` any
    multiply-linked file is refused. A file whose size, modification time or
    inode (under its name) changed during the read is a failed read.
    """
    kind = source_kind(relative)
    if kind is None:
        return SkippedFile(printable_path(relative), unsupported_reason(relative))
    if printable_path(relative) != relative:
        # A name that is not valid UTF-8 cannot be a source id (PostgreSQL text, JSON).
        return SkippedFile(printable_path(relative), "undecodable-name")
    if len(relative.encode("utf-8")) > MAX_SOURCE_ID_BYTES:
        return SkippedFile(relative, "path-too-long")
    try:
        opened = _open_source(root, path, relative)
        if not isinstance(opened, int):
            return opened
        try:
            status = os.fstat(opened)
            if stat.S_ISDIR(status.st_mode):
                return SkippedFile(relative, "directory-link")
            if not stat.S_ISREG(status.st_mode):
                # A FIFO would block the read forever; devices and sockets are not documents.
                return SkippedFile(relative, "not-a-regular-file")
            if status.st_nlink > 1:
                inside = (names_by_identity or {}).get((status.st_dev, status.st_ino), 0)
                if inside < status.st_nlink:
                    return SkippedFile(relative, "outside-root")  # a hard link's other names
            if status.st_size > max_bytes:
                return SkippedFile(relative, "too-large")
            data = _read_at_most(opened, max_bytes + 1)
            after = os.fstat(opened)
        finally:
            os.close(opened)
        named = os.stat(path)  # the file its name leads to now
    except FileNotFoundError:
        return FailedRead(relative, "vanished during the read")
    except OSError as exc:
        return FailedRead(relative, f"unreadable: {exc.__class__.__name__}: {exc.strerror}")
    if len(data) > max_bytes:
        return SkippedFile(relative, "too-large")  # it grew after fstat
    if _stamp(after) != _stamp(status) or len(data) != after.st_size:
        return FailedRead(relative, "changed during the read (truncated or written meanwhile)")
    if (named.st_dev, named.st_ino) != (status.st_dev, status.st_ino):
        return FailedRead(relative, "replaced during the read")
    text, not_text = decode_text(data)
    if not_text and not_text.startswith("invalid-"):
        return FailedRead(relative, not_text)
    if not_text:
        return SkippedFile(relative, not_text)
    return SourceRecord(
        source_id=relative,
        path=str(path),
        kind=kind,
        text=text,
        content_hash=content_digest(data),
        size_bytes=len(data),
        artifact_time=artifact_timestamp(relative, text),
        observed=_stamp(status),
    )


def _read_at_most(descriptor: int, limit: int) -> bytes:
    os.set_blocking(descriptor, True)  # a regular file: O_NONBLOCK served only the open
    pieces: list[bytes] = []
    remaining = limit
    while remaining > 0:
        piece = os.read(descriptor, min(remaining, 1 << 20))
        if not piece:
            break
        pieces.append(piece)
        remaining -= len(piece)
    return b"".join(pieces)


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")


def decode_text(data: bytes) -> tuple[str, str | None]:
    """`(text, None)` for a text file's bytes, else `("", reason)`.

    Reasons: empty, binary, invalid-utf8, invalid-utf16. UTF-8 is the default;
    a UTF-16 byte-order mark (what Windows editors write as "Unicode") selects
    UTF-16. Any NUL marks a file binary (PostgreSQL text cannot hold NUL, so a NUL
    past the first block must not reach the store either). Text that is only
    whitespace once decoded (a lone BOM, ideographic spaces) is empty: it would
    make a source without chunks.
    """
    if data.startswith(_UTF16_BOMS) and not data.startswith(_UTF32_BOMS):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return "", "invalid-utf16"
    elif b"\x00" in data:
        return "", "binary"
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return "", "invalid-utf8"
    if "\x00" in text:
        return "", "binary"
    text = text.removeprefix("\ufeff")
    if not text.strip():
        return "", "empty"
    return text, None


_MONTHS = {
    m: i
    for i, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
         ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
         ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
         ("dec", "december")],
        start=1,
    )
    for m in names
}
_ISO = r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?"
_LONG = r"(\d{1,2})[ -]([A-Za-z]{3,9}),?[ -](\d{4})"  # 5 August 2024, 13-Jul-2000 (PEP headers)
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", re.S)
_DATE_FIELD = re.compile(
    # `Date:`, `**Date**:`, a reStructuredText field `:Date:`, an AsciiDoc attribute `:revdate:`
    r"^\s*(?:[-*]\s*)?:?\**(?:date|created|decided|written|recorded|revdate)\**\s*:\**\s*(.+)$",
    re.I | re.M
)
_ISO_ANYWHERE = re.compile(_ISO)
_LONG_ANYWHERE = re.compile(_LONG)


def parse_date_text(value: str) -> datetime | None:
    """An ISO date/time or a '5 August 2024' date at the start of `value`."""
    value = value.strip().strip("\"'*_ ")
    match = re.match(_ISO, value)
    if match:
        year, month, day, hour, minute, second = match.groups()
        try:
            return datetime(
                int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                int(second or 0), tzinfo=UTC,
            )
        except ValueError:
            return None
    match = re.match(_LONG, value)
    if match and match.group(2).lower() in _MONTHS:
        try:
            return datetime(
                int(match.group(3)), _MONTHS[match.group(2).lower()], int(match.group(1)),
                tzinfo=UTC,
            )
        except ValueError:
            return None
    return None


def artifact_timestamp(relative: str, text: str) -> datetime | None:
    """The date the artifact states about itself, if it states one.

    Looked for in order: a date field in YAML front matter, a `Date:` line near
    the top, a date in the file name, the first timestamp of a log.
    """
    head = text[:4000]
    front = _FRONT_MATTER.match(head)
    if front:
        for match in _DATE_FIELD.finditer(front.group(1)):
            found = parse_date_text(match.group(1))
            if found:
                return found
    for match in _DATE_FIELD.finditer(head[:1500]):
        found = parse_date_text(match.group(1))
        if found:
            return found
    name_match = _ISO_ANYWHERE.search(relative.rsplit("/", 1)[-1])
    if name_match:
        found = parse_date_text(name_match.group(0))
        if found:
            return found
    if relative.endswith(".log"):
        first_line = next((line for line in head.splitlines() if line.strip()), "")
        match = _ISO_ANYWHERE.search(first_line)
        if match:
            return parse_date_text(match.group(0))
    return None


def as_date(value: datetime | None) -> date | None:
    return value.date() if value else None
