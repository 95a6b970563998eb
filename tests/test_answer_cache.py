"""Layered answer caches: a committed, read-only layer is read first; writes go to the home layer."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memory_baseline.answer_cache import AnswerCache, cache_key

RECORD = {"reader": {"name": "r"}, "settings": {"max_tokens": 8}, "generation": {"raw_text": "x"}}


def test_read_first_layer_is_searched_before_the_home_layer(tmp_path):
    published, home = tmp_path / "published", tmp_path / "home"
    key = cache_key({"name": "r"}, "prompt", {"max_tokens": 8})
    AnswerCache(published).put(key, "prompt", {**RECORD, "generation": {"raw_text": "published"}})
    AnswerCache(home).put(key, "prompt", {**RECORD, "generation": {"raw_text": "home"}})
    layered = AnswerCache(home, read_first=[published])
    record = layered.get(key, "prompt")
    assert record["generation"]["raw_text"] == "published" and record["layer"] == str(published)
    assert layered.get(key, "another prompt") is None  # the prompt is compared, not only the key
    other = cache_key({"name": "r"}, "second", {"max_tokens": 8})
    layered.put(other, "second", RECORD)
    assert not (published / other[:2]).exists() and layered.get(other, "second")["layer"] == str(home)


def test_export_copies_exactly_the_used_entries_and_refuses_a_missing_one(tmp_path):
    home, out = AnswerCache(tmp_path / "home"), tmp_path / "out"
    keys = [cache_key({"n": i}, f"p{i}", {}) for i in range(3)]
    for i, key in enumerate(keys):
        home.put(key, f"p{i}", RECORD)
    assert home.export(keys[:2], out) == 2
    assert home.export(keys[:2], out) == 0  # unchanged entries are not rewritten
    assert sorted(p.stem for p in out.rglob("*.json")) == sorted(keys[:2])
    with pytest.raises(FileNotFoundError, match="no entry"):
        home.export(["0" * 64], out)
    # A study's export keeps what it has and names what it lost.
    lost: list[str] = []
    assert home.export([keys[2], "0" * 64], out, missing=lost) == 1 and lost == ["0" * 64]


def test_environment_names_the_read_first_layers(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_BASELINE_ANSWER_CACHE_PATH", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert AnswerCache(tmp_path / "home").read_first == (tmp_path / "a", tmp_path / "b")


@pytest.mark.slow
def test_a_committed_answer_is_served_without_loading_the_model(tmp_path):
    """Answer once (smollm2), export, then in a fresh process read it from the exported layer only."""
    from memory_baseline.config import ReaderConfig
    from memory_baseline.passages import Passage
    from memory_baseline.reading import get_reader

    passage = Passage("adr/adr-007.md#0", "adr/adr-007.md", "We use PostgreSQL for the event store.",
                      None, "adr", "2024-07-15", 1)
    home = AnswerCache(tmp_path / "home")
    reader = get_reader(ReaderConfig(name="smollm2", max_answer_tokens=16), cache=home)
    first = reader.answer("Which event store?", [passage], None)
    assert not first.cached
    home.export([first.extra["cache"]["key"]], tmp_path / "published")
    probe = f"""
import sys
from memory_baseline.answer_cache import AnswerCache
from memory_baseline.config import ReaderConfig
from memory_baseline.passages import Passage
from memory_baseline.reading import get_reader
from memory_baseline import models
passage = Passage("adr/adr-007.md#0", "adr/adr-007.md", "We use PostgreSQL for the event store.",
                  None, "adr", "2024-07-15", 1)
cache = AnswerCache({str(tmp_path / 'empty-home')!r}, read_first=[{str(tmp_path / 'published')!r}])
answer = get_reader(ReaderConfig(name="smollm2", max_answer_tokens=16), cache=cache).answer(
    "Which event store?", [passage], None)
print(answer.cached, answer.text == {first.text!r}, len(models._LLM_CACHE))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True", "0"]


def test_cache_only_serves_what_is_cached_and_refuses_the_rest_without_loading_a_model(tmp_path):
    """What `book --cached-only` relies on: a miss fails in one line, before any weights load."""
    probe = f"""
from memory_baseline.answer_cache import AnswerCache, CacheOnlyError, usage
from memory_baseline.config import ReaderConfig
from memory_baseline.passages import Passage
from memory_baseline.reading import get_reader
from memory_baseline import models
passage = Passage("adr/adr-007.md#0", "adr/adr-007.md", "We use PostgreSQL for the event store.",
                  None, "adr", "2024-07-15", 1)
reader = get_reader(ReaderConfig(name="smollm2", max_answer_tokens=16),
                    cache=AnswerCache({str(tmp_path / 'home')!r}, read_first=[]))
try:
    reader.answer("Which event store?", [passage], None)
except CacheOnlyError as error:
    print("refused", len(models._LLM_CACHE), usage({str(tmp_path / 'log.jsonl')!r})["refused"])
"""
    env = {**os.environ, "MEMORY_BASELINE_ANSWER_CACHE_ONLY": "1",
           "MEMORY_BASELINE_ANSWER_CACHE_LOG": str(tmp_path / "log.jsonl")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["refused", "0", "1"]


def test_the_usage_log_counts_answers_served_and_computed_by_layer(tmp_path, monkeypatch):
    from memory_baseline.answer_cache import USAGE_LOG_ENV, AnswerCache, usage

    log = tmp_path / "answers.jsonl"
    monkeypatch.setenv(USAGE_LOG_ENV, str(log))
    committed, own = tmp_path / "committed", tmp_path / "own"
    AnswerCache(committed, read_first=[]).put("a" * 64, "prompt a", {"answer": 1})
    cache = AnswerCache(own, read_first=[committed])
    cache.put("b" * 64, "prompt b", {"answer": 2})
    assert cache.get("a" * 64, "prompt a")["layer"] == str(committed)
    assert cache.get("b" * 64, "prompt b")["layer"] == str(own)
    assert cache.get("c" * 64, "prompt c") is None  # a miss is not an answer
    counts = usage(log)
    assert counts["computed"] == 2 and counts["from_cache"] == 2
    assert counts["by_layer"] == {str(committed): 1, str(own): 1}
    assert counts["keys"] == ["a" * 64, "b" * 64]
