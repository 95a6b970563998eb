"""Searches during refreshes never return a torn result (a refresh commits while a search reads).

A writer rewrites every file of a corpus back and forth between two wordings
(`alphaword` and `betaword`) and refreshes, over and over, on its own
connection; readers search meanwhile through `Retriever.retrieve`, the path
`search` and `ask` use. A result is *torn* when a passage was ranked by a term
its returned text does not contain (the ranking read one snapshot, the text
another), or when a ranked chunk comes back without its text.

The loop is bounded: `MEMORY_BASELINE_TORN_SEARCHES` lexical searches (default
3,000 for CI; the full trial is 100,000) plus a tenth as many hybrid ones.
"""

from __future__ import annotations

import os
import threading
import time

from memory_baseline.refresh import sync
from memory_baseline.retrieval import Retriever
from memory_baseline.server import connect

SEARCHES = int(os.environ.get("MEMORY_BASELINE_TORN_SEARCHES", "3000"))
FILES = 12
WORDS = ("alphaword", "betaword")


def wording(word: str, n: int) -> str:
    return (f"# Plan {n}\n\nThe {word} plan number {n} keeps a single writer process and "
            f"records its {word} decision in the ledger.\n")


def torn(result, term: str) -> int:
    """Passages of this result ranked by `term` whose text lacks it, or missing texts."""
    count = 0
    lexical = result.stage("lexical")
    for candidate in lexical.candidates if lexical else ():
        passage = result.passages.get(candidate.chunk_id)
        count += passage is None or term not in passage.text
    count += sum(c.chunk_id not in result.passages for c in result.final.candidates)
    return count


def test_searches_during_refreshes_see_one_snapshot(tmp_path, config, minilm, database_url):
    root = tmp_path / "corpus"
    root.mkdir()
    for n in range(FILES):
        (root / f"plan-{n:02d}.md").write_text(wording(WORDS[0], n))
    writer_config = config.with_overrides(hnsw_build=False)
    with connect(database_url) as conn:
        sync(conn, writer_config, root, remove_missing=True, embedder=minilm)

    stop = threading.Event()
    refreshes = [0]
    errors: list[BaseException] = []

    def refresh_forever() -> None:
        try:
            with connect(database_url) as writer:
                while not stop.is_set():
                    refreshes[0] += 1
                    word = WORDS[refreshes[0] % 2]
                    for n in range(FILES):
                        (root / f"plan-{n:02d}.md").write_text(wording(word, n))
                    sync(writer, writer_config, root, remove_missing=True, embedder=minilm)
        except BaseException as exc:
            errors.append(exc)

    counts = {"lexical": 0, "hybrid": 0, "torn": 0, "hits": 0}
    writer_thread = threading.Thread(target=refresh_forever)
    started = time.perf_counter()
    writer_thread.start()
    try:
        with connect(database_url) as reader:
            lexical = Retriever(reader, config.with_overrides(retrieval={"dense": False}))
            hybrid = Retriever(reader, config, embedder=minilm)
            serial = 0
            while counts["lexical"] < SEARCHES and not errors:
                serial += 1
                kind, retriever = ("hybrid", hybrid) if serial % 11 == 0 else ("lexical", lexical)
                term = WORDS[serial % 2]
                result = retriever.retrieve(term)
                counts[kind] += 1
                counts["torn"] += torn(result, term)
                counts["hits"] += len(result.stage("lexical").candidates)
    finally:
        stop.set()
        writer_thread.join(timeout=300)
    if errors:
        raise errors[0]
    seconds = time.perf_counter() - started
    print(f"\ntorn-read loop: {counts} during {refreshes[0]} refreshes in {seconds:.0f} s")
    assert refreshes[0] >= 2 and counts["hits"] > 0
    assert counts["torn"] == 0
