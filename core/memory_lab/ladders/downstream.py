"""The downstream ladder's results file: one run's downstream rows, in ladder order.

`memory-lab study downstream-ladder RUN_DIR` writes
``benchmarks/results/downstream-ladder.json`` from a committed evaluation run over
the downstream tasks (``memory-lab evaluate --question-type downstream``):
every condition's pass rate beside the matched no-memory control with the paired
difference and its interval (`downstream.downstream_gains_by_condition`), each
condition's prompt size and reading cost, and where each task's work failed. The
README's downstream section and chapter 7 read that file, never the run's prose.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from memory_lab.ladders.downstream_tasks import case_passed, downstream_gains_by_condition
from memory_lab.ladders.reports import load_run
from memory_lab.runs import write_json

RESULT = Path("benchmarks/results/downstream-ladder.json")


def _failure(case: dict[str, Any]) -> str:
    """Why a case's work product failed, in a few words: the harness status, else the first check."""
    if case_passed(case):
        return "passed"
    harness = case["score"].get("harness") or {}
    if harness.get("status") and harness["status"] != "passed":
        return str(harness["status"])
    failed = [c for c in case["score"].get("artifact_checks") or [] if not c.get("passed")]
    return str(failed[0].get("reason", "failed"))[:80] if failed else "no work product"


def ladder_result(run_dir: str | Path, root: str | Path = ".") -> dict[str, Any]:
    """The results document of one downstream ladder run (paths relative to `root`)."""
    manifest, cases = load_run(run_dir)
    downstream = [c for c in cases if c["question_type"] == "downstream"]
    if not downstream:
        raise ValueError(f"{run_dir} holds no downstream case")
    order = {name: i for i, name in enumerate(manifest.get("condition_order") or [])}
    rows = sorted(downstream_gains_by_condition(downstream), key=lambda r: order.get(r.condition, 99))
    cost: dict[str, dict[str, Any]] = {}
    for name in {c["condition"] for c in downstream}:
        mine = [c for c in downstream if c["condition"] == name]
        def mean(values: list[float]) -> float:
            return round(sum(values) / len(values), 1)

        cost[name] = {
            "mean_prompt_tokens": mean([c["usage"]["prompt_tokens"] for c in mine]),
            "mean_completion_tokens": mean([c["usage"]["completion_tokens"] for c in mine]),
            "mean_answer_seconds": mean([c["answer_seconds"] or 0 for c in mine]),
            "failures": dict(Counter(_failure(c) for c in mine if not case_passed(c))),
        }
    reader = (manifest.get("models") or {}).get("reader") or {}
    run = Path(run_dir).resolve()
    try:
        shown = run.relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        shown = str(run)
    return {
        "run": shown,
        "reader": reader.get("name"),
        "style": reader.get("style"),
        "grader_version": manifest.get("grader_version"),
        "no_memory_control": manifest.get("no_memory_control"),
        "tasks": sorted({c["task_id"] for c in downstream}),
        "code_version": manifest.get("code_version"),
        "downstream_by_condition": [{**row.to_dict(), **cost[row.condition]} for row in rows],
    }


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: memory-lab study downstream-ladder RUN_DIR", file=sys.stderr)
        return 2
    document = ladder_result(args[0])
    write_json(RESULT, document)
    print(f"wrote {RESULT} ({len(document['downstream_by_condition'])} conditions, "
          f"{len(document['tasks'])} tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
