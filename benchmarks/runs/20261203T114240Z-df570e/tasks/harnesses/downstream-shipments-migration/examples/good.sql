-- Shipments event log: its own schema in the shared cluster (ADR-007).
CREATE SCHEMA IF NOT EXISTS shipments_events;

CREATE TABLE shipments_events.events (
    stream_id   uuid        NOT NULL,
    version     integer     NOT NULL,
    type        text        NOT NULL,
    schema      integer     NOT NULL DEFAULT 1,
    payload     jsonb       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, version)
);
