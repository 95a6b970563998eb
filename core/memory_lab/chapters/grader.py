"""Chapter 10's study: the instrument measured against labelled answers, and what that changes.

Three measurements, each from committed inputs: the crafted probes
(`fixtures/grader/probes.json`) scored by today's grader and compared with
their expert labels; the held-out real answers (`fixtures/grader/heldout.json`),
labelled before the grader saw them; and every committed run re-scored from
its recorded answers (`rescore.rescore_all`), old verdict beside new.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_instrument.tasks import load_tasks
from memory_instrument.validation import load_probes, validate_grader
from memory_lab.ladders.rescore import check_heldout, rescore_all
from memory_lab.studies.display import show_figure, show_table  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import (
    StudyRun,
    repo_path,  # noqa: F401 - called by the chapter
    start_study,
)


def _confusion_rows(key: str, tables: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{key: name, "probes": c["probes"], "labelled pass, passes": c["true_pass"],
             "labelled pass, fails": c["false_fail"], "labelled fail, passes": c["false_pass"],
             "labelled fail, fails": c["true_fail"], "agreement": c["agreement"],
             "false-pass rate": c["false_pass_rate"]} for name, c in tables.items()]


def grader_study(runs_root: str | Path, parameters: Mapping[str, Any], *, repo: Path,
                 probes_path: str | Path, tasks_path: str | Path, history: str | Path,
                 ) -> tuple[StudyRun, dict[str, Any]]:
    """Run the three measurements, write their tables into a fresh study run, return both."""
    run = start_study(runs_root, "grader", parameters, corpora={"fixture": history}, tasks_path=tasks_path)
    validation = validate_grader(load_probes(probes_path), load_tasks(tasks_path), history).to_dict()
    heldout = check_heldout(repo)
    rescored = rescore_all(repo)
    tables = {
        "by_question_type": _confusion_rows("question type", {**validation["by_question_type"],
                                                              "all": validation["overall"]}),
        "by_kind": _confusion_rows("probe kind", validation["by_kind"]),
        "misjudged": [{"probe": m["id"], "label": m["label"], "grader": m["grader"],
                       "expert's reason": m["reason"]} for m in validation["misjudged"]],
        "heldout": _confusion_rows("question type", {**heldout["by_question_type"],
                                                     "all": heldout["overall"]}),
        "heldout_misjudged": [{"case": m["id"], "label": m["label"], "grader": m["grader"],
                               "expert's reason": m["reason"], "grader's reading": m["why"]}
                              for m in heldout["misjudged"]],
        "rescore": [{"run": r["run"], "condition": name, "cases": c["cases"], "passed before": c["old"],
                     "passed now": c["new"]}
                    for r in rescored["runs"] if "conditions" in r for name, c in r["conditions"].items()],
        "changed": [{"run": r["run"], "task": c["task_id"], "condition": c["condition"],
                     "before": c["old_outcome"], "now": c["new_outcome"], "why": c["why"]}
                    for r in rescored["runs"] for c in r.get("changed", [])],
    }
    for name, rows in tables.items():
        run.write_rows(name, rows)
    summary = {"grader_version": validation["grader_version"], "probes": validation["overall"],
               "heldout": heldout["overall"],
               "rescore": {k: rescored[k] for k in ("cases", "old_passed", "new_passed",
                                                    "verdicts_changed", "runs_rescored",
                                                    "runs_not_rescored")}}
    run.finish(summary=summary)
    return run, {"tables": tables, **summary}
