"""The PEP slice with past versions: its task file, and an oracle that hands the reader the version.

The slice's own repository here is a real git repository built by the test (the
python/peps mirror is not on every machine); the task file check reads the
committed files only.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory_instrument import load_tasks
from memory_lab.corpora.peps import PepHistoryError, history_discovery, history_tasks, temporal_versions

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "fixtures" / "peps" / "tasks.json"
HISTORY_TASKS = REPO / "fixtures" / "peps" / "tasks-history.json"


def test_the_committed_history_task_file_is_derived_from_the_snapshot_tasks(tmp_path):
    derived = history_tasks(TASKS, tmp_path / "tasks-history.json")
    assert derived.read_text(encoding="utf-8") == HISTORY_TASKS.read_text(encoding="utf-8")
    before = {t.id: t for t in load_tasks(TASKS)}
    after = {t.id: t for t in load_tasks(HISTORY_TASKS)}
    versions = temporal_versions(before.values())
    assert set(after) == set(before) and len(versions) == 12
    for task_id, task in after.items():
        if task_id in versions:
            version, status = versions[task_id]
            assert task.expected_sources == (version,)
            assert [(e.source, e.quote) for e in task.answer.evidence] == [(version, f"Status: {status}")]
            assert status == task.metadata["status_then"]
        else:
            assert task == before[task_id]
    # PEP 484 lived in pep-0484.txt then: the version id is the path at that commit.
    assert versions["temporal-pep-484-2016"][0] == "pep-0484.txt@768662f9e8f4"


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin"}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture()
def slice_with_history(tmp_path):
    """A repository where PEP 9999 was Draft in 2019 (as .txt) and is Final today (as .rst)."""
    repo = tmp_path / "mirror"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "pep-9999.txt").write_text("PEP: 9999\nTitle: Example\nStatus: Draft\n\nBody.\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "draft", date="2019-03-01T12:00:00+00:00")
    draft = _git(repo, "rev-parse", "HEAD")[:12]
    _git(repo, "mv", "pep-9999.txt", "pep-9999.rst")
    (repo / "pep-9999.rst").write_text("PEP: 9999\nTitle: Example\nStatus: Final\n\nBody.\n")
    _git(repo, "commit", "-qam", "final", date="2022-03-01T12:00:00+00:00")
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "pep-9999.rst").write_text((repo / "pep-9999.rst").read_text())
    task = {"id": "temporal-pep-9999", "question_type": "temporal",
            "query": "What was the status of PEP 9999 on 2020-01-01?", "as_of": "2020-01-01",
            "expected_sources": ["pep-9999.rst"],
            "answer": {"must_include": [["Draft"]], "must_not_include": [], "abstain": False,
                       "evidenced_negative": False,
                       "evidence": [{"source": "pep-9999.rst", "quote": "Title: Example"}]},
            "notes": f"pep-9999.rst:2: Title: Example | history: pep-9999.txt@{draft}:3: Status: Draft",
            "metadata": {"split": "test", "status_then": "Draft"}}
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"version": 2, "tasks": [task]}))
    return repo, snapshot, tasks, f"pep-9999.txt@{draft}"


def test_the_oracle_hands_the_reader_the_version_the_question_turns_on(
        slice_with_history, conn, config, tmp_path):
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.ladders.reports import load_run

    repo, snapshot, tasks, version = slice_with_history
    observed = history_discovery(snapshot, repo, load_tasks(tasks))
    record = next(r for r in observed.sources if r.source_id == version)
    assert "Status: Draft" in record.text and record.artifact_time.year == 2019
    assert {r.source_id for r in observed.sources} == {"pep-9999.rst", version}

    derived = history_tasks(tasks, tmp_path / "tasks-history.json")
    run_dir = run_evaluation(conn, config.with_overrides(reader={"name": "extractive"}), derived,
                             snapshot, ["oracle-source"], runs_root=tmp_path / "runs",
                             progress=False, discovery=observed)
    manifest, cases = load_run(run_dir)
    assert cases[0]["stages"]["admitted"] == [version]
    assert manifest["corpus"]["observed_by"] == "folder+versions"
    assert manifest["corpus"]["observation"]["versions"] == [version]


def test_a_missing_mirror_or_version_is_a_clear_error(slice_with_history, tmp_path):
    repo, snapshot, tasks, _ = slice_with_history
    with pytest.raises(PepHistoryError, match="not a git repository"):
        history_discovery(snapshot, tmp_path / "nowhere", load_tasks(tasks))
    gone = json.loads(tasks.read_text())
    gone["tasks"][0]["notes"] = ("pep-9999.rst:2: Title: Example | "
                                 "history: pep-9999.txt@000000000000:3: Status: Draft")
    tasks.write_text(json.dumps(gone))
    with pytest.raises(PepHistoryError, match="failed in"):
        history_discovery(snapshot, repo, load_tasks(tasks))
