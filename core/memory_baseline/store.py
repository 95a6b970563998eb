"""The PostgreSQL store: schema, writes and the search SQL of one index.

One schema per index (a validated name, always quoted with
`psycopg.sql.Identifier`). Tables:

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
  the format and the scoring are in `memory_baseline.bm25`.

The tsvector is a stored generated column rather than an expression index:
measured on SciFact, an expression GIN index made the lexical query about 20x
slower (p50 632 ms vs 32 ms), because every candidate row re-parses its text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from . import bm25
from .config import validate_index_name

SCHEMA_VERSION = 2  # 2: BM25 posting arrays replace the row-per-posting table
HNSW_INDEX = "chunks_embedding_hnsw"


class StoreError(RuntimeError):
    """The index is missing, or its contents contradict the request."""


@dataclass(frozen=True)
class StoredSource:
    source_id: str
    kind: str
    content_hash: str
    size_bytes: int
    artifact_time: datetime | None
    observed_at: datetime
    observation_status: str
    observation_error: str | None
    representation_id: str | None


@dataclass(frozen=True)
class ChunkRow:
    """A chunk ready to write: text, span, identifiers and its vector."""

    chunk_id: str
    source_id: str
    ordinal: int
    char_start: int
    char_end: int
    section: str | None
    text: str
    content_hash: str
    identifiers: list[str]
    name_terms: list[str]
    embedding: np.ndarray


# What a passage needs besides its score (`chunk_texts`, and dense hits with `passage_rows`).
_PASSAGE_KEYS = ("chunk_id", "source_id", "ordinal", "char_start", "char_end", "section", "text",
                 "kind", "artifact_time", "identifiers", "name_terms")
_PASSAGE_COLUMNS = ("c.chunk_id, c.source_id, c.ordinal, c.char_start, c.char_end, c.section, "
                    "c.text, s.kind, s.artifact_time, c.identifiers, c.name_terms")


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    source_id: str
    score: float


_SCHEMA_DDL = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.representations (
    representation_id text PRIMARY KEY,
    chunker jsonb NOT NULL,
    embedder jsonb NOT NULL,
    dimension integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {s}.sources (
    source_id text PRIMARY KEY,
    kind text NOT NULL,
    content_hash text NOT NULL,
    size_bytes bigint NOT NULL,
    artifact_time timestamptz,
    observed_at timestamptz NOT NULL DEFAULT now(),
    observation_status text NOT NULL DEFAULT 'ok' CHECK (observation_status IN ('ok', 'failed')),
    observation_error text,
    representation_id text REFERENCES {s}.representations
);
CREATE OR REPLACE FUNCTION {s}.tsv_length(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer
            FROM unnest($1) AS u);
CREATE TABLE IF NOT EXISTS {s}.chunks (
    chunk_key bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    chunk_id text PRIMARY KEY,
    source_id text NOT NULL REFERENCES {s}.sources ON DELETE CASCADE,
    ordinal integer NOT NULL,
    char_start integer NOT NULL,
    char_end integer NOT NULL,
    section text,
    text text NOT NULL,
    content_hash text NOT NULL,
    representation_id text NOT NULL REFERENCES {s}.representations,
    identifiers text[] NOT NULL DEFAULT '{{}}',
    name_terms text[] NOT NULL DEFAULT '{{}}',
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)
        || array_to_tsvector(identifiers || name_terms)) STORED,
    doc_len integer GENERATED ALWAYS AS ({s}.tsv_length(to_tsvector('english', text)
        || array_to_tsvector(identifiers || name_terms))) STORED,
    embedding vector({dim}) NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source_idx ON {s}.chunks (source_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_tsv_gin ON {s}.chunks USING gin (tsv);
CREATE INDEX IF NOT EXISTS chunks_name_terms_gin ON {s}.chunks USING gin (name_terms);
CREATE INDEX IF NOT EXISTS chunks_representation_idx ON {s}.chunks (representation_id);
CREATE TABLE IF NOT EXISTS {s}.bm25_segments (
    lexeme text NOT NULL,
    segment bigint GENERATED ALWAYS AS IDENTITY,
    postings bytea NOT NULL,
    PRIMARY KEY (lexeme, segment)
);
ALTER TABLE {s}.bm25_segments ALTER COLUMN postings SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS {s}.bm25_tombstones (chunk_key bigint PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {s}.bm25_dirty_terms (lexeme text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {s}.term_stats (lexeme text PRIMARY KEY, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.corpus_stats (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    n_chunks bigint NOT NULL,
    total_len bigint NOT NULL
);
INSERT INTO {s}.corpus_stats VALUES (true, 0, 0) ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION {s}.bm25_add() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows WHERE doc_len > 32767) THEN
        RAISE EXCEPTION 'a chunk of more than 32767 lexemes does not fit the BM25 posting format';
    END IF;
    -- One delta segment per term of this statement: 8 bytes a posting (see bm25.POSTING).
    INSERT INTO {s}.bm25_segments (lexeme, postings)
        SELECT u.lexeme, string_agg(int4send(n.chunk_key::int4)
                   || int2send((CASE WHEN u.lexeme = ANY(n.name_terms) THEN -1 ELSE 1 END
                                * least(coalesce(array_length(u.positions, 1), 1), 32767))::int2)
                   || int2send(n.doc_len::int2), '' ORDER BY n.chunk_key)
        FROM new_rows n, unnest(n.tsv) u GROUP BY u.lexeme ORDER BY u.lexeme;
    INSERT INTO {s}.term_stats AS t (lexeme, df)
        SELECT u.lexeme, count(*) FROM new_rows n, unnest(n.tsv) u GROUP BY u.lexeme
        ORDER BY u.lexeme
        ON CONFLICT (lexeme) DO UPDATE SET df = t.df + excluded.df;
    UPDATE {s}.corpus_stats SET n_chunks = n_chunks + d.n, total_len = total_len + d.len
        FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM new_rows) d;
    RETURN NULL;
END $body$;
CREATE OR REPLACE FUNCTION {s}.bm25_remove() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO {s}.bm25_tombstones (chunk_key) SELECT chunk_key FROM old_rows
        ORDER BY chunk_key ON CONFLICT DO NOTHING;
    INSERT INTO {s}.bm25_dirty_terms (lexeme)
        SELECT DISTINCT u.lexeme FROM old_rows o, unnest(o.tsv) u ORDER BY u.lexeme
        ON CONFLICT DO NOTHING;
    UPDATE {s}.term_stats t SET df = t.df - d.n FROM (
        SELECT u.lexeme, count(*) AS n FROM old_rows o, unnest(o.tsv) u
        GROUP BY u.lexeme ORDER BY u.lexeme) d
        WHERE t.lexeme = d.lexeme;
    DELETE FROM {s}.term_stats WHERE df <= 0;
    UPDATE {s}.corpus_stats SET n_chunks = n_chunks - d.n, total_len = total_len - d.len
        FROM (SELECT count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM old_rows) d;
    RETURN NULL;
END $body$;
CREATE OR REPLACE FUNCTION {s}.chunks_immutable() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF NEW.text IS DISTINCT FROM OLD.text OR NEW.identifiers IS DISTINCT FROM OLD.identifiers
       OR NEW.name_terms IS DISTINCT FROM OLD.name_terms
       OR NEW.chunk_key IS DISTINCT FROM OLD.chunk_key THEN
        RAISE EXCEPTION 'chunk text is immutable: replace the source instead';
    END IF;
    RETURN NEW;
END $body$;
DROP TRIGGER IF EXISTS chunks_bm25_add ON {s}.chunks;
CREATE TRIGGER chunks_bm25_add AFTER INSERT ON {s}.chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.bm25_add();
DROP TRIGGER IF EXISTS chunks_bm25_remove ON {s}.chunks;
CREATE TRIGGER chunks_bm25_remove AFTER DELETE ON {s}.chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {s}.bm25_remove();
DROP TRIGGER IF EXISTS chunks_immutable ON {s}.chunks;
CREATE TRIGGER chunks_immutable BEFORE UPDATE ON {s}.chunks
    FOR EACH ROW EXECUTE FUNCTION {s}.chunks_immutable();
"""


