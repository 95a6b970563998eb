"""`Baseline.ask`: retrieve, assemble context, read — and keep every trace.

The answer never travels alone: an `AskResult` carries the retrieval stages,
the context decision and the answer with its usage, so a wrong answer can be
followed back to the stage where the evidence was lost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg

from .config import Config
from .context import ContextTrace, Passage, assemble, candidates_in_order
from .readers import Answer, Reader, get_reader
from .retrieval import RetrievalResult, Retriever


@dataclass(frozen=True)
class AskResult:
    query: str
    as_of: str | None
    retrieval: RetrievalResult | None
    context: ContextTrace
    answer: Answer
    timings_ms: dict[str, float] = field(default_factory=dict)
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "as_of": self.as_of,
            "answer": self.answer.to_dict(),
            "admitted": [
                {"chunk_id": p.chunk_id, "source_id": p.source_id, "rank": p.rank,
                 "truncated": p.truncated, "text": p.text}
                for p in self.context.admitted
            ],
            "retrieval": self.retrieval.to_dict() if self.retrieval else None,
            "context": self.context.to_dict(),
            "timings_ms": self.timings_ms,
            "config": self.config,
        }


def prompt_counter(reader: Reader, query: str, as_of: str | None, *, history: bool = True):
    """Exact prompt tokens for a set of passages, rendered as this reader will send them."""

    def count(passages: Sequence[Passage]) -> int:
        return reader.count_prompt_tokens(reader.messages(query, passages, as_of, history=history))

    return count


class Baseline:
    """The conventional pipeline over one index, with one configuration."""

    def __init__(
        self, conn: psycopg.Connection, config: Config, *, reader: Reader | None = None,
        retriever: Retriever | None = None,
    ) -> None:
        self.conn = conn
        self.config = config
        self.retriever = retriever or Retriever(conn, config)
        self._reader = reader

    @property
    def reader(self) -> Reader:
        if self._reader is None:
            self._reader = get_reader(self.config.reader)
        return self._reader

    def search(self, query: str, as_of: str | None = None) -> tuple[RetrievalResult, ContextTrace]:
        """Retrieval plus the context decision, without reading."""
        retrieval = self.retriever.retrieve(query)
        t0 = time.perf_counter()
        context = assemble(
            candidates_in_order(retrieval), self.config.context,
            prompt_counter(self.reader, query, as_of), tokenizer=self.reader.tokenizer_name,
        )
        retrieval.final.detail["assembly_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        return retrieval, context

    def ask(self, query: str, as_of: str | None = None) -> AskResult:
        t0 = time.perf_counter()
        retrieval, context = self.search(query, as_of)
        t1 = time.perf_counter()
        answer = self.reader.answer(query, list(context.admitted), as_of)
        t2 = time.perf_counter()
        timings = {s.name: round(s.ms, 3) for s in retrieval.stages}
        timings["assembly"] = retrieval.final.detail.get("assembly_ms", 0.0)
        timings["retrieval_and_assembly"] = round((t1 - t0) * 1000, 3)
        timings["reader"] = round((t2 - t1) * 1000, 3)
        timings["total"] = round((t2 - t0) * 1000, 3)
        return AskResult(query, as_of, retrieval, context, answer, timings, self.config.to_dict())
