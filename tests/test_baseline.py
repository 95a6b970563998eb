"""`Baseline`: every condition is one call with a different context source, and every trace is data.

Real PostgreSQL, the real MiniLM encoder and the extractive reader (no LLM), on
the fixture history ingested once for the module.
"""

from __future__ import annotations

import json
import uuid

import pytest
from conftest import FIXTURE_HISTORY

from memory_baseline.baseline import AskResult, Baseline
from memory_baseline.config import Config
from memory_baseline.context_sources import NoHistory, WholeHistory, given
from memory_baseline.refresh import sync
from memory_baseline.server import connect
from memory_baseline.store import Store

QUESTION = "Where is the error code E-BRK-042 explained, and what does it mean?"
RUNBOOK = "docs/runbooks/broker-errors.md"


@pytest.fixture(scope="module")
def baseline(database_url):
    config = Config(index=f"test_{uuid.uuid4().hex[:10]}").with_overrides(reader={"name": "extractive"})
    with connect(database_url) as conn:
        sync(conn, config, FIXTURE_HISTORY, remove_missing=True)
        pipeline = Baseline(conn, config)
        yield pipeline
        pipeline.retriever.close()
        Store(conn, config.index).drop()


def test_search_admits_under_the_budget_with_a_trace_of_every_stage(baseline):
    found = baseline.search(QUESTION)
    assert [stage.name for stage in found.retrieval.stages][:2] == ["lexical", "dense"]
    assert found.passages and found.passages[0].source_id == RUNBOOK
    assert found.context.prompt_tokens <= found.context.token_budget
    assert len(found.passages) <= baseline.config.context.max_passages
    assert {"gather", "assembly"} <= set(found.timings_ms)
    assert found.source == "retrieval" and found.history


def test_ask_reads_what_search_admitted_and_cites_only_admitted_sources(baseline):
    result = baseline.ask(QUESTION)
    found = baseline.search(QUESTION)
    assert [p.chunk_id for p in result.passages] == [p.chunk_id for p in found.passages]
    assert set(result.citations) <= {p.source_id for p in result.passages}
    assert result.text == result.answer.text
    assert result.timings_ms["total"] >= result.timings_ms["reader"]
    assert result.config == baseline.config.to_dict()


def test_the_trace_is_json_and_reads_back(baseline):
    document = json.loads(json.dumps(baseline.ask(QUESTION).to_dict()))
    assert document["query"] == QUESTION
    assert document["admitted"][0]["source_id"] == RUNBOOK
    assert {stage["name"] for stage in document["retrieval"]["stages"]} >= {"lexical", "dense", "fused"}
    assert document["answer"]["reader"]["name"] == "extractive"


def test_no_history_sends_nothing_and_says_so(baseline):
    result = baseline.ask(QUESTION, source=NoHistory())
    assert result.passages == () and result.retrieval is None and result.source == "none"
    assert result.citations == ()


def test_given_passages_are_admitted_as_given_without_retrieval(baseline):
    chosen = [p for p in baseline.search(QUESTION).passages if p.source_id == RUNBOOK][:1]
    result = baseline.ask(QUESTION, source=given("oracle-source", chosen, why="a test"))
    assert [p.source_id for p in result.passages] == [RUNBOOK]
    assert result.retrieval is None and result.source == "oracle-source"
    assert result.notes == {"why": "a test"}


def test_whole_history_widens_the_budget_to_the_reader_window(baseline):
    many = list(baseline.search("event store").passages) + list(baseline.search(QUESTION).passages)
    result = baseline.ask(QUESTION, source=WholeHistory(tuple(many)))
    reader = baseline.config.reader
    assert result.context.token_budget == reader.context_window - reader.max_answer_tokens
    assert result.source == "full-history"


def test_as_of_reaches_the_answer_record(baseline):
    result = baseline.ask(QUESTION, "2024-07-15")
    assert isinstance(result, AskResult) and result.as_of == "2024-07-15"
    assert result.to_dict()["as_of"] == "2024-07-15"
