"""Chapter 5: which rerankers can run here (chapter 4's sweeps live in `memory_lab.conditions`)."""

from __future__ import annotations

from collections.abc import Sequence

from memory_lab.conditions import rerank_variants  # noqa: F401 - called by the chapter
from memory_lab.studies.display import show_figure, show_table, summarise  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import index_corpus, load_task_subset, reader_for, repo_path, start_study  # noqa: F401 - called by the chapter
from memory_lab.studies.traces import run_variants  # noqa: F401 - called by the chapter

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
