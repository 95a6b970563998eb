"""What every reader returns and promises: `Answer`, `Usage`, the `Reader` protocol, `ReaderError`.

Kept apart from the backends so that code which only consumes answers (the pipeline,
the studies) depends on these types and not on any model runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

from ..context import Passage

# The one abstention phrase: every prompt asks for it, and an answer containing it abstained.
INSUFFICIENT = "insufficient evidence"


class ReaderError(ValueError):
    """A reader cannot run: unknown name, server unreachable, prompt too long."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0  # model calls made for this answer (0 for a cache hit or no model)
    seconds: float = 0.0  # wall time of this answer as the caller experienced it
    prompt_seconds: float = 0.0  # runtime's timing of prompt processing
    generation_seconds: float = 0.0  # runtime's timing of token generation


@dataclass(frozen=True)
class Answer:
    text: str
    citations: tuple[str, ...]  # admitted source ids only, in order of first citation
    unknown_citations: tuple[str, ...]  # cited ids that were not admitted (flagged)
    abstained: bool
    usage: Usage
    reader: dict
    cached: bool = False
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def is_abstention(text: str) -> bool:
    return INSUFFICIENT in text.lower()


class Reader(Protocol):
    identity: dict
    tokenizer_name: str

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        """Exact token count of the rendered prompt, with this reader's tokenizer."""
        ...

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        """The prompt this reader sends first for these passages (what the budget counts)."""
        ...

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer: ...


def no_evidence_answer(identity: dict) -> Answer:
    """History was consulted and nothing was admitted: abstain, without a model call."""
    text = f"{INSUFFICIENT}."
    return Answer(text=text, citations=(), unknown_citations=(), abstained=True, usage=Usage(),
                  reader=identity, extra={"no_passages": True})
