"""Fuzzing the readers: whatever sits in a corpus, discovery never raises and loses nothing.

Every file is accounted for exactly once, as a source, a skipped file with a
reason, or a failed read; a source is always storable (UTF-8 id, non-blank
text without NUL, the hash of its bytes). Random bytes, invalid UTF-8, huge
lines, deep folders, link loops, FIFOs and odd names (spaces, newlines,
leading dashes, non-UTF-8 bytes) included; the last test writes such a tree
through the real write path and checks the index's health.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refresh_support import bm25

from memory_baseline.chunking import chunk_text
from memory_baseline.config import ChunkingConfig
from memory_baseline.health import check_health
from memory_baseline.identifiers import extract_identifiers
from memory_baseline.ingest import SKIP_DIRS, Discovery, artifact_timestamp, discover, printable_path
from memory_baseline.refresh import sync
from memory_baseline.store import Store

SUFFIXES = [b".md", b".txt", b".log", b".py", b".json", b".yaml", b".png", b"", b".MD", b".env"]
ODD_NAMES = [b" spaced name ", b"-rf", b"--help", b"new\nline", b"tab\there", "ünïcödé-名前".encode(),
             b"\xff\xfe-not-utf8", b"dots...", b"quote'\"", b"emoji-\xf0\x9f\x93\x9c", b"README",
             b"Makefile", b".hidden"]


def _bad_utf8(text: str) -> bytes:
    data = text.encode("utf-8")
    middle = len(data) // 2
    return data[:middle] + b"\xc3\x28\xff" + data[middle:]


contents = st.one_of(
    st.binary(max_size=3000),
    st.text(max_size=3000).map(lambda t: t.encode("utf-8")),
    st.text(max_size=500).map(_bad_utf8),
    st.sampled_from([b"", b"   \n\t", b"\xef\xbb\xbf", "\u3000\u3000".encode(),
                     b"a" * 9000 + b"\x00tail", b"\xef\xbb\xbfDate: 2024-02-30\nbad date\n",
                     b"---\ndate: 2024-07-10\n---\n# Front matter\n"]),
)
stems = st.one_of(
    st.sampled_from(ODD_NAMES),
    st.binary(min_size=1, max_size=24),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=24)
    .map(lambda t: t.encode("utf-8")),
).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_"))
file_names = st.builds(lambda stem, suffix: stem + suffix, stems, st.sampled_from(SUFFIXES)).filter(
    lambda name: name not in (b".", b"..") and len(name) <= 200
)
folder_names = stems.filter(
    lambda name: not name.startswith(b".") and name.decode("utf-8", "surrogateescape")
    not in SKIP_DIRS and len(name) <= 100
)
trees = st.lists(
    st.tuples(st.lists(folder_names, max_size=3), file_names, contents), min_size=1, max_size=12
)


def write_tree(root: Path, entries) -> dict[str, bytes]:
    """Create the files; returns printable relative path -> bytes of every file written."""
    written: dict[bytes, bytes] = {}
    folders: set[bytes] = set()
    for parts, name, data in entries:
        prefixes = [b"/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        relative = b"/".join([*parts, name])
        if relative in folders or any(prefix in written for prefix in prefixes):
            continue  # a file and a folder cannot share a path
        os.makedirs(os.fsencode(root) + b"/" + b"/".join(parts), exist_ok=True)
        folders.update(prefixes)
        with open(os.fsencode(root) + b"/" + relative, "wb") as handle:
            handle.write(data)
        written[relative] = data
    return {printable_path(os.fsdecode(k)): v for k, v in written.items()}


def account(found: Discovery) -> list[str]:
    """Every path discovery reported, once per outcome (duplicates would show here)."""
    return ([s.source_id for s in found.sources] + [s.path for s in found.skipped]
            + [f.source_id for f in found.failed])


def check_sources_are_storable(found: Discovery, written: dict[str, bytes]) -> None:
    for record in found.sources:
        record.source_id.encode("utf-8")  # no surrogates: a valid PostgreSQL text value
        assert record.text.strip() and "\x00" not in record.text
        if record.source_id in written:
            assert record.content_hash == hashlib.sha256(written[record.source_id]).hexdigest()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=trees)
def test_discover_accounts_for_every_file_whatever_its_name_or_bytes(entries):
    root = Path(tempfile.mkdtemp(prefix="fuzz-corpus-"))
    try:
        written = write_tree(root, entries)
        found = discover(root)
        reported = account(found)
        assert sorted(reported) == sorted(written)  # each file exactly once
        check_sources_are_storable(found, written)
        for skipped in found.skipped:
            assert skipped.reason
    finally:
        shutil.rmtree(root)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=3000), name=st.text(max_size=40))
def test_text_parsers_never_raise_and_chunks_keep_exact_spans(text, name):
    stamp = artifact_timestamp(name + ".md", text)
    assert stamp is None or stamp.tzinfo is not None
    extract_identifiers(text)
    for chunk in chunk_text("fuzz.md", text, ChunkingConfig(target_chars=300, overlap_chars=50)):
        assert text[chunk.start:chunk.end] == chunk.text and chunk.text.strip()


def hostile_tree(root: Path, *, huge_line_bytes: int) -> None:
    root.mkdir()
    (root / "huge-line.md").write_bytes(b"word " * (huge_line_bytes // 5))
    deep = root.joinpath(*[f"d{n:02d}" for n in range(60)])
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("The deepest note mentions the zeppelin maintenance window.\n")
    os.symlink("self-loop.md", root / "self-loop.md")
    os.symlink("loop-b.md", root / "loop-a.md")
    os.symlink("loop-a.md", root / "loop-b.md")
    os.symlink("..", root / "d00" / "up")  # a directory link back up: not followed
    os.symlink("missing-target.md", root / "dangling.md")
    os.mkfifo(root / "pipe.md")  # reading it would block forever
    (root / "-rf.md").write_text("A file whose name starts with a dash.\n")
    (root / "new\nline.md").write_text("A file whose name holds a newline.\n")
    (root / " spaced .md").write_text("A file whose name has spaces around it.\n")
    (root / "ünïcödé-名前.md").write_text("Unicode names are fine: Grüße.\n")
    with open(os.fsencode(root) + b"/\xff\xfe-latin.md", "wb") as handle:
        handle.write(b"A name that is not UTF-8.\n")
    (root / "bom-only.md").write_bytes(b"\xef\xbb\xbf")
    (root / "ideographic-space.md").write_text("\u3000\u3000\n")
    (root / "late-nul.md").write_bytes(b"x" * 9000 + b"\x00")
    (root / "invalid.md").write_bytes(_bad_utf8("Half of this is fine"))


def test_a_hostile_tree_is_discovered_without_raising(tmp_path):
    root = tmp_path / "hostile"
    hostile_tree(root, huge_line_bytes=2_000_000)
    found = discover(root)
    sources = {s.source_id for s in found.sources}
    skipped = {s.path: s.reason for s in found.skipped}
    failed = {f.source_id: f.reason for f in found.failed}
    assert {"huge-line.md", "-rf.md", "new\nline.md", " spaced .md", "ünïcödé-名前.md",
            "/".join(f"d{n:02d}" for n in range(60)) + "/bottom.md"} <= sources
    assert skipped["pipe.md"] == "not-a-regular-file"
    assert skipped["d00/up"] == "directory-link"
    assert skipped["\\xff\\xfe-latin.md"] == "undecodable-name"
    assert skipped["bom-only.md"] == skipped["ideographic-space.md"] == "empty"
    assert skipped["late-nul.md"] == "binary"
    assert failed["invalid.md"] == "invalid-utf8"
    assert failed["dangling.md"] == "broken link"
    assert {"self-loop.md", "loop-a.md", "loop-b.md"} <= set(failed)
    assert len(account(found)) == len(set(account(found)))
    huge = next(s for s in found.sources if s.source_id == "huge-line.md")
    chunks = chunk_text(huge.source_id, huge.text, ChunkingConfig())
    assert all(huge.text[c.start:c.end] == c.text for c in chunks)
    assert chunks[0].start == 0 and chunks[-1].end >= len(huge.text.rstrip())


def test_a_hostile_tree_goes_through_the_write_path_with_a_healthy_index(
    tmp_path, conn, config, minilm
):
    root = tmp_path / "hostile"
    hostile_tree(root, huge_line_bytes=60_000)
    report = sync(conn, config, root, remove_missing=True, embedder=minilm)
    assert "huge-line.md" in report.added and report.failed_observations == []
    assert check_health(conn, config.index, report.representation_id).ok
    store = Store(conn, config.index)
    assert bm25(store, "zeppelin maintenance window")[0].source_id.endswith("d59/bottom.md")
    assert "new\nline.md" in store.sources()
