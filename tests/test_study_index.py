"""A study's index follows the corpus its parameters name, even when most of it changed.

The CI failure this guards against: chapter 2 run under the smoke profile (a
30-document world) on a machine whose index `book_chunking_*` still held the full
profile's 400-document world; the refresh guard refused to remove 392 sources and
the chapter stopped.
"""

from __future__ import annotations

from memory_baseline.store import Store
from memory_lab.studies.setup import index_corpus


def _write(folder, names):
    folder.mkdir()
    for name in names:
        (folder / name).write_text(f"# {name}\n\nDecision: keep {name} because it is measured.\n",
                                   encoding="utf-8")


def test_a_study_index_follows_a_smaller_corpus_without_refusing(tmp_path, conn, config):
    large, small = tmp_path / "large", tmp_path / "small"
    _write(large, [f"note-{i}.md" for i in range(6)])
    _write(small, ["note-0.md"])

    index_corpus(conn, config, large)
    assert Store(conn, config.index).counts()["sources"] == 6

    report = index_corpus(conn, config, small)
    assert Store(conn, config.index).counts()["sources"] == 1
    assert len(report.removed) + len(report.pruned) >= 5
