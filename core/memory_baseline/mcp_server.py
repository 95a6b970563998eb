"""`memory-baseline mcp`: the index as tools for the assistant an engineer already uses.

Claude Code, Cursor, Codex and any other Model Context Protocol client reach
tools over MCP, and their own model is a far stronger reader than anything that
runs on two cores. This server keeps one `Memory` handle warm (encoder, reader
tokenizer and connection loaded once) and serves the same conventional pipeline
with the client as the reader:

- `search`: the admitted passages for a question (optionally as of a date), each
  with its path, line range, stated date, the retrieval paths that found it and
  its rank;
- `read_source`: lines of an indexed source, read from the corpus folder and
  only from inside it;
- `ask`: the local reader's answer with citations, for clients without a model;
- `health`: the index's integrity checks;
- `refresh`: the configured corpus brought in line, with the CLI's guards.

Arguments are validated by the SDK from the type hints; anything else a client
sends is checked here, and a failure is a tool error the model can read, never a
crash of the server. Nothing a client sends reaches SQL except as a bound
parameter (the store's queries), and no path outside the corpus is opened.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from .config import Config
from .context_sources import Gathered, Retrieved
from .memory import Memory

SERVER_NAME = "memory-baseline"
MAX_PASSAGES = 50
MAX_LINES = 2000


class ToolInputError(ValueError):
    """A tool argument that cannot be used (reported to the client as a tool error)."""


def _as_of(value: str | None) -> str | None:
    if value in (None, ""):
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise ToolInputError(f"as_of must be an ISO date (YYYY-MM-DD), got {value!r}") from None


def _query(value: str) -> str:
    if not value.strip():
        raise ToolInputError("query is empty")
    if len(value) > 4000:
        raise ToolInputError("query is longer than 4000 characters")
    return value


def passage_record(passage: Any, found_by: dict[str, list[str]]) -> dict[str, Any]:
    """One admitted passage as a client sees it: where it is, when it was written, who found it."""
    record: dict[str, Any] = {"path": passage.source_id, "chunk_id": passage.chunk_id,
                              "rank": passage.rank, "date": passage.artifact_date,
                              "section": passage.section, "found_by": found_by.get(passage.chunk_id, []),
                              "truncated": passage.truncated}
    if passage.line_start is not None:
        record.update(lines=f"L{passage.line_start}-{passage.line_end}", line_start=passage.line_start,
                      line_end=passage.line_end)
    record.update(location=passage.location, char_start=passage.char_start, char_end=passage.char_end)
    record["text"] = passage.text
    return record


def _found_by(retrieval: Any) -> dict[str, list[str]]:
    """chunk id -> the first-stage paths (lexical, dense) whose candidates held it."""
    found: dict[str, list[str]] = {}
    if retrieval is None:
        return found
    for stage in retrieval.stages:
        if stage.name in ("lexical", "dense"):
            for candidate in stage.candidates:
                found.setdefault(candidate.chunk_id, []).append(stage.name)
    return found


@dataclass(frozen=True)
class AtMost:
    """Retrieval with the client's passage count: the same warm pipeline, a different limit."""

    inner: Retrieved
    passages: int
    name: str = "retrieval"

    def gather(self, query: str, config: Config) -> Gathered:
        gathered = self.inner.gather(query, config)
        return replace(gathered, context=replace(gathered.context, max_passages=self.passages))


