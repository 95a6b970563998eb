"""Harness for downstream-carrier-feed-idempotency: the idempotency key of a carrier-feed row.

What the history decides (evt-204, session-046, session-052, src/kestrel/importer/
partner_feed.py): each imported row gets the key sha256(row id + ":" + file checksum),
so the same row of the same file always maps to the same key and a retried import of a
partly appended file appends nothing twice.
"""

import hashlib
import unittest

from kestrel.shipments import carrier_feed as work


def expected(row_id: str, checksum: str) -> str:
    return hashlib.sha256(f"{row_id}:{checksum}".encode()).hexdigest()


class IdempotencyKey(unittest.TestCase):
    def test_the_rule_of_session_052(self):
        """the key is sha256(row id + ':' + file checksum), hex"""
        for row_id, checksum in (("r-1", "ab" * 32), ("4100", "0" * 64), ("row 7", "ff")):
            self.assertEqual(work.idempotency_key(row_id, checksum), expected(row_id, checksum))

    def test_same_row_same_key(self):
        """a retried import of the same file gives the same key"""
        self.assertEqual(work.idempotency_key("r-1", "c1"), work.idempotency_key("r-1", "c1"))

    def test_different_file_different_key(self):
        """the same row id in another file is a different row"""
        self.assertNotEqual(work.idempotency_key("r-1", "c1"), work.idempotency_key("r-1", "c2"))


if __name__ == "__main__":
    unittest.main()
