"""Task-file validation: good files load; each breach names its task and field."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from memory_instrument import TaskFileError, find_evidence_mismatches, load_tasks


def make_task(task_id: str = "t1", **overrides: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": task_id,
        "question_type": "outcome",
        "query": "Which event store do new services use?",
        "as_of": None,
        "expected_sources": ["decisions/adr-007.md"],
        "answer": {
            "must_include": [["PostgreSQL", "Postgres"]],
            "must_not_include": ["SQLite is the decision"],
            "abstain": False,
            "evidenced_negative": False,
        },
    }
    task.update(overrides)
    return task


def write(tmp_path: Path, tasks: list[dict[str, Any]], **top: Any) -> Path:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"version": 1, "tasks": tasks, **top}), encoding="utf-8")
    return path


def load_error(tmp_path: Path, tasks: list[dict[str, Any]]) -> str:
    with pytest.raises(TaskFileError) as info:
        load_tasks(write(tmp_path, tasks))
    return str(info.value)


def test_valid_file_loads_with_typed_fields(tmp_path: Path) -> None:
    downstream = make_task(
        "t2",
        question_type="downstream",
        query="Write the store config for the new billing service.",
        answer={
            "must_include": [],
            "must_not_include": [],
            "abstain": False,
            "evidenced_negative": False,
            "artifact_checks": [
                {"check": "parses", "format": "yaml"},
                {"check": "key_equals", "format": "yaml", "key": "store.backend",
                 "any_of": ["postgresql", "postgres"]},
                {"check": "not_matches", "pattern": "sqlite"},
            ],
            "evidence": [{"source": "decisions/adr-007.md", "quote": "PostgreSQL"}],
        },
        notes="the October service",
        metadata={"split": "test"},
    )
    temporal = make_task("t3", question_type="temporal", as_of="2024-07-15")
    tasks = load_tasks(write(tmp_path, [make_task(), downstream, temporal]))

    assert tasks.ids == ("t1", "t2", "t3")
    assert tasks.get("t3").as_of == date(2024, 7, 15)
    t2 = tasks.get("t2")
    assert t2.metadata == {"split": "test"}
    assert [c.check for c in t2.answer.artifact_checks] == ["parses", "key_equals", "not_matches"]
    assert t2.answer.artifact_checks[1].any_of == ("postgresql", "postgres")
    assert t2.answer.evidence[0].source == "decisions/adr-007.md"
    assert tasks.get("t1").answer.must_include == (("PostgreSQL", "Postgres"),)


def test_round_trip_through_to_dict(tmp_path: Path) -> None:
    original = [make_task(), make_task("t2", question_type="temporal", as_of="2024-07-15",
                                        metadata={"split": "dev"}, notes="n")]
    tasks = load_tasks(write(tmp_path, original))
    assert tasks.to_dict() == {"version": 1, "tasks": original}


def test_unknown_task_field_is_refused(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t3", difficulty="hard")])
    assert message.startswith("task 't3': field 'difficulty' is not allowed")


def test_unknown_answer_field_is_refused(tmp_path: Path) -> None:
    task = make_task("t4")
    task["answer"]["label"] = "rejected"
    assert load_error(tmp_path, [task]).startswith("task 't4': field 'answer.label' is not allowed")


def test_missing_as_of_for_temporal(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t3", question_type="temporal")])
    assert message == "task 't3': field 'as_of' is required for question_type 'temporal'"


def test_missing_as_of_for_obligations(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t5", question_type="obligations")])
    assert message == "task 't5': field 'as_of' is required for question_type 'obligations'"


def test_query_about_today_needs_as_of(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t6", query="What runs in production today?")])
    assert message == "task 't6': field 'as_of' is required because the query says 'today'"


def test_bad_question_type(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t7", question_type="trivia")])
    assert message.startswith("task 't7': field 'question_type' must be one of locate,")
    assert "'trivia'" in message


def test_duplicate_id(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("dup"), make_task("ok"), make_task("dup")])
    assert message.startswith("task 'dup': field 'id' duplicates task #0")


@pytest.mark.parametrize("bad", ["2024-02-30", "15/07/2024", "20240715", "today", 20240715])
def test_bad_date(tmp_path: Path, bad: Any) -> None:
    message = load_error(tmp_path, [make_task("t8", question_type="temporal", as_of=bad)])
    assert message.startswith("task 't8': field 'as_of' ")
    assert repr(bad) in message


def test_missing_required_field(tmp_path: Path) -> None:
    task = make_task("t9")
    del task["expected_sources"]
    assert load_error(tmp_path, [task]) == "task 't9': field 'expected_sources' is required"


def test_task_without_id_is_named_by_position(tmp_path: Path) -> None:
    task = make_task()
    del task["id"]
    message = load_error(tmp_path, [make_task("a"), task])
    assert message.startswith("task #1: field 'id' is required")


def test_answerable_task_needs_expected_sources(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t10", expected_sources=[])])
    assert message.startswith("task 't10': field 'expected_sources' may be empty only when")


def test_abstain_and_evidenced_negative_conflict(tmp_path: Path) -> None:
    task = make_task("t11")
    task["answer"].update(abstain=True, evidenced_negative=True)
    message = load_error(tmp_path, [task])
    assert message.startswith("task 't11': field 'answer.evidenced_negative' cannot be true")


def test_downstream_needs_artifact_checks(tmp_path: Path) -> None:
    message = load_error(tmp_path, [make_task("t12", question_type="downstream")])
    assert message == (
        "task 't12': field 'answer.artifact_checks' is required for question_type 'downstream'"
    )


def test_bad_artifact_check(tmp_path: Path) -> None:
    task = make_task("t13")
    task["answer"]["artifact_checks"] = [{"check": "key_equals", "format": "ini", "key": "a",
                                          "any_of": ["x"]}]
    message = load_error(tmp_path, [task])
    assert message.startswith("task 't13': field 'answer.artifact_checks[0].format' must be one of")

    task["answer"]["artifact_checks"] = [{"check": "matches", "pattern": "(unclosed"}]
    message = load_error(tmp_path, [task])
    assert message.startswith(
        "task 't13': field 'answer.artifact_checks[0].pattern' is not a valid regular expression"
    )

    task["answer"]["artifact_checks"] = [{"check": "parses", "format": "json", "key": "a"}]
    message = load_error(tmp_path, [task])
    assert message.startswith("task 't13': field 'answer.artifact_checks[0].key' is not allowed")


def test_evidence_must_come_from_expected_sources(tmp_path: Path) -> None:
    task = make_task("t14")
    task["answer"]["evidence"] = [{"source": "sessions/session-001.md", "quote": "x"}]
    message = load_error(tmp_path, [task])
    assert message.startswith("task 't14': field 'answer.evidence[0].source' must be one of")


def test_must_include_group_must_be_a_list(tmp_path: Path) -> None:
    task = make_task("t15")
    task["answer"]["must_include"] = ["PostgreSQL"]
    message = load_error(tmp_path, [task])
    assert message.startswith("task 't15': field 'answer.must_include[0]' must be a non-empty list")


def test_file_level_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(TaskFileError, match="not valid JSON"):
        load_tasks(path)
    with pytest.raises(TaskFileError, match=r"field 'version' must be one of \[1, 2\]"):
        load_tasks(write(tmp_path, [make_task()], version=3))
    with pytest.raises(TaskFileError, match="unknown top-level field 'extra'"):
        load_tasks(write(tmp_path, [make_task()], extra=True))
    with pytest.raises(TaskFileError, match="cannot read task file"):
        load_tasks(tmp_path / "absent.json")


def test_errors_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        load_tasks(write(tmp_path, [make_task("t", question_type="nope")]))


def test_find_evidence_mismatches(tmp_path: Path) -> None:
    corpus = tmp_path / "history"
    (corpus / "decisions").mkdir(parents=True)
    (corpus / "decisions" / "adr-007.md").write_text(
        "New services use PostgreSQL for events.", encoding="utf-8"
    )
    good = make_task("good")
    good["answer"]["evidence"] = [{"source": "decisions/adr-007.md", "quote": "use PostgreSQL"}]
    bad = copy.deepcopy(good)
    bad["id"] = "bad"
    bad["answer"]["evidence"][0]["quote"] = "use SQLite"
    missing = make_task("missing", expected_sources=["decisions/adr-099.md"])
    tasks = load_tasks(write(tmp_path, [good, bad, missing]))
    problems = find_evidence_mismatches(tasks, corpus)
    assert problems == [
        "task 'bad': field 'answer.evidence[0]' quote is not in 'decisions/adr-007.md'",
        f"task 'missing': expected source 'decisions/adr-099.md' not in {corpus}",
    ]
