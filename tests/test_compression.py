"""Context compression keeps the sources, the first and the named sentences, and cuts the rest."""

from __future__ import annotations

import pytest

from memory_baseline.compression import compress, sentences
from memory_baseline.passages import Passage

TEXT = ("# ADR 7: event store\n\nDate: 2024-07-10\n\nWe compared three stores for the event log. "
        "The team met twice in June. Lunch was provided both times. "
        "New services use PostgreSQL for the event store because SQLite locked under concurrent writers. "
        "The orders service keeps its own log. Error E-BRK-042 was seen once during the trial. "
        "Nobody wanted a fourth option. The office moved floors in August.")


def passage(text: str, rank: int = 1) -> Passage:
    return Passage(f"c{rank}", f"decisions/adr-00{rank}.md", text, None, "decision", None, rank)


def test_the_answering_sentence_the_first_and_the_named_ones_survive(minilm):
    query = "Why do new services use PostgreSQL for the event store, and what is E-BRK-042?"
    cut = compress(query, [passage(TEXT)], minilm, keep=0.4)
    text = cut.passages[0].text
    assert text.startswith("# ADR 7: event store")
    assert "SQLite locked under concurrent writers" in text
    assert "E-BRK-042" in text
    assert "Lunch was provided" not in text and "…" in text
    assert cut.sentences_kept < cut.sentences_before and cut.chars_after < cut.chars_before
    assert [p.source_id for p in cut.passages] == ["decisions/adr-001.md"]


def test_short_passages_are_left_whole_and_keep_is_checked(minilm):
    short = passage("One line. Two lines.")
    assert compress("anything", [short], minilm, keep=0.5).passages[0] == short
    with pytest.raises(ValueError, match="keep"):
        compress("anything", [short], minilm, keep=0.0)
    assert sentences("A. B.\n\nC") == ["A.", "B.", "C"]
