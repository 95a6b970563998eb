"""Bring an index in line with a corpus without ever losing history.

`sync` is the one write path used by both `ingest` (add and update) and
`refresh` (also remove what is truly gone). Its decisions:

- a source is (re)processed when its content hash changed **or** its stored
  representation (chunker configuration + embedder identity) differs from the
  configured one, so a new encoder or chunker never leaves old vectors behind;
- all writes of one sync happen in **one transaction** (embedding is streamed
  into it in batches): a crash at any point leaves the previous index, and
  concurrent readers see either the old or the new version, never a source
  hash ahead of its chunks, never two representations mixed;
- a file that exists but cannot be read (I/O error, permissions, invalid
  UTF-8, vanished mid-read) is a *failed observation*: its indexed content is
  kept and marked, and reported. Only a file absent from a successful walk of
  the root is removed, and only by `refresh`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import psycopg
from tqdm.auto import tqdm

from .chunking import Chunk, chunk_text, chunker_identity
from .config import Config
from .embedders import Embedder, get_embedder
from .identifiers import extract_identifiers, path_identifiers
from .ingest import Discovery, SourceRecord, discover
from .store import ChunkRow, Store, StoreError

WRITE_BATCH_CHUNKS = 256


@dataclass(frozen=True)
class FailedObservation:
    source_id: str
    reason: str


@dataclass
class SyncReport:
    index: str
    root: str
    representation_id: str
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    reembedded: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    failed_observations: list[FailedObservation] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    hnsw_built: bool = False
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def changed_anything(self) -> bool:
        return bool(self.added or self.changed or self.reembedded or self.removed)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["changed_anything"] = self.changed_anything
        return data


def representation_id(config: Config, embedder: Embedder) -> str:
    """Stable id of (chunker configuration, embedder identity)."""
    payload = {"chunker": chunker_identity(config.chunking), "embedder": embedder.identity.to_dict()}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]
    return f"{config.chunking.policy}-{embedder.identity.name}-{digest}"


def open_index(conn: psycopg.Connection, config: Config, embedder: Embedder) -> tuple[Store, str]:
    """Create the index's schema if needed and register the configured representation."""
    store = Store(conn, config.index)
    store.create(embedder.identity.dimension)
    rep_id = representation_id(config, embedder)
    with conn.transaction():
        store.ensure_representation(
            rep_id, chunker_identity(config.chunking), embedder.identity.to_dict(),
            embedder.identity.dimension,
        )
    return store, rep_id


def sync(
    conn: psycopg.Connection,
    config: Config,
    root: str,
    *,
    remove_missing: bool,
    progress: bool = False,
    embedder: Embedder | None = None,
    on_batch_written: Callable[[int], None] | None = None,
) -> SyncReport:
    """Index `root` into `config.index`; see the module docstring for the rules."""
    started = time.perf_counter()
    embedder = embedder or get_embedder(config.embedder)
    discovery = discover(root, max_bytes=config.max_file_bytes)
    discovered_at = time.perf_counter()

    store = Store(conn, config.index)
    if store.exists() and store.dimension() != embedder.identity.dimension and not remove_missing:
        raise StoreError(
            f"index {config.index!r} holds {store.dimension()}-d vectors but the configured "
            f"embedder {embedder.identity.name!r} makes {embedder.identity.dimension}-d ones: "
            "run `memory-baseline refresh` to re-embed the whole index"
        )
    rebuild_dimension = store.exists() and store.dimension() != embedder.identity.dimension
    if not rebuild_dimension:
        store, rep_id = open_index(conn, config, embedder)
    else:
        rep_id = representation_id(config, embedder)

    report = SyncReport(index=config.index, root=str(discovery.root), representation_id=rep_id)
    report.skipped = [{"path": s.path, "reason": s.reason} for s in discovery.skipped]
    stored = store.sources()
    todo = _plan(discovery, stored, rep_id, report, force_all=rebuild_dimension)
    seconds = {"discover": discovered_at - started, "chunk": 0.0, "embed": 0.0, "write": 0.0}

    with conn.transaction():
        store.lock_for_write()
        if rebuild_dimension:
            _change_dimension(store, embedder, rep_id, config)
        chunk_total = 0
        bar = tqdm(total=len(todo), desc="index", unit="src", disable=not progress or not todo)
        for batch in _batches(todo, config):
            t0 = time.perf_counter()
            pieces = [(record, chunk_text(record.source_id, record.text, config.chunking))
                      for record in batch]
            t1 = time.perf_counter()
            texts = [c.text for _, chunks in pieces for c in chunks]
            vectors = embedder.embed_documents(texts) if texts else []
            t2 = time.perf_counter()
            offset = 0
            for record, chunks in pieces:
                rows = [_row(record, c, vectors[offset + i]) for i, c in enumerate(chunks)]
                offset += len(chunks)
                store.replace_source(
                    record.source_id, record.kind, record.content_hash, record.size_bytes,
                    record.artifact_time, rep_id, rows,
                )
                chunk_total += len(rows)
            t3 = time.perf_counter()
            seconds["chunk"] += t1 - t0
            seconds["embed"] += t2 - t1
            seconds["write"] += t3 - t2
            bar.update(len(batch))
            if on_batch_written:
                on_batch_written(chunk_total)
        bar.close()
        t_finish = time.perf_counter()
        for failure in report.failed_observations:
            store.mark_failed(failure.source_id, failure.reason)
        unchanged_ids = [r.source_id for r in discovery.sources
                         if r.source_id not in {x.source_id for x in todo}]
        store.touch_sources(unchanged_ids)
        if remove_missing:
            store.remove_sources(report.removed)
        store.set_meta("corpus_root", str(discovery.root))
        store.set_meta("representation_id", rep_id)
        seconds["write"] += time.perf_counter() - t_finish
    report.chunks_written = chunk_total

    t_index = time.perf_counter()
    if config.hnsw_build and not store.has_hnsw():
        store.build_hnsw()
        report.hnsw_built = True
    if report.changed_anything:
        store.analyze()
    seconds["index"] = time.perf_counter() - t_index
    seconds["total"] = time.perf_counter() - started
    report.seconds = {k: round(v, 4) for k, v in seconds.items()}
    return report


