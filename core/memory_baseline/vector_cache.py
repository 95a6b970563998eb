"""The vector cache: a document's embedding, stored under the encoder's identity and the exact text.

Encoding is the slow part of indexing on a CPU (all-mpnet-base-v2 needs minutes for a few
thousand passages on 2 cores), and a book rebuild indexes the same texts with the same
encoders again. The key of a vector is the encoder's `EmbedderIdentity.key()` (model,
revision or file hash, dimension, prefixes, truncation) and the SHA-256 of the text, so a
changed model, prefix or text is a miss, never a stale hit. Query vectors are not cached:
their encoding time is what the chapters measure.

Off unless switched on: `MEMORY_BASELINE_VECTOR_CACHE` names the writable folder (the book
runner sets it for its kernels; a user's `ingest` computes every vector as before).
`MEMORY_BASELINE_VECTOR_CACHE_PATH` lists read-only folders searched first (the published
run's, `book/published/vector-cache`), and `MEMORY_BASELINE_VECTOR_CACHE_LOG` names a file
that gets one JSON line per batch saying which vectors were served and which computed, so
`publish` can export exactly the vectors the book used and the log can count them.

Layout: `<folder>/<identity key>/<digest>.npz`, each file one batch of computed vectors
(`digests`, `vectors` float32), written to a temporary name and renamed into place.
The vectors are stored exactly as computed (float32), so a rebuild from the cache gives
the published figures to the last bit.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .answer_cache import append_record
from .config import VECTOR_CACHE_ENV, VECTOR_READ_FIRST_ENV, CacheConfig
from .hashing import content_digest

WRITE_ENV = VECTOR_CACHE_ENV
READ_FIRST_ENV = VECTOR_READ_FIRST_ENV
USAGE_LOG_ENV = "MEMORY_BASELINE_VECTOR_CACHE_LOG"


def _log_usage(identity_key: str, served: Mapping[str, list[str]], computed: list[str]) -> None:
    path = os.environ.get(USAGE_LOG_ENV)
    if path:
        append_record(path, {"embedder": identity_key, "served": served, "computed": computed})


def usage(path: str | Path, since: int = 0) -> dict[str, Any]:
    """What a usage log recorded (from byte offset `since`): vectors served per layer, vectors
    computed, and the digests used per encoder identity."""
    by_layer: dict[str, int] = {}
    computed = 0
    used: dict[str, set[str]] = {}
    target = Path(path)
    lines = target.read_bytes()[since:].decode("utf-8").splitlines() if target.is_file() else []
    for line in lines:
        record = json.loads(line)
        digests = used.setdefault(record["embedder"], set())
        for layer, served in record["served"].items():
            by_layer[layer] = by_layer.get(layer, 0) + len(served)
            digests.update(served)
        computed += len(record["computed"])
        digests.update(record["computed"])
    return {"from_cache": sum(by_layer.values()), "by_layer": by_layer, "computed": computed,
            "used": {key: sorted(digests) for key, digests in used.items()}}


class VectorCache:
    """Folders of cached document vectors: a writable one and read-only layers searched first."""

    def __init__(self, root: str | Path, *, read_first: Sequence[str | Path] = ()) -> None:
        self.root = Path(root)
        self.read_first = tuple(Path(p) for p in read_first)
        self._loaded: dict[str, dict[str, tuple[str, np.ndarray]]] = {}

    @classmethod
    def from_config(cls, cache: CacheConfig) -> VectorCache | None:
        """The vector cache a configuration names, or None when it names none."""
        return cls(cache.vectors, read_first=cache.vectors_read_first) if cache.vectors else None

    @classmethod
    def from_environment(cls) -> VectorCache | None:
        root = os.environ.get(WRITE_ENV)
        if not root:
            return None
        layers = [p for p in os.environ.get(READ_FIRST_ENV, "").split(os.pathsep) if p]
        return cls(root, read_first=layers)

    def _vectors(self, identity_key: str) -> dict[str, tuple[str, np.ndarray]]:
        """digest -> (layer, vector) for one encoder, read once per process; earlier layers win."""
        if identity_key not in self._loaded:
            found: dict[str, tuple[str, np.ndarray]] = {}
            for layer in (*self.read_first, self.root):
                for path in sorted((layer / identity_key).glob("*.npz")):
                    try:
                        with np.load(path) as batch:
                            digests, vectors = batch["digests"], batch["vectors"]
                    except (OSError, ValueError, KeyError):
                        continue  # a damaged batch is a miss; its texts are computed again
                    for digest, vector in zip(digests.tolist(), vectors, strict=True):
                        found.setdefault(str(digest), (str(layer), vector))
            self._loaded[identity_key] = found
        return self._loaded[identity_key]

    def known(self, identity_key: str) -> set[str]:
        """Every digest with a vector for this encoder, in any layer."""
        return set(self._vectors(identity_key))

    def get(self, identity_key: str, digests: Iterable[str]) -> dict[str, tuple[str, np.ndarray]]:
        """The cached (layer, vector) of each digest that has one."""
        known = self._vectors(identity_key)
        return {d: known[d] for d in digests if d in known}

    def put(self, identity_key: str, digests: Sequence[str], vectors: np.ndarray) -> Path:
        """Store one batch of computed vectors in the writable folder."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(digests) != len(vectors):
            raise ValueError(f"vector cache: {len(digests)} digests for {len(vectors)} vectors")
        written = self._write(self.root / identity_key, list(digests), vectors)
        if identity_key in self._loaded:  # keep this process's view current without rereading
            for digest, vector in zip(digests, vectors, strict=True):
                self._loaded[identity_key].setdefault(digest, (str(self.root), vector))
        return written

    def _write(self, folder: Path, digests: list[str], vectors: np.ndarray) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256("\n".join(digests).encode("ascii")).hexdigest()[:32]
        target = folder / f"{name}.npz"
        temporary = folder / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp.npz"
        try:
            np.savez(temporary, digests=np.asarray(digests), vectors=vectors)
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        return target

    def export(self, used: Mapping[str, Iterable[str]], target: str | Path) -> int:
        """Write the vectors in `used` (identity key -> digests) to folder `target`, one file per
        encoder; return how many. A digest with no vector in any layer is an error: a published
        run must be reproducible."""
        written = 0
        for identity_key, digests in sorted(used.items()):
            wanted = sorted(set(digests))
            found = self.get(identity_key, wanted)
            missing = [d for d in wanted if d not in found]
            if missing:
                raise FileNotFoundError(f"vector cache: {len(missing)} vectors of {identity_key} "
                                        f"are in no layer (first {missing[0][:16]}...)")
            if wanted:
                self._write(Path(target) / identity_key, wanted,
                            np.stack([found[d][1] for d in wanted]).astype(np.float32))
                written += len(wanted)
        return written


