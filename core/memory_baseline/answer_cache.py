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

Caches can be layered: read-only folders searched before the writable one
(`read_first`, or the ``MEMORY_BASELINE_ANSWER_CACHE_PATH`` environment
variable, folders separated by the OS path separator). A published run commits
the entries it used (`export`), so a fresh machine reproduces its answers from
the repository and computes only what a change of code, prompt or model
invalidates.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .config import ANSWER_CACHE_ONLY_ENV, ANSWER_READ_FIRST_ENV, CacheConfig

CACHE_FORMAT = 1


def cache_key(reader_identity: dict[str, Any], prompt: str, settings: dict[str, Any]) -> str:
    """The key of one completion: who answers, the exact prompt, and how it decodes."""
    material = json.dumps(
        {"format": CACHE_FORMAT, "reader": reader_identity, "prompt": prompt, "settings": settings},
        sort_keys=True, ensure_ascii=False, default=str,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


READ_FIRST_ENV = ANSWER_READ_FIRST_ENV
# When set, every hit and every computed answer appends one JSON line to this file, so a
# whole book build can say how many answers came from the cache and which keys it used.
USAGE_LOG_ENV = "MEMORY_BASELINE_ANSWER_CACHE_LOG"


# When set, a miss is refused instead of computed: a reproduction that must compute nothing
# (`memory-lab book --cached-only`) fails on the first answer it would have to read.
CACHE_ONLY_ENV = ANSWER_CACHE_ONLY_ENV


class CacheOnlyError(ValueError):
    """An answer is in no cache layer and computing it is switched off."""


def append_record(path: str | Path, record: dict[str, Any]) -> None:
    """Append one JSON line to a usage log with a single O_APPEND write, so the lines of
    concurrent processes do not interleave."""
    line = json.dumps(record) + "\n"
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line.encode("utf-8"))
    finally:
        os.close(descriptor)


def _log_usage(event: str, key: str, layer: str | None = None) -> None:
    path = os.environ.get(USAGE_LOG_ENV)
    if path:
        append_record(path, {"event": event, "key": key, "layer": layer})


def usage(path: str | Path, since: int = 0) -> dict[str, Any]:
    """What a usage log recorded (from byte offset `since`): answers served per layer,
    answers computed, and every key."""
    hits: dict[str, int] = {}
    computed, refused, keys = 0, 0, set()
    target = Path(path)
    lines = target.read_bytes()[since:].decode("utf-8").splitlines() if target.is_file() else []
    for line in lines:
        record = json.loads(line)
        keys.add(record["key"])
        if record["event"] == "hit":
            hits[record["layer"]] = hits.get(record["layer"], 0) + 1
        elif record["event"] == "refused":
            refused += 1
        else:
            computed += 1
    return {"from_cache": sum(hits.values()), "by_layer": hits, "computed": computed,
            "refused": refused, "keys": sorted(keys)}


def _entry(root: Path, key: str) -> Path:
    return root / key[:2] / f"{key}.json"


class AnswerCache:
    """A folder of cached completions, safe to share between processes, with read-only layers."""

    def __init__(self, root: str | Path | None = None, *,
                 read_first: Sequence[str | Path] | None = None, cache_only: bool | None = None) -> None:
        if root is None:
            from .server import memory_home  # deferred: only the default location needs it

            root = memory_home() / "answer-cache"
        self.root = Path(root)
        if read_first is None:
            read_first = [p for p in os.environ.get(READ_FIRST_ENV, "").split(os.pathsep) if p]
        self.read_first = tuple(Path(p) for p in read_first)
        # None: decided by the environment at each miss (a book kernel may switch it on later).
        self.cache_only = cache_only

    @classmethod
    def from_config(cls, cache: CacheConfig) -> AnswerCache:
        """The cache a configuration names (its `[cache]` section)."""
        return cls(read_first=cache.answers_read_first, cache_only=cache.answers_only)

    def path(self, key: str) -> Path:
        return _entry(self.root, key)

    def get(self, key: str, prompt: str) -> dict[str, Any] | None:
        """The stored record for `key` (read-only layers first), or None when absent,
        unreadable or for another prompt. `record["layer"]` says which folder served it."""
        for layer in (*self.read_first, self.root):
            try:
                record = json.loads(_entry(layer, key).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a missing or damaged entry is a miss; the next put replaces it
            if isinstance(record, dict) and record.get("format") == CACHE_FORMAT \
                    and record.get("prompt") == prompt:
                _log_usage("hit", key, str(layer))
                return {**record, "layer": str(layer)}
        return None

    def export(self, keys: Iterable[str], target: str | Path, *, missing: list[str] | None = None) -> int:
        """Copy the entries for `keys` (from any layer) into folder `target`; return how many.

        A key with no entry anywhere is an error (a published run must be reproducible),
        unless a `missing` list is given: then it is appended there and the rest exported.
        """
        target = Path(target)
        copied = 0
        for key in sorted(set(keys)):
            source = next((_entry(layer, key) for layer in (self.root, *self.read_first)
                           if _entry(layer, key).is_file()), None)
            if source is None:
                if missing is None:
                    raise FileNotFoundError(f"answer cache: no entry for key {key} to export")
                missing.append(key)
                continue
            destination = _entry(target, key)
            if destination.is_file() and destination.read_bytes() == source.read_bytes():
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            temporary = destination.with_name(f".{key}.{os.getpid()}.tmp")
            temporary.write_bytes(source.read_bytes())
            os.replace(temporary, destination)
            copied += 1
        return copied

    def before_computing(self, key: str) -> None:
        """Called on a miss before the model runs; refuses (and logs) it when computing is off."""
        refuse = self.cache_only if self.cache_only is not None else bool(os.environ.get(CACHE_ONLY_ENV))
        if refuse:
            _log_usage("refused", key)
            raise CacheOnlyError(f"answer cache: {key[:16]}... is in no cache layer and "
                                 "computing is switched off (cache.answers_only or "
                                 f"{CACHE_ONLY_ENV}), so it is not computed")

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
        _log_usage("computed", key)
        return target
