"""Okapi BM25 over per-term posting arrays: the format, exact top-k scoring, compaction.

Why arrays. Summing every posting of every query term in SQL, one row per
posting, cost p95 230 ms at 100k chunks and seconds at 1M (a stemmed word
such as ``servic`` is in almost half of the chunks). Holding each term's
postings as one ``bytea`` value, fetched for all query terms in one binary
statement and scored with numpy, returns the same top-k an order of magnitude
faster (the design comparison is in /work/shared/ANCHORS.md and issue 19; our
own figures are in ``benchmarks/results/latency.json`` and ``scale.json``).
A side index outside PostgreSQL (tantivy) is faster still, but would no longer
be transactional with the chunks; these arrays are written by the same
statement-level triggers, in the same transaction, as the chunk rows.

Segments. A term's postings live in one or more segments (rows of
``bm25_segments``): every INSERT statement on ``chunks`` appends one *delta*
segment per term it contains, so a write never rewrites an existing array.
Deleting chunks records their keys in ``bm25_tombstones`` (masked at query
time) and their terms in ``bm25_dirty_terms``. Compaction (`merge_segments`,
driven by `Store.compact_bm25`) rewrites a term's segments as one, without its
tombstoned postings; each batch of terms is one transaction, so a crash
mid-compaction leaves some terms merged and the rest as they were, both exact.
Chunk keys are an identity column, never reused and always increasing, so the
segments of a term, in segment order, are sorted by key and disjoint.

Scores. Document frequencies and corpus size come from ``term_stats`` and
``corpus_stats`` (the trigger-maintained statistics, the source of truth),
read in the same statement and snapshot as the arrays; a posting carries its
chunk's length, which never changes (chunk rows are immutable). The formula is
exactly that of the SQL reference `Store.lexical_bm25_exhaustive`: Lucene's
idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` times the saturated term
frequency, plus ``name_weight`` x idf when the term names the chunk's source.

Top-k. Scores accumulate into one float64 array indexed by chunk key, rarest
term first; once the common terms left cannot lift a chunk outside those
scored so far into the top k (MaxScore), only the chunks that still can are
completed, by binary search in the common terms' sorted arrays. The selection
(`numpy.argpartition`) runs over scored documents only, and ties are broken by
chunk key, as the SQL reference orders them.
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


def idf(n_chunks: int, df: int) -> float:
    """Lucene's BM25 idf, never negative."""
    return float(np.log(1.0 + (n_chunks - df + 0.5) / (df + 0.5)))


# Relative slack on the pruning bound, far above float64 summation error: a chunk
# is skipped only when even its upper bound is clearly below the k-th score.
PRUNE_SLACK = 1e-9
# A binary search in a common term's array costs about this many postings' worth of
# linear scoring (a guess of the right order: ~20 probes, each a cache miss).
SEARCH_COST = 20


@dataclass
class _Term:
    weight: float  # idf
    postings: Columns  # sorted by key (segments in order)
    bound: float  # no posting of the term contributes more than this


def _contributions(postings: Columns, weight: float, k1: float, length_weight: float,
                   length_base: float, name_weight: float, at: np.ndarray | None = None) -> np.ndarray:
    """idf x saturated tf (+ name_weight x idf where the term names the source), per posting
    (or only at the positions `at`)."""
    saturation = postings.saturation(length_weight, length_base)
    part = (saturation if at is None else saturation[at]) * ((k1 + 1) * weight)
    if name_weight and postings.named is not None:
        part += (name_weight * weight) * (postings.named if at is None else postings.named[at])
    return part


