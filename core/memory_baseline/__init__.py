"""A conventional retrieval-augmented project memory on PostgreSQL + pgvector.

The public API is this package's root, and it is small:

    from memory_baseline import open_memory

    with open_memory("demo") as memory:            # embedded PostgreSQL, or DATABASE_URL
        memory.refresh("path/to/history")           # add, update, remove what is gone
        result = memory.ask("What event store should new services use?", as_of="2024-07-15")
        print(result.text, result.citations)

`Memory` also has `ingest`, `search` (every stage and the admitted passages,
without reading) and `health`. `Config` is the one configuration (TOML
sections or keyword overrides). Results are frozen dataclasses: `Search`,
`AskResult`, `SyncReport`, `HealthReport`. Everything else in the package is
internal, one module (or package) per pipeline stage, which the lab
(`memory_lab`) measures one by one:

    ingest, git_history        discover and parse files, committed versions as path@commit
    chunking, code_chunks      chunks with their character spans and lines
    store/                     PostgreSQL: schema.sql, writes, snapshots, vectors, bm25/
    embedders, vector_cache    encoders with recorded identities; cached document vectors
    retrieval, rerank          lexical + dense candidates, fusion, identifier priority, reranking
    passages, context          the one passage type; admission under an exact token budget
    reading/                   prompts and styles, question kinds, grammars, citations, backends
    baseline, memory           Baseline.ask (one call for every context source); the public handle
    refresh, health            keeping an index in line with its folder; integrity checks
    cli, mcp_server, server    the command line, the MCP server, the embedded PostgreSQL

Names load on first use, so importing the package (and starting the CLI)
costs no model, torch or database import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> the module that defines it
_EXPORTS = {
    "open_memory": "memory",
    "Memory": "memory",
    "Config": "config",
    "ConfigError": "config",
    "Search": "baseline",
    "AskResult": "baseline",
    "SyncReport": "refresh",
    "HealthReport": "health",
}

__all__ = ["AskResult", "Config", "ConfigError", "HealthReport", "Memory", "Search", "SyncReport",
           "__version__", "open_memory"]

if TYPE_CHECKING:
    from .baseline import AskResult, Search
    from .config import Config, ConfigError
    from .health import HealthReport
    from .memory import Memory, open_memory
    from .refresh import SyncReport


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memory_baseline' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
