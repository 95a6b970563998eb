import uuid


def idempotency_key(carrier_row_id, checksum):
    return uuid.uuid4().hex  # a fresh key for every attempt