class MemoryTools:
    """The tools' behaviour, apart from the protocol (so tests and the CLI can call it directly).

    One lock serialises calls: the handle has one connection, and the machine's
    cores are better spent on one search at a time than on two interleaved.
    """

    def __init__(self, memory: Memory, corpus: str | Path | None) -> None:
        self.memory = memory
        self.corpus = Path(corpus).resolve() if corpus else None
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Load the encoder, the reader's tokenizer and the connection before the first call."""
        with self._lock:
            self.memory.search("warm up")

    def search(self, query: str, as_of: str | None = None, passages: int = 6) -> dict[str, Any]:
        if not 1 <= passages <= MAX_PASSAGES:
            raise ToolInputError(f"passages must be between 1 and {MAX_PASSAGES}, got {passages}")
        query, when = _query(query), _as_of(as_of)
        with self._lock:
            pipeline = self.memory._pipeline()
            found = pipeline.search(query, when, source=AtMost(Retrieved(pipeline.retriever), passages))
        found_by = _found_by(found.retrieval)
        return {"query": query, "as_of": when,
                "passages": [passage_record(p, found_by) for p in found.passages],
                "prompt_tokens": found.context.prompt_tokens, "token_budget": found.context.token_budget,
                "timings_ms": found.timings_ms}

    def read_source(self, path: str, start_line: int = 1, end_line: int | None = None) -> dict[str, Any]:
        if self.corpus is None:
            raise ToolInputError("read_source needs the server started with --corpus FOLDER")
        if start_line < 1 or (end_line is not None and end_line < start_line):
            raise ToolInputError("lines are numbered from 1 and end_line must not precede start_line")
        if "@" in path:
            raise ToolInputError(f"{path!r} is a historical version (path@commit): it is not on disk")
        target = self._inside_corpus(path)
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
        last = min(end_line or len(lines), len(lines), start_line + MAX_LINES - 1)
        return {"path": path, "lines": f"L{start_line}-{last}", "line_start": start_line, "line_end": last,
                "total_lines": len(lines), "text": "\n".join(lines[start_line - 1:last])}

    def _inside_corpus(self, path: str) -> Path:
        """The file of indexed source `path`, proven to lie inside the corpus folder."""
        if not path or "\x00" in path or os.path.isabs(path):
            raise ToolInputError(f"{path!r} is not a path inside the corpus")
        with self._lock:
            known = self._is_indexed(path)
        if not known:
            raise ToolInputError(f"{path!r} is not a source of index {self.memory.config.index!r}")
        target = (self.corpus / path).resolve()
        if not target.is_relative_to(self.corpus) or not target.is_file():
            raise ToolInputError(f"{path!r} is not a readable file inside the corpus")
        return target

    def _is_indexed(self, path: str) -> bool:
        from .store import Store

        return Store(self.memory.connection, self.memory.config.index).has_source(path)

    def ask(self, query: str, as_of: str | None = None) -> dict[str, Any]:
        query, when = _query(query), _as_of(as_of)
        with self._lock:
            result = self.memory.ask(query, as_of=when)
        found_by = _found_by(result.retrieval)
        return {"answer": result.text, "citations": list(result.citations), "as_of": when,
                "passages": [passage_record(p, found_by) for p in result.passages],
                "reader": result.answer.reader.get("name"), "timings_ms": result.timings_ms}

    def health(self) -> dict[str, Any]:
        with self._lock:
            return self.memory.health().to_dict()

    def refresh(self, prune: bool = False) -> dict[str, Any]:
        if self.corpus is None:
            raise ToolInputError("refresh needs the server started with --corpus FOLDER")
        with self._lock:
            return self.memory.refresh(self.corpus, prune=prune).to_dict()


def indexed_folder(memory: Memory) -> str | None:
    """The folder the index was last refreshed from, when it still exists (the default corpus)."""
    from .store import Store

    store = Store(memory.connection, memory.config.index)
    root = store.get_meta("corpus_root") if store.exists() else None
    return root if isinstance(root, str) and Path(root).is_dir() else None


def build_server(tools: MemoryTools):
    """The MCP server (the SDK's `MCPServer`) exposing `tools`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(SERVER_NAME, instructions=(
        "Project memory over one indexed history (notes, decisions, reports, logs, configs, code). "
        "Call search first; cite passages by path and line range; read_source opens the lines around "
        "a passage. Give as_of (YYYY-MM-DD) when the question is about a past date."))

    def guarded(call):
        try:
            return call()
        except ToolError:
            raise
        except (ValueError, LookupError, OSError) as exc:  # bad input, unknown source, unreadable file
            raise ToolError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None

    @server.tool()
    def search(query: str, as_of: str | None = None, passages: int = 6) -> dict[str, Any]:
        """Passages of the project's history relevant to `query`, best first, as admitted to a reader:
        path, line range, date, which retrieval paths found each, rank and text. `as_of` (YYYY-MM-DD)
        limits the evidence to what existed on that date."""
        return guarded(lambda: tools.search(query, as_of, passages))

    @server.tool()
    def read_source(path: str, start_line: int = 1, end_line: int | None = None) -> dict[str, Any]:
        """Lines `start_line`..`end_line` (1-based, inclusive) of an indexed source file."""
        return guarded(lambda: tools.read_source(path, start_line, end_line))

    @server.tool()
    def ask(query: str, as_of: str | None = None) -> dict[str, Any]:
        """An answer from the local reader model with citations (slow on a CPU: prefer search)."""
        return guarded(lambda: tools.ask(query, as_of))

    @server.tool()
    def health() -> dict[str, Any]:
        """The index's integrity checks; `ok` is false when one fails."""
        return guarded(tools.health)

    @server.tool()
    def refresh(prune: bool = False) -> dict[str, Any]:
        """Bring the index in line with the corpus folder (added, changed, removed sources)."""
        return guarded(lambda: tools.refresh(prune))

    return server


def serve(config: Config, corpus: str | None, *, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = 8765, database_url: str | None = None) -> None:
    """Run the server until the client goes away (stdio) or the process is stopped (HTTP)."""
    with Memory(config, database_url) as memory:
        tools = MemoryTools(memory, corpus or indexed_folder(memory))
        tools.warm()
        server = build_server(tools)
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
