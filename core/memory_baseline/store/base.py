"""What every part of the store shares: one index's schema on a caller's connection.

The store's SQL is split by job (schema, writes, snapshots, vectors, BM25), one
mixin each, and `Store` combines them; each part reaches the database through
the connection, the validated schema name and `_q` defined here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ..config import validate_index_name


class StoreError(RuntimeError):
    """The index is missing, or its contents contradict the request."""


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    source_id: str
    score: float


class IndexSQL:
    """One index's schema (a validated name, always quoted); callers own the connection and its
    transactions."""

    def __init__(self, conn: psycopg.Connection, index: str) -> None:
        self.conn = conn
        self.index = validate_index_name(index)
        self.schema = sql.Identifier(index)

    def _q(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(s=self.schema)

    def lock_for_write(self) -> None:
        """Serialise writers of this index for the current transaction."""
        self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"memory-baseline:{self.index}",))


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
