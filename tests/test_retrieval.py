"""Retrieval stages, identifier lookups, fusion, and the context budget."""

from __future__ import annotations

import json

import pytest

from memory_baseline import cli
from memory_baseline.baseline import Baseline, prompt_counter
from memory_baseline.config import ContextConfig, ReaderConfig
from memory_baseline.context import assemble, candidates_in_order
from memory_baseline.passages import Passage
from memory_baseline.reading import ExtractiveReader, build_messages
from memory_baseline.refresh import sync
from memory_baseline.retrieval import Candidate, reciprocal_rank_fusion

ERROR_NOTES = {
    "runbooks/broker-errors.md": "# Broker errors\n\nWhen the broker rejects a publish it logs "
    "E-BRK-042: the partition leader moved. Retry with backoff; do not restart the consumer.\n",
    "notes/errors-overview.md": "# Errors overview\n\nMost errors we see are timeouts and broker "
    "errors. Errors in the importer are logged as warnings. Error handling is described per "
    "service; errors should carry a code.\n",
    "notes/error-budget.md": "# Error budget\n\nOur error budget for the orders service is 0.1% "
    "of requests. Errors beyond the budget freeze deploys. Broker errors count against it.\n",
    "sessions/session-012.md": "Date: 2024-06-03\n\nWe discussed errors in the event store and "
    "the broker. adr-007 is referenced here only in passing. Errors, errors, errors.\n",
    "decisions/adr-007.md": "# ADR 7: event store\n\nDate: 2024-07-10\n\nNew services use "
    "PostgreSQL for the event store.\n",
    "src/publisher.py": "def publish_shipment_event(event):\n    \"\"\"Publish one shipment "
    "event to the broker.\"\"\"\n    return broker.send(event)\n",
}


@pytest.fixture()
def error_corpus(tmp_path, conn, config, minilm):
    root = tmp_path / "errors"
    for relative, text in ERROR_NOTES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sync(conn, config, str(root), remove_missing=False, embedder=minilm)
    return root


