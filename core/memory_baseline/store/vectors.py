"""Dense search: cosine nearest neighbours with pgvector, and the HNSW index it uses.

A search never mixes encoders: it reads vectors of one representation only.
With HNSW the query raises ``hnsw.ef_search`` to at least the number of rows
asked for and scans iteratively, so a filtered query still returns them all.
"""

from __future__ import annotations

import time

import numpy as np
from psycopg import sql

from .base import Hit, IndexSQL, StoreError
from .writes import PASSAGE_KEYS

HNSW_INDEX = "chunks_embedding_hnsw"


class Vectors(IndexSQL):
    """The HNSW index (one builder) and the dense query."""

    def has_hnsw(self) -> bool:
        row = self.conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f'"{self.index}".{HNSW_INDEX}',)
        ).fetchone()
        return bool(row and row[0])

    def build_hnsw(self, *, m: int = 16, ef_construction: int = 64, maintenance_work_mem: str = "256MB",
                   parallel_workers: int | None = None, rebuild: bool = False) -> float:
        """Build the HNSW index unless present (with `rebuild`, drop it first); returns seconds.

        The build memory and workers hold for the build only. 256MB suits an interactive
        ingest; a million-vector graph needs several GB of maintenance memory or the
        build slows to a crawl, so benchmarks pass more, and the number of parallel workers.
        """
        if rebuild:
            self.drop_hnsw()
        self.conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        if parallel_workers is not None:
            self.conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(
                sql.Literal(int(parallel_workers))))
        started = time.perf_counter()
        try:
            self.conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {name} ON {s}.chunks USING hnsw "
                    "(embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {efc})"
                ).format(
                    name=sql.Identifier(HNSW_INDEX), s=self.schema, m=sql.Literal(m),
                    efc=sql.Literal(ef_construction),
                )
            )
        finally:
            self.conn.execute("RESET maintenance_work_mem")
            if parallel_workers is not None:
                self.conn.execute("RESET max_parallel_maintenance_workers")
        return time.perf_counter() - started

    def drop_hnsw(self) -> None:
        self.conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {s}.{name}").format(
                s=self.schema, name=sql.Identifier(HNSW_INDEX)
            )
        )

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
                          c.identifiers, c.name_terms, c.line_start, c.line_end,
                          1 - (c.embedding <=> %(v)s) AS score
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
        passage_rows.update((r[0], dict(zip(PASSAGE_KEYS, r[:-1], strict=True))) for r in rows)
        return [Hit(r[0], r[1], float(r[-1])) for r in rows], plan_lines

