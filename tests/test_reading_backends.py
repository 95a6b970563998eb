"""Readers by name on real models: exact prompt counts, the answer cache, Ollama errors, extractive."""

from __future__ import annotations

import socket
import time

import pytest
from conftest import FIXTURE_HISTORY

from memory_baseline.answer_cache import AnswerCache
from memory_baseline.baseline import Baseline
from memory_baseline.config import ContextConfig, ReaderConfig
from memory_baseline.models import get_llm
from memory_baseline.passages import Passage
from memory_baseline.reading import (
    INSUFFICIENT,
    LocalLLMReader,
    ReaderError,
    build_messages,
    get_reader,
    is_abstention,
    parse_citations,
)
from memory_baseline.refresh import sync


def passage(source_id: str, text: str, rank: int = 1, date: str | None = None) -> Passage:
    return Passage(f"{source_id}#0", source_id, text, None, "markdown", date, rank)


ADR = passage(
    "decisions/adr-007.md",
    "# ADR-007: New event-store work targets PostgreSQL\n\nStatus: accepted. New services "
    "store their events in PostgreSQL. SQLite stays in production until the cut-over. "
    "This supersedes decisions/adr-003.md.",
    rank=1, date="2024-07-10",
)
LUNCH = passage("notes/lunch.md", "The team lunch moved to Thursdays at noon.", rank=2)

ADR9 = Passage("decisions/adr-009.md#0", "decisions/adr-009.md",
               "# ADR-009\nWe do not adopt Redis. The proposal is rejected.", None, "decision",
               "2024-08-14", 2)


@pytest.fixture()
def answer_cache(tmp_path) -> AnswerCache:
    return AnswerCache(tmp_path / "answer-cache")


@pytest.mark.slow
def test_prompt_count_is_the_runtime_count(answer_cache):
    reader = get_reader(ReaderConfig(name="smollm2", max_answer_tokens=8, style="plain"), cache=answer_cache)
    messages = build_messages("Which store do new services use?", [ADR, LUNCH], "2024-10-07")
    counted = reader.count_prompt_tokens(messages)
    assert counted == get_llm("smollm2").count_chat_tokens(messages)
    answer = reader.answer("Which store do new services use?", [ADR, LUNCH], "2024-10-07")
    assert answer.usage.prompt_tokens == counted
    assert answer.usage.calls == 1 and answer.usage.completion_tokens >= 1
    assert answer.reader["model"]["file_sha256"] and answer.reader["prompt_template"]


@pytest.mark.slow
def test_a_prefix_cached_reader_is_another_identity_and_says_what_it_reused(answer_cache):
    cold_config = ReaderConfig(name="smollm2", max_answer_tokens=8, style="plain")
    warm_config = ReaderConfig(name="smollm2", max_answer_tokens=8, style="plain", prefix_cache=True)
    cold, warm = get_reader(cold_config, cache=answer_cache), get_reader(warm_config, cache=answer_cache)
    assert warm.identity == {**cold.identity, "prefix_cache": True}
    history = [ADR, LUNCH]
    warm.answer("Which store do new services use?", history, None)
    second = warm.answer("Where did the team lunch move?", history, None)
    assert not second.cached and second.extra["cached_prompt_tokens"] > 50
    # The same prompt read cold is a different cache key: a warm answer never stands in for it.
    again = cold.answer("Where did the team lunch move?", history, None)
    assert not again.cached and "cached_prompt_tokens" not in again.extra
    assert again.extra["cache"]["key"] != second.extra["cache"]["key"]


