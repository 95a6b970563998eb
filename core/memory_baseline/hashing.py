"""Content hashes: whether two files, sources, chunks or texts hold the same bytes.

Refresh compares a source's stored hash with its file's to decide what to
re-read, a chunk carries the hash of its text, a study run records the hashes
of the files it read, and model weights are checked against pinned ones. All
of them are the same function, the sha256 hex digest of the bytes (text as
UTF-8), so a hash written by one stage means the same to every other.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK_BYTES = 8 * 1024 * 1024  # files are hashed in blocks: model weights run to gigabytes


def content_digest(data: bytes | str) -> str:
    """The sha256 hex digest of `data`; text is hashed as its UTF-8 bytes."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def file_digest(path: str | Path) -> str:
    """`content_digest` of a file's bytes, read block by block."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()
