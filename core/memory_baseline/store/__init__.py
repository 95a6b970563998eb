"""The PostgreSQL store: all SQL of one index, split by job.

- `schema` (with ``schema.sql``): tables, triggers, upgrades, sizes;
- `writes`: sources and chunks written in the caller's transaction, and read back;
- `snapshots`: one repeatable-read snapshot per search, shared with a second connection;
- `vectors`: dense search with pgvector and the HNSW index;
- `bm25`: the posting arrays' SQL and the numpy scoring of them.

`Store` is the one handle on an index: it combines the parts, which share the
connection and the quoted schema name of `base.IndexSQL`. Callers own the
connection and its transactions.
"""

from .base import Hit, IndexSQL, StoreError, data_directory, server_description
from .bm25 import Compaction, Lexical, Reference, query_terms, tsquery_from_terms
from .schema import SCHEMA_VERSION, Schema, schema_ddl
from .snapshots import Snapshots
from .vectors import HNSW_INDEX, Vectors
from .writes import ChunkRow, StoredSource, Writes


class Store(Schema, Writes, Snapshots, Vectors, Lexical, Compaction, Reference):
    """All SQL for one index; callers own the connection and its transactions."""


__all__ = [
    "HNSW_INDEX", "SCHEMA_VERSION", "ChunkRow", "Hit", "IndexSQL", "Store", "StoreError", "StoredSource",
    "data_directory", "query_terms", "schema_ddl", "server_description", "tsquery_from_terms",
]
