"""Harness for downstream-publish-shipment-event: the shipments service's publish function.

What the history decides (ADR-007, config/eventstore.yaml, session-061, the orders
service's publish_order_event): the shipments service records its events through the
PostgreSQL adapter, in a log of its own apart from the orders log, validating the event
type first; it never opens an SQLite file. The work product runs against a fake of the
adapter (kestrel/eventstore/postgres.py here, not the embedded server: see its
docstring); kestrel/orders/events.py is the history's own orders module, so
work that reuses it runs as it would in the repository. The sandbox refuses
sqlite3.connect, sockets and writes outside it.
"""

import unittest
from uuid import UUID

from kestrel.eventstore import postgres
from kestrel.shipments import events as work

SHIPMENT_EVENT_TYPES = ("ShipmentCreated", "LabelPrinted", "HandedToCarrier", "DeliveryConfirmed")
STREAM = UUID(int=0x5A1)


class PublishShipmentEvent(unittest.TestCase):
    def setUp(self) -> None:
        postgres.reset()
        self.store = postgres.PostgresEventStore(postgres.FakeConnection(), "shipments_events",
                                                 "events_shipments")

    def publish(self, event_type="ShipmentCreated", payload=None, expected=0):
        return work.publish_shipment_event(self.store, STREAM, event_type, payload or {"order": "o-1"},
                                           expected)

    def test_defines_publish_shipment_event(self):
        """publish_shipment_event is defined and callable"""
        self.assertTrue(callable(getattr(work, "publish_shipment_event", None)),
                        "no function publish_shipment_event")

    def test_appends_one_adapter_event(self):
        """one call appends one NewEvent of the PostgreSQL adapter to the shipment's stream"""
        version = self.publish(payload={"order": "o-1", "carrier": "DHL"})
        self.assertEqual(version, 1, "the new stream version is returned")
        events = postgres.appended("shipments_events", STREAM)
        self.assertEqual(len(events), 1, "exactly one event appended to the shipments log")
        self.assertIsInstance(events[0], postgres.NewEvent)
        self.assertEqual((events[0].type, events[0].payload), ("ShipmentCreated",
                                                               {"order": "o-1", "carrier": "DHL"}))

    def test_expected_version_is_passed_through(self):
        """the caller's expected version reaches the store (optimistic concurrency, ADR-001)"""
        self.publish(expected=0)
        self.assertEqual(self.publish("LabelPrinted", expected=1), 2)
        with self.assertRaises(postgres.ConcurrencyConflict):
            self.publish("HandedToCarrier", expected=0)

    def test_every_shipment_event_type_is_accepted(self):
        """every event type of session-061 is accepted"""
        for version, event_type in enumerate(SHIPMENT_EVENT_TYPES):
            self.publish(event_type, expected=version)
        self.assertEqual([e.type for e in postgres.appended("shipments_events", STREAM)],
                         list(SHIPMENT_EVENT_TYPES))

    def test_unknown_event_type_is_refused(self):
        """an event type that is not a shipment event raises ValueError and appends nothing"""
        with self.assertRaises(ValueError):
            self.publish("OrderPlaced")
        self.assertEqual(postgres.appended("shipments_events"), [])

    def test_keeps_its_own_log(self):
        """nothing is written to the orders log and no store on the orders schema is opened"""
        self.publish()
        self.assertEqual(postgres.appended("orders_events"), [], "events landed in the orders log")
        self.assertEqual([s.schema for s in postgres.STORES], ["shipments_events"],
                         "the work opened a store of its own")


if __name__ == "__main__":
    unittest.main()
