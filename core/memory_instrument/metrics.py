"""Deterministic measures the scorer builds on: source metrics per stage, and word overlap.

Both are hand-written on purpose: they are a few lines each, and keeping them in
the instrument means a change to them is a change to GRADER_VERSION, not a
silent drift caused by upgrading a library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StageMetrics:
    """How well one pipeline stage's ranked source list covers the expected sources.

    Ranks are source-level: repeated source ids (several chunks of one file) are
    collapsed to their first position before ranking. recall, precision and
    reciprocal_rank are None when the task expects no sources. precision over an
    empty list is 0.0 (nothing retrieved retrieves nothing relevant).
    """

    stage: str
    ranked_sources: tuple[str, ...]
    recall: float | None
    precision: float | None
    reciprocal_rank: float | None
    first_expected_rank: int | None
    found_expected: tuple[str, ...]
    missing_expected: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "ranked_sources": list(self.ranked_sources),
            "recall": self.recall,
            "precision": self.precision,
            "reciprocal_rank": self.reciprocal_rank,
            "first_expected_rank": self.first_expected_rank,
            "found_expected": list(self.found_expected),
            "missing_expected": list(self.missing_expected),
        }


def stage_metrics(stage: str, ranked: Sequence[str], expected: Sequence[str]) -> StageMetrics:
    """Recall, precision and reciprocal rank of one stage against the expected sources."""
    ranked_sources = tuple(dict.fromkeys(ranked))
    expected_set = set(expected)
    found = tuple(s for s in expected if s in ranked_sources)
    missing = tuple(s for s in expected if s not in ranked_sources)
    if not expected_set:
        return StageMetrics(stage, ranked_sources, None, None, None, None, found, missing)
    first_rank = next(
        (rank for rank, s in enumerate(ranked_sources, start=1) if s in expected_set), None
    )
    relevant_retrieved = sum(1 for s in ranked_sources if s in expected_set)
    return StageMetrics(
        stage=stage,
        ranked_sources=ranked_sources,
        recall=len(found) / len(expected_set),
        precision=relevant_retrieved / len(ranked_sources) if ranked_sources else 0.0,
        reciprocal_rank=1.0 / first_rank if first_rank else 0.0,
        first_expected_rank=first_rank,
        found_expected=found,
        missing_expected=missing,
    )


# --- word overlap for claim support -------------------------------------------------

# Function words carry no evidence; a claim "supported" by matching them is not supported.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during
    each either few for from further had has have having he her here hers him his how i
    if in into is it its itself just may me might more most must my no nor not now of off
    on once only or other our ours out over own per same shall she should so some such
    than that the their theirs them then there these they this those through to too under
    until up upon us very via was we were what when where which while who whom why will
    with within without would yes yet you your
    """.split()
)
_WORD = re.compile(r"[a-z0-9]+")


def light_stem(word: str) -> str:
    """Fold common English inflections so 'rejected'/'rejects'/'rejection' meet.

    Deliberately crude and stable; numbers and short words are left alone.
    """
    if word.isdigit() or len(word) <= 2:
        return word
    for suffix, replacement, min_length in (
        ("ies", "y", 5),
        ("ions", "", 7),
        ("ion", "", 6),
        ("ing", "", 5),
        ("eed", "eed", 4),  # 'need', 'agreed': keep, the 'ed' is not an inflection
        ("ed", "", 4),
        ("es", "", 5),
        ("s", "", 4),
    ):
        if word.endswith(suffix) and len(word) >= min_length and not word.endswith("ss"):
            word = word[: len(word) - len(suffix)] + replacement
            break
    # 'use', 'used', 'uses' and 'using' all end up as 'us'.
    if word.endswith("e") and len(word) >= 3:
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Lowercased, stemmed words of `text` minus stop words."""
    return {light_stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def word_overlap(claim: str, passages: Iterable[str]) -> float | None:
    """Share of the claim's content words found in the passages; None if it has none."""
    claim_words = content_words(claim)
    if not claim_words:
        return None
    passage_words: set[str] = set()
    for text in passages:
        passage_words |= content_words(text)
    return len(claim_words & passage_words) / len(claim_words)


def normalise_text(text: str) -> str:
    """Casefold and collapse whitespace, for substring checks that ignore layout."""
    return " ".join(text.casefold().split())


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None; None when there are none."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
