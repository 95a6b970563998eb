"""The answer cache: a reader's completion, stored under the exact prompt that produced it.

A local LLM answer costs seconds to minutes on a laptop CPU; evaluations and
notebook re-runs ask the same questions over the same evidence again and again.
The key is the SHA-256 of the reader's identity (model file hash, runtime
version, decoding settings), the exact rendered prompt and the generation
settings, so any change to the weights, the template, the admitted passages or
the decoding parameters is a different key, never a stale hit.

One JSON file per key under ``<memory home>/answer-cache/<2 hex>/<key>.json``.
Files are written to a unique temporary name and renamed into place, so two
processes writing the same key at once leave one complete file (both hold the
same deterministic answer) and a reader never sees half a record. The stored
prompt is compared on read, so even a hash collision cannot serve a wrong answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

CACHE_FORMAT = 1


def cache_key(reader_identity: dict[str, Any], prompt: str, settings: dict[str, Any]) -> str:
    """The key of one completion: who answers, the exact prompt, and how it decodes."""
    material = json.dumps(
        {"format": CACHE_FORMAT, "reader": reader_identity, "prompt": prompt, "settings": settings},
        sort_keys=True, ensure_ascii=False, default=str,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class AnswerCache:
    """A folder of cached completions, safe to share between processes."""

    def __init__(self, root: str | Path | None = None) -> None:
        if root is None:
            from .server import memory_home  # deferred: only the default location needs it

            root = memory_home() / "answer-cache"
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, prompt: str) -> dict[str, Any] | None:
        """The stored record for `key`, or None when absent, unreadable or for another prompt."""
        try:
            record = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # a missing or damaged entry is a miss; the next put replaces it
        if not isinstance(record, dict) or record.get("format") != CACHE_FORMAT:
            return None
        if record.get("prompt") != prompt:
            return None
        return record

    def put(self, key: str, prompt: str, record: dict[str, Any]) -> Path:
        """Store `record` (JSON-serialisable) for `key`; the prompt is kept beside it."""
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        document = {**record, "format": CACHE_FORMAT, "key": key, "prompt": prompt}
        temporary = target.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            temporary.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n",
                                 encoding="utf-8")
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        return target
