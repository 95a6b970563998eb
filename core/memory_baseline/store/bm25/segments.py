"""Compaction and checks of the posting segments.

Every INSERT statement on ``chunks`` appends one *delta* segment per term it
contains, so a write never rewrites an existing array; deleting chunks records
their keys in ``bm25_tombstones`` (masked at query time) and their terms in
``bm25_dirty_terms``. Compaction
(`merge_segments`, driven by `Compaction.compact_bm25`) rewrites a term's
segments as one, without its tombstoned postings; each batch of terms is one
transaction, so a crash mid-compaction leaves some terms merged and the rest
as they were, both exact. `check_segments` compares the arrays with the chunk
rows, for `health`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from ..base import IndexSQL, StoreError
from .postings import POSTING, decode, encode


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


class Compaction(IndexSQL):
    """Merging a term's segments, and checking them against the chunks."""

    def bm25_backlog(self) -> dict[str, int]:
        """What compaction would do: terms with several segments, dirty terms, tombstones."""
        row = self.conn.execute(self._q(
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM {s}.bm25_segments GROUP BY lexeme "
            "HAVING count(*) > 1) m), (SELECT count(*) FROM {s}.bm25_dirty_terms), "
            "(SELECT count(*) FROM {s}.bm25_tombstones), (SELECT count(*) FROM {s}.bm25_segments)"
        )).fetchone()
        return {"multi_segment_terms": int(row[0]), "dirty_terms": int(row[1]),
                "tombstones": int(row[2]), "segments": int(row[3])}

    def compact_bm25(self, terms_per_transaction: int = 2000,
                     on_batch: Callable[[int], None] | None = None) -> dict[str, int]:
        """Rewrite every term with several segments or removed postings as one segment.

        Each batch of terms is one transaction under the writers' lock, so a crash
        loses at most the batch in flight and leaves every term exact (merged or
        not). Tombstones are cleared only in the transaction that finds no term left
        to rewrite: until then some segment may still hold their keys.
        """
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise StoreError("compaction commits batch by batch: call it outside a transaction")
        done = {"terms": 0, "transactions": 0, "tombstones_cleared": 0}
        while True:
            with self.conn.transaction():
                self.lock_for_write()
                terms = [r[0] for r in self.conn.execute(self._q(
                    "SELECT lexeme FROM (SELECT lexeme FROM {s}.bm25_segments GROUP BY lexeme "
                    "HAVING count(*) > 1 UNION SELECT lexeme FROM {s}.bm25_dirty_terms) w "
                    "ORDER BY lexeme LIMIT %s"), (int(terms_per_transaction),)).fetchall()]
                done["transactions"] += 1
                if not terms:
                    cleared = self.conn.execute(self._q("DELETE FROM {s}.bm25_tombstones"))
                    done["tombstones_cleared"] = cleared.rowcount
                    return done
                tombstones = np.asarray([r[0] for r in self.conn.execute(self._q(
                    "SELECT chunk_key FROM {s}.bm25_tombstones")).fetchall()], dtype=np.int64)
                by_term: dict[str, list[bytes]] = {}
                with self.conn.cursor(binary=True) as cursor:
                    for lexeme, payload in cursor.execute(self._q(
                            "SELECT lexeme, postings FROM {s}.bm25_segments WHERE lexeme = ANY(%s) "
                            "ORDER BY lexeme, segment"), (terms,)):
                        by_term.setdefault(lexeme, []).append(bytes(payload))
                self.conn.execute(self._q("DELETE FROM {s}.bm25_segments WHERE lexeme = ANY(%s)"),
                                  (terms,))
                with self.conn.cursor().copy(self._q(
                        "COPY {s}.bm25_segments (lexeme, postings) FROM STDIN (FORMAT BINARY)")) as copy:
                    copy.set_types(["text", "bytea"])
                    for lexeme in sorted(by_term):
                        merged = merge_segments(by_term[lexeme], tombstones)
                        if merged:
                            copy.write_row((lexeme, merged))
                self.conn.execute(self._q("DELETE FROM {s}.bm25_dirty_terms WHERE lexeme = ANY(%s)"),
                                  (terms,))
                done["terms"] += len(terms)
            if on_batch:
                on_batch(done["terms"])

    def check_bm25_segments(self) -> SegmentCheck:
        """Decode every segment and compare it with the chunk rows (for `health`)."""
        lengths = dict(self.conn.execute(self._q("SELECT chunk_key, doc_len FROM {s}.chunks")).fetchall())
        tombstones = np.asarray([r[0] for r in self.conn.execute(self._q(
            "SELECT chunk_key FROM {s}.bm25_tombstones")).fetchall()], dtype=np.int64)

        def rows():
            with self.conn.cursor(binary=True) as cursor:
                current, segments = None, []
                for lexeme, payload in cursor.execute(self._q(
                        "SELECT lexeme, postings FROM {s}.bm25_segments ORDER BY lexeme, segment")):
                    if lexeme != current and current is not None:
                        yield current, segments
                        segments = []
                    current = lexeme
                    segments.append(bytes(payload))
                if current is not None:
                    yield current, segments

        return check_segments(rows(), tombstones, lengths)
