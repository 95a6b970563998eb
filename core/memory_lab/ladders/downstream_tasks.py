"""Downstream work against the matched control: pass rates and paired differences per condition.

Q6 asks whether the history improved the work. A downstream case passes when its work
product passed its checks (`Score.artifact_pass`: the task's executed harness, or its
lexical checks where it has none). The control is ``no-memory``, which
asks in the same reading style, layout and output format as the history conditions,
only without history (`memory_baseline.reading.SYSTEM_DATED_NO_HISTORY`), so a
difference is the history's and not the prompt's.

For each condition the tasks are paired with the control's cases of the same task;
the gain is the mean over tasks of (condition passed) - (control passed), with a
paired bootstrap 95% interval: tasks are resampled with replacement, the same draw
for both sides, and the interval is the 2.5th and 97.5th percentiles of the resampled
means. Written with numpy (a declared dependency) rather than scipy.stats.bootstrap,
which scipy is not: the percentile bootstrap is four lines.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memory_instrument import GRADER_VERSION, SystemOutput, TaskSet, load_tasks, score_task
from memory_lab.stats import bootstrap_interval

CONTROL = "no-memory"
# Written into a run's manifest by runs whose no-memory asks the matched way; older runs
# asked no-memory with the plain prompt whatever the style, and their table says so.
MATCHED_CONTROL = "matched: the reading style, layout and output format of the other conditions, no history"
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 18
CONFIDENCE = 0.95


@dataclass(frozen=True)
class DownstreamGain:
    """One condition's downstream pass rate beside the matched control, on the same tasks."""

    condition: str
    control: str
    tasks: int
    passed: int
    control_passed: int
    pass_rate: float | None
    control_pass_rate: float | None
    gain: float | None  # mean paired difference in pass rate
    ci_low: float | None
    ci_high: float | None
    fixed: tuple[str, ...]  # tasks the condition passed and the control failed
    broken: tuple[str, ...]  # tasks the control passed and the condition failed
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def case_passed(case: dict[str, Any]) -> bool:
    """A downstream case passes when its work product passed (an absent artifact does not)."""
    return case["score"].get("artifact_pass") is True


def paired_bootstrap(differences: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of the mean of paired differences, resampling the pairs."""
    if len(differences) == 0:
        raise ValueError("a paired bootstrap needs at least one pair")
    return bootstrap_interval(differences, resamples=resamples, seed=seed, confidence=confidence)


def downstream_gains_by_condition(
    cases: Iterable[dict[str, Any]], control: str = CONTROL, *,
    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
) -> list[DownstreamGain]:
    """Every condition's downstream pass rate and paired gain over `control`, over all downstream tasks.

    The control gets a row of its own (gain 0 against itself), so the table shows it
    beside the others. A condition without the control's cases has no pairs and is
    reported with its counts and no rates.
    """
    by_condition: dict[str, dict[str, bool]] = {}
    for case in cases:
        if case["question_type"] == "downstream":
            by_condition.setdefault(case["condition"], {})[case["task_id"]] = case_passed(case)
    reference = by_condition.get(control, {})
    rows = []
    for name in sorted(by_condition, key=lambda n: (n != control, n)):
        outcome = by_condition[name]
        paired = sorted(set(outcome) & set(reference))
        mine = [outcome[t] for t in paired]
        theirs = [reference[t] for t in paired]
        differences = [float(a) - float(b) for a, b in zip(mine, theirs, strict=True)]
        low = high = None
        if differences:
            low, high = paired_bootstrap(differences, resamples=resamples, seed=seed)
        n = len(paired)
        rows.append(DownstreamGain(
            condition=name, control=control, tasks=n, passed=sum(mine), control_passed=sum(theirs),
            pass_rate=sum(mine) / n if n else None, control_pass_rate=sum(theirs) / n if n else None,
            gain=sum(differences) / n if n else None, ci_low=low, ci_high=high,
            fixed=tuple(t for t in paired if outcome[t] and not reference[t]),
            broken=tuple(t for t in paired if reference[t] and not outcome[t]),
            resamples=resamples, seed=seed,
        ))
    return rows


def downstream_table_text(rows: Sequence[DownstreamGain], *, matched: bool = True) -> list[str]:
    """The table `report_text` prints: pass rates beside the control, paired gain and its interval."""
    if not rows:
        return []
    control = rows[0].control
    how = ("the matched control ({}, same reading style and format, no history)" if matched else
           "the control ({}, asked with the plain prompt: not matched to the conditions' style)")
    lines = [f"Downstream work: pass rate beside {how.format(control)}; paired gain with a "
             "bootstrap 95% interval",
             f"  {'condition':<20} {'tasks':>5} {'passed':>8} {control:>10} {'gain':>7}  95% interval"]
    for row in rows:
        if not row.tasks:
            lines.append(f"  {row.condition:<20} {row.tasks:>5}  (no cases paired with {control})")
            continue
        lines.append(f"  {row.condition:<20} {row.tasks:>5} {row.pass_rate:>8.2f} "
                     f"{row.control_pass_rate:>10.2f} {row.gain:>+7.2f}  "
                     f"[{row.ci_low:+.2f}, {row.ci_high:+.2f}]")
    return lines


@dataclass(frozen=True)
class Rescored:
    """One recorded downstream case judged again by the current instrument."""

    task_id: str
    condition: str
    recorded_grader: str
    recorded_artifact_pass: bool | None
    artifact_pass: bool | None
    status: str | None  # the harness status, None for a task without a harness
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rescore_downstream(cases: Iterable[dict[str, Any]], tasks: TaskSet) -> list[Rescored]:
    """Score the recorded work products of past downstream cases with the current tasks and harnesses.

    Uses each case's stored `SystemOutput`, so no reader runs; a published run's answers
    show how its lexical verdicts hold up once the work is executed.
    """
    known = set(tasks.ids)
    rows = []
    for case in cases:
        if case["question_type"] != "downstream" or case["task_id"] not in known:
            continue
        score = score_task(tasks.get(case["task_id"]), SystemOutput.from_dict(case["output"]))
        harness = score.harness or {}
        reason = "; ".join(c.reason for c in score.artifact_checks if not c.passed) or "passed"
        rows.append(Rescored(case["task_id"], case["condition"], case["score"]["grader_version"],
                             case["score"].get("artifact_pass"), score.artifact_pass,
                             harness.get("status"), reason))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="judge the recorded downstream work of past runs with the current instrument")
    parser.add_argument("out", type=Path)
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--tasks", type=Path, default=Path("fixtures/tasks.json"))
    args = parser.parse_args(argv)
    tasks = load_tasks(args.tasks)
    rows = []
    for run_dir in args.run_dirs:
        from memory_lab.ladders.reports import load_run

        _, cases = load_run(run_dir)
        rows += [{"run": run_dir.as_posix(), **row.to_dict()} for row in rescore_downstream(cases, tasks)]
    changes = Counter(f"{r['recorded_artifact_pass']}->{r['artifact_pass']}" for r in rows)
    document = {"grader_version": GRADER_VERSION, "tasks": args.tasks.as_posix(), "cases": len(rows),
                "recorded_to_now": dict(sorted(changes.items())), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} downstream cases; recorded -> now: {dict(sorted(changes.items()))}")
    return 0

