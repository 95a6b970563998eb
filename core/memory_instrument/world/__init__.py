"""Generate a controlled project history ("world") whose ground truth is known, from a seed.

A world is a folder with four parts: `history/` (the corpus a system may read),
`LEDGER.md` plus `ledger.json` (what really happened), `tasks.json` (questions of
all six types, valid under the task-file contract), and `harnesses/` (one executed
check per downstream task, `memory_instrument.harness`; never part of the corpus).
Everything is derived from one `random.Random(seed)`, so the same parameters always
give the same bytes; that is what lets a run manifest name a world by its digest.

The story elements mirror the canonical fixture: decisions whose rationale lives in a
separate report (and often far away inside a long session), proposals that are later
judged unnecessary and rejected, decisions superseded by later ones, cutovers where new
work and production disagree for a while, and promises that are sometimes kept.
"""

from __future__ import annotations

from .checks import find_ledger_date_mismatches, find_unsupported_phrasings, read_ledger_dates
from .generate import config_harness_files, generate_world, world_digest
from .params import (
    FILE_TYPES,
    MAX_DOCS,
    MIN_DOCS,
    MONTHS,
    LedgerDate,
    WorldManifest,
    WorldParams,
    WorldParamsError,
)
from .questions import DELIVERED_STATUSES
from .vocabulary import ABSENT_SUBJECTS, date_variants

__all__ = [
    "ABSENT_SUBJECTS",
    "DELIVERED_STATUSES",
    "FILE_TYPES",
    "LedgerDate",
    "MAX_DOCS",
    "MIN_DOCS",
    "MONTHS",
    "WorldManifest",
    "WorldParams",
    "WorldParamsError",
    "config_harness_files",
    "date_variants",
    "find_ledger_date_mismatches",
    "find_unsupported_phrasings",
    "generate_world",
    "read_ledger_dates",
    "world_digest",
]
