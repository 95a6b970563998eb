"""Writes of sources and chunks, and the rows read back from them.

A source and its chunks are written together (`replace_source`): the old chunks
are deleted and the new ones copied in, so the BM25 triggers see one delete and
one insert statement and chunk rows are never updated. A source that could not
be read keeps its last good chunks and records the failure (`mark_failed`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from psycopg import sql

from .base import IndexSQL


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
    line_start: int | None = None
    line_end: int | None = None


# What a passage needs besides its score (`chunk_texts`, and dense hits with `passage_rows`).
PASSAGE_KEYS = ("chunk_id", "source_id", "ordinal", "char_start", "char_end", "section", "text",
                "kind", "artifact_time", "identifiers", "name_terms", "line_start", "line_end")
PASSAGE_COLUMNS = ("c.chunk_id, c.source_id, c.ordinal, c.char_start, c.char_end, c.section, "
                   "c.text, s.kind, s.artifact_time, c.identifiers, c.name_terms, c.line_start, "
                   "c.line_end")


class Writes(IndexSQL):
    """Representations, sources and chunks: written in the caller's transaction, read back."""

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
            "content_hash, representation_id, identifiers, name_terms, embedding, line_start, line_end) "
            "FROM STDIN (FORMAT BINARY)"
        )
        with self.conn.cursor().copy(statement) as copy:
            copy.set_types(
                ["text", "text", "int4", "int4", "int4", "text", "text", "text", "text",
                 "text[]", "text[]", "vector", "int4", "int4"]
            )
            for chunk in chunks:
                copy.write_row(
                    (chunk.chunk_id, chunk.source_id, chunk.ordinal, chunk.char_start,
                     chunk.char_end, chunk.section, chunk.text, chunk.content_hash,
                     representation_id, chunk.identifiers, chunk.name_terms,
                     np.asarray(chunk.embedding, dtype=np.float32), chunk.line_start, chunk.line_end)
                )

    def stored_chunk_rows(self, source_ids: Sequence[str]) -> list[ChunkRow]:
        """The stored chunks of these sources, in order, vectors included."""
        rows = self.conn.execute(
            self._q(
                "SELECT chunk_id, source_id, ordinal, char_start, char_end, section, text, "
                "content_hash, identifiers, name_terms, embedding, line_start, line_end FROM {s}.chunks "
                "WHERE source_id = ANY(%s) ORDER BY source_id, ordinal"
            ),
            (list(source_ids),),
        ).fetchall()
        return [ChunkRow(*r[:8], identifiers=list(r[8]), name_terms=list(r[9]),
                         embedding=np.asarray(r[10].to_numpy(), dtype=np.float32),
                         line_start=r[11], line_end=r[12])
                for r in rows]

    def stored_vectors(self, representation_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """A stored vector for each of these chunk texts (by content hash) that the index already
        holds under this representation: the same text under the same encoder gets the same
        vector, so a re-chunked or re-versioned source need not encode it again."""
        if not content_hashes:
            return {}
        rows = self.conn.execute(
            self._q("SELECT DISTINCT ON (content_hash) content_hash, embedding FROM {s}.chunks "
                    "WHERE representation_id = %s AND content_hash = ANY(%s)"),
            (representation_id, list(set(content_hashes))),
        ).fetchall()
        return {r[0]: np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows}

    def has_source(self, source_id: str) -> bool:
        row = self.conn.execute(self._q("SELECT EXISTS (SELECT 1 FROM {s}.sources WHERE source_id = %s)"),
                                (source_id,)).fetchone()
        return bool(row and row[0])

    def sources_without_lines(self) -> list[str]:
        """Sources with chunks written before line ranges were kept (a refresh re-chunks them)."""
        rows = self.conn.execute(
            self._q("SELECT DISTINCT source_id FROM {s}.chunks WHERE line_start IS NULL")).fetchall()
        return [r[0] for r in rows]

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
                f"SELECT {PASSAGE_COLUMNS} FROM {{s}}.chunks c "
                "JOIN {s}.sources s USING (source_id) WHERE c.chunk_id = ANY(%s)"
            ),
            (list(chunk_ids),),
        ).fetchall()
        return {r[0]: dict(zip(PASSAGE_KEYS, r, strict=True)) for r in rows}

    def source_chunks(self, source_id: str) -> list[dict]:
        rows = self.conn.execute(
            self._q("SELECT chunk_id FROM {s}.chunks WHERE source_id = %s ORDER BY ordinal"),
            (source_id,),
        ).fetchall()
        found = self.chunk_texts([r[0] for r in rows])
        return [found[r[0]] for r in rows]

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

