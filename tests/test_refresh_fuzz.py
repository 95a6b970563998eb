"""Property-based fuzz of refresh under hostile input (the refresh guarantees under generated corpora).

Each generated case builds a small corpus of hostile names and contents,
refreshes it, applies a hostile transition to every file (rewritten, emptied,
binary, re-encoded, too large, a FIFO, a socket, a link out of the root or to
a sibling, a directory, deleted, renamed, a new file beside it) and refreshes
again under generated options (ingest or refresh, --prune, removal share, file
size limit, a chunker switch). Against the real PostgreSQL server and the real
MiniLM encoder, every case must end in a report or a one-line refusal, never a
traceback; no source indexed by the first refresh may leave the index unless
its file is really gone or the case prunes; and the index must stay healthy.

The cases share one index (emptied between cases) and skip the HNSW build, so
500 cases stay within a few minutes on two cores.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_baseline.config import Config, ConfigError
from memory_baseline.health import check_health
from memory_baseline.ingest import IngestError, printable_path
from memory_baseline.refresh import sync
from memory_baseline.server import connect
from memory_baseline.store import Store, StoreError

FUZZ_CASES = int(os.environ.get("MEMORY_BASELINE_FUZZ_CASES", "500"))
MAX_FILE_BYTES = 3000

STEMS = [b"note", b" spaced name ", b"-rf", b"--help", b"new\nline", b"tab\there",
         "ünïcödé-名前".encode(), b"\xff\xfe-not-utf8", b"quote'\"", b"\x1b[31mred",
         b"dots...", b"README", b"a" * 240, b"emoji-\xf0\x9f\x93\x9c", b"$(rm -rf)", b"%s%n"]
SUFFIXES = [b".md", b".txt", b".log", b".py", b".json", b"", b".png"]
GOOD_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=400)
CONTENTS = st.one_of(
    GOOD_TEXT.map(lambda t: ("text", ("The fuzzed note says " + t + "\n").encode("utf-8"))),
    st.binary(max_size=400).map(lambda b: ("bytes", b)),
    st.sampled_from([("bytes", b""), ("bytes", b" \n\t"), ("bytes", b"\xef\xbb\xbf"),
                     ("bytes", b"x" * 500 + b"\x00"), ("bytes", b"ok\xc3\x28bad"),
                     ("bytes", "\ufeffUTF-16 note".encode("utf-16")),
                     ("bytes", b"big " * 1000)]),
)
TRANSITIONS = ["same", "rewrite", "empty", "blank", "binary", "invalid-utf8", "utf16", "too-large",
               "fifo", "socket", "link-out", "link-sibling", "directory", "delete", "rename",
               "dir-link", "add-beside"]
OPTIONS = st.fixed_dictionaries({
    "remove_missing": st.booleans(),
    "prune": st.booleans(),
    "max_remove_share": st.sampled_from([0.0, 0.5, 1.0]),
    "max_file_bytes": st.sampled_from([MAX_FILE_BYTES, 200]),
    "chunking": st.sampled_from(["sentences", "whole"]),
})
FILES = st.lists(
    st.tuples(st.sampled_from(STEMS), st.sampled_from(SUFFIXES), CONTENTS,
              st.sampled_from(TRANSITIONS), st.booleans()),
    min_size=1, max_size=5,
)


def write_bytes(path: bytes, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def apply_transition(root: bytes, name: bytes, transition: str, outside: bytes, sibling: bytes,
                     serial: int) -> bool:
    """Change one file; returns True when the file is really gone afterwards."""
    path = root + b"/" + name
    if os.path.lexists(path) and transition not in ("same", "rewrite", "add-beside"):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if transition == "rewrite":
        write_bytes(path, f"Rewritten fuzz note {serial} about the ledger.\n".encode())
    elif transition == "empty":
        write_bytes(path, b"")
    elif transition == "blank":
        write_bytes(path, "\u3000 \n".encode())
    elif transition == "binary":
        write_bytes(path, b"\x00\x01binary")
    elif transition == "invalid-utf8":
        write_bytes(path, b"half \xc3\x28 bad")
    elif transition == "utf16":
        write_bytes(path, "\ufeffRe-encoded as UTF-16.".encode("utf-16-le"))
    elif transition == "too-large":
        write_bytes(path, b"large " * (MAX_FILE_BYTES // 5 + 10))
    elif transition == "fifo":
        os.mkfifo(path)
    elif transition == "socket":
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(path)
        except OSError:  # a socket path is limited to ~108 bytes
            os.mkfifo(path)
        finally:
            server.close()
    elif transition == "link-out":
        os.symlink(outside + b"/secret.md", path)
    elif transition == "link-sibling":
        os.symlink(sibling, path)
    elif transition == "directory":
        os.mkdir(path)
        write_bytes(path + b"/inner.md", b"Inner note of a directory that replaced a file.\n")
    elif transition == "dir-link":
        os.symlink(outside, path)
    elif transition in ("delete", "rename"):
        if transition == "rename":
            write_bytes(root + b"/renamed-" + str(serial).encode() + b".md",
                        b"A renamed fuzz note.\n")
        return True
    elif transition == "add-beside":
        write_bytes(root + b"/beside-" + str(serial).encode() + b".md", b"A new note beside.\n")
    return False


@pytest.fixture(scope="module")
def fuzz_index(database_url):
    name = f"fuzz_{uuid.uuid4().hex[:10]}"
    yield name
    with connect(database_url) as connection:
        Store(connection, name).drop()


class MemoisedEmbedder:
    """The real encoder, asked once per distinct text (cases repeat most texts).

    Vectors are MiniLM's own; memoising only spares recomputing identical inputs.
    """

    def __init__(self, inner) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.vectors: dict[str, object] = {}

    def embed_documents(self, texts, *, progress: bool = False):
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str):
        return self.inner.embed_query(text)


def one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text.strip() and "Traceback" not in text


def test_500_hostile_refresh_cases_lose_nothing_and_never_raise(
    database_url, fuzz_index, minilm
):
    tally = {"cases": 0, "refused": 0, "failed_observations": 0, "removed": 0, "pruned": 0}
    embedder = MemoisedEmbedder(minilm)
    conn = connect(database_url)

    @settings(max_examples=FUZZ_CASES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(files=FILES, options=OPTIONS)
    def case(files, options):
        tally["cases"] += 1
        base = Config(index=fuzz_index, hnsw_build=False, max_file_bytes=MAX_FILE_BYTES)
        second = base.with_overrides(
            max_file_bytes=options["max_file_bytes"], max_remove_share=options["max_remove_share"],
            chunking={"policy": options["chunking"]},
        )
        workspace = Path(tempfile.mkdtemp(prefix="refresh-fuzz-"))
        root, outside = os.fsencode(workspace / "corpus"), os.fsencode(workspace / "outside")
        os.mkdir(root)
        os.mkdir(outside)
        write_bytes(outside + b"/secret.md", b"The zqxoutsidemarker file must never be indexed.\n")
        names: dict[bytes, tuple[str, bool]] = {}
        for serial, (stem, suffix, (_, data), transition, _) in enumerate(files):
            name = stem.replace(b"/", b"_") + b"-" + str(serial).encode() + suffix
            write_bytes(root + b"/" + name, data)
            names[name] = (transition, False)
        sibling = next(iter(names))
        if True:  # one connection for every case
            store = Store(conn, fuzz_index)
            if store.exists():
                with conn.transaction():  # a fresh, empty index for the case
                    conn.execute(store._q("DELETE FROM {s}.sources"))
                    conn.execute(store._q("DELETE FROM {s}.meta WHERE key <> 'schema_version'"))
            try:
                first = sync(conn, base, os.fsdecode(root), remove_missing=True, embedder=embedder)
                indexed = set(store.sources())
                assert indexed == set(first.added)
                gone: set[str] = set()
                for serial, name in enumerate(names):
                    really_gone = apply_transition(root, name, names[name][0], outside, sibling,
                                                   serial)
                    if really_gone:
                        gone.add(printable_path(os.fsdecode(name)))
                before = {k: v.content_hash for k, v in store.sources().items()}
                try:
                    report = sync(conn, second, os.fsdecode(root),
                                  remove_missing=options["remove_missing"],
                                  prune=options["prune"], embedder=embedder)
                except (StoreError, IngestError, ConfigError) as refusal:
                    assert one_line(str(refusal)), str(refusal)
                    assert options["remove_missing"] and not options["prune"]
                    assert {k: v.content_hash for k, v in store.sources().items()} == before
                    tally["refused"] += 1
                    return
                after = set(store.sources())
                lost = indexed - after
                allowed = set(report.pruned) if options["prune"] else set()
                if options["remove_missing"]:
                    allowed |= gone
                assert lost <= allowed, (lost, allowed, report.to_dict())
                assert set(report.removed) <= gone
                now = store.sources()
                for failure in report.failed_observations:
                    assert one_line(failure.reason), failure
                    assert now[failure.source_id].content_hash == before[failure.source_id]
                for skipped in report.skipped:
                    assert one_line(skipped["reason"]), skipped
                assert not any("zqxoutsidemarker" in t[0] for t in conn.execute(
                    store._q("SELECT text FROM {s}.chunks")))
                health = check_health(conn, fuzz_index, report.representation_id,
                                      expect_hnsw=False)
                assert health.ok, health.to_dict()
                tally["failed_observations"] += len(report.failed_observations)
                tally["removed"] += len(report.removed)
                tally["pruned"] += len(report.pruned)
            finally:
                shutil.rmtree(workspace, ignore_errors=True)

    try:
        case()
    finally:
        conn.close()
    print(f"\nrefresh fuzz: {tally}")
    assert tally["cases"] >= FUZZ_CASES
