"""Snapshots: every statement of one search reads one state of the index, on one
connection or two (the hybrid search's BM25 path runs on a second one)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from psycopg import sql
from psycopg.pq import TransactionStatus

from .base import IndexSQL


class Snapshots(IndexSQL):
    """Repeatable-read snapshots a search holds, exported to a second connection."""

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

