"""The controlled-world generator: deterministic by seed, valid tasks, a ledger that holds."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from memory_instrument.harness import load_harness, run_harness
from memory_instrument.scoring import run_artifact_check
from memory_instrument.tasks import QUESTION_TYPES, find_evidence_mismatches, load_tasks
from memory_instrument.world import (
    WorldManifest,
    WorldParams,
    WorldParamsError,
    find_ledger_date_mismatches,
    find_unsupported_phrasings,
    generate_world,
    world_digest,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> WorldManifest:
    return generate_world(WorldParams(seed=7, docs=200), tmp_path_factory.mktemp("w") / "world")


def test_same_seed_gives_the_same_bytes(tmp_path: Path, world: WorldManifest) -> None:
    again = generate_world(WorldParams(seed=7, docs=200), tmp_path / "again")
    assert world_digest(again.root) == world_digest(world.root)


def test_different_seed_gives_a_different_world(tmp_path: Path, world: WorldManifest) -> None:
    other = generate_world(WorldParams(seed=8, docs=200), tmp_path / "other")
    assert world_digest(other.root) != world_digest(world.root)


def test_layout_and_document_count(world: WorldManifest) -> None:
    files = [p for p in world.history_dir.rglob("*") if p.is_file()]
    assert len(files) == world.documents == 200
    assert world.ledger_path.is_file() and world.tasks_path.is_file()
    # Nothing the scorer knows may sit inside the corpus.
    assert not (world.history_dir / "tasks.json").exists()
    assert not list(world.history_dir.rglob("LEDGER.md"))


def _check_world_tasks(world: WorldManifest) -> None:
    tasks = load_tasks(world.tasks_path)
    types = Counter(task.question_type for task in tasks)
    assert set(types) == set(QUESTION_TYPES)
    assert any(task.answer.abstain for task in tasks)
    assert any(task.answer.evidenced_negative for task in tasks)
    assert {task.metadata["split"] for task in tasks} == {"dev", "test"}
    assert find_evidence_mismatches(tasks, world.history_dir) == []
    assert find_unsupported_phrasings(tasks, world.history_dir) == []
    assert find_ledger_date_mismatches(world.ledger_path, world.history_dir) == []


def test_tasks_validate_and_are_grounded(world: WorldManifest) -> None:
    _check_world_tasks(world)
    tasks = load_tasks(world.tasks_path)
    assert len(tasks) <= WorldParams().max_tasks
    assert len({task.query for task in tasks}) > len(tasks) // 2


def test_abstentions_name_things_absent_from_the_history(world: WorldManifest) -> None:
    everything = "\n".join(
        p.read_text(encoding="utf-8").lower() for p in world.history_dir.rglob("*") if p.is_file()
    )
    abstentions = [task for task in load_tasks(world.tasks_path) if task.answer.abstain]
    assert abstentions
    for task in abstentions:
        for term in task.metadata["absent_terms"]:
            assert term not in everything, term


def test_downstream_checks_pass_current_work_and_fail_stale_work(world: WorldManifest) -> None:
    ledger = json.loads(world.ledger_json_path.read_text(encoding="utf-8"))
    by_adr = {d["adr"]: d for d in ledger["decisions"]}
    downstream = [t for t in load_tasks(world.tasks_path) if t.question_type == "downstream"]
    assert downstream
    for task in downstream:
        decision = by_adr[task.expected_sources[0]]
        key_check = next(c for c in task.answer.artifact_checks if c.check == "key_equals")
        section = key_check.key.split(".")[0]
        slug = re.sub(r"[^a-z0-9]+", "-", decision["to"].lower()).strip("-")
        good = f"{section}:\n  backend: {slug}\n"
        stale = f"{section}:\n  backend: {decision['from'].lower()}\n"
        assert all(run_artifact_check(c, good).passed for c in task.answer.artifact_checks)
        if decision["from"] != decision["to"]:
            assert not all(run_artifact_check(c, stale).passed for c in task.answer.artifact_checks)


def test_downstream_tasks_have_harnesses_that_pass_current_work_and_fail_stale_work(
    world: WorldManifest,
) -> None:
    downstream = [t for t in load_tasks(world.tasks_path) if t.question_type == "downstream"]
    assert downstream
    for task in downstream:
        assert task.answer.harness_dir == world.root.resolve() / "harnesses" / task.id
        harness = load_harness(task.answer.harness_dir)
        examples = harness.directory / "examples"
        good = run_harness(harness, (examples / "good.yaml").read_text(encoding="utf-8"))
        bad = run_harness(harness, (examples / "bad.yaml").read_text(encoding="utf-8"))
        assert good.passed, good.reason
        assert bad.status == "semantic_error", bad.reason
    assert not any(p.name == "harnesses" for p in world.history_dir.rglob("*"))


def test_long_sessions_keep_decision_far_from_rationale(tmp_path: Path) -> None:
    made = generate_world(WorldParams(seed=3, docs=120, long_session_share=1.0), tmp_path / "w")
    ledger = json.loads(made.ledger_json_path.read_text(encoding="utf-8"))
    checked = 0
    for decision in ledger["decisions"]:
        if decision["session"] is None:
            continue  # a superseding decision cites its report, not a session
        text = (made.history_dir / decision["session"]).read_text(encoding="utf-8")
        adr_number = Path(decision["adr"]).stem.split("-")[1]
        rationale = text.index(decision["report"])
        conclusion = text.index(f"ADR-{adr_number} records it")
        assert conclusion - rationale > 3_000
        checked += 1
    assert checked >= 1


def test_smallest_world_still_covers_every_question_type(tmp_path: Path) -> None:
    made = generate_world(WorldParams(seed=1, docs=20), tmp_path / "tiny")
    assert made.documents == 20
    _check_world_tasks(made)


def test_two_thousand_documents(tmp_path: Path) -> None:
    made = generate_world(WorldParams(seed=11, docs=2_000, distractor_share=0.7), tmp_path / "big")
    assert sum(1 for p in made.history_dir.rglob("*") if p.is_file()) == 2_000
    suffixes = {p.suffix for p in made.history_dir.rglob("*") if p.is_file()}
    assert {".md", ".txt", ".log", ".yaml", ".json", ".toml", ".py"} <= suffixes
    _check_world_tasks(made)


@pytest.mark.parametrize(
    "params",
    [
        WorldParams(docs=10),
        WorldParams(docs=100_001),
        WorldParams(docs=20, decisions=10),
        WorldParams(distractor_share=1.0),
        WorldParams(file_type_mix=(("docx", 1.0),)),
        WorldParams(supersessions=5, decisions=2),
    ],
)
def test_bad_parameters_are_refused(tmp_path: Path, params: WorldParams) -> None:
    with pytest.raises(WorldParamsError):
        generate_world(params, tmp_path / "refused")


def test_refuses_to_write_into_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(WorldParamsError):
        generate_world(WorldParams(docs=20), tmp_path)
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8") == "mine"
