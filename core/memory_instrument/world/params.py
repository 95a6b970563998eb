"""What a world is asked to be (its parameters) and what a generated one reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

MIN_DOCS = 20
MAX_DOCS = 100_000
FILE_TYPES: tuple[str, ...] = ("md", "txt", "log", "yaml", "json", "toml", "py")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)


class WorldParamsError(ValueError):
    """The world parameters are inconsistent or out of range."""


@dataclass(frozen=True)
class WorldParams:
    """What to generate. Entity counts left as None scale with `docs` and always fit.

    `distractor_share` is the target share of documents unrelated to any decision; the
    story's minimum size takes precedence when both cannot hold. `file_type_mix` weights
    the file types of filler documents (story documents have fixed types). The tasks
    cover all six question types unless a count is explicitly set to zero.
    """

    seed: int = 0
    docs: int = 200
    topics: int | None = None
    decisions: int | None = None
    rejected_proposals: int | None = None
    supersessions: int | None = None
    cutovers: int | None = None
    obligations: int | None = None
    distractor_share: float = 0.5
    file_type_mix: tuple[tuple[str, float], ...] = (
        ("md", 0.5), ("txt", 0.15), ("log", 0.12), ("yaml", 0.08),
        ("json", 0.07), ("toml", 0.04), ("py", 0.04),
    )
    long_session_share: float = 0.3
    start_date: date = date(2022, 1, 10)
    max_tasks: int = 300


@dataclass(frozen=True)
class WorldManifest:
    """Where a generated world was written and what it contains."""

    root: Path
    history_dir: Path
    ledger_path: Path
    ledger_json_path: Path
    tasks_path: Path
    documents: int
    tasks: int
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LedgerDate:
    """One ledger claim that a date appears in a file of the history."""

    iso: str
    source: str
    fact: str
