"""The PEP retrieval report: bootstrap intervals and the named-document check."""

from __future__ import annotations

import json

from memory_lab.chapters.peps import bootstrap_mean, main, named_document_check, summarise


def case(task_id, query, admitted, recall_candidates, recall_admitted, question_type="outcome"):
    return {
        "task_id": task_id, "question_type": question_type, "split": "dev", "condition": "hybrid",
        "context_source": "retrieval", "query": query,
        "admitted": [{"chunk_id": f"{s}#0", "source_id": s} for s in admitted],
        "score": {"stage_metrics": {"candidates": {"recall": recall_candidates},
                                    "admitted": {"recall": recall_admitted}}},
    }


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    values = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1]
    first, second = bootstrap_mean(values), bootstrap_mean(values)
    assert first == second and first["n"] == 10 and first["mean"] == 0.7
    assert first["low"] <= 0.7 <= first["high"] and first["high"] - first["low"] > 0.2
    assert bootstrap_mean([])["mean"] is None


def test_named_document_check_reads_the_first_admitted_source():
    good = named_document_check(case("a", "Was PEP 3103 accepted?", ["pep-3103.rst", "pep-0275.rst"], 1, 1))
    bad = named_document_check(case("b", "Was PEP 3103 accepted?", ["pep-0275.rst", "pep-3103.rst"], 1, 1))
    assert good["ok"] and not bad["ok"] and bad["first_admitted"] == "pep-0275.rst"
    assert named_document_check(case("c", "Where is the style guide?", ["pep-0008.rst"], 1, 1)) is None
    assert named_document_check(case("d", "release 2.13.0 notes", ["x.md"], 1, 1)) is None


def test_summary_and_cli(tmp_path):
    rows = [case("a", "Was PEP 3103 accepted?", ["pep-3103.rst"], 1.0, 1.0),
            case("b", "Where is the style guide?", ["pep-0257.rst"], 1.0, 0.0, "locate")]
    summary = summarise(rows)
    table = summary["conditions"]["hybrid"]
    assert table["all"]["all"]["recall_at_candidates"]["mean"] == 1.0
    assert table["dev"]["locate"]["recall_at_admitted"]["mean"] == 0.0
    assert summary["named_document_first"] == {"checked": 1, "failures": [], "holds": True}
    run = tmp_path / "run"
    run.mkdir()
    (run / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.json"
    assert main([str(run), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["named_document_first"]["holds"]
    assert main([str(tmp_path / "missing")]) == 2
