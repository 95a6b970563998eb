"""Copied from the orders service without changing the schema."""

from kestrel.eventstore.postgres import PostgresEventStore


def open_event_store(conn):
    return PostgresEventStore(conn, "orders_events", "events_orders")
