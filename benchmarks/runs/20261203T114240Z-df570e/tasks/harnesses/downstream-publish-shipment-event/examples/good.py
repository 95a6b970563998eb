"""Shipment events and the single entry point the shipments service uses to record them."""

from __future__ import annotations

from uuid import UUID

from kestrel.eventstore.postgres import NewEvent, PostgresEventStore

SHIPMENT_EVENT_TYPES = {"ShipmentCreated", "LabelPrinted", "HandedToCarrier", "DeliveryConfirmed"}


def publish_shipment_event(
    store: PostgresEventStore, shipment_id: UUID, event_type: str, payload: dict, expected_version: int
) -> int:
    """Validate the type, then append to the shipment's stream in the shipments schema."""
    if event_type not in SHIPMENT_EVENT_TYPES:
        raise ValueError(f"unknown shipment event type: {event_type}")
    return store.append(shipment_id, [NewEvent(event_type, payload)], expected_version)
