"""Harness for downstream-shipments-migration: the SQL that creates the shipments event log.

The migration is parsed by pglast, which is PostgreSQL's own parser (libpg_query), so a
statement PostgreSQL would reject (SQLite's AUTOINCREMENT, PRAGMA, ...) fails here as a
syntax error. It is not executed against a server: the sandbox has no network. The
tests then read the statements: a schema of the shipments service's own (ADR-007, the
operations guide), an events table holding the columns the PostgreSQL adapter inserts
(stream_id, version, type, schema, payload: src/kestrel/eventstore/postgres.py, ADR-005)
with (stream_id, version) unique (the adapter's optimistic concurrency relies on it),
and nothing that touches the orders schema.
"""

import unittest
from pathlib import Path

import pglast
from pglast import ast

ADAPTER_COLUMNS = {"stream_id", "version", "type", "schema", "payload"}


def walk(node):
    """Every AST node under `node`, depth first."""
    if isinstance(node, tuple | list):
        for item in node:
            yield from walk(item)
    elif isinstance(node, ast.Node):
        yield node
        for name in node:
            yield from walk(getattr(node, name))


class Migration(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.sql = Path("migration.sql").read_text(encoding="utf-8")
        try:
            cls.statements = [raw.stmt for raw in pglast.parse_sql(cls.sql)]
            cls.error = None
        except pglast.parser.ParseError as exc:
            cls.statements, cls.error = [], exc

    def setUp(self) -> None:
        if self.error is not None:
            self.fail(f"not valid PostgreSQL: {self.error}")

    def schemas_created(self):
        return [n.schemaname for n in walk(self.statements) if isinstance(n, ast.CreateSchemaStmt)]

    def events_tables(self):
        return [n for n in walk(self.statements) if isinstance(n, ast.CreateStmt)
                and n.relation.relname == "events"]

    def test_parses_as_postgresql(self):
        """the migration is valid PostgreSQL"""
        self.assertTrue(self.statements, "the migration holds no statement")

    def test_creates_a_shipments_schema(self):
        """it creates a schema of the shipments service's own"""
        schemas = self.schemas_created()
        self.assertTrue(any("shipment" in (s or "").lower() for s in schemas),
                        f"no shipments schema created (schemas: {schemas})")

    def test_events_table_in_that_schema(self):
        """the events table is created inside the shipments schema"""
        tables = self.events_tables()
        self.assertTrue(tables, "no events table created")
        self.assertTrue(all("shipment" in (t.relation.schemaname or "").lower() for t in tables),
                        "the events table is not schema-qualified with the shipments schema")

    def test_adapter_columns(self):
        """the events table has every column the PostgreSQL adapter inserts"""
        for table in self.events_tables():
            columns = {e.colname for e in table.tableElts or () if isinstance(e, ast.ColumnDef)}
            self.assertLessEqual(ADAPTER_COLUMNS, columns,
                                 f"missing columns: {sorted(ADAPTER_COLUMNS - columns)}")

    def test_stream_version_unique(self):
        """(stream_id, version) is a primary key or unique, as optimistic concurrency needs"""
        keys = []
        for node in walk(self.statements):
            if isinstance(node, ast.Constraint) and node.keys:
                keys.append({k.sval for k in node.keys})
            if isinstance(node, ast.IndexStmt) and node.unique:
                keys.append({p.name for p in node.indexParams})
        self.assertIn({"stream_id", "version"}, keys,
                      "no primary key or unique index on (stream_id, version)")

    def test_leaves_the_orders_schema_alone(self):
        """no statement names the orders schema"""
        touched = [n for n in walk(self.statements)
                   if (isinstance(n, ast.RangeVar) and n.schemaname == "orders_events")
                   or (isinstance(n, ast.CreateSchemaStmt) and n.schemaname == "orders_events")]
        self.assertEqual(touched, [], "the migration touches orders_events")
        self.assertNotIn("orders_events", self.sql)


if __name__ == "__main__":
    unittest.main()
