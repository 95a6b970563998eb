"""The schema of an index: created from `schema.sql`, upgraded, described, dropped.

One schema per index. Tables (the DDL is in ``schema.sql``, shipped as package data):

- ``representations``: a chunker configuration plus an embedder identity; every
  chunk belongs to exactly one, so a changed chunker or encoder is visible.
- ``sources``: one row per observed file: id (path relative to the corpus
  root), kind, content hash, size, the artifact's own timestamp, when it was
  last observed and whether that observation succeeded.
- ``chunks``: text and character span of each chunk, a stored tsvector (English
  lexemes plus identifier terms, see `identifiers`) with a GIN index, its BM25
  length, and its embedding (pgvector; HNSW with cosine ops where built).
- ``term_stats``, ``corpus_stats``: BM25 statistics kept by statement-level
  triggers on ``chunks`` in the same transaction as the chunk rows, so they can
  never drift from the text they describe. Chunk rows are immutable: a changed
  source is replaced (delete + insert), never updated.
- ``bm25_segments``, ``bm25_tombstones``, ``bm25_dirty_terms``: per-term posting
  arrays written by the same triggers (an append-only delta per insert
  statement, tombstones for deleted chunks) and merged by `Store.compact_bm25`;
  the format and the scoring are in `memory_baseline.store.bm25`.

The tsvector is a stored generated column rather than an expression index:
measured on SciFact, an expression GIN index made the lexical query about 20x
slower (p50 632 ms vs 32 ms), because every candidate row re-parses its text.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from psycopg import sql

from .base import IndexSQL, StoreError

SCHEMA_VERSION = 2  # 2: BM25 posting arrays replace the row-per-posting table


@cache
def schema_ddl() -> str:
    """The DDL template: `{s}` the index's schema, `{dim}` the vector dimension."""
    return files(__package__).joinpath("schema.sql").read_text(encoding="utf-8")


