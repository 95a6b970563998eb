"""The studies behind the book's chapters: each one measures, returns plain rows, and records itself.

The notebooks hold narrative, parameters, tables and figures; the measuring lives
here so it can be read, tested and rerun without a notebook. Every study writes a
run directory of its own (`<runs_root>/<study>-<UTC time>-<random>/`) holding a
`manifest.json` (code version, corpus digests, model identities, the effective
configuration of every variant, parameters, start and end times) and one CSV per
table, and a figure or table in the book names that directory in its caption.
Ladder runs (chapter 7) are written by `memory_lab.evaluation` instead.

Stages are compared the way the instrument compares them: at source level, with
`memory_instrument.stage_metrics`, so "recall at k" means the same thing here as
in a scorecard.
"""

from __future__ import annotations

# The chapters build their sweeps from the registry through this module (`ex.fusion_variants`).
from .conditions import (  # noqa: F401
    context_variants,
    fusion_variants,
    rerank_variants,
    sweep_factor,
)
from .studies.chunking import (  # noqa: F401
    _admitted_spans,
    _candidate_spans,
    _covered,
    available_chunkers,
    chunking_study,
    evidence_coverage,
    wasted_overlap,
)
from .studies.context import (  # noqa: F401
    context_study,
    read_and_score,
)
from .studies.corpus import (  # noqa: F401
    _union_length,
    chunk_statistics,
    corpus_inventory,
    health_rows,
    storage_bytes,
)
from .studies.display import (  # noqa: F401
    CAPTION_SOURCE,
    pivot,
    run_caption,
    show_figure,
    show_table,
    summarise,
    table_frame,
    table_html,
)
from .studies.embeddings import (  # noqa: F401
    beir_embedding_rows,
    beir_subset,
    embedding_study,
)
from .studies.failures import (  # noqa: F401
    LOSS_STAGES,
    diagnose_case,
    diagnose_run,
    loss_stage,
    recorded_context,
)
from .studies.ladder import (  # noqa: F401
    answer_paired_rows,
    answer_paired_type_rows,
    answer_rate_rows,
    answer_stage_rows,
    ladder_cost_rows,
    latest_run,
    prefix_cache_rows,
    retrieval_paired_rows,
    retrieval_rate_rows,
)
from .studies.rerank import (  # noqa: F401
    available_rerankers,
    usable_rerankers,
)
from .studies.setup import (  # noqa: F401
    RETRIEVAL_STAGES,
    StudyError,
    StudyRun,
    World,
    _cell,
    _spread,
    display_path,
    index_corpus,
    load_task_subset,
    prepare_world,
    reader_for,
    repo_path,
    start_study,
    write_task_subset,
)
from .studies.traces import (  # noqa: F401
    Trace,
    run_variants,
    stage_row,
    trace_tasks,
)
