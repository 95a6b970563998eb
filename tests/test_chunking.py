"""Chunking invariants, checked on random text (hypothesis) and on edge cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_baseline.chunking import ChunkingError, chunk_text
from memory_baseline.config import ChunkingConfig

words = st.sampled_from(
    ["PostgreSQL", "SQLite", "decision.", "rejected!", "Redis?", "the", "event", "store", "\n",
     "\n\n", "# Heading\n", "## Sub\n", "- item\n", "adr-007", "E-BRK-042", "x" * 50, " "]
)
texts = st.lists(words, min_size=0, max_size=400).map(" ".join)
policies = st.sampled_from(["sentences", "sections", "fixed", "whole"])
sizes = st.tuples(st.integers(20, 600), st.integers(0, 19))


@settings(max_examples=150, deadline=None)
@given(text=texts, policy=policies, size=sizes)
def test_spans_are_exact_ordered_and_cover_the_text(text, policy, size):
    target, overlap = size
    config = ChunkingConfig(policy=policy, target_chars=target, overlap_chars=overlap)
    chunks = chunk_text("doc.md", text, config)
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert text[chunk.start:chunk.end] == chunk.text
        assert chunk.text.strip()
    # Every non-blank character belongs to some chunk.
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    # Starts strictly increase, so the walk always moves forward.
    assert all(a.start < b.start for a, b in zip(chunks, chunks[1:], strict=False))
    if policy in ("sentences", "fixed"):
        assert all(c.end - c.start <= target for c in chunks)
        assert all(a.end - b.start <= overlap for a, b in zip(chunks, chunks[1:], strict=False))


def test_sentence_packing_overlaps_at_a_sentence_boundary():
    sentences = [f"Sentence number {i} says something about the event store." for i in range(80)]
    text = " ".join(sentences)
    chunks = chunk_text("s.md", text, ChunkingConfig())
    assert len(chunks) >= 2
    for previous, current in zip(chunks, chunks[1:], strict=False):
        assert current.start < previous.end  # they overlap
        assert current.text.startswith("Sentence number")
        assert previous.end - current.start <= 300
    assert all(len(c.text) <= 2000 for c in chunks)


def test_sections_follow_headings_and_may_exceed_the_target():
    body = "word " * 600
    text = f"# Intro\nshort\n## Decision\n{body}\n## Rationale\nbecause contention\n"
    chunks = chunk_text("d.md", text, ChunkingConfig(policy="sections", target_chars=500))
    assert [c.section for c in chunks] == ["Intro", "Decision", "Rationale"]
    assert len(chunks[1].text) > 500


def test_bad_parameters_are_refused():
    with pytest.raises(ChunkingError):
        chunk_text("a", "text", ChunkingConfig(target_chars=100, overlap_chars=100))
    with pytest.raises(ChunkingError):
        chunk_text("a", "text", ChunkingConfig(policy="paragraphs"))