class Schema(IndexSQL):
    """Creating, checking and describing the index's tables."""

    def _ddl(self, dimension: int | None) -> sql.Composed:
        return sql.SQL(schema_ddl()).format(s=self.schema, dim=sql.Literal(dimension))

    def exists(self) -> bool:
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{self.index}".chunks',)
        ).fetchone()
        return bool(row and row[0])

    def require(self) -> None:
        if not self.exists():
            raise StoreError(
                f"index {self.index!r} does not exist: run `memory-baseline init --index "
                f"{self.index}` and `ingest` first"
            )
        if not self.has_posting_arrays():
            raise StoreError(
                f"index {self.index!r} has the version-1 BM25 layout: run `memory-baseline "
                "refresh` (or `ingest`) once to move it to posting arrays"
            )
        if not self.has_line_ranges():
            raise StoreError(
                f"index {self.index!r} was made before chunks kept their line ranges: run "
                "`memory-baseline refresh` (or `ingest`) once to add them"
            )

    def create(self, dimension: int) -> bool:
        """Create the schema if absent; returns True when it was created now.

        The writers' lock is taken first and existence checked under it: two first
        writes of a new index (two refreshes, `init` beside `refresh`) then wait for
        each other instead of racing on `CREATE SCHEMA` (a unique violation).
        """
        with self.conn.transaction():
            self.lock_for_write()
            if self._exists_in_catalog():
                current = self.dimension()
                if current is not None and current != dimension:
                    raise StoreError(
                        f"index {self.index!r} stores {current}-d vectors, the configured "
                        f"embedder makes {dimension}-d ones: run `refresh` to re-embed, or "
                        "use another index"
                    )
                self.upgrade_bm25()
                self.upgrade_lines()
                return False
            self.conn.execute(self._ddl(dimension))
            self.set_meta("schema_version", SCHEMA_VERSION)
        return True

    def _exists_in_catalog(self) -> bool:
        """`exists()` read from the catalog tables, not the session's catalog cache.

        After waiting for the writers' lock, a cached "no such schema" from before
        the wait can still answer name lookups (an advisory lock does not process
        catalog invalidations), so `CREATE SCHEMA IF NOT EXISTS` would collide.
        """
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'chunks')",
            (self.index,),
        ).fetchone()
        return bool(row and row[0])

    def has_line_ranges(self) -> bool:
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c "
            "ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'chunks' AND a.attname = 'line_start' "
            "AND NOT a.attisdropped)", (self.index,)).fetchone()
        return bool(row and row[0])

    def upgrade_lines(self) -> bool:
        """Give an index made before line ranges were kept its two columns; True when it did.

        Instant (nullable columns); the next refresh re-chunks the sources whose chunks have
        none, reusing their stored vectors. Writers call it through `create`.
        """
        if self.has_line_ranges():
            return False
        self.conn.execute(self._q("ALTER TABLE {s}.chunks ADD COLUMN IF NOT EXISTS line_start integer, "
                                  "ADD COLUMN IF NOT EXISTS line_end integer"))
        return True

    def upgrade_bm25(self) -> bool:
        """Move a version-1 index (one row per posting) to posting arrays; True when it did.

        The arrays are rebuilt from the chunks' own tsvectors, one segment per term,
        in one transaction (a savepoint inside the caller's). Writers call it through
        `create`; readers of a version-1 index get an error that says to refresh.
        """
        if self.has_posting_arrays():
            return False
        with self.conn.transaction():
            self.lock_for_write()
            self.conn.execute(self._ddl(self.dimension()))
            self.conn.execute(self._q("DROP TABLE IF EXISTS {s}.postings"))
            self.conn.execute(self._q(
                "INSERT INTO {s}.bm25_segments (lexeme, postings) "
                "SELECT u.lexeme, string_agg(int4send(c.chunk_key::int4) "
                "|| int2send((CASE WHEN u.lexeme = ANY(c.name_terms) THEN -1 ELSE 1 END "
                "* coalesce(array_length(u.positions, 1), 1))::int2) || int2send(c.doc_len::int2), '' "
                "ORDER BY c.chunk_key) FROM {s}.chunks c, unnest(c.tsv) u GROUP BY u.lexeme"))
            self.set_meta("schema_version", SCHEMA_VERSION)
        return True

    def has_posting_arrays(self) -> bool:
        row = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                (f'"{self.index}".bm25_segments',)).fetchone()
        return bool(row and row[0])

    def drop(self) -> None:
        with self.conn.transaction():
            self.conn.execute(self._q("DROP SCHEMA IF EXISTS {s} CASCADE"))

    def dimension(self) -> int | None:
        row = self.conn.execute(
            """SELECT a.atttypmod FROM pg_attribute a
               WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding'""",
            (f'"{self.index}".chunks',),
        ).fetchone()
        return int(row[0]) if row and row[0] and row[0] > 0 else None

    def set_meta(self, key: str, value: object) -> None:
        self.conn.execute(
            self._q(
                "INSERT INTO {s}.meta VALUES (%s, %s::jsonb) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            (key, json.dumps(value)),
        )

    def get_meta(self, key: str) -> object | None:
        row = self.conn.execute(self._q("SELECT value FROM {s}.meta WHERE key = %s"), (key,)).fetchone()
        return row[0] if row else None

    def counts(self) -> dict[str, int]:
        row = self.conn.execute(
            self._q(
                "SELECT (SELECT count(*) FROM {s}.sources), (SELECT count(*) FROM {s}.chunks), "
                "(SELECT count(*) FROM {s}.sources WHERE observation_status = 'failed')"
            )
        ).fetchone()
        return {"sources": int(row[0]), "chunks": int(row[1]), "failed_observations": int(row[2])}

    def storage(self) -> dict[str, Any]:
        """Bytes on disk of each table (with its indexes and TOAST) and of each index."""
        tables = ("chunks", "bm25_segments", "bm25_tombstones", "bm25_dirty_terms", "term_stats",
                  "sources")
        sizes = {t: int(self.conn.execute("SELECT pg_total_relation_size(%s)",
                                          (f'"{self.index}".{t}',)).fetchone()[0]) for t in tables}
        indexes = {
            name: int(size) for name, size in self.conn.execute(
                "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid "
                "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = %s ORDER BY 1",
                (self.index,)).fetchall()
        }
        segment_bytes, postings = self.conn.execute(self._q(
            "SELECT coalesce(sum(octet_length(postings)), 0), "
            "coalesce(sum(octet_length(postings)), 0) / 8 FROM {s}.bm25_segments")).fetchone()
        return {"bytes": sizes, "index_bytes": indexes, "total_bytes": sum(sizes.values()),
                "bm25_array_bytes": int(segment_bytes), "postings": int(postings)}

    def analyze(self) -> None:
        """Refresh planner statistics and the visibility map (index-only BM25 scans)."""
        previous = self.conn.autocommit
        self.conn.autocommit = True
        try:
            for table in ("chunks", "bm25_segments", "term_stats", "sources"):
                self.conn.execute(
                    sql.SQL("VACUUM (ANALYZE) {s}.{t}").format(s=self.schema, t=sql.Identifier(table))
                )
        finally:
            self.conn.autocommit = previous
