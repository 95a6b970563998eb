"""BM25 statistics stay exact through ingest, change and removal; scores match the formula."""

from __future__ import annotations

import math
import shutil

import pytest
from conftest import FIXTURE_HISTORY

from memory_baseline.refresh import sync
from memory_baseline.store import Store


def recomputed(conn, index: str) -> tuple[dict[str, int], tuple[int, int], int]:
    """Statistics from scratch, straight from the chunk rows."""
    df = dict(conn.execute(
        f'SELECT u.lexeme, count(*) FROM "{index}".chunks c, unnest(c.tsv) u GROUP BY 1').fetchall())
    n, total = conn.execute(
        f'SELECT count(*), coalesce(sum(doc_len), 0) FROM "{index}".chunks').fetchone()
    postings = conn.execute(f'SELECT count(*) FROM "{index}".chunks c, unnest(c.tsv)').fetchone()[0]
    return df, (int(n), int(total)), int(postings)


def maintained(conn, index: str) -> tuple[dict[str, int], tuple[int, int], int]:
    """The trigger-maintained statistics, and the live postings the arrays hold."""
    df = dict(conn.execute(f'SELECT lexeme, df FROM "{index}".term_stats').fetchall())
    n, total = conn.execute(f'SELECT n_chunks, total_len FROM "{index}".corpus_stats').fetchone()
    arrays = Store(conn, index).check_bm25_segments()
    assert arrays.malformed_terms == []
    assert arrays.live_df == df
    return df, (int(n), int(total)), arrays.live_postings


def test_statistics_equal_a_recomputation_after_every_change(tmp_path, conn, config, minilm):
    corpus = tmp_path / "history"
    shutil.copytree(FIXTURE_HISTORY, corpus)
    sync(conn, config, str(corpus), remove_missing=True, embedder=minilm)
    assert maintained(conn, config.index) == recomputed(conn, config.index)

    changed = corpus / "decisions" / "adr-009.md"
    changed.write_text(changed.read_text() + "\nAddendum: the zanzibarquux cache stays rejected.\n")
    report = sync(conn, config, str(corpus), remove_missing=True, embedder=minilm)
    assert report.changed == ["decisions/adr-009.md"]
    assert maintained(conn, config.index) == recomputed(conn, config.index)
    assert maintained(conn, config.index)[0]["zanzibarquux"] == 1

    (corpus / "decisions" / "adr-009.md").unlink()
    report = sync(conn, config, str(corpus), remove_missing=True, embedder=minilm)
    assert report.removed == ["decisions/adr-009.md"]
    assert maintained(conn, config.index) == recomputed(conn, config.index)
    assert "zanzibarquux" not in maintained(conn, config.index)[0]


def test_scores_follow_the_okapi_formula(tmp_path, conn, config, minilm):
    corpus = tmp_path / "c"
    corpus.mkdir()
    docs = {"a.txt": "postgres postgres event store", "b.txt": "postgres cache",
            "c.txt": "sqlite contention report with many many extra words here"}
    for name, text in docs.items():
        (corpus / name).write_text(text)
    sync(conn, config, str(corpus), remove_missing=False, embedder=minilm)
    store = Store(conn, config.index)
    k1, b = 1.2, 0.75
    hits = store.lexical_bm25(["postgr"], 10, k1, b, name_weight=0.0)
    lengths = dict(conn.execute(f'SELECT source_id, doc_len FROM "{config.index}".chunks').fetchall())
    avgdl = sum(lengths.values()) / len(lengths)
    n, df = 3, 2
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = {
        "a.txt": idf * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * lengths["a.txt"] / avgdl)),
        "b.txt": idf * 1 * (k1 + 1) / (1 + k1 * (1 - b + b * lengths["b.txt"] / avgdl)),
    }
    assert {h.source_id: h.score for h in hits} == pytest.approx(expected)
    assert [h.source_id for h in hits] == ["a.txt", "b.txt"]
