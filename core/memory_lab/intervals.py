"""How sure a ladder is: pass rates with intervals, paired rung differences, and their reading.

A pass rate over a few dozen tasks moves by whole tasks; two rungs a few points
apart may be the same rung. So every rate carries a percentile-bootstrap 95%
interval over its tasks (`stats.bootstrap_interval`), and every comparison of two
rungs is *paired*: the same tasks under both, the interval of the mean per-task
difference resampling tasks (so each task's two verdicts stay together), beside
McNemar's exact test on the discordant tasks (`scipy.stats.binomtest`; the
two-sided exact binomial test of the discordant counts is McNemar's exact test).
A difference is *separated* when its interval excludes zero and McNemar's p is
below 0.05: on a handful of tasks the percentile bootstrap is too narrow (two
tasks that both flip give the interval [1, 1]), and the exact test is not. The
sentences that read a ladder (`reading`) are computed from that, never written
by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from scipy.stats import binomtest

from memory_lab.stats import bootstrap_interval

ALL_TYPES = "all"
ALPHA = 0.05
RESAMPLES = 10_000
SEED = 20
# The comparisons the ladder is read by (upper, lower): what each step adds. A pair whose
# conditions are not both in a run is left out.
LADDER_COMPARISONS: tuple[tuple[str, str], ...] = (
    ("lexical", "no-memory"), ("dense", "no-memory"), ("hybrid", "lexical"), ("hybrid", "dense"),
    ("hybrid-reranked", "hybrid"), ("best", "hybrid"), ("oracle-span", "best"),
    ("oracle-source", "best"), ("oracle-source", "oracle-span"), ("full-history", "hybrid"),
)


@dataclass(frozen=True)
class RateInterval:
    condition: str
    question_type: str
    cases: int
    passed: int
    rate: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairedDifference:
    upper: str
    lower: str
    question_type: str
    tasks: int
    upper_passed: int
    lower_passed: int
    only_upper: int  # tasks the upper rung passed and the lower failed
    only_lower: int
    difference: float  # upper minus lower pass rate on the paired tasks
    low: float
    high: float
    mcnemar_p: float

    @property
    def separated(self) -> bool:
        return (self.low > 0 or self.high < 0) and self.mcnemar_p < ALPHA

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "separated": self.separated}


def verdicts(cases: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, tuple[str, bool]]]:
    """condition -> task id -> (question type, passed), one verdict per (condition, task)."""
    table: dict[str, dict[str, tuple[str, bool]]] = {}
    for case in cases:
        table.setdefault(case["condition"], {})[case["task_id"]] = (
            case["question_type"], bool(case["score"]["passed"]))
    return table


def _types(table: Mapping[str, Mapping[str, tuple[str, bool]]]) -> list[str]:
    return sorted({kind for tasks in table.values() for kind, _ in tasks.values()})


def pass_rates(cases: Iterable[Mapping[str, Any]], order: Sequence[str] | None = None, *,
               per_type: bool = True, resamples: int = RESAMPLES, seed: int = SEED) -> list[RateInterval]:
    """Each condition's pass rate with its bootstrap 95% interval, over all tasks and per type."""
    table = verdicts(cases)
    names = [n for n in (order or sorted(table)) if n in table]
    rows = []
    for kind in [ALL_TYPES, *(_types(table) if per_type else [])]:
        for name in names:
            outcomes = [float(ok) for k, ok in table[name].values() if kind in (ALL_TYPES, k)]
            if not outcomes:
                continue
            low, high = bootstrap_interval(outcomes, resamples=resamples, seed=seed)
            rows.append(RateInterval(name, kind, len(outcomes), int(sum(outcomes)),
                                     sum(outcomes) / len(outcomes), low, high))
    return rows


