"""The PEP task file: valid, split by its fixed rule, and every cited line is where it says.

The corpus lives outside the repository (`../shared/data/peps/corpus`, see
fixtures/peps/README.md); without it the citation checks are skipped, the schema
and split checks are not.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from memory_instrument import load_tasks

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "fixtures" / "peps" / "tasks.json"
CORPUS = REPO.parent / "shared" / "data" / "peps" / "corpus"  # ../shared beside the project
MIRROR = Path("/work/.mirror/python+peps/repo")
CITATION = re.compile(r"(pep-[\w/.-]+?\.rst):(\d+): (.+?)(?= \| |$)")
HISTORY = re.compile(r"([\w/.-]+\.(?:rst|txt))@([0-9a-f]{12}):(\d+): (Status: \w+)")


def split_rule(task_id: str) -> str:
    digest = hashlib.sha256(f"peps-split-1:{task_id}".encode()).hexdigest()
    return "dev" if int(digest, 16) % 2 == 0 else "test"


def test_the_task_file_is_valid_and_split_by_its_rule():
    tasks = load_tasks(TASKS)
    assert len(tasks) >= 60
    assert {t.question_type for t in tasks} == {"locate", "outcome", "provenance", "temporal",
                                                "obligations", "downstream"}
    for task in tasks:
        assert task.metadata["split"] == split_rule(task.id), task.id
        assert task.notes and CITATION.search(task.notes), task.id


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the PEP corpus is not beside the project")
def test_every_cited_line_and_quote_is_in_the_corpus():
    for task in load_tasks(TASKS):
        for path, number, text in CITATION.findall(task.notes):
            lines = (CORPUS / path).read_text(encoding="utf-8").splitlines()
            assert lines[int(number) - 1].strip() == text, (task.id, path, number)
        for span in task.answer.evidence:
            assert span.quote in (CORPUS / span.source).read_text(encoding="utf-8"), task.id
        for source in task.expected_sources:
            assert (CORPUS / source).is_file(), (task.id, source)


@pytest.mark.skipif(not (MIRROR / "HEAD").exists(), reason="no git mirror of python/peps here")
def test_temporal_tasks_match_the_public_history():
    for task in load_tasks(TASKS):
        if task.question_type != "temporal":
            continue
        found = HISTORY.findall(task.notes)
        assert found, task.id
        path, sha, number, status = found[0]
        old = subprocess.run(["git", "-C", str(MIRROR), "show", f"{sha}:{path}"], check=True,
                             capture_output=True, text=True).stdout.splitlines()
        assert old[int(number) - 1] == status == f"Status: {task.metadata['status_then']}", task.id
        date = subprocess.run(["git", "-C", str(MIRROR), "show", "-s", "--format=%as", sha],
                              check=True, capture_output=True, text=True).stdout.strip()
        assert date <= task.as_of.isoformat(), task.id  # the version existed on the asked date
        for _, later, _, _ in found[1:2]:  # and the next status change came after it
            next_date = subprocess.run(["git", "-C", str(MIRROR), "show", "-s", "--format=%as", later],
                                       check=True, capture_output=True, text=True).stdout.strip()
            assert next_date > task.as_of.isoformat(), task.id
