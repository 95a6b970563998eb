"""Discover and read a corpus into source records with provenance.

A source is a readable, non-empty UTF-8 text file under the corpus root; its id
is the path relative to that root (POSIX separators). For each source we keep
what is ordinary retrieval metadata and nothing interpretive: a kind derived
from the file name, the SHA-256 of its bytes, its size, and a timestamp when
the artifact itself states one. Anything that cannot be read is *reported*
with a reason — binary, invalid UTF-8, empty, too large, unsupported type, a
link leading outside the root, an I/O error — never a crash and never silently
dropped. A file that was read before and now fails is a failed observation,
not a deletion (see `memory_baseline.refresh`); so is every indexed file under
a directory that could not be listed, which `Discovery.unlisted` records.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

TEXT_SUFFIXES = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".rst": "restructuredtext",
    ".rest": "restructuredtext", ".adoc": "asciidoc", ".asciidoc": "asciidoc", ".asc": "asciidoc",
    ".log": "log", ".json": "json", ".jsonl": "json", ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml", ".ini": "config", ".cfg": "config", ".conf": "config", ".env": "config",
    ".py": "code", ".js": "code", ".ts": "code", ".tsx": "code", ".jsx": "code", ".go": "code",
    ".rs": "code", ".java": "code", ".kt": "code", ".c": "code", ".h": "code", ".cpp": "code",
    ".hpp": "code", ".cs": "code", ".rb": "code", ".php": "code", ".sh": "code", ".sql": "code",
    ".swift": "code", ".scala": "code",
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


@dataclass(frozen=True)
class SkippedFile:
    path: str  # relative to the root where possible
    reason: str  # binary | invalid-utf8 | empty | too-large | unsupported | outside-root
    #             | undecodable-name | not-a-regular-file | directory-link
    #             | symlink (a link stored in git history)


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
    """

    root: Path
    sources: list[SourceRecord] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    failed: list[FailedRead] = field(default_factory=list)
    unlisted: list[FailedRead] = field(default_factory=list)
    kind: str = "folder"


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


def iter_candidate_files(
    root: Path,
    unlisted: list[FailedRead] | None = None,
    skipped: list[SkippedFile] | None = None,
) -> Iterator[tuple[Path, str]]:
    """Walk `root` without following directory links (a link loop cannot hang us).

    A directory that cannot be listed is appended to `unlisted` rather than
    skipped in silence (os.walk's default), so its files are never taken for gone;
    a link to a directory is reported in `skipped`.
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
        for name in sorted(d for d in subdirs if d not in SKIP_DIRS and not d.startswith(".")):
            if (Path(directory) / name).is_symlink():
                if skipped is not None:
                    relative = (Path(directory) / name).relative_to(root).as_posix()
                    skipped.append(SkippedFile(printable_path(relative), "directory-link"))
            else:
                kept.append(name)
        subdirs[:] = kept
        for name in sorted(files):
            path = Path(directory) / name
            yield path, path.relative_to(root).as_posix()


def discover(root: str | Path, *, max_bytes: int = 10_000_000) -> Discovery:
    """Read every supported file under `root` into a `SourceRecord`, reporting the rest."""
    root_path = Path(root).expanduser()
    if not root_path.is_dir():
        raise IngestError(f"corpus root {root} is not a directory")
    root_path = root_path.resolve()
    found = Discovery(root=root_path)
    for path, relative in iter_candidate_files(root_path, found.unlisted, found.skipped):
        outcome = read_source(root_path, path, relative, max_bytes=max_bytes)
        if isinstance(outcome, SourceRecord):
            found.sources.append(outcome)
        elif isinstance(outcome, FailedRead):
            found.failed.append(outcome)
        else:
            found.skipped.append(outcome)
    return found


def read_source(
    root: Path, path: Path, relative: str, *, max_bytes: int
) -> SourceRecord | SkippedFile | FailedRead:
    kind = source_kind(relative)
    if kind is None:
        return SkippedFile(printable_path(relative), unsupported_reason(relative))
    if printable_path(relative) != relative:
        # A name that is not valid UTF-8 cannot be a source id (PostgreSQL text, JSON).
        return SkippedFile(printable_path(relative), "undecodable-name")
    try:
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(root):
                return SkippedFile(relative, "outside-root")
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            # A FIFO would block the read forever; devices and sockets are not documents.
            return SkippedFile(relative, "not-a-regular-file")
        size = status.st_size
        if size > max_bytes:
            return SkippedFile(relative, "too-large")
        data = path.read_bytes()
    except FileNotFoundError:
        return FailedRead(relative, "broken link" if path.is_symlink() else "vanished during the read")
    except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on resolve()
        return FailedRead(relative, f"unreadable: {exc.__class__.__name__}: {exc}")
    text, not_text = decode_text(data)
    if not_text == "invalid-utf8":
        return FailedRead(relative, not_text)
    if not_text:
        return SkippedFile(relative, not_text)
    return SourceRecord(
        source_id=relative,
        path=str(path),
        kind=kind,
        text=text,
        content_hash=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        artifact_time=artifact_timestamp(relative, text),
    )


def decode_text(data: bytes) -> tuple[str, str | None]:
    """`(text, None)` for a text file's bytes, else `("", reason)`: empty, binary, invalid-utf8.

    Any NUL byte marks a file binary (PostgreSQL text cannot hold NUL, so a NUL
    past the first block must not reach the store either). Text that is only
    whitespace once decoded (a lone BOM, ideographic spaces) is empty: it would
    make a source without chunks.
    """
    if b"\x00" in data:
        return "", "binary"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "", "invalid-utf8"
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
