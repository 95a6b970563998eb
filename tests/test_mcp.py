"""`memory-baseline mcp` as a real MCP client sees it: a subprocess on stdio, the SDK's client.

The index is the fixture history on the real server; the server process loads the
real encoder once and answers `search`, `read_source`, `health` and bad input.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from memory_baseline.config import Config
from memory_baseline.refresh import sync
from memory_baseline.server import connect

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "fixtures" / "history"


def _payload(result) -> dict:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


def _error_text(result) -> str:
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture()
def indexed(index_name):
    with connect() as conn:
        sync(conn, Config(index=index_name), HISTORY, remove_missing=True)
    return index_name


def test_an_mcp_client_lists_searches_reads_and_gets_tool_errors(indexed):
    from mcp import Client, StdioServerParameters

    command = shutil.which("memory-baseline", path=str(Path(sys.executable).parent))
    params = StdioServerParameters(command=command,
                                   args=["mcp", "--index", indexed, "--corpus", str(HISTORY)])

    async def session():
        async with Client(params, read_timeout_seconds=300) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {"search", "read_source", "ask", "health", "refresh"}

            found = _payload(await client.call_tool(
                "search", {"query": "Where is the error code E-BRK-042 explained?", "passages": 4}))
            first = found["passages"][0]
            assert first["path"] == "docs/runbooks/broker-errors.md"
            assert first["found_by"] and first["rank"] == 1
            assert len(found["passages"]) <= 4
            assert first["location"] == f"{first['path']}:L{first['line_start']}-{first['line_end']}"

            lines = _payload(await client.call_tool("read_source", {
                "path": first["path"], "start_line": first["line_start"], "end_line": first["line_end"]}))
            assert (lines["line_start"], lines["line_end"]) == (first["line_start"], first["line_end"])
            # The cited lines hold the passage: every line of the passage text is among them.
            assert all(line.strip() in lines["text"] for line in first["text"].splitlines() if line.strip())

            assert _payload(await client.call_tool("health", {}))["ok"]

            outside = await client.call_tool("read_source", {"path": "../../README.md"})
            assert "not a source" in _error_text(outside)
            absolute = await client.call_tool("read_source", {"path": "/etc/passwd"})
            assert "not a path inside the corpus" in _error_text(absolute)
            bad_date = await client.call_tool("search", {"query": "x", "as_of": "last tuesday"})
            assert "ISO date" in _error_text(bad_date)
            wrong_type = await client.call_tool("search", {"query": "x", "passages": "many"})
            assert wrong_type.is_error

            # The server is still alive after every error.
            again = _payload(await client.call_tool("search", {"query": "event store decision"}))
            assert again["passages"]

    anyio.run(session)
