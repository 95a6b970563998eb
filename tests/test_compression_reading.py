"""The compression reading's summary: both conditions paired on the same tasks, per corpus, with cost."""

from __future__ import annotations

import json

from memory_lab.ladders.compression import summarise


def _case(task, condition, passed, prompt, seconds, cached=False):
    return {"task_id": task, "condition": condition, "split": "dev", "question_type": "locate",
            "score": {"passed": passed}, "tokens": {"prompt": prompt, "completion": 9},
            "answer_calls": 1, "answer_seconds": seconds, "cache_hit": cached}


def test_summary_pairs_compressed_with_whole_files_per_corpus_and_counts_their_cost(tmp_path):
    study = tmp_path / "study"
    for corpus, rows in {"fixture": [("t1", True, True), ("t2", True, False), ("t3", False, False)],
                         "peps": [("t1", False, True)]}.items():
        run = study / "runs" / corpus / "r1"
        run.mkdir(parents=True)
        (run / "manifest.json").write_text("{}", encoding="utf-8")
        cases = []
        for task, whole, cut in rows:
            cases += [_case(task, "oracle-source", whole, 1000, 90.0, cached=True),
                      _case(task, "oracle-source-compressed", cut, 600, 50.0)]
        (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (study / "manifest.json").write_text(json.dumps({"status": "running", "runs": []}), encoding="utf-8")

    document = summarise(study)
    assert document["tasks"] == 4 and document["tasks_per_corpus"] == {"fixture": 3, "peps": 1}
    (step,) = document["paired"]["all"]
    assert (step["upper"], step["lower"], step["tasks"]) == ("oracle-source-compressed", "oracle-source", 4)
    assert (step["only_upper"], step["only_lower"]) == (1, 1) and not step["separated"]
    (fixture_step,) = document["paired"]["fixture"]
    assert (fixture_step["only_upper"], fixture_step["only_lower"]) == (0, 1)
    cost = {(c["condition"], c["corpus"]): c for c in document["cost"]}
    assert cost[("oracle-source-compressed", "all")]["prompt_tokens"] == 600.0
    assert cost[("oracle-source", "fixture")]["answers_from_cache"] == 3
    assert any("not separated" in line for line in document["reading"])
