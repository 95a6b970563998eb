"""Where the reader's passages come from: the one thing that differs between conditions.

`Baseline.ask` always does the same three things — gather candidate passages,
admit them under the token budget, read — and a context source is the first
of them. The pipeline's own source is retrieval; the others are the controls
an experiment compares it with:

- `Retrieved`: lexical + dense candidates, fusion, rerank (the system itself);
- `Prefetched`: a retrieval result computed earlier, reused (a tuning grid that
  varies only assembly settings need not search again);
- `GivenPassages`: passages chosen outside the system (an experiment's oracle
  spans or whole expected files); the library does not know how they were chosen;
- `WholeHistory`: every passage given, with the budget widened to the reader's
  whole context window (the "just read everything" rival);
- `NoHistory`: nothing, and the reader is asked without any history.

A source never sees an instrument label: `GivenPassages` receives text, not tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from .config import Config, ContextConfig
from .context import candidates_in_order
from .passages import Passage
from .retrieval import RetrievalResult, Retriever


@dataclass(frozen=True)
class Gathered:
    """What a context source hands to assembly."""

    passages: tuple[Passage, ...]  # in rank order
    retrieval: RetrievalResult | None
    context: ContextConfig  # the assembly settings to admit them under
    history: bool  # False only when the reader is to be asked without any history
    notes: dict = field(default_factory=dict)


class ContextSource(Protocol):
    name: str

    def gather(self, query: str, config: Config) -> Gathered: ...


@dataclass(frozen=True)
class Retrieved:
    retriever: Retriever
    name: str = "retrieval"

    def gather(self, query: str, config: Config) -> Gathered:
        result = self.retriever.retrieve(query)
        return Gathered(tuple(candidates_in_order(result)), result, config.context, True)


@dataclass(frozen=True)
class Prefetched:
    result: RetrievalResult
    name: str = "retrieval"

    def gather(self, query: str, config: Config) -> Gathered:
        if query != self.result.query:
            raise ValueError(f"prefetched retrieval is for {self.result.query!r}, not {query!r}")
        return Gathered(tuple(candidates_in_order(self.result)), self.result, config.context, True)


@dataclass(frozen=True)
class GivenPassages:
    name: str
    passages: tuple[Passage, ...]
    notes: dict = field(default_factory=dict)

    def gather(self, query: str, config: Config) -> Gathered:
        return Gathered(self.passages, None, config.context, True, dict(self.notes))


@dataclass(frozen=True)
class WholeHistory:
    """Every passage, oldest first as given, as many as fit the reader's window."""

    passages: tuple[Passage, ...]
    name: str = "full-history"

    def gather(self, query: str, config: Config) -> Gathered:
        window = config.reader.context_window - config.reader.max_answer_tokens
        context = replace(config.context, token_budget=window, max_passages=max(len(self.passages), 1))
        return Gathered(self.passages, None, context, True)


@dataclass(frozen=True)
class NoHistory:
    name: str = "none"

    def gather(self, query: str, config: Config) -> Gathered:
        return Gathered((), None, config.context, False)


def given(name: str, passages: Sequence[Passage], **notes) -> GivenPassages:
    return GivenPassages(name, tuple(passages), dict(notes))
