"""A conventional retrieval-augmented project memory on PostgreSQL + pgvector.

The pipeline, one module per stage: `ingest` (discover, parse, provenance),
`chunking`, `store` (schema and SQL), `server` (embedded PostgreSQL),
`models` (offline model files and the GGUF runtime), `embedders`,
`retrieval` (lexical, dense, fusion), `rerank`, `context`, `readers`,
`baseline` (`Baseline.ask`), `refresh` and `health`, `evaluation` (the adapter
to `memory_instrument`), `cli`.
"""

__version__ = "0.1.0"