def paired_difference(table: Mapping[str, Mapping[str, tuple[str, bool]]], upper: str, lower: str,
                      question_type: str = ALL_TYPES, *, resamples: int = RESAMPLES,
                      seed: int = SEED) -> PairedDifference | None:
    """`upper` minus `lower` on the tasks both answered (of `question_type`), or None if none."""
    tasks = sorted(t for t in set(table.get(upper, {})) & set(table.get(lower, {}))
                   if question_type in (ALL_TYPES, table[upper][t][0]))
    if not tasks:
        return None
    up = [table[upper][t][1] for t in tasks]
    down = [table[lower][t][1] for t in tasks]
    differences = [float(a) - float(b) for a, b in zip(up, down, strict=True)]
    low, high = bootstrap_interval(differences, resamples=resamples, seed=seed)
    only_upper = sum(a and not b for a, b in zip(up, down, strict=True))
    only_lower = sum(b and not a for a, b in zip(up, down, strict=True))
    discordant = only_upper + only_lower
    p = binomtest(only_upper, discordant, 0.5).pvalue if discordant else 1.0
    return PairedDifference(upper, lower, question_type, len(tasks), sum(up), sum(down), only_upper,
                            only_lower, sum(differences) / len(tasks), low, high, float(p))


def ladder_differences(cases: Iterable[Mapping[str, Any]],
                       comparisons: Sequence[tuple[str, str]] = LADDER_COMPARISONS, *,
                       per_type: bool = True) -> list[PairedDifference]:
    """Every comparison whose two conditions ran, over all tasks and per question type."""
    table = verdicts(cases)
    rows = []
    for kind in [ALL_TYPES, *(_types(table) if per_type else [])]:
        for upper, lower in comparisons:
            row = paired_difference(table, upper, lower, kind)
            if row is not None:
                rows.append(row)
    return rows


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def reading(differences: Sequence[PairedDifference], rates: Sequence[RateInterval] = ()) -> list[str]:
    """Sentences that read the ladder from its intervals: what is separated and what is not."""
    overall = [d for d in differences if d.question_type == ALL_TYPES]
    lines = []
    for d in overall:
        span = f"{d.difference:+.2f} [{d.low:+.2f}, {d.high:+.2f}] on {d.tasks} paired tasks"
        if d.separated:
            direction = "above" if d.difference > 0 else "below"
            lines.append(f"`{d.upper}` is {direction} `{d.lower}`: {span}, McNemar p = {d.mcnemar_p:.3g}.")
        else:
            lines.append(f"`{d.upper}` and `{d.lower}` are not separated: {span}, McNemar p = "
                         f"{d.mcnemar_p:.3g} ({_tasks(d.only_upper)} only the first passes, "
                         f"{d.only_lower} only the second).")
    by_type = [d for d in differences if d.question_type != ALL_TYPES and d.separated]
    if by_type:
        lines.append("Separated within a question type: " + "; ".join(
            f"`{d.upper}` vs `{d.lower}` on {d.question_type} ({d.difference:+.2f} "
            f"[{d.low:+.2f}, {d.high:+.2f}], {d.tasks} tasks)" for d in by_type) + ".")
    wide = [r for r in rates if r.question_type == ALL_TYPES and (r.high - r.low) / 2 > 0.10]
    if wide:
        lines.append("Intervals wider than ±0.10 (too few tasks to read closely): "
                     + ", ".join(f"`{r.condition}` ±{(r.high - r.low) / 2:.2f} over {r.cases}" for r in wide)
                     + ".")
    return lines


def sweep_reading(rows: Iterable[Mapping[str, Any]], reference: str, *, variant_key: str = "variant",
                  task_key: str = "task") -> list[str]:
    """A sweep read like the ladder: every variant against `reference` (the default settings),
    paired on the same tasks. `rows` are a study's per-task rows with a 0/1 `passed`."""
    cases = [{"condition": row[variant_key], "task_id": row[task_key],
              "question_type": row.get("question_type", ALL_TYPES), "score": {"passed": bool(row["passed"])}}
             for row in rows]
    names = list(dict.fromkeys(c["condition"] for c in cases))
    comparisons = [(name, reference) for name in names if name != reference]
    compared = ladder_differences(cases, comparisons, per_type=False)
    differences = [d for d in compared if d.only_upper or d.only_lower]
    same = [d.upper for d in compared if not (d.only_upper or d.only_lower)]
    lines = reading(differences, pass_rates(cases, [reference], per_type=False))
    if same:
        lines.append("The same verdict as `" + reference + "` on every task: "
                     + ", ".join(f"`{name}`" for name in same) + ".")
    return lines