def _plan(
    discovery: Discovery, stored: dict, rep_id: str, report: SyncReport, *, force_all: bool
) -> list[SourceRecord]:
    todo: list[SourceRecord] = []
    for record in discovery.sources:
        previous = stored.get(record.source_id)
        if previous is None:
            report.added.append(record.source_id)
        elif force_all or previous.representation_id != rep_id:
            if previous.content_hash == record.content_hash:
                report.reembedded.append(record.source_id)
            else:
                report.changed.append(record.source_id)
        elif previous.content_hash != record.content_hash:
            report.changed.append(record.source_id)
        else:
            # Unchanged (a failed-observation mark is cleared by touch_sources).
            report.unchanged += 1
            continue
        todo.append(record)
    for failed in discovery.failed:
        if failed.source_id in stored:
            report.failed_observations.append(FailedObservation(failed.source_id, failed.reason))
        else:
            report.skipped.append({"path": failed.source_id, "reason": failed.reason})
    seen = {r.source_id for r in discovery.sources} | {f.source_id for f in discovery.failed}
    report.removed = sorted(set(stored) - seen)
    return todo


def _batches(records: Sequence[SourceRecord], config: Config) -> Iterator[list[SourceRecord]]:
    """Group sources so each embedding call gets a few hundred chunks."""
    batch: list[SourceRecord] = []
    estimate = 0
    step = max(config.chunking.target_chars - config.chunking.overlap_chars, 1)
    for record in records:
        batch.append(record)
        estimate += max(1, len(record.text) // step)
        if estimate >= WRITE_BATCH_CHUNKS:
            yield batch
            batch, estimate = [], 0
    if batch:
        yield batch


def _row(record: SourceRecord, chunk: Chunk, vector) -> ChunkRow:
    return ChunkRow(
        chunk_id=chunk.chunk_id,
        source_id=record.source_id,
        ordinal=chunk.ordinal,
        char_start=chunk.start,
        char_end=chunk.end,
        section=chunk.section,
        text=chunk.text,
        content_hash=chunk.content_hash,
        identifiers=extract_identifiers(chunk.text),
        name_terms=path_identifiers(record.source_id),
        embedding=vector,
    )


def _change_dimension(store: Store, embedder: Embedder, rep_id: str, config: Config) -> None:
    """Switch the vector column to a new dimension inside the sync's transaction.

    Every chunk is rewritten by this sync (force_all), so emptying the table first
    never exposes a partial state: readers see the old index until commit.
    """
    from psycopg import sql

    store.drop_hnsw()
    store.conn.execute(sql.SQL("DELETE FROM {}.chunks").format(store.schema))
    store.conn.execute(
        sql.SQL("ALTER TABLE {}.chunks ALTER COLUMN embedding TYPE vector({})").format(
            store.schema, sql.Literal(embedder.identity.dimension)
        )
    )
    store.ensure_representation(
        rep_id, chunker_identity(config.chunking), embedder.identity.to_dict(),
        embedder.identity.dimension,
    )