def search_json(capsys, config, query: str) -> dict:
    code = cli.main(["search", query, "--index", config.index, "--reader", "extractive", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    return {stage["name"]: stage for stage in json.loads(out)["stages"]}


@pytest.mark.parametrize(
    ("query", "expected_source"),
    [
        ("E-BRK-042", "runbooks/broker-errors.md"),
        ("what does E-BRK-042 mean?", "runbooks/broker-errors.md"),
        ("adr-007", "decisions/adr-007.md"),
        ("adr-007.md", "decisions/adr-007.md"),
        ("error-budget.md", "notes/error-budget.md"),
        ("publish_shipment_event", "src/publisher.py"),
    ],
)
def test_identifiers_and_file_names_rank_first(capsys, config, error_corpus, query, expected_source):
    stages = search_json(capsys, config, query)
    assert stages["lexical"]["candidates"][0]["source_id"] == expected_source
    assert stages["fused"]["candidates"][0]["source_id"] == expected_source
    assert stages["admitted"]["candidates"][0]["source_id"] == expected_source


def test_search_json_reports_every_stage(capsys, config, error_corpus):
    stages = search_json(capsys, config, "how do we handle broker errors?")
    assert list(stages) == ["lexical", "dense", "fused", "reranked", "admitted"]
    for name, stage in stages.items():
        assert isinstance(stage["ms"], float)
        for rank, candidate in enumerate(stage["candidates"], 1):
            assert {"chunk_id", "source_id", "rank"} <= set(candidate)
            if name != "admitted":
                assert candidate["rank"] == rank and "score" in candidate
    fused = stages["fused"]["detail"]
    assert fused["per_path"] == {"lexical": len(stages["lexical"]["candidates"]),
                                 "dense": len(stages["dense"]["candidates"])}
    assert fused["union_size"] == len(stages["fused"]["candidates"])
    assert stages["dense"]["detail"]["returned"] == min(30, len(ERROR_NOTES))
    assert stages["admitted"]["detail"]["prompt_tokens"] <= stages["admitted"]["detail"]["token_budget"]


def test_rrf_rewards_agreement_and_keeps_single_path_finds():
    lexical = [Candidate("a", "A", 9.0, 1), Candidate("b", "B", 5.0, 2)]
    dense = [Candidate("b", "B", 0.9, 1), Candidate("c", "C", 0.8, 2)]
    fused = reciprocal_rank_fusion([lexical, dense], k=60)
    assert [c.chunk_id for c in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)


@pytest.mark.parametrize("budget", [400, 700, 1200, 3000])
def test_prompt_tokens_are_exact_and_within_budget(conn, config, error_corpus, budget):
    reader = ExtractiveReader(ReaderConfig(name="extractive"))
    base = Baseline(conn, config.with_overrides(context={"token_budget": budget}), reader=reader)
    query, as_of = "How do we handle broker errors?", "2024-07-15"
    found = base.search(query, as_of)
    retrieval, trace = found.retrieval, found.context
    rendered = build_messages(query, list(trace.admitted), as_of)
    assert trace.prompt_tokens == reader.count_prompt_tokens(rendered)
    assert trace.prompt_tokens <= budget
    assert len(trace.admitted) <= 6
    # Everything not admitted is accounted for.
    considered = {p.chunk_id for p in trace.admitted} | set(trace.budget_drops) | set(
        trace.duplicate_drops) | set(trace.not_considered) | set(trace.quota_drops)
    assert considered == {c.chunk_id for c in retrieval.final.candidates}


def test_oversize_first_passage_is_truncated_or_dropped_by_policy(conn, config, error_corpus):
    reader = ExtractiveReader(ReaderConfig(name="extractive"))
    base = Baseline(conn, config, reader=reader)
    query = "broker errors"
    retrieval = base.search(query).retrieval
    candidates = candidates_in_order(retrieval)
    count = prompt_counter(reader, query, None)
    first = candidates[0]
    stub = Passage(first.chunk_id, first.source_id, "", first.section, first.kind,
                   first.artifact_date, 1)
    tight = count([stub]) + 25  # room for a fragment of one passage only
    truncated = assemble(candidates, ContextConfig(token_budget=tight), count, tokenizer="wp")
    assert truncated.truncated == candidates[0].chunk_id
    assert truncated.admitted[0].truncated and truncated.prompt_tokens <= tight
    assert candidates[0].text.startswith(truncated.admitted[0].text)
    dropped = assemble(candidates, ContextConfig(token_budget=tight, oversize_policy="drop"), count,
                       tokenizer="wp")
    assert candidates[0].chunk_id in dropped.budget_drops and dropped.truncated is None
    # The top-ranked passage is never replaced by lower-ranked ones: nothing is admitted.
    assert dropped.admitted == () and dropped.top_dropped == candidates[0].chunk_id
    assert truncated.truncated_chars == (len(truncated.admitted[0].text), len(candidates[0].text))


def test_duplicates_and_quota_are_recorded(conn, config, error_corpus):
    reader = ExtractiveReader(ReaderConfig(name="extractive"))
    base = Baseline(conn, config, reader=reader)
    retrieval = base.search("errors").retrieval
    candidates = candidates_in_order(retrieval)
    doubled = [candidates[0], candidates[0].__class__(**{**candidates[0].__dict__,
               "chunk_id": "copy#0", "text": "  " + candidates[0].text.upper() + "\n"}), *candidates[1:]]
    count = prompt_counter(reader, "errors", None)
    trace = assemble(doubled, ContextConfig(per_source_quota=1), count, tokenizer="wp")
    assert trace.duplicate_drops == ("copy#0",)
    assert len(trace.admitted_sources) == len(trace.admitted)


def test_identifier_fragments_rule_keeps_or_blanks_the_parsers_pieces(conn, config, error_corpus):
    from memory_baseline.store import Store, query_terms

    store = Store(conn, config.index)
    kept = query_terms(store, "what does E-BRK-042 mean for the broker?")
    blanked = query_terms(store, "what does E-BRK-042 mean for the broker?", fragments=False)
    assert "e-brk-042" in kept and "e-brk-042" in blanked
    assert "broker" in kept and "broker" in blanked
    fragments = set(kept) - set(blanked)
    assert fragments and all(f in "e-brk-042" for f in fragments)  # only the pieces of the code go


@pytest.mark.parametrize(("max_chunks", "promoted"), [(3, True), (0, False)])
def test_rare_identifier_threshold_decides_whether_a_text_match_is_promoted(
        conn, config, error_corpus, minilm, max_chunks, promoted):
    from memory_baseline.retrieval import Retriever

    tuned = config.with_overrides(retrieval={"rare_identifier_max_chunks": max_chunks})
    result = Retriever(conn, tuned, embedder=minilm).retrieve("what does E-BRK-042 mean?")
    fused = next(s for s in result.stages if s.name == "fused")
    assert ("e-brk-042" in fused.detail["identifier_priority"]["rare"]) is promoted
