"""Harness for downstream-shipments-event-store: how the shipments service opens its event store.

What the history decides (ADR-007, config/eventstore.yaml, the operations guide): a new
service goes through the PostgreSQL adapter with a schema and a notify channel of its
own; it never writes to the orders schema and never opens an SQLite file. The work
product runs against a fake of the adapter (kestrel/eventstore/postgres.py here, not the
embedded server: see its docstring); kestrel/orders/events.py is the history's own orders module, so
work that reuses it runs as it would in the repository. The sandbox refuses
sqlite3.connect.
"""

import unittest
from uuid import UUID

from kestrel.eventstore import postgres
from kestrel.shipments import store as work


class OpenEventStore(unittest.TestCase):
    def setUp(self) -> None:
        postgres.reset()
        self.conn = postgres.FakeConnection()

    def opened(self):
        return work.open_event_store(self.conn)

    def test_returns_the_postgresql_adapter(self):
        """open_event_store(conn) returns the PostgreSQL adapter's store"""
        self.assertIsInstance(self.opened(), postgres.PostgresEventStore)

    def test_schema_of_its_own(self):
        """the store uses a shipments schema, not the orders schema"""
        schema = self.opened().schema
        self.assertNotEqual(schema, "orders_events", "the shipments log must not share the orders schema")
        self.assertIn("shipment", schema.lower(), f"schema {schema!r} is not the shipments service's own")

    def test_notify_channel_of_its_own(self):
        """listeners are woken on a shipments channel, not the orders one"""
        channel = self.opened().notify_channel
        self.assertNotEqual(channel, "events_orders")
        self.assertIn("shipment", str(channel).lower(), f"channel {channel!r} is not the shipments channel")

    def test_appends_land_in_the_shipments_log(self):
        """an event appended through the returned store lands in the shipments log only"""
        store = self.opened()
        store.append(UUID(int=1), [postgres.NewEvent("ShipmentCreated", {"order": "o-1"})], 0)
        self.assertEqual(len(postgres.appended(store.schema)), 1)
        self.assertEqual(postgres.appended("orders_events"), [])

    def test_one_store_per_call(self):
        """opening the store opens exactly one adapter store, on the connection given"""
        store = self.opened()
        self.assertEqual(postgres.STORES, [store])
        self.assertIs(store._conn, self.conn)


if __name__ == "__main__":
    unittest.main()
