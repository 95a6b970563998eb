"""Published figures re-derived from the committed runs they name.

The refactors of the lab must not move a published number: every committed
ladder run's scorecard, rebuilt from its case records by the instrument,
equals the scorecard committed beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_lab.ladders.reports import report

PUBLISHED_RUNS = Path(__file__).resolve().parents[1] / "book" / "published" / "runs"
LADDER_RUNS = sorted(p.parent for p in PUBLISHED_RUNS.glob("*/*/scorecard.json"))


def test_there_is_a_published_ladder():
    assert LADDER_RUNS


@pytest.mark.parametrize("run_dir", LADDER_RUNS, ids=lambda p: p.name)
def test_scorecard_rebuilt_from_cases_equals_the_committed_one(run_dir):
    committed = json.loads((run_dir / "scorecard.json").read_text(encoding="utf-8"))["scorecard"]
    rebuilt = report(run_dir).to_dict()
    assert rebuilt["conditions"] == committed["conditions"]
    key = ("condition", "question_type", "cases", "passed", "passed_task_ids")

    def cell(c: dict) -> dict:
        # An outcome the grader added later (counted 0 in an old run) is not a changed figure.
        return {**{k: c[k] for k in key},
                "outcomes": {o: n for o, n in c["outcome_counts"].items() if n}}

    assert [cell(c) for c in rebuilt["cells"]] == [cell(c) for c in committed["cells"]]
