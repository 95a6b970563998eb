"""The reproduction record reads the clone's own book log and says whether the goal held."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory_lab.book.readme import reproduction as render_reproduction
from memory_lab.book.reproduction import ReproductionError, differing_outputs, record_from_clone, reproduce


def _clone_with_log(root: Path, answers: dict) -> Path:
    clone = root / "clone"
    (clone / "book" / "chapters").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    log = {"chapters": {"02_chunking": {"seconds": 120.4}, "01_ingest": {"seconds": 14.0}},
           "answers": answers, "build_seconds": 61.2,
           "vectors": {"from_cache": 6291, "by_layer": {"book/published/vector-cache": 6291}, "computed": 0}}
    (clone / "book" / "chapters" / "_execution.json").write_text(json.dumps(log), encoding="utf-8")
    return clone


def test_record_reads_the_book_log_and_judges_the_goal(tmp_path):
    clone = _clone_with_log(tmp_path, {"from_cache": 7, "by_layer": {"benchmarks/answer-cache": 7},
                                       "computed": 0, "refused": 0, "keys": ["k"]})
    record = record_from_clone(clone, book_seconds=1500.0, install_seconds=90.0, machine={"cpu_count": 2})
    assert record["within_goal"] is True
    assert list(record["chapters"]) == ["01_ingest", "02_chunking"]
    assert record["answers"] == {"from_cache": 7, "by_layer": {"benchmarks/answer-cache": 7},
                                 "computed": 0, "refused": 0}
    assert record["vectors"] == {"from_cache": 6291, "computed": 0}
    assert len(record["commit"]) == 40
    slow = record_from_clone(clone, book_seconds=1801.0, install_seconds=None, machine={"cpu_count": 2})
    assert slow["within_goal"] is False


def test_rendered_record_names_its_file_and_counts(tmp_path):
    clone = _clone_with_log(tmp_path, {"from_cache": 3, "by_layer": {"benchmarks/answer-cache": 3},
                                       "computed": 1, "refused": 0})
    record = record_from_clone(clone, book_seconds=600.0, install_seconds=60.0,
                               machine={"cpu_count": 2, "load_average": [0.5, 0.4, 0.3]})
    target = tmp_path / "repo" / "benchmarks" / "results" / "book-reproduction.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(record), encoding="utf-8")
    text = render_reproduction(tmp_path / "repo")
    assert "10.0 minutes" in text and "within the goal of 30" in text
    assert "3 from the committed caches" in text and "1 computed" in text
    assert "document vectors: 6291 from the vector caches, 0 computed" in text


def test_an_existing_clone_folder_is_refused(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(ReproductionError, match="exists"):
        reproduce(tmp_path, tmp_path / "taken")


def _chapter(folder: Path, table: str, timing: str) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    shown = nbformat.v4.new_code_cell("show()")
    shown.outputs = [nbformat.v4.new_output("display_data", data={"text/html": table})]
    timed = nbformat.v4.new_code_cell("time()", metadata={"tags": ["nbval-ignore-output"]})
    timed.outputs = [nbformat.v4.new_output("stream", text=timing)]
    notebook.cells = [shown, timed]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / "07_ladder.ipynb")


def test_outputs_are_compared_with_run_ids_and_timings_aside(tmp_path):
    _chapter(tmp_path / "published", "run 20261207T051740Z-3fb253: 13 of 47", "41 ms")
    _chapter(tmp_path / "same", "run 20261207T060000Z-aaaaaa: 13 of 47", "990 ms")
    _chapter(tmp_path / "changed", "run 20261207T060000Z-aaaaaa: 14 of 47", "41 ms")
    assert differing_outputs(tmp_path / "published", tmp_path / "same") == {"07_ladder": 0}
    assert differing_outputs(tmp_path / "published", tmp_path / "changed") == {"07_ladder": 1}
    assert differing_outputs(tmp_path / "published", tmp_path / "missing") == {"07_ladder": 1}
