"""Harness for downstream-shipments-requirements: the shipments service's event-store dependencies.

What the history decides: the event store is PostgreSQL through the adapter in
src/kestrel/eventstore/postgres.py, which imports psycopg 3 (`import psycopg`,
`from psycopg import sql`, `psycopg.errors`); fan-out uses PostgreSQL LISTEN/NOTIFY and
the Redis proposal was rejected (ADR-009); SQLite is no longer used (ADR-007). Every
line must be a valid PEP 508 requirement (parsed by `packaging`, the reference parser).
"""

import unittest
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

REJECTED = {"redis": "ADR-009 rejected Redis", "hiredis": "ADR-009 rejected Redis",
            "redis-py-cluster": "ADR-009 rejected Redis", "aiosqlite": "SQLite is retired (ADR-007)",
            "pysqlite3": "SQLite is retired (ADR-007)", "pysqlite3-binary": "SQLite is retired (ADR-007)",
            "psycopg2": "the adapter uses psycopg 3", "psycopg2-binary": "the adapter uses psycopg 3"}


class Requirements(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.requirements, cls.invalid = [], []
        for raw in Path("requirements.txt").read_text(encoding="utf-8").splitlines():
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            try:
                cls.requirements.append(Requirement(line))
            except InvalidRequirement as exc:
                cls.invalid.append(f"{line!r}: {exc}")

    def named(self, name):
        return [r for r in self.requirements if canonicalize_name(r.name) == name]

    def test_every_line_is_a_requirement(self):
        """every line is a valid PEP 508 requirement"""
        self.assertEqual(self.invalid, [])
        self.assertTrue(self.requirements, "no requirement given")

    def test_psycopg_3(self):
        """psycopg is required, in a version with the psycopg 3 API the adapter uses"""
        found = self.named("psycopg")
        self.assertTrue(found, "psycopg (the PostgreSQL adapter's driver) is missing")
        psycopg_3 = ("3.1.0", "3.2.1", "3.3.0")
        for requirement in found:
            self.assertTrue(not requirement.specifier or any(requirement.specifier.contains(v)
                                                             for v in psycopg_3),
                            f"{requirement} does not allow psycopg 3")

    def test_nothing_decided_against(self):
        """no Redis, no SQLite driver, no psycopg2"""
        hits = [f"{r.name} ({REJECTED[canonicalize_name(r.name)]})" for r in self.requirements
                if canonicalize_name(r.name) in REJECTED]
        self.assertEqual(hits, [])


if __name__ == "__main__":
    unittest.main()
