"""The exhaustive references the posting arrays are checked against (tests, benchmarks).

Each reads the chunks' own tsvectors instead of the arrays, so it is an
independent source: `lexical_bm25_exhaustive` ranks in SQL with the same
formula and tie-break as `Lexical.lexical_bm25`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import Hit, IndexSQL
from .search import tsquery_from_terms

# The exhaustive reference for `lexical_bm25`: every chunk containing a query term
# (found through the GIN index) is scored from its own tsvector, straight from the
# text, with the same formula and tie-break. Too slow for queries at scale (it
# re-reads the tsvector of every matching chunk); tests and benchmarks compare
# the posting arrays against it.
EXHAUSTIVE_SQL = """WITH stats AS (
        SELECT n_chunks, total_len::float8 / greatest(n_chunks, 1) AS avgdl
        FROM {s}.corpus_stats LIMIT 1),
    q AS MATERIALIZED (
        SELECT t.lexeme, ln(1 + (st.n_chunks - t.df + 0.5)::float8 / (t.df + 0.5)) AS idf
        FROM {s}.term_stats t, stats st WHERE t.lexeme = ANY(%(terms)s)),
    scored AS (
        SELECT c.chunk_key,
               sum(q.idf * (u.tf * (%(k1)s + 1)
                   / (u.tf + %(k1)s * (1 - %(b)s + %(b)s * c.doc_len / st.avgdl))
                   + CASE WHEN u.lexeme = ANY(c.name_terms) THEN %(name_weight)s ELSE 0 END))
                   AS score
        FROM {s}.chunks c CROSS JOIN stats st
        CROSS JOIN LATERAL (SELECT x.lexeme, coalesce(array_length(x.positions, 1), 1) AS tf
                            FROM unnest(c.tsv) x) u
        JOIN q ON q.lexeme = u.lexeme
        WHERE c.tsv @@ CAST(%(tsquery)s AS tsquery)
        GROUP BY c.chunk_key ORDER BY score DESC, c.chunk_key LIMIT %(limit)s)
    SELECT c.chunk_id, c.source_id, scored.score
    FROM scored JOIN {s}.chunks c ON c.chunk_key = scored.chunk_key
    ORDER BY scored.score DESC, c.chunk_id"""


class Reference(IndexSQL):
    """BM25 statistics and rankings computed from the chunks' text, never the posting arrays."""

    def lexical_bm25_exhaustive(
        self, terms: Sequence[str], limit: int, k1: float, b: float, name_weight: float = 1.0
    ) -> list[Hit]:
        """The same ranking as `lexical_bm25`, computed in SQL from every matching chunk's text."""
        if not terms:
            return []
        rows = self.conn.execute(
            self._q(EXHAUSTIVE_SQL),
            {"terms": list(terms), "k1": float(k1), "b": float(b), "limit": int(limit),
             "name_weight": float(name_weight), "tsquery": tsquery_from_terms(terms)},
        ).fetchall()
        return [Hit(r[0], r[1], float(r[2])) for r in rows]

    def term_postings_from_text(self, terms: Sequence[str]) -> dict[str, np.ndarray]:
        """Each term's (chunk key, tf, chunk length, names the source) read from the tsvectors.

        An independent source for exhaustive scoring in benchmarks (one pass over the
        chunks, never the posting arrays), as structured numpy arrays.
        """
        if not terms:
            return {}
        layout = np.dtype([("key", ">i8"), ("tf", ">i4"), ("length", ">i4"), ("named", ">i4")])
        out: dict[str, np.ndarray] = {}
        with self.conn.cursor(binary=True) as cursor:
            for lexeme, payload in cursor.execute(self._q(
                    "SELECT u.lexeme, string_agg(int8send(c.chunk_key) "
                    "|| int4send(coalesce(array_length(u.positions, 1), 1)) || int4send(c.doc_len) "
                    "|| int4send((u.lexeme = ANY(c.name_terms))::int), '') "
                    "FROM {s}.chunks c, unnest(c.tsv) u WHERE u.lexeme = ANY(%s) GROUP BY 1"),
                    (list(terms),)):
                out[lexeme] = np.frombuffer(bytes(payload), dtype=layout)
        return out

    def corpus_totals_from_chunks(self) -> tuple[int, int, int]:
        """(chunks, total length, largest chunk key) counted from the chunk rows themselves."""
        row = self.conn.execute(self._q(
            "SELECT count(*), coalesce(sum(doc_len), 0), coalesce(max(chunk_key), 0) FROM {s}.chunks"
        )).fetchone()
        return int(row[0]), int(row[1]), int(row[2])
