"""Chapter 5: which rerankers can run here (chapter 4's sweeps live in `memory_lab.conditions`)."""

from __future__ import annotations

from collections.abc import Sequence

# -- chapter 4: fusion ---------------------------------------------------------------------------


# -- chapter 5: reranking ------------------------------------------------------------------------


def available_rerankers() -> list[str]:
    from memory_baseline.rerank import RERANKERS

    return list(RERANKERS)


def usable_rerankers(names: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The rerankers that can be built here, and for the others the one-line reason.

    A cross-encoder whose weights are not on this machine is a fact about the
    installation, shown in the chapter, not a reason to abandon the other rows.
    """
    from memory_baseline.config import RerankConfig
    from memory_baseline.rerank import RerankError, get_reranker

    usable, unavailable = [], {}
    for name in names:
        try:
            get_reranker(RerankConfig(name=name))
        except RerankError as exc:
            unavailable[name] = str(exc).splitlines()[0]
            continue
        usable.append(name)
    return usable, unavailable
