"""`Baseline.ask`: gather passages, assemble context, read — and keep every trace.

The answer never travels alone: an `AskResult` carries the retrieval stages,
the context decision and the answer with its usage, so a wrong answer can be
followed back to the stage where the evidence was lost.

Every experimental condition is this one call with a different context source
(`memory_baseline.context_sources`): retrieval, an oracle's passages, the whole
history, or none. Timings are measured here and returned as their own value;
no stage result is written to after it was made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import psycopg

from .answer_cache import AnswerCache
from .compression import compress
from .config import Config
from .context import ContextTrace, assemble
from .context_sources import ContextSource, Gathered, Retrieved
from .embedders import get_embedder
from .passages import Passage
from .reading import Answer, Reader, get_reader
from .retrieval import RetrievalResult, Retriever


@dataclass(frozen=True)
class Search:
    """Candidates and the context decision for a question, before reading."""

    query: str
    as_of: str | None
    source: str
    retrieval: RetrievalResult | None
    context: ContextTrace
    history: bool
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    @property
    def passages(self) -> tuple[Passage, ...]:
        """The admitted passages, in the order the reader would see them."""
        return tuple(self.context.admitted)


@dataclass(frozen=True)
class AskResult:
    query: str
    as_of: str | None
    retrieval: RetrievalResult | None
    context: ContextTrace
    answer: Answer
    timings_ms: dict[str, float] = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    source: str = "retrieval"
    notes: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The answer as the reader wrote it."""
        return self.answer.text

    @property
    def citations(self) -> tuple[str, ...]:
        """The admitted sources the answer cites, in order of first citation."""
        return self.answer.citations

    @property
    def passages(self) -> tuple[Passage, ...]:
        """The admitted passages the reader read."""
        return tuple(self.context.admitted)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "as_of": self.as_of,
            "source": self.source,
            "answer": self.answer.to_dict(),
            "admitted": [
                {"chunk_id": p.chunk_id, "source_id": p.source_id, "rank": p.rank,
                 "truncated": p.truncated, "location": p.location,
                 "lines": [p.line_start, p.line_end] if p.line_start is not None else None,
                 "chars": [p.char_start, p.char_end], "text": p.text}
                for p in self.context.admitted
            ],
            "retrieval": self.retrieval.to_dict() if self.retrieval else None,
            "context": self.context.to_dict(),
            "timings_ms": self.timings_ms,
            "notes": self.notes,
            "config": self.config,
        }


def prompt_counter(reader: Reader, query: str, as_of: str | None, *, history: bool = True):
    """Exact prompt tokens for a set of passages, rendered as this reader will send them."""

    def count(passages: Sequence[Passage]) -> int:
        return reader.count_prompt_tokens(reader.messages(query, passages, as_of, history=history))

    return count


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


class Baseline:
    """The conventional pipeline over one index, with one configuration."""

    def __init__(
        self, conn: psycopg.Connection, config: Config, *, reader: Reader | None = None,
        retriever: Retriever | None = None,
    ) -> None:
        self.conn = conn
        self.config = config
        self._retriever = retriever
        self._reader = reader
        self._owns_retriever = retriever is None

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = Retriever(self.conn, self.config)
        return self._retriever

    @property
    def reader(self) -> Reader:
        if self._reader is None:
            cache = AnswerCache.from_config(self.config.cache) if self.config.reader.cache else None
            self._reader = get_reader(self.config.reader, cache=cache)
        return self._reader

    def search(self, query: str, as_of: str | None = None, *,
               source: ContextSource | None = None) -> Search:
        """Gather and admit passages for `query` without reading (default source: retrieval).

        A connection lost since the last call (its server stopped or restarted) is opened
        again, the embedded server started if need be, and the search run once more.
        """
        try:
            return self._search(query, as_of, source)
        except psycopg.OperationalError:
            if source is not None or not self._owns_retriever:
                raise
            self._reconnect()
            return self._search(query, as_of, None)

    def _reconnect(self) -> None:
        from .server import reopen

        if self._retriever is not None:
            self._retriever.close()
            self._retriever = None
        lost = self.conn.closed or self.conn.broken
        if not lost and self.conn.autocommit:  # not yet used since its server went away?
            try:
                self.conn.execute("SELECT 1")
            except psycopg.OperationalError:
                lost = True
        if lost:
            self.conn = reopen(self.conn)

    def _search(self, query: str, as_of: str | None, source: ContextSource | None) -> Search:
        source = source or Retrieved(self.retriever)
        started = time.perf_counter()
        gathered: Gathered = source.gather(query, self.config)
        gathered_at = time.perf_counter()
        context = assemble(
            gathered.passages, gathered.context,
            prompt_counter(self.reader, query, as_of, history=gathered.history),
            tokenizer=self.reader.tokenizer_name,
        )
        assembled_at = time.perf_counter()
        notes = dict(gathered.notes)
        if gathered.context.compression == "sentences" and context.admitted:
            context, notes["compression"] = self._compress(query, as_of, context, gathered)
        compressed_at = time.perf_counter()
        timings = {s.name: round(s.ms, 3) for s in gathered.retrieval.stages} if gathered.retrieval else {}
        timings["gather"] = _ms(gathered_at - started)
        timings["assembly"] = _ms(assembled_at - gathered_at)
        if "compression" in notes:
            timings["compression"] = _ms(compressed_at - assembled_at)
        return Search(query, as_of, source.name, gathered.retrieval, context, gathered.history, timings,
                      notes)

    def _compress(self, query: str, as_of: str | None, context: ContextTrace,
                  gathered: Gathered) -> tuple[ContextTrace, dict]:
        """The admitted passages cut to their sentences nearest the question, recounted exactly."""
        cut = compress(query, context.admitted, get_embedder(self.config.embedder, self.config.cache),
                       gathered.context.compression_keep)
        count = prompt_counter(self.reader, query, as_of, history=gathered.history)
        tokens = count(cut.passages)
        note = {**cut.to_dict(), "keep": gathered.context.compression_keep,
                "prompt_tokens_before": context.prompt_tokens, "prompt_tokens_after": tokens}
        return replace(context, admitted=cut.passages, prompt_tokens=tokens), note

    def ask(self, query: str, as_of: str | None = None, *,
            source: ContextSource | None = None,
            on_admitted: Callable[[Search], None] | None = None) -> AskResult:
        """Search, then read the admitted passages (default source: retrieval).

        `on_admitted` sees the search before the reader starts (a terminal shows what
        is being read while the answer is generated)."""
        started = time.perf_counter()
        found = self.search(query, as_of, source=source)
        if on_admitted is not None:
            on_admitted(found)
        searched_at = time.perf_counter()
        answer = self.reader.answer(query, list(found.context.admitted), as_of, history=found.history)
        read_at = time.perf_counter()
        timings = {**found.timings_ms, "retrieval_and_assembly": _ms(searched_at - started),
                   "reader": _ms(read_at - searched_at), "total": _ms(read_at - started)}
        return AskResult(query, as_of, found.retrieval, found.context, answer, timings,
                         self.config.to_dict(), found.source, found.notes)