# The exhaustive reference for `lexical_bm25`: every chunk containing a query term
# (found through the GIN index) is scored from its own tsvector, straight from the
# text, with the same formula and tie-break. Too slow for queries at scale (it
# re-reads the tsvector of every matching chunk); tests and benchmarks compare
# the posting arrays against it.
_BM25_EXHAUSTIVE_SQL = """WITH stats AS (
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

# Everything one BM25 query reads, in one statement and so one snapshot: the corpus
# size and length, each query term's df with its segments, and the tombstones. A segment
# whose row version (segment id, xmin) the client already holds comes back without its
# bytes (`bm25.SegmentCache`): the postings column is then never detoasted or sent.
_BM25_FETCH_SQL = """SELECT 'corpus'::text, NULL::text, n_chunks, int8send(total_len), NULL::text
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


class Store:
    """All SQL for one index; callers own the connection and its transactions."""

    def __init__(self, conn: psycopg.Connection, index: str) -> None:
        self.conn = conn
        self.index = validate_index_name(index)
        self.schema = sql.Identifier(index)

    def _q(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(s=self.schema)

    # -- lifecycle -------------------------------------------------------
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
                return False
            self.conn.execute(sql.SQL(_SCHEMA_DDL).format(s=self.schema, dim=sql.Literal(dimension)))
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

    @contextmanager
    def snapshot(self) -> Iterator[str | None]:
        """One repeatable-read snapshot for everything run inside (a whole search).

        Ranking and fetching passage text are separate statements; under read
        committed a refresh committing between them would return text that no
        longer holds the terms it was ranked by. Yields the snapshot's exported id
        (`pg_export_snapshot`), so a second connection can read the very same
        snapshot (`reading_snapshot`): the overlapped BM25 path of a hybrid search.
        Inside an open transaction this adds nothing (that transaction decides) and
        yields None.
        """
        if self.conn.info.transaction_status != TransactionStatus.IDLE:
            yield None
            return
        with self.conn.transaction():
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield self.conn.execute("SELECT pg_export_snapshot()").fetchone()[0]

    @contextmanager
    def reading_snapshot(self, snapshot_id: str) -> Iterator[None]:
        """Read inside the snapshot another connection exported (`snapshot`)."""
        with self.conn.transaction():
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self.conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot_id)))
            yield

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
            self.conn.execute(sql.SQL(_SCHEMA_DDL).format(s=self.schema,
                                                          dim=sql.Literal(self.dimension())))
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

    # -- representations -------------------------------------------------
    def ensure_representation(
        self, representation_id: str, chunker: dict, embedder: dict, dimension: int
    ) -> None:
        self.conn.execute(
            self._q(
                "INSERT INTO {s}.representations (representation_id, chunker, embedder, dimension) "
                "VALUES (%s, %s::jsonb, %s::jsonb, %s) ON CONFLICT DO NOTHING"
            ),
            (representation_id, json.dumps(chunker), json.dumps(embedder), dimension),
        )

    def representations_in_use(self) -> dict[str, int]:
        rows = self.conn.execute(
            self._q("SELECT representation_id, count(*) FROM {s}.chunks GROUP BY 1 ORDER BY 1")
        ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def representation(self, representation_id: str) -> dict | None:
        row = self.conn.execute(
            self._q(
                "SELECT chunker, embedder, dimension FROM {s}.representations "
                "WHERE representation_id = %s"
            ),
            (representation_id,),
        ).fetchone()
        if not row:
            return None
        return {"chunker": row[0], "embedder": row[1], "dimension": row[2]}

    # -- sources and chunks ----------------------------------------------
    def sources(self) -> dict[str, StoredSource]:
        rows = self.conn.execute(
            self._q(
                "SELECT source_id, kind, content_hash, size_bytes, artifact_time, observed_at, "
                "observation_status, observation_error, representation_id FROM {s}.sources"
            )
        ).fetchall()
        return {r[0]: StoredSource(*r) for r in rows}

    def lock_for_write(self) -> None:
        """Serialise writers of this index for the current transaction."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memory-baseline:{self.index}",))

    def replace_source(
        self,
        source_id: str,
        kind: str,
        content_hash: str,
        size_bytes: int,
        artifact_time: datetime | None,
        representation_id: str,
        chunks: Sequence[ChunkRow],
    ) -> None:
        """Write a source and exactly these chunks (call inside a transaction)."""
        self.conn.execute(self._q("DELETE FROM {s}.chunks WHERE source_id = %s"), (source_id,))
        self.conn.execute(
            self._q(
                """INSERT INTO {s}.sources (source_id, kind, content_hash, size_bytes,
                       artifact_time, observed_at, observation_status, observation_error,
                       representation_id)
                   VALUES (%s, %s, %s, %s, %s, now(), 'ok', NULL, %s)
                   ON CONFLICT (source_id) DO UPDATE SET kind = excluded.kind,
                       content_hash = excluded.content_hash, size_bytes = excluded.size_bytes,
                       artifact_time = excluded.artifact_time, observed_at = now(),
                       observation_status = 'ok', observation_error = NULL,
                       representation_id = excluded.representation_id"""
            ),
            (source_id, kind, content_hash, size_bytes, artifact_time, representation_id),
        )
        self.copy_chunks(chunks, representation_id)

    def copy_chunks(self, chunks: Sequence[ChunkRow], representation_id: str) -> None:
        if not chunks:
            return
        statement = self._q(
            "COPY {s}.chunks (chunk_id, source_id, ordinal, char_start, char_end, section, text, "
            "content_hash, representation_id, identifiers, name_terms, embedding) FROM STDIN (FORMAT BINARY)"
        )
        with self.conn.cursor().copy(statement) as copy:
            copy.set_types(
                ["text", "text", "int4", "int4", "int4", "text", "text", "text", "text",
                 "text[]", "text[]", "vector"]
            )
            for chunk in chunks:
                copy.write_row(
                    (chunk.chunk_id, chunk.source_id, chunk.ordinal, chunk.char_start,
                     chunk.char_end, chunk.section, chunk.text, chunk.content_hash,
                     representation_id, chunk.identifiers, chunk.name_terms,
                     np.asarray(chunk.embedding, dtype=np.float32))
                )

    def stored_chunk_rows(self, source_ids: Sequence[str]) -> list[ChunkRow]:
        """The stored chunks of these sources, in order, vectors included."""
        rows = self.conn.execute(
            self._q(
                "SELECT chunk_id, source_id, ordinal, char_start, char_end, section, text, "
                "content_hash, identifiers, name_terms, embedding FROM {s}.chunks "
                "WHERE source_id = ANY(%s) ORDER BY source_id, ordinal"
            ),
            (list(source_ids),),
        ).fetchall()
        return [ChunkRow(*r[:8], identifiers=list(r[8]), name_terms=list(r[9]),
                         embedding=np.asarray(r[10].to_numpy(), dtype=np.float32))
                for r in rows]

    def replace_chunks(
        self, source_id: str, representation_id: str, chunks: Sequence[ChunkRow]
    ) -> None:
        """Swap a source's chunks for re-embedded ones, leaving its observation untouched.

        Used when a source cannot be re-read but the representation changed: its
        content hash and observation status still describe the last good read.
        """
        self.conn.execute(self._q("DELETE FROM {s}.chunks WHERE source_id = %s"), (source_id,))
        self.conn.execute(
            self._q("UPDATE {s}.sources SET representation_id = %s WHERE source_id = %s"),
            (representation_id, source_id),
        )
        self.copy_chunks(chunks, representation_id)

    def touch_sources(self, source_ids: Sequence[str]) -> None:
        """Record a successful, unchanged observation."""
        if source_ids:
            self.conn.execute(
                self._q(
                    "UPDATE {s}.sources SET observed_at = now(), observation_status = 'ok', "
                    "observation_error = NULL WHERE source_id = ANY(%s)"
                ),
                (list(source_ids),),
            )

    def mark_failed(self, source_id: str, reason: str) -> None:
        """A read failed: keep the last good content, record the failure."""
        self.conn.execute(
            self._q(
                "UPDATE {s}.sources SET observation_status = 'failed', observation_error = %s, "
                "observed_at = now() WHERE source_id = %s"
            ),
            (reason, source_id),
        )

    def remove_sources(self, source_ids: Sequence[str]) -> None:
        if source_ids:
            self.conn.execute(
                self._q("DELETE FROM {s}.sources WHERE source_id = ANY(%s)"), (list(source_ids),)
            )

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, dict]:
        rows = self.conn.execute(
            self._q(
                f"SELECT {_PASSAGE_COLUMNS} FROM {{s}}.chunks c "
                "JOIN {s}.sources s USING (source_id) WHERE c.chunk_id = ANY(%s)"
            ),
            (list(chunk_ids),),
        ).fetchall()
        return {r[0]: dict(zip(_PASSAGE_KEYS, r, strict=True)) for r in rows}

    def source_chunks(self, source_id: str) -> list[dict]:
        rows = self.conn.execute(
            self._q("SELECT chunk_id FROM {s}.chunks WHERE source_id = %s ORDER BY ordinal"),
            (source_id,),
        ).fetchall()
        found = self.chunk_texts([r[0] for r in rows])
        return [found[r[0]] for r in rows]

    # -- vector index ------------------------------------------------------
    def has_hnsw(self) -> bool:
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{self.index}".{HNSW_INDEX}',)
        ).fetchone()
        return bool(row and row[0])

    def build_hnsw(self, m: int = 16, ef_construction: int = 64) -> None:
        self.conn.execute("SET maintenance_work_mem = '256MB'")
        self.build_hnsw_index(m, ef_construction)

    def drop_hnsw(self) -> None:
        self.conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {s}.{name}").format(
                s=self.schema, name=sql.Identifier(HNSW_INDEX)
            )
        )

    def build_hnsw_with(self, *, m: int, ef_construction: int, maintenance_work_mem: str,
                        parallel_workers: int) -> float:
        """(Re)build the HNSW index with explicit build memory and workers; returns seconds.

        `build_hnsw` keeps the server's settings small for interactive ingest; a
        million-vector graph needs several GB of maintenance memory or the build
        slows to a crawl.
        """
        import time

        self.drop_hnsw()
        self.conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        self.conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(
            sql.Literal(int(parallel_workers))))
        started = time.perf_counter()
        try:
            self.build_hnsw_index(m, ef_construction)
        finally:
            self.conn.execute("RESET maintenance_work_mem")
            self.conn.execute("RESET max_parallel_maintenance_workers")
        return time.perf_counter() - started

    def build_hnsw_index(self, m: int, ef_construction: int) -> None:
        self.conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {name} ON {s}.chunks USING hnsw "
                "(embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {efc})"
            ).format(
                name=sql.Identifier(HNSW_INDEX), s=self.schema, m=sql.Literal(m),
                efc=sql.Literal(ef_construction),
            )
        )

    # -- bulk loading (benchmarks) -------------------------------------------
    def copy_sources(self, sources: Iterable[tuple], representation_id: str) -> None:
        """Binary COPY of (source_id, kind, content_hash, size_bytes, artifact_time) rows."""
        statement = self._q(
            "COPY {s}.sources (source_id, kind, content_hash, size_bytes, artifact_time, "
            "representation_id) FROM STDIN (FORMAT BINARY)"
        )
        with self.conn.cursor().copy(statement) as copy:
            copy.set_types(["text", "text", "text", "int8", "timestamptz", "text"])
            for source in sources:
                copy.write_row((*source, representation_id))

    def drop_fulltext_index(self) -> None:
        """Drop the GIN index before a bulk load (`build_fulltext_index` restores it)."""
        self.conn.execute(self._q("DROP INDEX IF EXISTS {s}.chunks_tsv_gin"))

    def build_fulltext_index(self, maintenance_work_mem: str = "1GB") -> None:
        self.conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        try:
            self.conn.execute(self._q(
                "CREATE INDEX IF NOT EXISTS chunks_tsv_gin ON {s}.chunks USING gin (tsv)"))
        finally:
            self.conn.execute("RESET maintenance_work_mem")

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

    # -- counts ------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        row = self.conn.execute(
            self._q(
                "SELECT (SELECT count(*) FROM {s}.sources), (SELECT count(*) FROM {s}.chunks), "
                "(SELECT count(*) FROM {s}.sources WHERE observation_status = 'failed')"
            )
        ).fetchone()
        return {"sources": int(row[0]), "chunks": int(row[1]), "failed_observations": int(row[2])}

    # -- search --------------------------------------------------------------
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
        ranked = bm25.top_k(self.bm25_fetch(terms), int(limit), float(k1), float(b),
                            float(name_weight))
        return self._hits_by_key(ranked)

    def bm25_fetch(self, terms: Sequence[str]) -> bm25.Fetched:
        """The statistics, segments and tombstones of one query, in one binary statement.

        Large segments already decoded by an earlier query of this process are taken from
        `bm25.SEGMENT_CACHE` when the snapshot still sees the very row version they came
        from; the statement returns every other segment's bytes. A write, a removal's
        tombstone or a compaction is therefore visible to the next query as before.
        """
        unique = list(dict.fromkeys(terms))
        scope = self._cache_scope()
        held = bm25.SEGMENT_CACHE.held(scope, unique)  # pinned for this query
        parts: dict[str, list[tuple[int, bm25.Columns]]] = {}
        df: dict[str, int] = {}
        n_chunks = total_length = 0
        tombstones = np.zeros(0, dtype=np.int64)
        with self.conn.cursor(binary=True) as cursor:
            for kind, lexeme, number, payload, version in cursor.execute(
                    self._q(_BM25_FETCH_SQL), {"terms": unique, "held": list(held)}):
                if kind == "term":
                    if payload is None:
                        postings = held[version]
                    else:
                        postings = bm25.Columns.of(bm25.decode(bytes(payload)))
                        bm25.SEGMENT_CACHE.put(scope, lexeme, version, postings)
                    parts.setdefault(lexeme, []).append((int(version.split(":", 1)[0]), postings))
                    df[lexeme] = int(number)
                elif kind == "corpus":
                    n_chunks, total_length = int(number), int.from_bytes(payload, "big", signed=True)
                elif number:
                    tombstones = np.frombuffer(bytes(payload), dtype=">i8").astype(np.int64)
        # Segment order is key order (chunk keys only grow); the join need not return it.
        return bm25.Fetched(
            n_chunks, total_length,
            tuple(bm25.TermPostings(t, df[t], tuple(a for _, a in sorted(parts[t], key=lambda p: p[0])))
                  for t in sorted(parts)),
            tombstones)

    def _cache_scope(self) -> tuple[str, str, str]:
        """Which server, database and index a cached segment belongs to."""
        info = self.conn.info
        return (f"{info.host}:{info.port}", info.dbname, self.index)

    def _hits_by_key(self, ranked: Sequence[tuple[int, float]]) -> list[Hit]:
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

    hits_for_keys = _hits_by_key

    def lexical_bm25_exhaustive(
        self, terms: Sequence[str], limit: int, k1: float, b: float, name_weight: float = 1.0
    ) -> list[Hit]:
        """The same ranking as `lexical_bm25`, computed in SQL from every matching chunk's text."""
        if not terms:
            return []
        rows = self.conn.execute(
            self._q(_BM25_EXHAUSTIVE_SQL),
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

    # -- BM25 segments: compaction and checks -----------------------------------
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
                        merged = bm25.merge_segments(by_term[lexeme], tombstones)
                        if merged:
                            copy.write_row((lexeme, merged))
                self.conn.execute(self._q("DELETE FROM {s}.bm25_dirty_terms WHERE lexeme = ANY(%s)"),
                                  (terms,))
                done["terms"] += len(terms)
            if on_batch:
                on_batch(done["terms"])

    def check_bm25_segments(self) -> bm25.SegmentCheck:
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

        return bm25.check_segments(rows(), tombstones, lengths)

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

    def dense(
        self,
        vector: np.ndarray,
        limit: int,
        representation_id: str,
        *,
        plan: str = "hnsw",
        ef_search: int = 100,
        iterative_scan: str = "relaxed_order",
        explain: bool = False,
        passage_rows: dict[str, dict] | None = None,
    ) -> tuple[list[Hit], list[str] | None]:
        """Cosine nearest neighbours among chunks of one representation.

        With `passage_rows`, each hit's `chunk_texts` row is put there, read by the same
        statement.

        `plan="exact"` disables index scans for this transaction, so the answer is
        the exact top-k; with HNSW, `ef_search` is raised to at least `limit` and
        iterative scan is applied so a filtered query still returns `limit` rows.
        Returns the hits and, on request, the plan's node lines. (No tie-break
        column in ORDER BY: one would stop PostgreSQL from using the HNSW index.)
        """
        if plan not in ("hnsw", "exact"):
            raise StoreError(f"unknown dense plan {plan!r}: use hnsw or exact")
        if iterative_scan not in ("off", "strict_order", "relaxed_order"):
            raise StoreError(f"unknown iterative scan mode {iterative_scan!r}")
        query = self._q(
            """SELECT chunk_id, source_id, 1 - (embedding <=> %(v)s) AS score
               FROM {s}.chunks WHERE representation_id = %(rep)s
               ORDER BY embedding <=> %(v)s LIMIT %(limit)s"""
        )
        if passage_rows is not None:
            # The same statement and order, each hit with its passage row: a search then
            # needs no second statement for the dense hits' text. (A join would let the
            # planner reorder rows; per-row lookups of the source keep the index's order.)
            query = self._q(
                """SELECT c.chunk_id, c.source_id, c.ordinal, c.char_start, c.char_end, c.section,
                          c.text, (SELECT s.kind FROM {s}.sources s WHERE s.source_id = c.source_id),
                          (SELECT s.artifact_time FROM {s}.sources s WHERE s.source_id = c.source_id),
                          c.identifiers, c.name_terms, 1 - (c.embedding <=> %(v)s) AS score
                   FROM {s}.chunks c WHERE c.representation_id = %(rep)s
                   ORDER BY c.embedding <=> %(v)s LIMIT %(limit)s"""
            )
        params = {"v": np.asarray(vector, dtype=np.float32), "rep": representation_id,
                  "limit": int(limit)}
        plan_lines: list[str] | None = None
        with self.conn.transaction():
            if plan == "exact":
                self.conn.execute("SET LOCAL enable_indexscan = off")
            else:
                self.conn.execute(
                    sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                        sql.Literal(max(int(ef_search), int(limit)))
                    )
                )
                self.conn.execute(
                    sql.SQL("SET LOCAL hnsw.iterative_scan = {}").format(sql.Literal(iterative_scan))
                )
            if explain:
                plan_rows = self.conn.execute(
                    sql.SQL("EXPLAIN (COSTS OFF) ") + query, params, prepare=False
                ).fetchall()
                plan_lines = [r[0] for r in plan_rows]
            # prepare=False: a cached plan would ignore the SET LOCAL above.
            rows = self.conn.execute(query, params, prepare=False).fetchall()
        if passage_rows is None:
            return [Hit(r[0], r[1], float(r[2])) for r in rows], plan_lines
        passage_rows.update((r[0], dict(zip(_PASSAGE_KEYS, r[:-1], strict=True))) for r in rows)
        return [Hit(r[0], r[1], float(r[-1])) for r in rows], plan_lines

    def explain_lexical_bm25(self, terms: Sequence[str]) -> str:
        """`EXPLAIN ANALYZE` of the statement `lexical_bm25` sends (for benchmarks and the book)."""
        return "\n".join(
            r[0]
            for r in self.conn.execute(
                sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + self._q(_BM25_FETCH_SQL),
                {"terms": list(dict.fromkeys(terms)), "held": []}, prepare=False,
            ).fetchall()
        )


def server_description(conn: psycopg.Connection) -> dict[str, Any]:
    """The server's version, pgvector's, and the settings that decide benchmark figures."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    names = ("shared_buffers", "work_mem", "maintenance_work_mem", "effective_cache_size",
             "max_parallel_workers_per_gather", "max_parallel_maintenance_workers", "jit")
    return {
        "postgres": conn.execute("SHOW server_version").fetchone()[0],
        "pgvector": row[0] if row else None,
        "postgres_settings": {
            name: conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0]
            for name in names
        },
    }


def data_directory(conn: psycopg.Connection) -> str:
    """The server's data folder (to measure free disk space when it is local)."""
    return conn.execute("SHOW data_directory").fetchone()[0]
