"""The shipments service's event store: its own schema in the shared PostgreSQL cluster (ADR-007)."""

from kestrel.eventstore.postgres import PostgresEventStore

SCHEMA = "shipments_events"
NOTIFY_CHANNEL = "events_shipments"


def open_event_store(conn) -> PostgresEventStore:
    return PostgresEventStore(conn, schema=SCHEMA, notify_channel=NOTIFY_CHANNEL)
