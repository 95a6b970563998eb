"""Chapter 4. Fusion: what its notebook calls.

This chapter has no study code of its own: it runs the shared variant loop
(`memory_lab.studies.traces.run_variants`) over the fusion variants of the registry.
"""

from __future__ import annotations

from memory_lab.conditions import fusion_variants  # noqa: F401 - called by the chapter
from memory_lab.studies.display import show_figure, show_table, summarise  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import index_corpus, load_task_subset, reader_for, repo_path, start_study  # noqa: F401 - called by the chapter
from memory_lab.studies.traces import run_variants  # noqa: F401 - called by the chapter
