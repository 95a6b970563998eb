"""The posting format: one term's postings as a big-endian array, decoded once and cached.

A term's postings live in one or more segments (rows of ``bm25_segments``),
written by the triggers of ``schema.sql`` with int4send/int2send. Segments of
a term, in segment order, are sorted by chunk key and disjoint: chunk keys are
an identity column, never reused and always increasing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

# One posting, 8 bytes, big-endian because the triggers write it with
# int4send/int2send: chunk key, term frequency (negative when the term also
# names the chunk's source), chunk length in lexemes.
POSTING = np.dtype([("key", ">i4"), ("tf", ">i2"), ("length", ">i2")])
MAX_TF = MAX_LENGTH = 32767


@dataclass(frozen=True)
class TermPostings:
    """The live segments of one query term, with its document frequency."""

    lexeme: str
    df: int
    segments: tuple[bytes | Columns, ...]  # raw bytes, or the cached decoded columns


@dataclass(frozen=True)
class Fetched:
    """Everything one BM25 query needs, read in one statement (one snapshot)."""

    n_chunks: int
    total_length: int
    terms: tuple[TermPostings, ...]
    tombstones: np.ndarray  # int64 chunk keys removed but maybe still in segments

    @property
    def postings(self) -> int:
        return sum(len(s) if isinstance(s, Columns) else len(decode(s))
                   for t in self.terms for s in t.segments)


def decode(segment: bytes) -> np.ndarray:
    """A segment as a structured array of POSTING (a view, no copy)."""
    if len(segment) % POSTING.itemsize:
        raise ValueError(f"a posting segment of {len(segment)} bytes is not a whole number of postings")
    return np.frombuffer(segment, dtype=POSTING)


@dataclass(frozen=True)
class Columns:
    """A segment's postings as native arrays, ready to score: decoded once, then cached.

    The wire format is big-endian and packed (8 bytes a posting); scoring wants native
    integers and floats. Converting 1.8 million postings per query was a third of the
    scoring time at a million chunks, so a cached segment keeps its converted columns,
    and with them what scoring derives from them alone (see `saturation`).
    """

    keys: np.ndarray  # intp, strictly increasing
    tf: np.ndarray  # float64, the term frequency (its sign stripped)
    length: np.ndarray  # float64, the chunk's length in lexemes
    named: np.ndarray | None  # bool, True where the term names the chunk's source; None if nowhere
    # The last `saturation` computed, by its (length_weight, length_base).
    _saturation: dict[tuple[float, float], np.ndarray] = field(
        default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """Bytes held, the saturation column counted whether computed yet or not."""
        return self.keys.nbytes + self.tf.nbytes + self.length.nbytes + 8 * len(self.keys) + \
            (self.named.nbytes if self.named is not None else 0)

    @cached_property
    def top_tf(self) -> float:
        return float(self.tf.max())

    @cached_property
    def min_length(self) -> float:
        return float(self.length.min())

    def saturation(self, length_weight: float, length_base: float) -> np.ndarray:
        """tf / (tf + length_base + length_weight x length) per posting: BM25's tf part.

        It depends on k1, b and the mean chunk length only, which change when the index
        does, so a cached segment keeps the last one and most queries score with one
        multiplication per posting instead of five operations.
        """
        key = (length_weight, length_base)
        found = self._saturation.get(key)
        if found is None:
            denominator = self.length * length_weight
            denominator += length_base
            denominator += self.tf
            found = self.tf / denominator
            self._saturation.clear()  # two threads may both compute it: the same values
            self._saturation[key] = found
        return found

    @classmethod
    def of(cls, postings: np.ndarray) -> Columns:
        raw_tf = postings["tf"]
        named = raw_tf < 0
        return cls(postings["key"].astype(np.intp), np.abs(raw_tf.astype(np.float64)),
                   postings["length"].astype(np.float64), named if named.any() else None)

    @classmethod
    def concat(cls, parts: Sequence[Columns]) -> Columns:
        if len(parts) == 1:
            return parts[0]
        named = None
        if any(p.named is not None for p in parts):
            named = np.concatenate([p.named if p.named is not None else np.zeros(len(p), dtype=bool)
                                    for p in parts])
        return cls(np.concatenate([p.keys for p in parts]), np.concatenate([p.tf for p in parts]),
                   np.concatenate([p.length for p in parts]), named)


def columns(segment: bytes | Columns) -> Columns:
    """Any stored form of a segment as `Columns`."""
    return segment if isinstance(segment, Columns) else Columns.of(decode(segment))


def encode(postings: np.ndarray) -> bytes:
    return np.ascontiguousarray(postings, dtype=POSTING).tobytes()


class SegmentCache:
    """Decoded large segments kept between queries, keyed by the row version they came from.

    At a million chunks a common stem's segment holds hundreds of thousands of postings;
    sending it from the server for every query was a third of BM25's time. A segment row
    is never updated in place (writes append delta segments, compaction deletes rows and
    inserts new ones), so its id and `xmin` name its bytes for good: the fetch statement
    sends the versions this process holds and gets NULL instead of bytes for those its
    snapshot still sees. What a snapshot does not see is never used, so results stay
    exact and every write is visible to the next query. Only segments of at least
    `min_postings` are kept (small ones cost less to send than to track), least recently
    used first out past `max_bytes`. Thread-safe: the hybrid path fetches on two threads.
    """

    def __init__(self, max_bytes: int, min_postings: int) -> None:
        self.max_bytes, self.min_postings = max_bytes, min_postings
        # (scope, version) -> (lexeme, columns); the lexeme finds the term's index entry on eviction
        self._entries: OrderedDict[tuple[tuple[str, ...], str], tuple[str, Columns]] = OrderedDict()
        self._by_term: dict[tuple[tuple[str, ...], str], set[str]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def held(self, scope: tuple[str, ...], lexemes: Iterable[str]) -> dict[str, Columns]:
        """The cached segments of `lexemes` by version; the caller keeps them alive for its query."""
        found: dict[str, Columns] = {}
        with self._lock:
            for lexeme in lexemes:
                for version in self._by_term.get((scope, lexeme), ()):
                    key = (scope, version)
                    self._entries.move_to_end(key)
                    found[version] = self._entries[key][1]
        return found

    def put(self, scope: tuple[str, ...], lexeme: str, version: str, postings: Columns) -> None:
        if len(postings) < self.min_postings or postings.nbytes > self.max_bytes:
            return
        key = (scope, version)
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (lexeme, postings)
            self._by_term.setdefault((scope, lexeme), set()).add(version)
            self._bytes += postings.nbytes
            while self._bytes > self.max_bytes:
                (old_scope, old_version), (old_lexeme, old) = self._entries.popitem(last=False)
                self._bytes -= old.nbytes
                versions = self._by_term[(old_scope, old_lexeme)]
                versions.discard(old_version)
                if not versions:
                    del self._by_term[(old_scope, old_lexeme)]

    @property
    def nbytes(self) -> int:
        return self._bytes


# 1 GiB of decoded columns (33 bytes a posting with the saturation column: 32M postings,
# over a third of a million-chunk index's) and segments of at least 4,096 postings: rarer
# terms are fetched every time.
SEGMENT_CACHE = SegmentCache(max_bytes=2**30, min_postings=4096)
