"""Shared helpers for the refresh tests: corpora, index snapshots, expected contents.

The expected content of an index is derived without the database: discover the
corpus and chunk it with the configured chunker. Comparing ids and hashes of
sources and chunks (and the representation of every chunk) against it says
whether an index holds exactly one version of the corpus.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import psycopg

from memory_baseline.chunking import chunk_text
from memory_baseline.config import Config, RetrievalConfig
from memory_baseline.ingest import discover
from memory_baseline.store import Hit, Store, query_terms

TOPICS = [
    "the event store moved from SQLite to PostgreSQL after write contention",
    "the importer retries failed batches with exponential backoff",
    "shipment events are published to the outbound queue after commit",
    "the nightly report reads from a replica to keep load off the primary",
    "schema migrations run before the service starts accepting traffic",
    "the cache was rejected because invalidation would be error prone",
    "the benchmark showed p95 latency under forty milliseconds",
    "on-call rotates weekly and the runbook lives in the ops folder",
]


@dataclass(frozen=True)
class IndexState:
    """Ids and hashes of everything an index holds (what must equal a clean build)."""

    sources: frozenset[tuple[str, str, str]]  # source_id, content_hash, observation_status
    chunks: frozenset[tuple[str, str, str]]  # chunk_id, content_hash, representation_id


def index_state(conn: psycopg.Connection, index: str) -> IndexState:
    store = Store(conn, index)
    sources = conn.execute(store._q(
        "SELECT source_id, content_hash, observation_status FROM {s}.sources")).fetchall()
    chunks = conn.execute(store._q(
        "SELECT chunk_id, content_hash, representation_id FROM {s}.chunks")).fetchall()
    return IndexState(frozenset(map(tuple, sources)), frozenset(map(tuple, chunks)))


def expected_state(corpus: Path, config: Config, representation: str) -> IndexState:
    found = discover(corpus, max_bytes=config.max_file_bytes)
    sources = {(r.source_id, r.content_hash, "ok") for r in found.sources}
    chunks = {
        (c.chunk_id, c.content_hash, representation)
        for r in found.sources for c in chunk_text(r.source_id, r.text, config.chunking)
    }
    return IndexState(frozenset(sources), frozenset(chunks))


def note_text(rng: random.Random, serial: int) -> str:
    topic = rng.choice(TOPICS)
    return (f"# Note {serial}\n\nRevision {rng.randrange(10**6)}: {topic}. "
            f"Owner team-{rng.randrange(20)} confirmed it on day {rng.randrange(365)}.\n")


def write_corpus(root: Path, rng: random.Random, files: int) -> None:
    for serial in range(files):
        folder = root / f"area-{serial % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{serial:04d}.md").write_text(note_text(rng, serial), encoding="utf-8")


def mutate_corpus(root: Path, rng: random.Random, fraction: float) -> dict[str, int]:
    """Rewrite, delete and add notes; returns how many of each."""
    files = sorted(root.rglob("*.md"))
    rewrite = rng.sample(files, max(1, int(len(files) * fraction)))
    for path in rewrite:
        path.write_text(note_text(rng, rng.randrange(10**4)), encoding="utf-8")
    remaining = [p for p in files if p not in rewrite]
    deleted = rng.sample(remaining, min(len(remaining), max(1, int(len(files) * fraction / 4))))
    for path in deleted:
        path.unlink()
    added = max(1, int(len(files) * fraction / 4))
    for _ in range(added):
        serial = rng.randrange(10**4, 10**5)
        folder = root / f"area-{serial % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{serial}.md").write_text(note_text(rng, serial), encoding="utf-8")
    return {"rewritten": len(rewrite), "deleted": len(deleted), "added": added}


def bm25(store: Store, query: str, limit: int = 10) -> list[Hit]:
    """The lexical path as search runs it (identifiers whole, English lexemes for the rest)."""
    settings = RetrievalConfig()
    return store.lexical_bm25(query_terms(store, query), limit, settings.bm25_k1, settings.bm25_b,
                              settings.bm25_name_weight)
