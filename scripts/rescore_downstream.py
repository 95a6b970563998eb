"""Judge the recorded downstream work of past runs with the current instrument (no reader runs).

    python scripts/rescore_downstream.py OUT.json RUN_DIR [RUN_DIR ...] [--tasks fixtures/tasks.json]

Each RUN_DIR's cases.jsonl holds the `SystemOutput` of every case; its downstream cases
are scored again against the task file (whose harnesses now run or validate the work),
and OUT.json gets one row per case: the verdict recorded then, the verdict now, the
harness status and the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from memory_instrument import GRADER_VERSION, load_tasks
from memory_lab.downstream import rescore_downstream
from memory_lab.evaluation import load_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--tasks", type=Path, default=Path("fixtures/tasks.json"))
    args = parser.parse_args(argv)
    tasks = load_tasks(args.tasks)
    rows = []
    for run_dir in args.run_dirs:
        _, cases = load_run(run_dir)
        rows += [{"run": run_dir.as_posix(), **row.to_dict()} for row in rescore_downstream(cases, tasks)]
    changes = Counter(f"{r['recorded_artifact_pass']}->{r['artifact_pass']}" for r in rows)
    document = {"grader_version": GRADER_VERSION, "tasks": args.tasks.as_posix(), "cases": len(rows),
                "recorded_to_now": dict(sorted(changes.items())), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} downstream cases; recorded -> now: {dict(sorted(changes.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
