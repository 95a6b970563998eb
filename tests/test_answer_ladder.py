"""The answer-level ladder's summary: corpora kept apart, best on test only, unfinished runs read."""

from __future__ import annotations

import json

from memory_lab.ladders.answer import COLD_CHECK_TASKS, phases, summarise


def _case(task, condition, split, passed, kind="locate", prompt=100, seconds=2.0, cached=False):
    return {"task_id": task, "condition": condition, "split": split, "question_type": kind,
            "score": {"passed": passed}, "tokens": {"prompt": prompt, "completion": 5},
            "answer_calls": 1, "answer_seconds": seconds, "cache_hit": cached}


def _run(path, cases):
    path.mkdir(parents=True)
    (path / "manifest.json").write_text("{}", encoding="utf-8")
    (path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def test_phases_read_the_ladder_everywhere_before_full_history_then_its_cold_check():
    order = phases(["fixture", "peps"])
    assert [slot for slot, *_ in order] == ["fixture", "peps", "fixture.full-history",
                                             "fixture.full-history-cold"]
    assert order[2][2:] == (("full-history",), None)
    assert order[-1][2:] == (("full-history-cold",), COLD_CHECK_TASKS)


def test_the_cold_check_pairs_warm_and_cold_reads_and_stays_out_of_the_ladder(tmp_path):
    def read(task, condition, passed, answer, seconds, cached_tokens):
        return {**_case(task, condition, "dev", passed, seconds=seconds), "answer": answer,
                "reader_trace": {"cached_prompt_tokens": cached_tokens} if cached_tokens else {}}

    study = tmp_path / "study"
    _run(study / "runs" / "fixture.full-history" / "r1", [
        read("t1", "full-history", True, "A", 300.0, 0), read("t2", "full-history", True, "B", 20.0, 7000),
        read("t3", "full-history", False, "C", 22.0, 7000)])
    _run(study / "runs" / "fixture.full-history-cold" / "r1", [
        read("t1", "full-history-cold", True, "A", 290.0, 0),
        read("t2", "full-history-cold", False, "B'", 280.0, 0)])
    (study / "manifest.json").write_text(json.dumps({"status": "running", "runs": []}), encoding="utf-8")

    document = summarise(study)
    check = document["prefix_cache"]
    assert (check["tasks"], check["same_answer_text"], check["same_verdict"]) == (2, 1, 1)
    assert check["full-history"]["passed"] == 2 and check["full-history-cold"]["passed"] == 1
    assert check["full-history"]["median_seconds_per_answer"] == 160.0
    assert check["full-history"]["mean_cached_prompt_tokens"] == 3500.0
    assert [t["cached_prompt_tokens"] for t in check["per_task"]] == [0, 7000]
    rungs = {r["condition"] for r in document["rates"]["all"]}
    assert rungs == {"full-history"}  # the cold reads are a check, not a rung


def test_summary_keys_tasks_by_corpus_reports_best_on_test_and_reads_a_running_run(tmp_path):
    study = tmp_path / "study"
    first = _run(study / "runs" / "a" / "r1", [
        _case("t1", "no-memory", "dev", False), _case("t1", "hybrid", "dev", True),
        _case("t1", "best", "dev", True), _case("t2", "no-memory", "test", False),
        _case("t2", "hybrid", "test", True, cached=True), _case("t2", "best", "test", False)])
    # The same task id in another corpus, in a run the manifest does not list yet (still reading).
    _run(study / "runs" / "b" / "r1", [_case("t1", "no-memory", "test", True),
                                       _case("t1", "hybrid", "test", True, prompt=300, seconds=6.0)])
    (study / "manifest.json").write_text(json.dumps({"status": "running", "runs": [
        {"slot": "a", "corpus": "a", "run_dir": str(first)}]}), encoding="utf-8")

    document = summarise(study)
    assert document["tasks"] == 3 and document["tasks_per_corpus"] == {"a": 2, "b": 1}
    assert not document["complete"]
    pooled = {r["condition"]: r for r in document["rates"]["all"] if r["question_type"] == "all"}
    assert (pooled["hybrid"]["passed"], pooled["hybrid"]["cases"]) == (3, 3)
    assert (pooled["no-memory"]["passed"], pooled["no-memory"]["cases"]) == (1, 3)
    assert (pooled["best"]["passed"], pooled["best"]["cases"]) == (0, 1)  # a/t1 is dev: left out
    step = next(d for d in document["paired"]
                if (d["upper"], d["lower"], d["question_type"]) == ("hybrid", "no-memory", "all"))
    assert step["tasks"] == 3 and step["only_upper"] == 2 and step["only_lower"] == 0
    assert any("`hybrid` and `no-memory` are not separated" in line for line in document["reading"])
    assert document["stage_recall"] == []  # these cases carry no stage metrics
    cost = {(c["condition"], c["corpus"]): c for c in document["cost"]}
    assert cost[("hybrid", "all")]["max_prompt_tokens"] == 300
    assert cost[("hybrid", "all")]["answers_from_cache"] == 1
    assert cost[("hybrid", "b")]["seconds_per_answer"] == 6.0
