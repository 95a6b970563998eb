"""`memory-lab bench mcp`: a warm search through the MCP server against a cold CLI search, and
the first streamed token of `ask`.

An assistant calls `search` many times in a session; a CLI call pays the imports
and the encoder's load every time. Both are measured in one run on the same
index and queries: the MCP server is started once (`memory-baseline mcp`, the SDK's
stdio client times each `search` round trip, JSON-RPC included), and the CLI is
run as a new process per query (`memory-baseline search --json`, wall time).
Three sizes: the fixture, the PEPs (when their index exists), and 100,000 chunks
of a generated world whose vectors are synthetic draws registered under the real
encoder's representation, so the server's real query encoding, HNSW search and
BM25 cost what they would (relevance there means nothing and is not reported).

`ask` on a terminal streams: the time from the reader's start to its first
token is the prompt's prefill, measured beside the prompt's tokens and the
runtime's own prefill seconds on fixture questions, with the answer cache off.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import psycopg

from memory_baseline.config import Config, EmbedderConfig
from memory_baseline.embedders import get_embedder
from memory_baseline.refresh import sync
from memory_baseline.store import Store
from memory_instrument import load_tasks
from memory_lab.bench.common import machine_description
from memory_lab.bench.synthetic import VectorModel, build_hnsw, enough_queries, load_corpus, world_corpus
from memory_lab.stats import latency_summary

FIXTURE = ("fixtures/history", "fixtures/tasks.json")
PEP_TASKS = "fixtures/peps/tasks.json"


def _command() -> str:
    found = shutil.which("memory-baseline", path=str(Path(sys.executable).parent))
    if found is None:
        raise FileNotFoundError("memory-baseline is not installed beside this Python")
    return found


def warm_search(index: str, queries: Sequence[str], *, warmup: int = 3) -> dict[str, Any]:
    """Round-trip milliseconds of `search` through one MCP server process, after `warmup` calls."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=_command(), args=["mcp", "--index", index])
    times: list[float] = []
    server_ms: list[float] = []
    started = time.perf_counter()

    async def session() -> float:
        async with Client(params, read_timeout_seconds=600) as client:
            ready = time.perf_counter() - started
            for query in list(queries[:warmup]):
                await client.call_tool("search", {"query": query})
            for query in queries:
                t0 = time.perf_counter()
                result = await client.call_tool("search", {"query": query})
                times.append((time.perf_counter() - t0) * 1000)
                if result.is_error:
                    raise RuntimeError(f"search failed through MCP: {result.content}")
                payload = result.structured_content or {}
                payload = payload.get("result", payload)
                server_ms.append(float(sum(v for k, v in payload.get("timings_ms", {}).items()
                                           if k in ("gather", "assembly"))))
            return ready

    ready = anyio.run(session)
    return {"queries": len(times), "round_trip_ms": latency_summary(times),
            "server_gather_and_assembly_ms": latency_summary(server_ms),
            "server_start_seconds": round(ready, 2)}


def cold_search(index: str, queries: Sequence[str]) -> dict[str, Any]:
    """Wall seconds of `memory-baseline search --json`, a new process per query."""
    seconds: list[float] = []
    for query in queries:
        t0 = time.perf_counter()
        subprocess.run([_command(), "search", query, "--index", index, "--json"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds.append(time.perf_counter() - t0)
    return {"queries": len(seconds), "wall_ms": latency_summary([s * 1000 for s in seconds])}


def _fixture_index(conn: psycopg.Connection, index: str) -> tuple[str, list[str]]:
    history, tasks = FIXTURE
    sync(conn, Config(index=index), history, remove_missing=True)
    return index, [task.query for task in load_tasks(tasks).tasks]


def _synthetic_index(conn: psycopg.Connection, index: str, size: int, seed: int,
                     reuse: bool) -> tuple[str, list[str], dict[str, Any]]:
    """`size` chunks of a generated world with synthetic vectors under MiniLM's representation."""
    encoder = get_embedder(EmbedderConfig())
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        corpus = world_corpus(min(size + size // 20, 100_000), size, seed, Path(tmp))
    store = Store(conn, index)
    note: dict[str, Any] = {"chunks": len(corpus.chunks), "vectors": "synthetic, under minilm's identity"}
    if reuse and store.exists() and store.counts()["chunks"] == len(corpus.chunks):
        note["reused_index"] = True
    else:
        vectors = VectorModel(dimension=encoder.identity.dimension, seed=seed).sample(len(corpus.chunks),
                                                                                    stream=size)
        note["load_seconds"] = load_corpus(conn, index, corpus, vectors, encoder, progress=False)
        note["hnsw"] = build_hnsw(conn, index)
    return index, list(corpus.queries), note


def first_token(conn: psycopg.Connection, questions: Sequence[str], index: str) -> list[dict[str, Any]]:
    """Seconds from the reader's start to its first streamed token, per question (cache off)."""
    from memory_baseline.baseline import Baseline

    config = Config(index=index).with_overrides(reader={"cache": False})
    baseline = Baseline(conn, config)
    rows = []
    for question in questions:
        marks: dict[str, float] = {}
        baseline.reader.on_text = lambda _text, marks=marks: marks.setdefault("first", time.perf_counter())
        result = baseline.ask(question, on_admitted=lambda _f, marks=marks: marks.update(
            reading=time.perf_counter()))
        usage = result.answer.usage
        rows.append({"question": question, "prompt_tokens": usage.prompt_tokens,
                     "completion_tokens": usage.completion_tokens,
                     "first_token_seconds": round(marks["first"] - marks["reading"], 2),
                     "runtime_prefill_seconds": round(usage.prompt_seconds, 2),
                     "prefill_tokens_per_second": round(usage.prompt_tokens / usage.prompt_seconds, 1)
                     if usage.prompt_seconds else None,
                     "answer_seconds": round(usage.seconds, 2)})
    baseline.retriever.close()
    return rows


def bench_mcp(conn: psycopg.Connection, *, queries: int = 100, cold_queries: int = 5,
              peps_index: str = "bench_peps", synthetic_chunks: int = 100_000, ask_questions: int = 3,
              reuse: bool = False, seed: int = 7) -> dict[str, Any]:
    document: dict[str, Any] = {"machine": machine_description(), "queries_per_index": queries,
                                "cold_queries_per_index": cold_queries, "indexes": {}}
    fixture, fixture_queries = _fixture_index(conn, "bench_mcp_fixture")
    corpora: list[tuple[str, str, list[str], dict[str, Any]]] = [
        ("fixture", fixture, fixture_queries, {})]
    if Store(conn, peps_index).exists():
        corpora.append(("peps", peps_index, [t.query for t in load_tasks(PEP_TASKS).tasks],
                        {"chunks": Store(conn, peps_index).counts()["chunks"]}))
    else:
        document["indexes"]["peps"] = {"measured": False,
                                       "why": f"no index {peps_index!r}: ingest the PEPs into it first"}
    if synthetic_chunks:
        index, texts, note = _synthetic_index(conn, f"bench_mcp_{synthetic_chunks}", synthetic_chunks,
                                              seed, reuse)
        corpora.append((f"{synthetic_chunks // 1000}k", index, texts, note))
    for name, index, texts, note in corpora:
        chosen = enough_queries(texts, queries, seed)
        document["indexes"][name] = {
            "index": index, **note, "chunks": Store(conn, index).counts()["chunks"],
            "warm_mcp": warm_search(index, chosen),
            "cold_cli": cold_search(index, chosen[:cold_queries]),
        }
    if ask_questions:
        document["first_token"] = first_token(conn, fixture_queries[:ask_questions], fixture)
    return document
