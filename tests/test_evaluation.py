"""The evaluation harness end to end: real index, extractive reader, the real instrument."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURE_HISTORY, FIXTURE_TASKS

CONDITIONS = ["no-memory", "lexical", "dense", "hybrid", "oracle-span", "oracle-source",
              "full-history"]
RETRIEVAL_CONDITIONS = {"lexical", "dense", "hybrid"}


def _subset_task_file(path: Path) -> Path:
    """Two tasks of every question type plus one abstention, in a file outside the corpus."""
    from memory_instrument import load_tasks, write_task_file

    chosen, per_type = [], {}
    for task in load_tasks(FIXTURE_TASKS):
        kind = "abstain" if task.answer.abstain else task.question_type
        if per_type.get(kind, 0) < (1 if kind == "abstain" else 2):
            per_type[kind] = per_type.get(kind, 0) + 1
            chosen.append(task)
    return write_task_file(chosen, path)  # with the harnesses its downstream tasks name


@pytest.fixture(scope="module")
def harness(database_url, tmp_path_factory):
    """One evaluation run of the fixture, shared by the tests that only read it."""
    from memory_baseline.config import Config
    from memory_baseline.server import connect
    from memory_baseline.store import Store
    from memory_lab.ladders.evaluation import run_evaluation

    root = tmp_path_factory.mktemp("evaluation")
    config = Config(index=f"test_eval_{uuid.uuid4().hex[:8]}").with_overrides(
        reader={"name": "extractive"})
    tasks = _subset_task_file(root / "tasks.json")
    with connect(database_url) as conn:
        run_dir = run_evaluation(conn, config, tasks, FIXTURE_HISTORY, CONDITIONS,
                                 runs_root=root / "runs", progress=False)
        yield {"conn": conn, "config": config, "tasks": tasks, "run_dir": run_dir,
               "runs_root": root / "runs"}
        Store(conn, config.index).drop()


def test_run_directory_holds_manifest_cases_and_summary(harness):
    from memory_instrument import GRADER_VERSION, load_tasks
    from memory_lab.ladders.reports import load_run

    manifest, cases = load_run(harness["run_dir"])
    tasks = load_tasks(harness["tasks"])
    assert manifest["status"] == "complete" and manifest["finished"]
    assert manifest["grader_version"] == GRADER_VERSION
    assert manifest["code_version"]["package"]
    assert len(manifest["corpus"]["digest"]) == 64 and len(manifest["tasks"]["digest"]) == 64
    assert manifest["models"]["reader"]["name"] == "extractive"
    assert manifest["models"]["embedder"]["name"] == "minilm"
    assert manifest["machine"]["cpu_count"] >= 1 and manifest["code_version"]["dirty"] in (True, False)
    assert list(manifest["conditions"]) == CONDITIONS
    # Every condition is a distinct effective configuration (config + context source).
    identities = {json.dumps([c["context_source"], c["config"]], sort_keys=True)
                  for c in manifest["conditions"].values()}
    assert len(identities) == len(CONDITIONS)
    assert manifest["conditions"]["lexical"]["config"]["retrieval"]["dense"] is False
    assert manifest["conditions"]["dense"]["config"]["retrieval"]["lexical"] == "none"

    assert len(cases) == len(tasks) * len(CONDITIONS)
    assert {(c["task_id"], c["condition"]) for c in cases} == {
        (t.id, name) for t in tasks for name in CONDITIONS}
    for case in cases:
        assert case["score"]["grader_version"] == GRADER_VERSION
        assert case["tokens"]["prompt"] == case["usage"]["prompt_tokens"] > 0
        assert "total" in case["timings_ms"]

    with (harness["run_dir"] / "summary.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    all_rows = {r["condition"]: r for r in rows if r["question_type"] == "all"}
    assert set(all_rows) == set(CONDITIONS)
    for name, row in all_rows.items():
        mine = [c for c in cases if c["condition"] == name]
        assert int(row["n"]) == len(mine)
        assert int(row["passed"]) == sum(c["score"]["passed"] for c in mine)


def test_every_scorecard_cell_traces_to_case_records(harness):
    from memory_lab.ladders.reports import load_run, report

    _, cases = load_run(harness["run_dir"])
    scorecard = report(harness["run_dir"])
    assert scorecard.conditions == tuple(CONDITIONS)
    for (condition, qtype), cell in scorecard.cells.items():
        records = [c for c in cases if c["condition"] == condition
                   and (qtype == "all" or c["question_type"] == qtype)]
        assert sorted(cell.task_ids) == sorted(c["task_id"] for c in records)
        assert sorted(cell.passed_task_ids) == sorted(
            c["task_id"] for c in records if c["score"]["passed"])
        for label, ids in cell.outcome_task_ids.items():
            assert sorted(ids) == sorted(c["task_id"] for c in records
                                         if c["score"]["outcome"] == label)


def test_stage_names_mean_the_same_thing_in_every_condition(harness):
    from memory_baseline.retrieval import Retriever
    from memory_instrument import load_tasks
    from memory_lab.ladders.reports import load_run

    manifest, cases = load_run(harness["run_dir"])
    tasks = {t.id: t for t in load_tasks(harness["tasks"])}
    for case in cases:
        stages = case["stages"]
        ranked_admitted = [a["source_id"] for a in sorted(case["admitted"], key=lambda a: a["rank"])]
        # admitted = the sources the reader saw; cited = the answer's admitted citations.
        assert stages["admitted"] == list(dict.fromkeys(ranked_admitted))
        assert stages["cited"] == case["citations"]
        assert set(case["citations"]) <= set(stages["admitted"])
        assert "reranked" not in stages  # no reranker ran in any of these conditions
        if case["condition"] in RETRIEVAL_CONDITIONS:
            assert set(stages["admitted"]) <= set(stages["candidates"])
        else:
            assert "candidates" not in stages
        if case["condition"] == "no-memory":
            assert stages["admitted"] == [] and case["context"]["prompt_tokens"] > 0
        if case["condition"] == "oracle-source":
            assert set(stages["admitted"]) <= set(tasks[case["task_id"]].expected_sources)
        if case["condition"] == "oracle-span":
            task = tasks[case["task_id"]]
            texts = " ".join(p["text"] for p in case["output"]["admitted_passages"])
            assert all(span.quote in texts for span in task.answer.evidence)
        if case["condition"] == "full-history":
            reader = manifest["conditions"]["full-history"]["config"]["reader"]
            budget = reader["context_window"] - reader["max_answer_tokens"]
            assert case["context"]["token_budget"] == budget
            assert case["context"]["prompt_tokens"] <= budget
            seen = set(stages["admitted"]) | set(case["context"]["cut_sources"])
            assert seen == set(p.relative_to(FIXTURE_HISTORY).as_posix()
                               for p in FIXTURE_HISTORY.rglob("*") if p.is_file())

    # "candidates" is the fused list: re-running hybrid's retrieval gives the same sources.
    from memory_baseline.config import Config

    hybrid = Config.from_dict(manifest["conditions"]["hybrid"]["config"])
    case = next(c for c in cases if c["condition"] == "hybrid")
    fused = Retriever(harness["conn"], hybrid).retrieve(case["query"]).stage("fused")
    assert case["stages"]["candidates"] == fused.source_ids


def test_report_shows_downstream_gain_over_no_memory(harness):
    from memory_lab.ladders.reports import load_run, report_document, report_text

    _, cases = load_run(harness["run_dir"])
    downstream = {c["task_id"] for c in cases if c["question_type"] == "downstream"}
    document = report_document(harness["run_dir"])
    gains = document["downstream_gains"]
    assert {g["task_id"] for g in gains} == downstream
    assert {g["with_condition"] for g in gains} == set(CONDITIONS) - {"no-memory"}
    assert all(g["without_condition"] == "no-memory" for g in gains)
    assert document["full_history_input"]["token_budget"] > 0
    assert "Downstream tasks" in report_text(harness["run_dir"])
    table = document["downstream_by_condition"]
    assert table[0]["condition"] == "no-memory" and table[0]["gain"] == 0.0
    assert {row["condition"] for row in table} == set(CONDITIONS)
    assert all(row["tasks"] == len(downstream) for row in table)
    assert all(row["ci_low"] <= row["gain"] <= row["ci_high"] for row in table)
    assert "matched control (no-memory" in report_text(harness["run_dir"])
    json.dumps(document)  # the JSON report is serialisable as is


def test_new_run_gets_a_new_folder_and_resume_skips_done_cases(harness, tmp_path):
    from memory_lab.conditions import EvaluationError
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.ladders.reports import load_run

    conn, config, tasks = harness["conn"], harness["config"], harness["tasks"]
    first = run_evaluation(conn, config, tasks, FIXTURE_HISTORY, ["no-memory", "lexical"],
                           runs_root=harness["runs_root"], limit=3, progress=False)
    second = run_evaluation(conn, config, tasks, FIXTURE_HISTORY, ["no-memory", "lexical"],
                            runs_root=harness["runs_root"], limit=3, progress=False)
    assert first != second and first.is_dir() and second.is_dir()
    assert first.parent == second.parent == harness["runs_root"]
    assert harness["run_dir"].is_dir()  # the earlier run is untouched

    # Interrupt a copy of the main run: drop its last 3 records, leave a torn line behind.
    interrupted = tmp_path / "interrupted"
    shutil.copytree(harness["run_dir"], interrupted)
    lines = (interrupted / "cases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = len(lines) - 3
    (interrupted / "cases.jsonl").write_text("".join(lines[:kept]) + lines[kept][:40],
                                             encoding="utf-8")
    # A run started before a setting existed resumes: the missing setting is its default.
    older = json.loads((interrupted / "manifest.json").read_text(encoding="utf-8"))
    for document in older["conditions"].values():
        if not document["config"]["reader"]["prefix_cache"]:  # full-history's is not the default
            del document["config"]["reader"]["prefix_cache"]
    (interrupted / "manifest.json").write_text(json.dumps(older), encoding="utf-8")
    resumed = run_evaluation(conn, config, tasks, FIXTURE_HISTORY, CONDITIONS,
                             resume=interrupted, progress=False)
    assert resumed == interrupted
    manifest, cases = load_run(interrupted)
    after = (interrupted / "cases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert after[:kept] == lines[:kept]  # done cases were skipped, not redone
    redone = [(r["task_id"], r["condition"], r["answer"]) for r in map(json.loads, after[kept:])]
    assert redone == [(r["task_id"], r["condition"], r["answer"])
                      for r in map(json.loads, lines[kept:])]
    assert len(cases) == len(lines)
    assert len({(c["task_id"], c["condition"]) for c in cases}) == len(cases)
    assert manifest["status"] == "complete" and manifest["resumed"]

    changed = config.with_overrides(retrieval={"rrf_k": 7})
    with pytest.raises(EvaluationError, match="effective configuration of"):
        run_evaluation(conn, changed, tasks, FIXTURE_HISTORY, CONDITIONS, resume=interrupted,
                       progress=False)


def test_conditions_refuse_what_they_cannot_be(tmp_path, config):
    from memory_lab.conditions import LADDER as ALL
    from memory_lab.conditions import ConditionError, EvaluationError, condition_config, spec
    from memory_lab.ladders.evaluation import run_evaluation

    with pytest.raises(ConditionError, match="needs a real reranker"):
        condition_config("hybrid-reranked", config, reranker_name="none")
    reranked = condition_config("hybrid-reranked", config, reranker_name="llm-qwen-0.5b")
    assert reranked.rerank.name == "llm-qwen-0.5b"
    assert reranked != condition_config("hybrid", config)
    # A reranker in the base configuration never leaks into other conditions.
    assert condition_config("hybrid", config.with_overrides(rerank={"name": "x"})).rerank.name == "none"
    with pytest.raises(ConditionError, match="tuned settings"):
        condition_config("best", config)
    with pytest.raises(ConditionError, match="unknown condition"):
        condition_config("oracle", config)
    # full-history reads its shared sources once; its cold twin differs in nothing else.
    warm, cold = condition_config("full-history", config), condition_config("full-history-cold", config)
    assert warm.reader.prefix_cache and not cold.reader.prefix_cache
    assert warm.with_overrides(reader={"prefix_cache": False}) == cold
    assert not condition_config("oracle-source", config).reader.prefix_cache
    assert {spec(n).context_source for n in ALL} == {"retrieval", "none", "oracle-span",
                                               "oracle-source", "full-history"}

    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURE_HISTORY, corpus)
    shutil.copy(FIXTURE_TASKS, corpus / "tasks.json")
    with pytest.raises(EvaluationError, match="inside the corpus"):
        run_evaluation(None, config, corpus / "tasks.json", corpus, ["no-memory"],
                       runs_root=tmp_path / "runs", progress=False)
    assert not (tmp_path / "runs").exists()


def test_the_library_loads_no_lab_module():
    probe = ("import sys, memory_baseline, memory_baseline.baseline, memory_baseline.cli; "
             "print(sorted(m for m in sys.modules if m.startswith('memory_lab')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
    package = Path(__file__).resolve().parents[1] / "core" / "memory_baseline"
    for source in package.rglob("*.py"):
        for line in source.read_text(encoding="utf-8").splitlines():
            # The CLI's lab commands import the lab lazily, inside their handlers.
            if line.startswith(("import memory_lab", "from memory_lab")):
                raise AssertionError(f"{source.name} imports the lab at module level: {line}")


def test_instrument_never_imports_the_baseline():
    probe = ("import sys, memory_instrument, memory_instrument.world; "
             "print(sorted(m for m in sys.modules if m.startswith('memory_baseline')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"
    package = Path(__file__).resolve().parents[1] / "core" / "memory_instrument"
    for source in package.rglob("*.py"):
        assert "memory_baseline" not in source.read_text(encoding="utf-8"), source.name


def test_generated_world_evaluates_without_code_change(conn, config, tmp_path):
    from memory_instrument import load_tasks
    from memory_instrument.world import WorldParams, generate_world
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.ladders.reports import load_run

    world = generate_world(WorldParams(seed=3, docs=40), tmp_path / "world")
    config = config.with_overrides(reader={"name": "extractive"})
    conditions = ["no-memory", "hybrid", "best", "oracle-span", "oracle-source"]
    run_dir = run_evaluation(conn, config, world.tasks_path, world.history_dir, conditions,
                             runs_root=tmp_path / "runs", limit=8, progress=False)
    manifest, cases = load_run(run_dir)
    assert len(cases) == min(8, len(load_tasks(world.tasks_path))) * len(conditions)
    assert manifest["best"]["choice"]["retrieval"]["per_path_candidates"] in (20, 50)
    dev = {t.id for t in load_tasks(world.tasks_path) if t.metadata.get("split") == "dev"}
    assert set(manifest["best"]["dev_task_ids"]) <= dev  # tuned on dev tasks only
    assert all(c["score"]["outcome"] for c in cases)


def test_a_run_without_retrieval_never_touches_the_index(conn, config, tmp_path):
    from memory_baseline.store import Store
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.ladders.reports import load_run

    config = config.with_overrides(reader={"name": "extractive"})
    run_dir = run_evaluation(conn, config, _subset_task_file(tmp_path / "tasks.json"), FIXTURE_HISTORY,
                             ["no-memory", "oracle-source"], runs_root=tmp_path / "runs", progress=False)
    manifest, cases = load_run(run_dir)
    assert manifest["corpus"]["index_sync"] == "not needed: no condition retrieves"
    assert cases and not Store(conn, config.index).exists()


def test_a_test_only_condition_reads_the_test_tasks_and_resume_checks_it(conn, config, tmp_path):
    from memory_instrument import load_tasks
    from memory_lab.conditions import EvaluationError
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.ladders.reports import load_run

    config = config.with_overrides(reader={"name": "extractive"})
    tasks = _subset_task_file(tmp_path / "tasks.json")
    run_dir = run_evaluation(conn, config, tasks, FIXTURE_HISTORY, ["no-memory", "oracle-source"],
                             runs_root=tmp_path / "runs", progress=False, test_only=["oracle-source"])
    manifest, cases = load_run(run_dir)
    split = {t.id: t.metadata.get("split") for t in load_tasks(tasks)}
    oracle = {c["task_id"] for c in cases if c["condition"] == "oracle-source"}
    assert oracle == {t for t, s in split.items() if s == "test"} and 0 < len(oracle) < len(split)
    assert {c["task_id"] for c in cases if c["condition"] == "no-memory"} == set(split)
    assert manifest["test_only"] == ["oracle-source"]
    with pytest.raises(EvaluationError, match="test-only conditions"):
        run_evaluation(conn, config, tasks, FIXTURE_HISTORY, ["no-memory", "oracle-source"],
                       resume=run_dir, progress=False)
    with pytest.raises(EvaluationError, match="not in the run"):
        run_evaluation(conn, config, tasks, FIXTURE_HISTORY, ["no-memory"], runs_root=tmp_path / "runs",
                       progress=False, test_only=["best"])