def _select(keys: np.ndarray, values: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (key, value) pairs by value desc then key, among positive values."""
    positive = values > 0
    keys, values = keys[positive], values[positive]
    if len(keys) > k:
        # The k-th best value; keep every document that reaches it, so ties at the
        # boundary are broken by key below, not by argpartition's arbitrary order.
        kth = values[np.argpartition(-values, k - 1)[k - 1]]
        keep = values >= kth
        keys, values = keys[keep], values[keep]
    order = np.lexsort((keys, -values))[:k]
    return [(int(keys[i]), float(values[i])) for i in order]


# About this many scores are sampled to bound the k-th best from below (`_top_pool`).
SELECT_SAMPLE = 65_536


def _top_pool(scores: np.ndarray, k: int) -> np.ndarray:
    """The keys of a superset of the k best positive scores of a dense score array.

    At a million chunks a common term scores most of them, and gathering every positive
    score to find the k-th best was the largest part of a query. The k-th best of a
    subset is at most the k-th best of the whole, so the k-th best of an evenly strided
    sample is a floor below which no top-k chunk lies: one comparison pass leaves a few
    hundred chunks (ties at the boundary included).
    """
    sample = scores[::max(1, len(scores) // SELECT_SAMPLE)]
    sample = sample[sample > 0]
    if len(sample) < k:
        return np.flatnonzero(scores > 0)
    return np.flatnonzero(scores >= np.partition(sample, len(sample) - k)[len(sample) - k])


def _kth_best(scores: np.ndarray, k: int) -> float | None:
    """The k-th best positive score, or None when fewer than k chunks score."""
    pool = scores[_top_pool(scores, k)]
    return None if len(pool) < k else float(np.partition(pool, len(pool) - k)[len(pool) - k])


def top_k(
    fetched: Fetched, k: int, k1: float, b: float, name_weight: float
) -> list[tuple[int, float]]:
    """The exact BM25 top `k` as (chunk key, score), by score then key.

    MaxScore over the sorted arrays: terms are scored fully from the rarest up
    until the upper bounds of the remaining (common) terms together fall below
    the k-th best partial score so far; a chunk outside the scored terms then
    cannot reach the top k, and the chunks that still can are looked up in the
    common terms' arrays by binary search instead of scoring every posting.
    """
    if k <= 0 or not fetched.terms or fetched.n_chunks <= 0:
        return []
    avgdl = fetched.total_length / max(fetched.n_chunks, 1)
    length_weight, length_base = k1 * b / avgdl, k1 * (1 - b)
    terms: list[_Term] = []
    for term in fetched.terms:
        parts = [columns(s) for s in term.segments if len(s)]
        if not parts:
            continue
        postings = Columns.concat(parts)
        weight = idf(fetched.n_chunks, term.df)
        named = name_weight > 0 and postings.named is not None and bool(postings.named.any())
        # Saturated tf grows with tf and falls with length: its largest tf over the
        # shortest length bounds every posting of the term.
        top_tf, min_length = postings.top_tf, postings.min_length
        bound = weight * top_tf * (k1 + 1) / (top_tf + length_weight * min_length + length_base)
        terms.append(_Term(weight, postings, bound + (name_weight * weight if named else 0.0)))
    if not terms:
        return []
    terms.sort(key=lambda t: len(t.postings))  # rarest first
    size = 1 + max(int(t.postings.keys[-1]) for t in terms)
    scores = np.zeros(size, dtype=np.float64)
    dead = fetched.tombstones[fetched.tombstones < size] if len(fetched.tombstones) else None
    scored_bound, remaining_bound = 0.0, sum(t.bound for t in terms)
    remaining_postings = sum(len(t.postings) for t in terms)
    scored_postings, pruning = 0, True
    for position, term in enumerate(terms):
        scores[term.postings.keys] += _contributions(term.postings, term.weight, k1, length_weight,
                                                     length_base, name_weight)
        if dead is not None:
            scores[dead] = 0.0  # a removed chunk's partial score must not set the k-th best
        scored_bound += term.bound
        remaining_bound -= term.bound
        remaining_postings -= len(term.postings)
        scored_postings += len(term.postings)
        rest = terms[position + 1:]
        if not pruning or not rest:
            continue
        # Pruning pays only while the rest hold more postings than the scored chunks (those
        # only grow and the rest only shrink: once it does not pay, it never will). The
        # scored postings bound that count from above, so it is counted only when needed.
        if remaining_postings < 2 * scored_postings \
                and remaining_postings < 2 * np.count_nonzero(scores):
            pruning = False
            continue
        # It needs the k-th partial score above the rest's bound; that score is at most
        # `scored_bound`.
        if remaining_bound >= scored_bound:
            continue
        threshold = _kth_best(scores, k)
        if threshold is None or remaining_bound >= threshold * (1 - PRUNE_SLACK):
            continue
        # No chunk below `floor` can reach `threshold` (nor can an unscored one: the floor
        # is positive); complete those that still can, unless binary searches for them
        # would cost more than scoring the rest outright.
        candidates = np.flatnonzero(scores >= threshold * (1 - PRUNE_SLACK) - remaining_bound)
        if len(candidates) * SEARCH_COST * len(rest) > remaining_postings:
            continue
        for other in rest:
            other_keys = other.postings.keys
            found = np.minimum(np.searchsorted(other_keys, candidates), len(other_keys) - 1)
            hit = other_keys[found] == candidates
            scores[candidates[hit]] += _contributions(other.postings, other.weight, k1, length_weight,
                                                      length_base, name_weight, at=found[hit])
        return _select(candidates, scores[candidates], k)
    if dead is not None:
        scores[dead] = 0.0
    keys = _top_pool(scores, k)
    return _select(keys, scores[keys], k)

def merge_segments(segments: Sequence[bytes], tombstones: np.ndarray) -> bytes:
    """A term's segments (in segment order) as one, without tombstoned postings."""
    arrays = [decode(s) for s in segments if len(s)]
    if not arrays:
        return b""
    merged = np.concatenate(arrays)
    if len(tombstones):
        merged = merged[~np.isin(merged["key"].astype(np.int64), tombstones)]
    return encode(merged)


@dataclass(frozen=True)
class SegmentCheck:
    """What the arrays hold, to compare against the statistics (`health`)."""

    live_df: dict[str, int]
    live_postings: int
    malformed_terms: list[str]


def check_segments(
    rows: Iterable[tuple[str, Sequence[bytes]]], tombstones: np.ndarray, chunk_lengths: dict[int, int]
) -> SegmentCheck:
    """Live postings per term; a term is malformed when its arrays contradict the chunks.

    Malformed: a byte length that is not whole postings, keys not strictly
    increasing across the term's segments, a live key that is no chunk, a stored
    length that differs from the chunk's, or a term frequency of zero.
    """
    live_df: dict[str, int] = {}
    malformed: list[str] = []
    keys_known = np.fromiter(chunk_lengths.keys(), dtype=np.int64, count=len(chunk_lengths))
    lengths_known = np.fromiter(chunk_lengths.values(), dtype=np.int64, count=len(chunk_lengths))
    order = np.argsort(keys_known)
    keys_known, lengths_known = keys_known[order], lengths_known[order]
    total = 0
    for lexeme, segments in rows:
        try:
            arrays = [decode(s) for s in segments]
        except ValueError:
            malformed.append(lexeme)
            continue
        postings = np.concatenate(arrays) if arrays else np.zeros(0, dtype=POSTING)
        keys = postings["key"].astype(np.int64)
        live = ~np.isin(keys, tombstones) if len(tombstones) else np.ones(len(keys), dtype=bool)
        keys, lengths = keys[live], postings["length"][live].astype(np.int64)
        position = np.searchsorted(keys_known, keys)
        found = position < len(keys_known)
        found[found] = keys_known[position[found]] == keys[found]
        if (not found.all() or np.any(np.diff(postings["key"].astype(np.int64)) <= 0)
                or np.any(lengths_known[position] != lengths) or np.any(postings["tf"] == 0)):
            malformed.append(lexeme)
        if int(live.sum()):
            live_df[lexeme] = int(live.sum())
        total += int(live.sum())
    return SegmentCheck(live_df, total, malformed)
