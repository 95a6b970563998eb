"""Carrier feed importer: every row carries an idempotency key (the partner-feed rule after evt-204)."""

import hashlib


def idempotency_key(carrier_row_id: str, checksum: str) -> str:
    return hashlib.sha256(f"{carrier_row_id}:{checksum}".encode()).hexdigest()
