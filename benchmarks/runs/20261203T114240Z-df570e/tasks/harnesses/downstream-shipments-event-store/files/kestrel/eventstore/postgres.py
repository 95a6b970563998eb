"""A fake of Kestrel's PostgreSQL event-store adapter (src/kestrel/eventstore/postgres.py).

Same public names and signatures as the adapter the history's ADR-007 prescribes
(`NewEvent`, `ConcurrencyConflict`, `PostgresEventStore(conn, schema, notify_channel)`,
`append(stream_id, events, expected_version)`), but the events go to an in-memory
log per schema instead of a database. The harness uses a fake rather than the
embedded server because the sandbox has no network and no psycopg, and what the
history decides (the adapter's interface, a schema of the service's own, the
expected-version rule) is exactly what this fake records.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID


class ConcurrencyConflict(Exception):
    """The stream moved past the version the caller expected."""


@dataclass(frozen=True)
class NewEvent:
    type: str
    payload: dict
    schema: int = 1


class FakeConnection:
    """Stands in for a psycopg connection; the adapter only passes it around."""


# schema -> stream id -> appended events; and every store that was opened
LOG: dict[str, dict[UUID, list[NewEvent]]] = {}
STORES: list[PostgresEventStore] = []
NOTIFICATIONS: list[tuple[str, str]] = []


def reset() -> None:
    LOG.clear()
    STORES.clear()
    NOTIFICATIONS.clear()


def appended(schema: str, stream_id: UUID | None = None) -> list[NewEvent]:
    streams = LOG.get(schema, {})
    if stream_id is not None:
        return list(streams.get(stream_id, []))
    return [event for events in streams.values() for event in events]


class PostgresEventStore:
    def __init__(self, conn: FakeConnection, schema: str, notify_channel: str) -> None:
        if not isinstance(conn, FakeConnection):
            raise TypeError("PostgresEventStore needs the service's database connection")
        if not isinstance(schema, str) or not schema:
            raise ValueError("PostgresEventStore needs the service's schema name")
        self._conn = conn
        self.schema = schema
        self.notify_channel = notify_channel
        STORES.append(self)

    def append(self, stream_id: UUID, events: list[NewEvent], expected_version: int) -> int:
        """Append after expected_version; notify listeners, as the real adapter does."""
        if not isinstance(stream_id, UUID):
            raise TypeError(f"stream_id must be a UUID, got {type(stream_id).__name__}")
        if not isinstance(events, list) or not events:
            raise TypeError("events must be a non-empty list of NewEvent")
        for event in events:
            if not isinstance(event, NewEvent):
                raise TypeError(f"events must be NewEvent instances, got {type(event).__name__}")
        stream = LOG.setdefault(self.schema, {}).setdefault(stream_id, [])
        if expected_version != len(stream):
            raise ConcurrencyConflict(str(stream_id))
        stream.extend(events)
        NOTIFICATIONS.append((self.notify_channel, str(stream_id)))
        return len(stream)