class CachedEmbedder:
    """An embedder whose document vectors come from a `VectorCache` when it holds them.

    Texts the cache lacks are encoded by the wrapped embedder in one call (each distinct
    text once) and stored; queries always go to the wrapped embedder. Everything else
    (identity, traced query paths) is the wrapped embedder's.
    """

    def __init__(self, inner: Any, cache: VectorCache) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.cache = cache
        self.served = 0    # document vectors read from the cache so far, in this process
        self.computed = 0  # and encoded by the wrapped embedder

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        key = self.identity.key()
        digests = [content_digest(t) for t in texts]
        found = self.cache.get(key, digests)
        missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in found}
        if missing:
            computed = np.asarray(self.inner.embed_documents(list(missing.values()), progress=progress),
                                  dtype=np.float32)
            self.cache.put(key, list(missing), computed)
            found.update({d: (str(self.cache.root), v) for d, v in zip(missing, computed, strict=True)})
        served: dict[str, list[str]] = {}
        for digest in dict.fromkeys(digests):
            if digest not in missing:
                served.setdefault(found[digest][0], []).append(digest)
        _log_usage(key, served, list(missing))
        self.served += sum(len(d) for d in served.values())
        self.computed += len(missing)
        if not texts:
            return np.zeros((0, self.identity.dimension), dtype=np.float32)
        return np.stack([found[d][1] for d in digests]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)
