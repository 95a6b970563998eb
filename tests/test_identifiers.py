"""Names as people write them: PEP 8, KEP-2033, ADR 31, RFC 7231, OPS-1234, v2.13.0.

The unit tests pin the normalisation; the index test builds a corpus where each
named file competes with files that mention its name many times, and checks
that the named file is the first admitted passage for every way of writing it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory_baseline.baseline import Baseline, prompt_counter
from memory_baseline.config import ReaderConfig
from memory_baseline.identifiers import document_keys, extract_identifiers, file_keys, path_keys
from memory_baseline.reading import ExtractiveReader
from memory_baseline.refresh import sync


@pytest.mark.parametrize(("text", "key"), [
    ("What does PEP 8 say about tabs?", "pep#8"), ("pep-0008", "pep#8"), ("pep 8", "pep#8"),
    ("PEP8", "pep#8"), ("PEP 3103", "pep#3103"), ("KEP-2033", "kep#2033"),
    ("KEP 2033", "kep#2033"), ("adr-031", "adr#31"), ("ADR 31", "adr#31"),
    ("ADR-0031", "adr#31"), ("see ADR 14.", "adr#14"), ("RFC 7231", "rfc#7231"),
    ("rfc7231", "rfc#7231"), ("OPS-1234", "ops#1234"), ("ops-1234", "ops#1234"),
    ("release v2.13.0", "v2.13.0"), ("release 2.13.0", "v2.13.0"),
])
def test_question_forms_reduce_to_one_key(text, key):
    assert key in document_keys(text)
    assert key in extract_identifiers(text)


@pytest.mark.parametrize("text", ["Python 3 is out", "an mp3 file", "E-BRK-042", "version 3.12"])
def test_ordinary_words_and_codes_are_not_document_keys(text):
    assert not [k for k in document_keys(text) if "#" in k and not k.startswith("utf")]


@pytest.mark.parametrize(("path", "key"), [
    ("pep-0008.rst", "pep#8"), ("pep-3103.rst", "pep#3103"),
    ("keps/sig-node/2033-kubelet-in-userns/README.md", "kep#2033"),
    ("docs/adr/adr-031-use-kafka-for-events.md", "adr#31"), ("docs/adr/0031-kafka.md", "adr#31"),
    ("decisions/0007-event-store.md", "adr#7"), ("rfcs/rfc7231.txt", "rfc#7231"),
    ("tickets/OPS-1234.md", "ops#1234"), ("releases/v2.13.0.md", "v2.13.0"),
    ("pep-0001/process_flow.svg", "pep#1"),
])
def test_paths_name_their_keys(path, key):
    assert key in path_keys(path)


def test_file_keys_are_the_file_name_only():
    assert file_keys("pep-0008.rst") == ["pep#8"]
    assert file_keys("pep-0639/appendix-examples.rst") == []  # named by its folder only
    assert file_keys("pep-0008.rst@0123456789ab") == []  # a past version
    assert path_keys("requests/2024-10-07-shipments-service.md") == []  # a date is no number


NAMED = {
    "pep-0008.rst": "PEP: 8\nTitle: Style Guide\nStatus: Active\n\nIntroduction\n============\n\n"
    "Use four spaces per indentation level. Limit lines to 79 characters.\n",
    "keps/sig-node/2033-kubelet-in-userns/README.md": "# Kubelet in user namespaces\n\n"
    "Status: implementable. Run the kubelet inside a user namespace.\n",
    "docs/adr/adr-031-use-kafka-for-events.md": "# Use Kafka for events\n\nStatus: superseded. "
    "We publish domain events to Kafka topics.\n",
    "docs/adr/0014-postgres-event-store.md": "# Postgres event store\n\nStatus: accepted. The "
    "event store lives in PostgreSQL.\n",
    "rfcs/rfc7231.txt": "Hypertext Transfer Protocol (HTTP/1.1): Semantics and Content.\n",
    "tickets/OPS-1234.md": "# Rotate broker certificates\n\nOwner: infra. Due before expiry.\n",
    "releases/v2.13.0.md": "# Release notes\n\nThe importer retries partner feeds.\n",
}
# Files that mention the names often: lexically and semantically closer to the questions.
MENTIONS = {
    f"notes/status-review-{i}.md": (
        "# Status review\n\nWhat is the current status of ADR 31, ADR 14, KEP-2033 and PEP 8? "
        "The status of ADR 31 (adr-031) is discussed; see ADR 14 and RFC 7231 and OPS-1234. "
        "Release v2.13.0 status: the status of every decision record was reviewed. "
        "PEP 8 style, KEP 2033 status, ADR 31 status, rfc 7231 status.\n"
    )
    for i in range(8)
}


@pytest.fixture()
def named_corpus(tmp_path, conn, config, minilm):
    root = tmp_path / "named"
    for relative, text in {**NAMED, **MENTIONS}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sync(conn, config, str(root), remove_missing=False, embedder=minilm)
    return root


@pytest.mark.parametrize(("query", "expected"), [
    ("What is the current status of ADR 31?", "docs/adr/adr-031-use-kafka-for-events.md"),
    ("status of adr-031", "docs/adr/adr-031-use-kafka-for-events.md"),
    ("What is the status of ADR 14?", "docs/adr/0014-postgres-event-store.md"),
    ("adr-014 status", "docs/adr/0014-postgres-event-store.md"),
    ("What does PEP 8 say about the status?", "pep-0008.rst"),
    ("pep-0008 status", "pep-0008.rst"),
    ("KEP-2033 status", "keps/sig-node/2033-kubelet-in-userns/README.md"),
    ("What is the status of KEP 2033?", "keps/sig-node/2033-kubelet-in-userns/README.md"),
    ("What status does RFC 7231 have?", "rfcs/rfc7231.txt"),
    ("OPS-1234 status", "tickets/OPS-1234.md"),
    ("status of release 2.13.0", "releases/v2.13.0.md"),
])
def test_a_named_document_is_the_first_admitted_passage(conn, config, named_corpus, query, expected):
    for reranked_away in (False, True):
        base = Baseline(conn, config, reader=ExtractiveReader(ReaderConfig(name="extractive")))
        found = base.search(query)
        retrieval, trace = found.retrieval, found.context
        if reranked_away:
            # A reranker that puts the named file last: context assembly still admits it first.
            from memory_baseline.context import assemble, candidates_in_order
            from memory_baseline.retrieval import Candidate, Stage

            final = list(retrieval.final.candidates)
            demoted = [c for c in final if c.source_id != expected] + [
                c for c in final if c.source_id == expected]
            stage = Stage("reranked", tuple(Candidate(c.chunk_id, c.source_id, 0.0, i) for i, c in
                                            enumerate(demoted, 1)), 0.0, {"pass_through": False})
            retrieval = replace(retrieval, stages=(*retrieval.stages[:-1], stage))
            trace = assemble(candidates_in_order(retrieval), config.context,
                             prompt_counter(base.reader, query, None), tokenizer="wp")
        assert trace.admitted, query
        assert trace.admitted[0].source_id == expected, (query, [p.source_id for p in trace.admitted])


def test_named_file_outside_both_paths_is_still_found(conn, config, named_corpus):
    """Depth 1 per path: the mentions win both paths, the name lookup adds the file."""
    narrow = config.with_overrides(retrieval={"per_path_candidates": 1})
    base = Baseline(conn, narrow, reader=ExtractiveReader(ReaderConfig(name="extractive")))
    found = base.search("What is the current status of ADR 31?")
    retrieval, trace = found.retrieval, found.context
    fused = retrieval.stage("fused")
    assert fused.detail["identifier_priority"]["named_added"] or (
        fused.candidates[0].source_id == "docs/adr/adr-031-use-kafka-for-events.md")
    assert trace.admitted[0].source_id == "docs/adr/adr-031-use-kafka-for-events.md"


def test_references_in_text_match_as_well(conn, config, named_corpus):
    """'see ADR 14' in a passage is a reference to adr#14: a content match, below the file itself."""
    base = Baseline(conn, config, reader=ExtractiveReader(ReaderConfig(name="extractive")))
    retrieval = base.search("ADR 14").retrieval
    keys = {cid: p.identifiers for cid, p in retrieval.passages.items()}
    mentions = [cid for cid, ids in keys.items() if cid.startswith("notes/")]
    assert mentions and all("adr#14" in keys[cid] for cid in mentions)
    assert retrieval.final.candidates[0].source_id == "docs/adr/0014-postgres-event-store.md"