@pytest.mark.slow
def test_qwen_answer_cites_only_admitted_ids_and_is_cached(answer_cache):
    config = ReaderConfig(name="qwen-0.5b", max_answer_tokens=64, style="plain")  # free-text enforcement
    reader = get_reader(config, cache=answer_cache)
    query = "What event store should new services use?"
    first = reader.answer(query, [ADR, LUNCH], "2024-10-07")
    admitted = {ADR.source_id, LUNCH.source_id}
    assert not first.cached and first.extra["cache"]["hit"] is False and first.text
    # Enforced: whatever the model wrote (adr-003 is named in a passage but not admitted),
    # the returned text and citations hold admitted ids only; the rest is flagged.
    assert set(first.citations) <= admitted
    assert set(parse_citations(first.text)) <= admitted
    assert not set(first.unknown_citations) & admitted
    assert set(first.unknown_citations) == set(parse_citations(first.extra["raw_text"])) - admitted

    second = get_reader(config, cache=answer_cache).answer(query, [ADR, LUNCH], "2024-10-07")
    assert second.cached and second.extra["cache"]["hit"] is True
    assert second.usage.calls == 0
    assert (second.text, second.citations, second.abstained) == (
        first.text, first.citations, first.abstained)
    assert second.usage.prompt_tokens == first.usage.prompt_tokens

    other = reader.answer(query, [ADR], "2024-10-07")  # another prompt: a miss, a model call
    assert not other.cached and other.usage.calls == 1
    assert other.extra["cache"]["key"] != first.extra["cache"]["key"]


def test_extractive_abstains_on_unrelated_passages():
    reader = get_reader(ReaderConfig(name="extractive"))
    answer = reader.answer("Which Kubernetes autoscaling policy did we set?", [LUNCH], None)
    assert answer.abstained and is_abstention(answer.text) and answer.citations == ()
    assert INSUFFICIENT in answer.text


def test_extractive_reads_alike_in_every_style_and_unknown_styles_fail_in_one_line():
    plain = get_reader(ReaderConfig(name="extractive", style="plain"))
    styled = get_reader(ReaderConfig(name="extractive", style="structured"))
    assert styled.identity == plain.identity
    assert styled.answer("Did we adopt Redis?", [ADR9], None).text == \
        plain.answer("Did we adopt Redis?", [ADR9], None).text
    with pytest.raises(ReaderError, match="unknown style"):
        get_reader(ReaderConfig(name="extractive", style="poetic"))
    with pytest.raises(ReaderError, match="unknown style"):
        get_reader(ReaderConfig(name="smollm2", style="poetic"))


def test_consulted_history_with_nothing_admitted_abstains_without_a_call(tmp_path):
    reader = get_reader(ReaderConfig(name="smollm2"), cache=AnswerCache(tmp_path))
    answer = reader.answer("What autoscaling policy did we set?", [], None)
    assert answer.abstained and answer.usage.calls == 0
    # No memory at all is another thing: the model is asked in its own style, without history.
    messages = reader.messages("What autoscaling policy did we set?", [], None, history=False)
    assert "none of its records are available" in messages[0]["content"]


def test_ollama_without_a_server_is_one_line(monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{port}")
    started = time.perf_counter()
    with pytest.raises(ReaderError) as error:
        get_reader(ReaderConfig(name="ollama"))
    message = str(error.value)
    assert "\n" not in message and f"127.0.0.1:{port}" in message and "Ollama" in message
    assert time.perf_counter() - started < 30  # fails fast; generous for a busy CI machine


def test_unknown_reader_is_one_line():
    with pytest.raises(ReaderError, match="unknown reader 'gpt-9'"):
        get_reader(ReaderConfig(name="gpt-9"))


@pytest.mark.slow
def test_ask_on_the_fixture_cites_admitted_sources(conn, config, minilm, answer_cache):
    sync(conn, config, str(FIXTURE_HISTORY), remove_missing=False, embedder=minilm)
    config = config.with_overrides(
        reader={"name": "qwen-0.5b", "max_answer_tokens": 96},
        context=ContextConfig(max_passages=3, token_budget=1400),
    )
    reader = LocalLLMReader(config.reader, "qwen-0.5b", cache=answer_cache)
    result = Baseline(conn, config, reader=reader).ask(
        "What event store should new services use?", "2024-10-07")
    admitted = set(result.context.admitted_sources)
    assert result.context.prompt_tokens == result.answer.usage.prompt_tokens <= 1400
    assert admitted and admitted <= set(result.retrieval.final.source_ids)
    assert result.answer.text and result.answer.usage.calls == 1
    assert set(result.answer.citations) <= admitted
    assert set(parse_citations(result.answer.text)) <= admitted
    assert result.to_dict()["answer"]["extra"]["cache"]["hit"] is False
