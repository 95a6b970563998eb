"""Exhaustive BM25 as the yardstick of the posting arrays, and the per-query BM25 timing.

The reference reads every query term's postings from the chunks' own
tsvectors (`Store.term_postings_from_text`, one pass over the table, never
the arrays), counts document frequencies and the corpus size and length from
the chunk rows, scores *every* chunk with the Okapi formula and sorts them
all. A query is exact when the arrays' top k equals the reference's: the same
chunks in the same order, where scores tie (relative difference at most 1e-9,
float summation order) the order within the tie may differ.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_baseline.store import Store, bm25
from memory_baseline.store.bm25 import postings as posting_arrays
from memory_lab.stats import latency_summary

TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Reference:
    """Postings of the benchmark's query terms, from the text, and the corpus totals."""

    postings: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # key, tf, length, named
    n_chunks: int
    total_length: int
    max_key: int

    @classmethod
    def read(cls, store: Store, terms: Sequence[str]) -> Reference:
        postings = {
            lexeme: (rows["key"].astype(np.int64), rows["tf"].astype(np.float64),
                     rows["length"].astype(np.float64), rows["named"] > 0)
            for lexeme, rows in store.term_postings_from_text(sorted(set(terms))).items()
        }
        n, total, max_key = store.corpus_totals_from_chunks()
        return cls(postings, n, total, max_key)

    def top_k(self, terms: Sequence[str], k: int, k1: float, b: float,
              name_weight: float) -> list[tuple[int, float]]:
        """Every chunk scored, all sorted by (score desc, key); the first k with a score."""
        scores = np.zeros(self.max_key + 1, dtype=np.float64)
        avgdl = self.total_length / max(self.n_chunks, 1)
        for lexeme in dict.fromkeys(terms):
            if lexeme not in self.postings:
                continue
            keys, tf, length, named = self.postings[lexeme]
            weight = bm25.idf(self.n_chunks, len(keys))
            scores[keys] += weight * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
                                      + name_weight * named)
        order = np.lexsort((np.arange(len(scores)), -scores))
        return [(int(i), float(scores[i])) for i in order[:k] if scores[i] > 0]


def same_top_k(found: Sequence[tuple[Any, float]], expected: Sequence[tuple[Any, float]]) -> bool:
    """Same (id, score) lists, up to the order inside score ties (see the module docstring)."""
    if len(found) != len(expected):
        return False
    for (key_f, score_f), (key_e, score_e) in zip(found, expected, strict=True):
        if abs(score_f - score_e) > TIE_TOLERANCE * max(abs(score_e), 1.0):
            return False
        if key_f != key_e:
            # Allowed only inside a tie: the expected list must hold key_f at the same score.
            tied = {k for k, s in expected if abs(s - score_e) <= TIE_TOLERANCE * max(abs(score_e), 1.0)}
            last = expected[-1][1]
            if key_f not in tied and abs(score_e - last) > TIE_TOLERANCE * max(abs(last), 1.0):
                return False
    return True


def bm25_queries(store: Store, term_lists: Sequence[list[str]], *, k: int, k1: float, b: float,
                 name_weight: float, reference: Reference | None, warmup: int = 10) -> dict[str, Any]:
    """`Store.lexical_bm25` timed per query, with its fetch / score / id-lookup parts, and exactness.

    The whole call and its parts are timed in separate runs of the same query
    (so the parts do not include the whole call's timer overhead).
    """
    whole, whole_cpu, fetch, score, names, postings, uncached = [], [], [], [], [], [], []
    exact, mismatched = 0, []
    warm = list(term_lists[:warmup])
    shipped = posting_arrays.SEGMENT_CACHE
    no_cache = bm25.SegmentCache(max_bytes=0, min_postings=shipped.min_postings)
    for position, terms in enumerate([*warm, *term_lists]):
        # The same query with the segment cache off first (every segment sent), then as shipped.
        posting_arrays.SEGMENT_CACHE = no_cache
        try:
            t_uncached = time.perf_counter()
            store.lexical_bm25(terms, k, k1, b, name_weight)
            t_uncached = time.perf_counter() - t_uncached
        finally:
            posting_arrays.SEGMENT_CACHE = shipped
        t0, c0 = time.perf_counter(), time.process_time()
        store.lexical_bm25(terms, k, k1, b, name_weight)
        t1, c1 = time.perf_counter(), time.process_time()
        fetched = store.bm25_fetch(terms)
        t2 = time.perf_counter()
        ranked = bm25.top_k(fetched, k, k1, b, name_weight)
        t3 = time.perf_counter()
        store.hits_for_keys(ranked)
        t4 = time.perf_counter()
        if position < len(warm):
            continue
        whole.append((t1 - t0) * 1000)
        uncached.append(t_uncached * 1000)
        whole_cpu.append((c1 - c0) * 1000)
        fetch.append((t2 - t1) * 1000)
        score.append((t3 - t2) * 1000)
        names.append((t4 - t3) * 1000)
        postings.append(fetched.postings)
        if reference is not None:
            if same_top_k(ranked, reference.top_k(terms, k, k1, b, name_weight)):
                exact += 1
            else:
                mismatched.append(terms)
    out: dict[str, Any] = {
        "k": k, "lexical_bm25": latency_summary(whole),
        # The same call with the segment cache off, just before it: the cache's paired effect.
        "lexical_bm25_segment_cache_off": latency_summary(uncached),
        "segment_cache": {"max_bytes": shipped.max_bytes, "min_postings": shipped.min_postings,
                          "bytes_held_after": shipped.nbytes},
        # This process's CPU time in the call (decoding, scoring, selection; not the
        # server's): wall time minus this is waiting for the server or for a core.
        "lexical_bm25_client_cpu": latency_summary(whole_cpu),
        "parts": {"fetch": latency_summary(fetch), "score_top_k": latency_summary(score),
                  "chunk_ids": latency_summary(names)},
        "postings_per_query": {"mean": round(float(np.mean(postings)), 1),
                               "max": int(np.max(postings))} if postings else {},
    }
    if reference is not None:
        out["exact_match"] = {"queries": len(term_lists), "identical_top_k": exact,
                              "mismatched_terms": mismatched[:10],
                              "reference": "every chunk scored from its tsvector, full sort"}
    return out
