"""reStructuredText, AsciiDoc and code: section titles, field lists, dates, spans, skipped binaries."""

from __future__ import annotations

import ast

import pytest

from memory_baseline.chunking import chunk_text, chunker_identity, headings
from memory_baseline.code_chunks import blank_line_blocks, code_spans, parser_identity
from memory_baseline.config import ChunkingConfig
from memory_baseline.ingest import artifact_timestamp, source_kind, unsupported_reason

PEP_LIKE = """PEP: 3103
Title: A Switch/Case Statement
Author: Guido van Rossum <guido@python.org>
Status: Rejected
Type: Standards Track
Created: 25-Jun-2006
Post-History: 26-Jun-2006


Rejection Notice
================

A quick poll during my keynote presentation at PyCon 2007 shows this
proposal has no popular support. I therefore reject it.

Abstract
========

Python-dev has recently seen a flurry of discussion on adding a switch
statement.

Alternative 1
-------------

This is the preferred form.

=====  =====
col a  col b
=====  =====

----------
Overlined
----------

Body of an overlined title.
"""


def test_rst_titles_become_sections_and_the_field_list_stays_in_the_text():
    found = [title for _, title in headings("pep-3103.rst", PEP_LIKE)]
    assert found == ["Rejection Notice", "Abstract", "Alternative 1", "Overlined"]
    chunks = chunk_text("pep-3103.rst", PEP_LIKE, ChunkingConfig(policy="sections"))
    assert [c.section for c in chunks] == [None, "Rejection Notice", "Abstract", "Alternative 1",
                                           "Overlined"]
    assert "Status: Rejected" in chunks[0].text and "Created: 25-Jun-2006" in chunks[0].text
    for policy in ("sentences", "sections", "fixed"):
        for chunk in chunk_text("pep-3103.rst", PEP_LIKE, ChunkingConfig(policy=policy, target_chars=200,
                                                                         overlap_chars=50)):
            assert PEP_LIKE[chunk.start:chunk.end] == chunk.text


def test_asciidoc_titles_become_sections():
    text = "= Runbook\n:revdate: 2024-03-01\n\n== Restart\n\nDrain first.\n\n=== Rollback\n\nUndo.\n"
    assert [t for _, t in headings("ops/runbook.adoc", text)] == ["Runbook", "Restart", "Rollback"]
    chunks = chunk_text("ops/runbook.adoc", text, ChunkingConfig(policy="sections"))
    assert [c.section for c in chunks] == ["Runbook", "Restart", "Rollback"]
    assert artifact_timestamp("ops/runbook.adoc", text).date().isoformat() == "2024-03-01"


def test_markdown_headings_are_not_read_in_rst_and_vice_versa():
    assert headings("a.md", "Title\n=====\n\ntext\n") == []
    assert headings("a.rst", "# not a title\n\ntext\n") == []


def test_dates_from_the_documents_own_fields():
    assert artifact_timestamp("pep-3103.rst", PEP_LIKE).date().isoformat() == "2006-06-25"
    assert artifact_timestamp("x.rst", ":Date: 2023-05-04\n\nText\n").date().isoformat() == "2023-05-04"
    assert artifact_timestamp("x.md", "Decided: 13-Jul-2000\n").date().isoformat() == "2000-07-13"


def test_kinds_and_binary_reasons():
    assert source_kind("pep-0008.rst") == "restructuredtext"
    assert source_kind("docs/guide.adoc") == "asciidoc"
    for name in ("pep-0525-1.png", "pep-0602-example-release-calendar.pptx",
                 "pep-0605/overlapping-support-matrix.odp"):
        assert source_kind(name) is None and unsupported_reason(name) == "binary"
    assert unsupported_reason("diagram.svg") == "unsupported"


PYTHON = '''"""Publish events to the broker.

Two publishers: one per shipment, one batched.
"""

import json

RETRIES = 3


# The shipment publisher is the one the orders service calls.
@register
def publish_shipment_event(event):
    """Publish one shipment event."""
    return broker.send(json.dumps(event))


class Batcher:
    """Collect events and flush them together."""

    def __init__(self):
        self.items = []

    def add(self, event):
        self.items.append(event)

    # Flushing sends everything at once.
    def flush(self):
        broker.send_many(self.items)
        self.items.clear()
'''


def test_python_is_cut_at_top_level_definitions():
    spans = code_spans("src/publisher.py", PYTHON, 2000)
    assert [s.section for s in spans] == ["module docstring", "module", "def publish_shipment_event",
                                         "class Batcher"]
    assert spans[0].start == 0 and spans[-1].end == len(PYTHON)
    assert all(a.end == b.start for a, b in zip(spans, spans[1:], strict=False))  # contiguous
    function = PYTHON[spans[2].start:spans[2].end]
    assert function.startswith("# The shipment publisher") and "@register" in function
    assert '"""Publish one shipment event."""' in function
    chunks = chunk_text("src/publisher.py", PYTHON, ChunkingConfig())
    assert [c.section for c in chunks] == [s.section for s in spans]
    assert all(PYTHON[c.start:c.end] == c.text for c in chunks)


def test_a_long_class_is_split_at_method_boundaries():
    spans = code_spans("src/publisher.py", PYTHON, 140)
    pieces = [s for s in spans if s.section and s.section.startswith("class Batcher")]
    assert len(pieces) >= 2
    for piece in pieces[1:]:
        text = PYTHON[piece.start:piece.end]
        assert text.lstrip().startswith(("def ", "# Flushing")), text
    assert "# Flushing sends everything at once." in PYTHON[pieces[-1].start:pieces[-1].end]


def test_python_that_does_not_parse_falls_back_to_blank_line_blocks():
    broken = "def f(:\n    pass\n\n\ndef g():\n    return 1\n"
    with pytest.raises(SyntaxError):
        ast.parse(broken)
    spans = code_spans("bad.py", broken, 12)
    # Contiguous and complete up to whitespace-only pieces, which make no chunk.
    assert "".join(broken[s.start:s.end] for s in spans) == broken.rstrip("\n")
    assert all(a.end == b.start for a, b in zip(spans, spans[1:], strict=False))


JAVASCRIPT = """// Entry point of the importer.
import { parse } from "./feed.js";

/** Import one partner feed. */
function importFeed(url) {
  return parse(fetchText(url));
}

class Retrier {
  run(task) { return task(); }
}
"""


def test_other_languages_use_their_tree_sitter_grammar():
    identity = parser_identity()
    assert identity["javascript"].startswith("tree-sitter-javascript ")
    spans = code_spans("src/importer.js", JAVASCRIPT, 2000)
    assert [s.section for s in spans] == [None, "function declaration importFeed",
                                         "class declaration Retrier"]
    assert JAVASCRIPT[spans[1].start:spans[1].end].startswith("/** Import one partner feed. */")
    assert "".join(JAVASCRIPT[s.start:s.end] for s in spans) == JAVASCRIPT


def test_blank_line_blocks_are_exact_and_bounded():
    text = "a = 1\nb = 2\n\nc = 3\n\n" + "x" * 50 + "\n"
    spans = blank_line_blocks(text, 0, len(text), 20)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(e - s <= 20 for s, e in spans)


def test_chunker_identity_names_the_parsers_and_identifier_rules():
    identity = chunker_identity(ChunkingConfig())
    assert identity["version"] == "sentences-2" and identity["code"]["python"] == "ast"
    assert identity["identifiers"].startswith("identifiers-")
    assert "code" not in chunker_identity(ChunkingConfig(policy="whole"))
