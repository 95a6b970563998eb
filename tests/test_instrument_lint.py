"""Every committed task file passes its own answer and fails the wrong answers nearest to it.

`memory_instrument.lint` builds each task's canonical answer from its expectations and
evidence, and the mutants a careless reader writes (negated, hedged, a forbidden value,
another choice option, a truncated obligation list); a finding is a task that judges one
of them wrongly. The PEP corpus lives outside the repository; without it the evidence
quotes stand in for the PEPs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_instrument.lint import Finding, canonical_answer, lint_tasks, main, mutants
from memory_instrument.tasks import load_tasks, parse_task_file

REPO = Path(__file__).resolve().parents[1]
PEP_CORPUS = REPO.parent / "shared" / "data" / "peps" / "corpus"
TASK_FILES = [
    (REPO / "fixtures" / "tasks.json", REPO / "fixtures" / "history"),
    *[(path, PEP_CORPUS if PEP_CORPUS.is_dir() else None)
      for path in sorted((REPO / "fixtures" / "peps").glob("tasks*.json"))],
    *[(path, path.parent / "history")
      for path in sorted((REPO / "benchmarks" / "worlds").glob("*/tasks.json"))],
]


@pytest.mark.parametrize(("tasks_path", "corpus"), TASK_FILES,
                         ids=[str(p.relative_to(REPO)) for p, _ in TASK_FILES])
def test_every_task_file_lints_clean(tasks_path: Path, corpus: Path | None) -> None:
    if corpus is None:
        # The PEPs' evidence quotes are single lines; a claim can sit on the next line of the
        # PEP (provenance-pep-313's "consensus"), so only the corpus itself shows support.
        pytest.skip(f"the PEP corpus is not at {PEP_CORPUS}: its tasks are linted against it")
    findings = lint_tasks(load_tasks(tasks_path), corpus)
    assert findings == [], "\n".join(str(f) for f in findings)


def _task_file(**answer: object) -> dict:
    base = {"must_include": [["postgresql", "postgres"]], "must_not_include": [],
            "abstain": False, "evidenced_negative": False}
    return {"version": 2, "tasks": [{
        "id": "t", "question_type": "temporal", "query": "Which store was production on?",
        "as_of": "2024-07-23", "expected_sources": ["logs/deploy.log"],
        "answer": {**base, **answer},
    }]}


def test_a_task_that_forbids_its_own_answer_is_reported() -> None:
    contradictory = parse_task_file(_task_file(must_not_include=["postgresql"]))
    findings = lint_tasks(contradictory)
    assert [f.check for f in findings] == ["canonical"]
    assert isinstance(findings[0], Finding) and "forbidden" in findings[0].problem


def test_an_obligation_list_is_checked_whole_and_cut_short() -> None:
    task = parse_task_file({"version": 2, "tasks": [{
        "id": "o", "question_type": "obligations", "query": "Which follow-ups were still open?",
        "as_of": "2024-10-01", "expected_sources": ["sessions/s.md"],
        "answer": {"must_include": [], "must_not_include": [], "abstain": False,
                   "evidenced_negative": False, "expect": {"obligations": {
                       "open": [["replay procedure"], ["lag alert"]],
                       "closed": [["retention job"]]}}}}]}).tasks[0]
    assert canonical_answer(task) == "Still open: replay procedure and lag alert."
    built = dict(mutants(task))
    assert built["truncated"] == "Still open: replay procedure."
    assert built["negated"] == "Still open: retention job."
    assert lint_tasks([task]) == []


def test_a_choice_task_gets_every_negated_form_of_its_option() -> None:
    task = parse_task_file(_task_file(expect={"choice": {
        "options": {"postgresql": ["postgresql"], "sqlite": ["sqlite"]},
        "answer": "postgresql"}})).tasks[0]
    names = [name for name, _ in mutants(task)]
    assert "swapped:sqlite" in names and "hedged" in names and "negated" in names
    assert {n.split(":")[0] for n in names} >= {
        "negated-initial", "negated-not-yet", "negated-no-longer", "negated-replaced",
        "negated-moved", "negated-contrast", "negated-against"}
    assert canonical_answer(task).startswith("postgresql")


def test_the_command_line_exits_non_zero_on_findings(tmp_path: Path, capsys) -> None:
    import json

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(_task_file(must_not_include=["postgresql"])), encoding="utf-8")
    assert main([str(path)]) == 1
    assert "1 finding(s)" in capsys.readouterr().out
    assert main([str(REPO / "fixtures" / "tasks.json"), "--corpus",
                 str(REPO / "fixtures" / "history")]) == 0
