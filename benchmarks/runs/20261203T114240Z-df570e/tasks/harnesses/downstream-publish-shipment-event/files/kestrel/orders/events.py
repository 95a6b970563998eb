"""Order events and the single entry point the orders service uses to record them."""

from __future__ import annotations

from uuid import UUID

from kestrel.eventstore.postgres import NewEvent, PostgresEventStore

ORDER_EVENT_TYPES = {"OrderPlaced", "LinePicked", "OrderPacked", "HandedToCarrier"}


def publish_order_event(
    store: PostgresEventStore, order_id: UUID, event_type: str, payload: dict, expected_version: int
) -> int:
    """Validate the type, then append to the order's stream in the orders schema."""
    if event_type not in ORDER_EVENT_TYPES:
        raise ValueError(f"unknown order event type: {event_type}")
    return store.append(order_id, [NewEvent(event_type, payload)], expected_version)
