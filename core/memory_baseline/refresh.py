"""Bring an index in line with a corpus without ever losing history.

`sync` is the one write path used by both `ingest` (add and update) and
`refresh` (also remove what is truly gone), for a folder or, with `git=True`,
for a git repository's work tree, historical file versions and commit
messages (`memory_baseline.git_history`). Its decisions:

- a source is (re)processed when its content hash changed **or** its stored
  representation (chunker configuration + embedder identity) differs from the
  configured one, so a new encoder or chunker never leaves old vectors behind;
  every affected chunk is embedded exactly once, under a progress bar;
- all writes of one sync happen in **one transaction**, the index's schema
  creation included (embedding is streamed into it in batches): a crash at any
  point (kill -9 included) leaves the previous index, and concurrent readers
  see either the old or the new version, never a source hash ahead of its
  chunks, never two representations mixed (a search reads one snapshot,
  `Store.snapshot`). Writers of one index are serialised by an advisory lock,
  taken before the schema is created, so two first writes wait rather than
  collide. A change of vector *dimension* alters the
  column, which locks the chunks table until commit: readers wait, they do
  not see a half-built index. The HNSW index is (re)built and statistics
  refreshed and the BM25 segments compacted after the commit; a crash there
  costs only the next refresh's time;
- an indexed file that exists but cannot be used now (I/O error, permissions,
  invalid UTF-8, vanished mid-read, emptied or truncated mid-write, binary,
  too large, replaced by a FIFO, socket, directory or a link out of the root),
  every indexed file under a directory that could not be listed, and every
  history version or commit that a rewrite or a deleted branch made
  unreachable, is a *failed observation*: its indexed content is kept, marked
  and reported. Only a file really gone (its path absent) is removed, and only
  by `refresh`; `prune=True` (`refresh --prune`) also removes the present but
  unusable ones. A folder refresh of an index that holds git history is
  refused: it would remove that history;
- a refresh of a folder without a single readable source, or one that would
  remove more than `Config.max_remove_share` of the indexed sources, is refused
  (`RefreshRefused`) without `prune`: a wrong path is not a deletion;
- a source that is kept without being re-read (a failed observation, or under
  `ingest` a stored source absent from this corpus) while the representation
  changes is *carried over*: its stored chunk texts are re-embedded with the
  configured embedder, chunk boundaries kept, so the index still holds one
  representation and the source stays searchable by its last good content.
  Re-chunking would need the source text, which exists only in those chunks.
  When the chunker itself changed, those boundaries are the old chunker's: the
  source is then listed in the index's `carried_over` metadata (and in the
  report) and is re-read and re-chunked at its next successful observation,
  even if its bytes are unchanged.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import psycopg
from psycopg import sql
from tqdm.auto import tqdm

from .chunking import Chunk, chunk_text, chunker_identity
from .config import Config
from .embedders import Embedder, get_embedder
from .git_history import discover_git, split_history_id
from .hashing import content_digest
from .identifiers import extract_identifiers, path_identifiers
from .ingest import MAX_SOURCE_ID_BYTES, Discovery, FailedRead, Limits, SourceRecord, discover
from .representation import representation_id
from .store import ChunkRow, Store, StoredSource, StoreError

WRITE_BATCH_CHUNKS = 256
CARRIED_OVER_KEY = "carried_over"
GIT_REPOSITORY_KEY = "git_repository"


class RefreshRefused(StoreError):
    """A refresh would remove more than it should without being told to (bad input)."""


@dataclass(frozen=True)
class FailedObservation:
    source_id: str
    reason: str


@dataclass
class SyncReport:
    index: str
    root: str
    representation_id: str
    corpus_kind: str = "folder"  # folder | git
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    reembedded: list[str] = field(default_factory=list)
    carried_over: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)  # removed although present (--prune)
    failed_observations: list[FailedObservation] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    discovery: dict[str, object] = field(default_factory=dict)  # e.g. git: commits, versions
    chunks_written: int = 0
    hnsw_built: bool = False
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def changed_anything(self) -> bool:
        return bool(
            self.added or self.changed or self.reembedded or self.carried_over or self.removed
            or self.pruned
        )

    def to_dict(self) -> dict:
        data = asdict(self)
        data["changed_anything"] = self.changed_anything
        return data


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


@dataclass
class _Plan:
    reprocess: list[SourceRecord]
    carry_over: list[str]
    touch: list[str]


# How often a long sync reports progress through `on_progress` (a log, a non-terminal stderr).
PROGRESS_SECONDS = 10.0


def sync(
    conn: psycopg.Connection,
    config: Config,
    root: str | Path,
    *,
    remove_missing: bool,
    progress: bool = False,
    embedder: Embedder | None = None,
    on_batch_written: Callable[[int], None] | None = None,
    git: bool = False,
    discovery: Discovery | None = None,
    prune: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> SyncReport:
    """Index `root` (a folder, or with `git=True` a repository) into `config.index`.

    `discovery` replaces the observation of `root` (tests, other connectors).
    `prune` (refresh only) also removes indexed sources that are present but
    unusable, and history no longer reachable, and lifts the removal guard.
    `on_progress` receives one-line progress messages of a long observation (git) and, when
    no bar is shown (`progress` off: a log, stderr not a terminal), of the indexing every
    `PROGRESS_SECONDS`.
    See the module docstring for the rules.
    """
    started = time.perf_counter()
    embedder = embedder or get_embedder(config.embedder, config.cache)
    if discovery is None:
        limits = Limits(max_files=config.max_files, max_total_bytes=config.max_corpus_bytes)
        if git:
            discovery = discover_git(root, max_bytes=config.max_file_bytes, limits=limits,
                                     on_progress=on_progress)
        else:
            discovery = discover(root, max_bytes=config.max_file_bytes, limits=limits)
    discovered_at = time.perf_counter()

    store = Store(conn, config.index)
    rep_id = representation_id(config, embedder)
    dimension = embedder.identity.dimension
    stored_dimension = store.dimension() if store.exists() else None
    rebuild_dimension = stored_dimension is not None and stored_dimension != dimension
    if rebuild_dimension and not remove_missing:
        raise StoreError(
            f"index {config.index!r} holds {stored_dimension}-d vectors but the configured "
            f"embedder {embedder.identity.name!r} makes {dimension}-d ones: "
            "run `memory-baseline refresh` to re-embed the whole index"
        )

    report = SyncReport(index=config.index, root=str(discovery.root), representation_id=rep_id,
                        corpus_kind=discovery.kind)
    report.skipped = [{"path": s.path, "reason": s.reason} for s in discovery.skipped]
    report.discovery = dict(discovery.summary)
    seconds = {"discover": discovered_at - started, "chunk": 0.0, "embed": 0.0, "write": 0.0}
    chunker = chunker_identity(config.chunking)

    with conn.transaction():
        store.lock_for_write()
        store.create(stored_dimension or dimension)  # no-op when it exists
        if remove_missing and discovery.kind != "git" and store.get_meta(GIT_REPOSITORY_KEY):
            raise StoreError(
                f"index {config.index!r} holds the git history of "
                f"{store.get_meta(GIT_REPOSITORY_KEY)}: refresh it with --git (a folder "
                "refresh would remove that history)"
            )
        stored = store.sources()
        carried_before = set(store.get_meta(CARRIED_OVER_KEY) or [])
        plan = _plan(discovery, stored, rep_id, report, carried_before,
                     remove_missing=remove_missing, force_all=rebuild_dimension, prune=prune,
                     without_lines=frozenset(store.sources_without_lines()))
        if remove_missing and not prune:
            _refuse_large_removal(report, stored, discovery, config)
        # Read the kept chunks before any delete (a dimension change empties the table).
        kept_rows = store.stored_chunk_rows(plan.carry_over) if plan.carry_over else []
        if rebuild_dimension:
            _change_dimension(store, dimension)
        store.ensure_representation(rep_id, chunker, embedder.identity.to_dict(), dimension)

        chunk_total = 0
        last_said, sources_done = time.perf_counter(), 0
        bar = tqdm(total=len(plan.reprocess) + len(plan.carry_over), desc="index", unit="src",
                   disable=not progress or not (plan.reprocess or plan.carry_over))
        for batch in _batches(plan.reprocess, config):
            t0 = time.perf_counter()
            pieces = [(record, chunk_text(record.source_id, record.text, config.chunking))
                      for record in batch]
            t1 = time.perf_counter()
            vectors = _vectors(store, embedder, rep_id, [c for _, chunks in pieces for c in chunks])
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
            seconds["chunk"] += t1 - t0
            seconds["embed"] += t2 - t1
            seconds["write"] += time.perf_counter() - t2
            bar.update(len(batch))
            sources_done += len(batch)
            if on_batch_written:
                on_batch_written(chunk_total)
            quiet = on_progress is None or progress  # the bar shows it, or nobody listens
            if not quiet and time.perf_counter() - last_said >= PROGRESS_SECONDS:
                last_said = time.perf_counter()
                on_progress(f"indexed {sources_done} of {len(plan.reprocess)} sources, {chunk_total} chunks, "
                            f"{last_said - started:.0f} s")
        chunk_total += _carry_over(store, embedder, rep_id, kept_rows, bar, seconds)
        bar.close()

        t_finish = time.perf_counter()
        chunker_changed = {
            source_id for source_id in plan.carry_over
            if (store.representation(stored[source_id].representation_id or "") or {})
            .get("chunker") != chunker
        }
        carried_now = (carried_before - {r.source_id for r in plan.reprocess}) | chunker_changed
        for failure in report.failed_observations:
            note = "; kept chunks re-embedded" if failure.source_id in plan.carry_over else ""
            store.mark_failed(failure.source_id, failure.reason + note)
        store.touch_sources(plan.touch)
        if remove_missing:
            store.remove_sources(report.removed + report.pruned)
            carried_now -= set(report.removed) | set(report.pruned)
        store.set_meta(CARRIED_OVER_KEY, sorted(carried_now))
        store.set_meta("corpus_root", str(discovery.root))
        store.set_meta("corpus_kind", discovery.kind)
        if discovery.kind == "git":
            store.set_meta(GIT_REPOSITORY_KEY, str(discovery.root))
        store.set_meta("representation_id", rep_id)
        seconds["write"] += time.perf_counter() - t_finish
    report.chunks_written = chunk_total

    t_index = time.perf_counter()
    if config.hnsw_build and not store.has_hnsw():
        store.build_hnsw()
        report.hnsw_built = True
    if report.changed_anything:
        # Merge this sync's BM25 delta segments and drop its tombstones (each batch
        # of terms commits on its own; queries are exact before, during and after).
        store.compact_bm25()
        store.analyze()
    seconds["index"] = time.perf_counter() - t_index
    seconds["total"] = time.perf_counter() - started
    report.seconds = {k: round(v, 4) for k, v in seconds.items()}
    return report


def _plan(
    discovery: Discovery,
    stored: dict[str, StoredSource],
    rep_id: str,
    report: SyncReport,
    carried_before: set[str],
    *,
    remove_missing: bool,
    force_all: bool,
    prune: bool = False,
    without_lines: frozenset[str] = frozenset(),
) -> _Plan:
    """Sort every observed and stored source into exactly one outcome of this sync.

    An indexed source leaves the index only when it is really gone: its path no
    longer exists (a folder), or its working-tree file was deleted (git). Present
    but unusable (emptied, binary, too large, replaced by a FIFO, a directory or a
    link out of the root), or a history version no longer reachable (an amended
    commit, a deleted branch), it is a failed observation and keeps its last good
    content, unless `prune` asks for exactly what is usable now.
    """
    reprocess: list[SourceRecord] = []
    touch: list[str] = []
    for record in discovery.sources:
        previous = stored.get(record.source_id)
        if previous is None:
            report.added.append(record.source_id)
        elif previous.content_hash != record.content_hash:
            report.changed.append(record.source_id)
        elif (force_all or previous.representation_id != rep_id
              or record.source_id in carried_before or record.source_id in without_lines):
            report.reembedded.append(record.source_id)
        else:
            # Unchanged: the observation is recorded (clearing a failed mark).
            report.unchanged += 1
            touch.append(record.source_id)
            continue
        reprocess.append(record)

    failed: dict[str, str] = {}
    unusable: set[str] = set()  # present, but not readable as a source now (prunable)
    for failure in discovery.failed:
        if failure.source_id in stored:
            failed[failure.source_id] = failure.reason
            unusable.add(failure.source_id)
        else:
            report.skipped.append({"path": failure.source_id, "reason": failure.reason})
    kept_skips = []
    read_now = {r.source_id for r in discovery.sources}
    for skip in report.skipped:
        # An undecodable name is skipped under its escaped spelling, which a real file may
        # bear too (`bad\xff.md`): that spelling never stands for a stored source, and a
        # source read this time is not failed by another file's skip.
        if skip["path"] in stored and skip["path"] not in failed and skip["path"] not in read_now \
                and skip["reason"] != "undecodable-name":
            failed[skip["path"]] = f"{skip['reason']} (last good content kept)"
            unusable.add(skip["path"])
        else:
            kept_skips.append(skip)
    report.skipped = kept_skips
    seen = {r.source_id for r in discovery.sources} | set(failed)
    observed_hashes = {r.content_hash for r in discovery.sources}
    retained: list[str] = []
    for source_id in sorted(set(stored) - seen):
        directory = _unlisted_parent(source_id, discovery)
        present = _still_present(discovery, source_id)
        if (present is None and discovery.kind == "git" and split_history_id(source_id) is None
                and stored[source_id].content_hash not in observed_hashes):
            # Gone from the work tree and its wording is in no reachable version (a file
            # of a deleted branch): removing it would drop that history.
            present = "gone from the work tree and from every reachable version"
        if directory is not None:
            failed[source_id] = f"{directory.reason} (directory {directory.source_id})"
        elif source_id in discovery.present:
            if remove_missing:  # its content is held by another source now
                report.removed.append(source_id)
            else:
                retained.append(source_id)
        elif present is not None:
            failed[source_id] = f"{present} (last good content kept)"
            unusable.add(source_id)
        elif remove_missing:
            report.removed.append(source_id)
        else:
            retained.append(source_id)  # ingest never removes
    if prune and remove_missing:
        report.pruned = sorted(unusable)
        for source_id in unusable:
            del failed[source_id]
    report.failed_observations = [FailedObservation(s, failed[s]) for s in sorted(failed)]

    carry_over = [
        source_id for source_id in sorted(failed) + retained
        if force_all or stored[source_id].representation_id != rep_id
    ]
    report.carried_over = carry_over
    return _Plan(reprocess=reprocess, carry_over=carry_over, touch=touch)


def _still_present(discovery: Discovery, source_id: str) -> str | None:
    """Why an indexed source that was not read is not gone, or None when it is gone.

    A history version or commit absent from this walk of the history was rewritten
    or its branch deleted: history does not disappear by a rewrite. A file path that
    still exists (now a directory, say) is present but unusable.
    """
    history = split_history_id(source_id)
    if history is not None and discovery.kind == "git":
        return "no longer reachable in the repository's history"
    if history is not None or len(source_id.encode("utf-8")) > MAX_SOURCE_ID_BYTES:
        return None
    # A directory on the way replaced by a link (to an empty folder, say) hides its files
    # from the walk without deleting them.
    parts = source_id.split("/")
    for depth in range(1, len(parts)):
        directory = discovery.root.joinpath(*parts[:depth])
        if directory.is_symlink():
            return f"under {'/'.join(parts[:depth])}, which is now a link"
    try:
        mode = (discovery.root / source_id).lstat().st_mode
    except OSError:
        return None
    kind = ("a directory" if stat.S_ISDIR(mode) else "a link" if stat.S_ISLNK(mode)
            else "a regular file" if stat.S_ISREG(mode) else "a special file")
    return f"the path is now {kind}"


def _refuse_large_removal(
    report: SyncReport, stored: dict[str, StoredSource], discovery: Discovery, config: Config
) -> None:
    """A wrong or emptied folder is not a deletion: refuse unless the user says --prune."""
    if not report.removed:
        return
    if not discovery.sources:
        raise RefreshRefused(
            f"{discovery.root} holds no readable sources: refreshing would remove all "
            f"{len(report.removed)} indexed sources of {config.index!r}; check the path, "
            "or pass --prune to empty the index"
        )
    share = len(report.removed) / len(stored)
    if share > config.max_remove_share:
        raise RefreshRefused(
            f"refresh would remove {len(report.removed)} of {len(stored)} indexed sources "
            f"({share:.0%}, more than max_remove_share {config.max_remove_share:.0%}): "
            "check the path, or pass --prune"
        )


def _unlisted_parent(source_id: str, discovery: Discovery) -> FailedRead | None:
    """The unlistable directory `source_id` lies under, if any (history ids by their path)."""
    history = split_history_id(source_id)
    if history is not None and history[0] is None:
        return None  # a commit message is not under any directory
    path = history[0] if history is not None else source_id
    for directory in discovery.unlisted:
        if directory.source_id == "." or path.startswith(directory.source_id.rstrip("/") + "/"):
            return directory
    return None


def _carry_over(
    store: Store, embedder: Embedder, rep_id: str, kept_rows: list[ChunkRow], bar, seconds: dict
) -> int:
    """Re-embed kept chunk texts under the configured representation; returns chunks written."""
    by_source: dict[str, list[ChunkRow]] = {}
    for row in kept_rows:
        by_source.setdefault(row.source_id, []).append(row)
    groups = list(by_source.items())
    written = 0
    start = 0
    while start < len(groups):
        stop, size = start, 0
        while stop < len(groups) and (size == 0 or size + len(groups[stop][1]) <= WRITE_BATCH_CHUNKS):
            size += len(groups[stop][1])
            stop += 1
        batch = groups[start:stop]
        t0 = time.perf_counter()
        vectors = iter(embedder.embed_documents([r.text for _, rows in batch for r in rows]))
        t1 = time.perf_counter()
        for source_id, rows in batch:
            store.replace_chunks(source_id, rep_id, [replace(r, embedding=next(vectors)) for r in rows])
            written += len(rows)
        seconds["embed"] += t1 - t0
        seconds["write"] += time.perf_counter() - t1
        bar.update(len(batch))
        start = stop
    return written


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


def name_terms(source_id: str) -> list[str]:
    """Terms naming a source; a git version is also named by its file and its commit."""
    history = split_history_id(source_id)
    if history is None:
        return path_identifiers(source_id)
    path, sha = history
    named = path_identifiers(path) if path is not None else ["commit"]
    return list(dict.fromkeys([source_id.lower(), *named, sha]))


def _row(record: SourceRecord, chunk: Chunk, vector) -> ChunkRow:
    return chunk_row(record.source_id, chunk.chunk_id, chunk.ordinal, chunk.start, chunk.end,
                     chunk.section, chunk.text, vector, content_hash=chunk.content_hash,
                     lines=(chunk.line_start, chunk.line_end))


def chunk_row(source_id: str, chunk_id: str, ordinal: int, char_start: int, char_end: int,
              section: str | None, text: str, vector, *, content_hash: str | None = None,
              lines: tuple[int, int] | None = None) -> ChunkRow:
    """The store row of one chunk: its identifier terms and the terms naming its source.

    The one place rows are built, for ingest and for the benchmarks' bulk loads alike.
    """
    return ChunkRow(
        chunk_id=chunk_id,
        source_id=source_id,
        ordinal=ordinal,
        char_start=char_start,
        char_end=char_end,
        section=section,
        text=text,
        content_hash=content_hash or content_digest(text),
        identifiers=extract_identifiers(text),
        name_terms=name_terms(source_id),
        embedding=vector,
        line_start=lines[0] if lines else None,
        line_end=lines[1] if lines else None,
    )


def _vectors(store: Store, embedder: Embedder, rep_id: str, chunks: Sequence[Chunk]) -> list:
    """A vector per chunk: the index's stored one for a text it already holds under this
    representation, the encoder's for the rest (so re-chunking or a new version of a file
    encodes only the text that is new)."""
    stored = store.stored_vectors(rep_id, [c.content_hash for c in chunks])
    new = [c for c in chunks if c.content_hash not in stored]
    encoded = embedder.embed_documents([c.text for c in new]) if new else []
    fresh = {c.content_hash: vector for c, vector in zip(new, encoded, strict=True)}
    return [stored.get(c.content_hash, fresh.get(c.content_hash)) for c in chunks]


def _change_dimension(store: Store, dimension: int) -> None:
    """Switch the vector column to a new dimension inside the sync's transaction.

    Every chunk is rewritten by this sync (reprocessed or carried over), so
    emptying the table first never exposes a partial state: readers see the old
    index until commit (they wait on the table lock meanwhile).
    """
    store.drop_hnsw()
    store.conn.execute(sql.SQL("DELETE FROM {}.chunks").format(store.schema))
    store.conn.execute(
        sql.SQL("ALTER TABLE {}.chunks ALTER COLUMN embedding TYPE vector({})").format(
            store.schema, sql.Literal(dimension)
        )
    )
