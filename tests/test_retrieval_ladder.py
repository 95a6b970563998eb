"""The retrieval-level ladder's summary: pooled and per corpus, best on test tasks only, paired steps."""

from __future__ import annotations

import json

from memory_lab.ladders.retrieval import summarise


def _case(task: str, condition: str, split: str, candidates: float, admitted: float, kind: str = "locate"):
    return {"task_id": task, "condition": condition, "split": split, "question_type": kind,
            "context_source": "retrieval",
            "score": {"stage_metrics": {"candidates": {"recall": candidates},
                                        "admitted": {"recall": admitted}}}}


def _run(tmp_path, name, cases):
    run = tmp_path / name
    run.mkdir()
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return run


def test_summary_pools_corpora_keeps_best_to_test_tasks_and_pairs_rungs(tmp_path):
    # Task ids repeat across corpora: the summary must keep them apart.
    first = _run(tmp_path, "a", [_case("t1", "lexical", "dev", 1, 0), _case("t1", "hybrid", "dev", 1, 1),
                                 _case("t1", "best", "dev", 1, 1), _case("t2", "lexical", "test", 0, 0),
                                 _case("t2", "hybrid", "test", 1, 1), _case("t2", "best", "test", 1, 0)])
    second = _run(tmp_path, "b", [_case("t1", "lexical", "test", 1, 1), _case("t1", "hybrid", "test", 1, 1),
                                  _case("t1", "best", "test", 1, 1)])
    study = tmp_path / "study"
    study.mkdir()
    (study / "manifest.json").write_text(json.dumps({"runs": [
        {"corpus": "a", "run_dir": str(first)}, {"corpus": "b", "run_dir": str(second)}]}), encoding="utf-8")

    document = summarise(study)
    assert document["tasks"] == 3 and document["tasks_per_corpus"] == {"a": 2, "b": 1}
    rows = {(r["corpus"], r["question_type"], r["condition"]): r for r in document["table"]}
    assert rows[("all", "all", "hybrid")]["recall_at_admitted"]["mean"] == 1.0
    assert rows[("all", "all", "lexical")]["recall_at_admitted"]["mean"] == round(1 / 3, 4)
    best = rows[("all", "all", "best")]
    assert best["tasks"] == 2 and best["recall_at_admitted"]["mean"] == 0.5  # a/t1 is dev: left out
    key = ("all", "hybrid", "lexical", "admitted")
    step = next(p for p in document["paired"] if (p["corpus"], p["upper"], p["lower"], p["stage"]) == key)
    assert step["tasks"] == 3 and abs(step["difference"] - 2 / 3) < 1e-4
