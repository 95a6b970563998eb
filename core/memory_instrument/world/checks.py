"""Consistency checks shared by the fixture and generated worlds (ledger dates, phrasings)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .params import LedgerDate
from .vocabulary import _normalise, date_variants

_TABLE_ROW = re.compile(r"^\|(.+)\|\s*$")
_ISO_IN_CELL = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def read_ledger_dates(ledger_path: str | Path) -> list[LedgerDate]:
    """Date/file claims from a ledger's Markdown tables.

    A table contributes pairs of columns: `date` with `file`, `opened` with `opened in`,
    `closed` with `closed in`. Cells that are not ISO dates (e.g. `—`) are skipped.
    """
    claims: list[LedgerDate] = []
    header: list[str] | None = None
    for line in Path(ledger_path).read_text(encoding="utf-8").splitlines():
        match = _TABLE_ROW.match(line.strip())
        if not match:
            header = None
            continue
        cells = [cell.strip() for cell in match.group(1).split("|")]
        if header is None:
            header = [cell.lower() for cell in cells]
            continue
        if all(set(cell) <= set("-: ") for cell in cells):
            continue
        row = dict(zip(header, cells, strict=False))
        fact = row.get("fact") or row.get("obligation") or ""
        for date_col, file_col in (("date", "file"), ("opened", "opened in"),
                                   ("closed", "closed in")):
            iso, source = row.get(date_col, ""), row.get(file_col, "")
            if _ISO_IN_CELL.match(iso) and source:
                claims.append(LedgerDate(iso=iso, source=source, fact=fact))
    return claims


def find_ledger_date_mismatches(ledger_path: str | Path, corpus_root: str | Path) -> list[str]:
    """Ledger dates whose file is missing or does not contain the date in an accepted form."""
    root = Path(corpus_root)
    problems: list[str] = []
    cache: dict[str, str] = {}
    for claim in read_ledger_dates(ledger_path):
        path = root / claim.source
        if claim.source not in cache:
            cache[claim.source] = path.read_text(encoding="utf-8") if path.is_file() else ""
        if not path.is_file():
            problems.append(f"ledger names {claim.source!r}, which is not in {root}")
        elif not any(form in cache[claim.source] for form in date_variants(claim.iso)):
            problems.append(f"ledger date {claim.iso} not found in {claim.source!r} "
                            f"({claim.fact})")
    return problems


def _absence_core(phrase: str) -> str:
    """'lock errors' for 'no lock errors'; a phrase that states no absence gives itself."""
    head, _, rest = _normalise(phrase).partition(" ")
    return rest if head in ("no", "zero", "0", "without") and rest else _normalise(phrase)


def find_unsupported_phrasings(tasks: Iterable[Any], corpus_root: str | Path) -> list[str]:
    """must_include groups with no phrasing present in the task's expected sources.

    A group is supported when at least one of its phrasings occurs (case-insensitive,
    whitespace-normalised) in the concatenation of the expected sources' ids and texts;
    a phrasing that states an absence ("no lock errors") is supported by what it says is
    absent ("lock errors", e.g. a table column that reads 0).
    Abstentions have no sources and are skipped. Accepts loaded `Task` objects or dicts.
    """
    root = Path(corpus_root)
    problems: list[str] = []
    for task in tasks:
        if isinstance(task, dict):
            ident, sources = task["id"], task["expected_sources"]
            groups, abstain = task["answer"]["must_include"], task["answer"]["abstain"]
        else:
            ident, sources = task.id, task.expected_sources
            groups, abstain = task.answer.must_include, task.answer.abstain
        if abstain:
            continue
        parts = []
        for source in sources:
            path = root / source
            parts.append(source)
            parts.append(path.read_text(encoding="utf-8") if path.is_file() else "")
        haystack = _normalise("\n".join(parts))
        for position, group in enumerate(groups):
            if not any(_normalise(phrase) in haystack or _absence_core(phrase) in haystack
                       for phrase in group):
                problems.append(f"task '{ident}': must_include[{position}] {list(group)!r} "
                                "is not supported by its expected sources")
    return problems
