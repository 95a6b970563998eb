"""A conventional retrieval-augmented project memory on PostgreSQL + pgvector.

The pipeline, one module per stage: `ingest` (discover, parse, provenance) and
`git_history` (committed versions as `path@commit`), `chunking`,
`identifiers` (terms the English parser would split), `store` (schema, BM25
statistics and posting arrays, all SQL), `bm25` (the posting format, exact
top-k scoring, compaction), `server` (embedded PostgreSQL), `models` (offline
model files and the GGUF runtime), `embedders` and `vector_cache` (document
vectors a book rebuild reads back), `retrieval` (lexical, dense,
fusion), `rerank`, `context`, `readers` and `answer_cache`, `baseline`
(`Baseline.ask`), `refresh` and `health`, `cli`.

The experiments that measure this library live in `memory_lab`; importing
`memory_baseline` loads none of them.
"""

__version__ = "0.1.0"
