"""The lexical search: query terms, one fetch of their posting arrays, exact BM25 top-k.

Everything one query needs (corpus size and length, each term's df and
segments, the tombstones) is read by one binary statement, so in one snapshot,
and scored with numpy (`scoring.top_k`). ``tsrank-cd``, PostgreSQL's own
`ts_rank_cd` over the same tsvector, is kept as a named condition for
comparison: it has no idf.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from psycopg import sql

from ...identifiers import IDENTIFIER_PATTERN, extract_identifiers
from ..base import Hit, IndexSQL
from . import postings
from .postings import Columns, Fetched, TermPostings, decode
from .scoring import top_k

# Everything one BM25 query reads, in one statement and so one snapshot: the corpus
# size and length, each query term's df with its segments, and the tombstones. A segment
# whose row version (segment id, xmin) the client already holds comes back without its
# bytes (`postings.SegmentCache`): the postings column is then never detoasted or sent.
FETCH_SQL = """SELECT 'corpus'::text, NULL::text, n_chunks, int8send(total_len), NULL::text
        FROM {s}.corpus_stats
    UNION ALL
    SELECT 'term', t.lexeme, t.df::bigint,
           CASE WHEN g.segment::text || ':' || g.xmin::text = ANY(%(held)s::text[]) THEN NULL
                ELSE g.postings END,
           g.segment::text || ':' || g.xmin::text
        FROM {s}.term_stats t JOIN {s}.bm25_segments g ON g.lexeme = t.lexeme
        WHERE t.lexeme = ANY(%(terms)s)
    UNION ALL
    SELECT 'tombstones', NULL, count(*), coalesce(string_agg(int8send(chunk_key), ''), ''), NULL
        FROM {s}.bm25_tombstones"""


def tsquery_from_terms(terms: Iterable[str]) -> str:
    """An OR of quoted lexemes, in tsquery input syntax (no re-normalisation).

    Quoting makes each term a literal lexeme, so punctuation inside an
    identifier cannot be read as a tsquery operator.
    """
    quoted = []
    for term in terms:
        escaped = term.replace("\\", "\\\\").replace("'", "''")
        quoted.append(f"'{escaped}'")
    return " | ".join(quoted)


def query_terms(store: Lexical, query: str, fragments: bool = True) -> list[str]:
    """Identifier terms of the query plus the English lexemes of the query.

    With `fragments` (the default) the lexemes come from all of the query, so the
    parser's fragments of an identifier (`il`, `-6` for `IL-6`) are kept beside the
    whole identifier: scientific names are also written `IL6` or `IL 6`, and the whole
    identifier, rarer than its fragments, still weighs most in BM25. Without, the
    lexemes come from the query with its identifiers blanked out. Which one serves
    better is measured (`retrieval.identifier_fragments`, chosen on SciFact's train split).
    """
    identifiers = extract_identifiers(query)
    text = query if fragments or not identifiers else IDENTIFIER_PATTERN.sub(" ", query)
    return list(dict.fromkeys(identifiers + store.query_lexemes(text)))


class Lexical(IndexSQL):
    """The lexical rankers (BM25 over the posting arrays, `ts_rank_cd`) and the lookups by term."""

    def query_lexemes(self, query: str) -> list[str]:
        """The English lexemes PostgreSQL derives from `query` (stemmed, stop words removed)."""
        row = self.conn.execute(
            "SELECT coalesce(array_agg(lexeme ORDER BY lexeme), '{}') "
            "FROM unnest(to_tsvector('english', %s))",
            (query,),
            prepare=False,
        ).fetchone()
        return list(row[0]) if row else []

    def rare_terms(self, terms: Sequence[str], share: float, minimum: int) -> set[str]:
        """The terms held by at most max(minimum, share x chunks) chunks (and by at least one)."""
        if not terms:
            return set()
        rows = self.conn.execute(
            self._q(
                "SELECT t.lexeme FROM {s}.term_stats t, {s}.corpus_stats c "
                "WHERE t.lexeme = ANY(%s) AND t.df <= greatest(%s, c.n_chunks * %s)"
            ),
            (list(terms), int(minimum), float(share)),
        ).fetchall()
        return {r[0] for r in rows}

    def named_chunks(self, terms: Sequence[str], limit: int) -> list[Hit]:
        """Chunks whose name terms hold one of `terms` (the files a query names), first chunks first.

        Separate from the BM25 SQL on purpose: it is a lookup by name (GIN on `name_terms`),
        not a ranking; the score is 0.
        """
        if not terms:
            return []
        rows = self.conn.execute(
            self._q(
                "SELECT chunk_id, source_id FROM {s}.chunks WHERE name_terms && %s::text[] "
                "ORDER BY ordinal, source_id LIMIT %s"
            ),
            (list(terms), int(limit)),
        ).fetchall()
        return [Hit(r[0], r[1], 0.0) for r in rows]

    def lexical_bm25(
        self, terms: Sequence[str], limit: int, k1: float, b: float, name_weight: float = 1.0
    ) -> list[Hit]:
        """Okapi BM25 top `limit` over the query terms' posting arrays (exact; see `bm25`).

        A query term that names the chunk's source (path, file name or stem) adds
        `name_weight` x idf, a second field in the manner of BM25F: a question naming
        `adr-007` ranks the file of that name above files that merely mention it.
        """
        if not terms:
            return []
        ranked = top_k(self.bm25_fetch(terms), int(limit), float(k1), float(b), float(name_weight))
        return self.hits_for_keys(ranked)

    def bm25_fetch(self, terms: Sequence[str]) -> Fetched:
        """The statistics, segments and tombstones of one query, in one binary statement.

        Large segments already decoded by an earlier query of this process are taken from
        `postings.SEGMENT_CACHE` when the snapshot still sees the very row version they came
        from; the statement returns every other segment's bytes. A write, a removal's
        tombstone or a compaction is therefore visible to the next query as before.
        """
        unique = list(dict.fromkeys(terms))
        scope = self._cache_scope()
        held = postings.SEGMENT_CACHE.held(scope, unique)  # pinned for this query
        parts: dict[str, list[tuple[int, Columns]]] = {}
        df: dict[str, int] = {}
        n_chunks = total_length = 0
        tombstones = np.zeros(0, dtype=np.int64)
        with self.conn.cursor(binary=True) as cursor:
            for kind, lexeme, number, payload, version in cursor.execute(
                    self._q(FETCH_SQL), {"terms": unique, "held": list(held)}):
                if kind == "term":
                    if payload is None:
                        segment = held[version]
                    else:
                        segment = Columns.of(decode(bytes(payload)))
                        postings.SEGMENT_CACHE.put(scope, lexeme, version, segment)
                    parts.setdefault(lexeme, []).append((int(version.split(":", 1)[0]), segment))
                    df[lexeme] = int(number)
                elif kind == "corpus":
                    n_chunks, total_length = int(number), int.from_bytes(payload, "big", signed=True)
                elif number:
                    tombstones = np.frombuffer(bytes(payload), dtype=">i8").astype(np.int64)
        # Segment order is key order (chunk keys only grow); the join need not return it.
        return Fetched(
            n_chunks, total_length,
            tuple(TermPostings(t, df[t], tuple(a for _, a in sorted(parts[t], key=lambda p: p[0])))
                  for t in sorted(parts)),
            tombstones)

    def _cache_scope(self) -> tuple[str, str, str]:
        """Which server, database and index a cached segment belongs to."""
        info = self.conn.info
        return (f"{info.host}:{info.port}", info.dbname, self.index)

    def hits_for_keys(self, ranked: Sequence[tuple[int, float]]) -> list[Hit]:
        """Chunk ids for (chunk key, score) pairs, ordered by score then chunk id."""
        if not ranked:
            return []
        rows = self.conn.execute(
            self._q("SELECT chunk_key, chunk_id, source_id FROM {s}.chunks WHERE chunk_key = ANY(%s)"),
            ([key for key, _ in ranked],),
        ).fetchall()
        names = {r[0]: (r[1], r[2]) for r in rows}
        hits = [Hit(*names[key], score) for key, score in ranked if key in names]
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def lexical_tsrank_cd(self, terms: Sequence[str], limit: int) -> list[Hit]:
        """The chapter's lexical path: OR-ed terms ranked by `ts_rank_cd` (kept for comparison)."""
        if not terms:
            return []
        rows = self.conn.execute(
            self._q(
                """SELECT chunk_id, source_id, ts_rank_cd(tsv, q) AS score
                   FROM {s}.chunks, CAST(%(q)s AS tsquery) AS q
                   WHERE tsv @@ q ORDER BY score DESC, chunk_id LIMIT %(limit)s"""
            ),
            {"q": tsquery_from_terms(terms), "limit": int(limit)},
        ).fetchall()
        return [Hit(r[0], r[1], float(r[2])) for r in rows]

    def explain_lexical_bm25(self, terms: Sequence[str]) -> str:
        """`EXPLAIN ANALYZE` of the statement `lexical_bm25` sends (for benchmarks and the book)."""
        return "\n".join(
            r[0]
            for r in self.conn.execute(
                sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + self._q(FETCH_SQL),
                {"terms": list(dict.fromkeys(terms)), "held": []}, prepare=False,
            ).fetchall()
        )

