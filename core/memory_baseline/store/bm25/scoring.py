"""Exact BM25 top-k over the fetched posting arrays, with numpy.

The formula is exactly that of the SQL reference `Store.lexical_bm25_exhaustive`:
Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` times the saturated term
frequency, plus ``name_weight`` x idf when the term names the chunk's source.

Scores accumulate into one float64 array indexed by chunk key, rarest term
first; once the common terms left cannot lift a chunk outside those scored so
far into the top k (MaxScore), only the chunks that still can are completed, by
binary search in the common terms' sorted arrays. The selection
(`numpy.argpartition`) runs over scored documents only, and ties are broken by
chunk key, as the SQL reference orders them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .postings import Columns, Fetched, columns


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
