"""Re-score every committed run with the current grader, from the answers its cases recorded.

A case record keeps the full `SystemOutput` (answer, abstention flag, admitted
passages, citations, what the reader reported about unknown citations), so a
changed grader can be applied to old runs without running a model again. The
task each case is scored against is the current one: the fixture's
`fixtures/tasks.json` for runs on the fixture, and for runs on a generated
world the world regenerated from the parameters in its folder name (the
generator is deterministic; the regenerated corpus digest must equal the one
the run's manifest recorded, or the run is reported as not re-scorable).

Nothing in a run directory is modified: the result is one document, old and
new pass rates per run and condition and every case whose verdict changed
(`benchmarks/results/rescore.json`).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memory_instrument.grader_version import GRADER_VERSION
from memory_instrument.outputs import SystemOutput
from memory_instrument.scoring import score_task
from memory_instrument.tasks import TaskSet, load_tasks
from memory_instrument.world import WorldParams, generate_world
from memory_lab.ladders.evaluation import corpus_digest

_WORLD_NAME = re.compile(r"world-s(\d+)-d(\d+)-l(\d+)")
ANSWER_EXCERPT_CHARS = 240


class RescoreError(ValueError):
    """A run cannot be re-scored (no tasks for its corpus, a case without its output)."""


def committed_case_files(repo: Path) -> list[Path]:
    """Every `cases.jsonl` git tracks in `repo` (published runs and any committed run dirs)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", "*cases.jsonl"], cwd=repo,
                            capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        raise RescoreError(f"{repo} is not a git checkout: {listed.stderr.strip()}")
    return sorted(repo / name for name in listed.stdout.split("\0") if name)


class _TaskSource:
    """Current tasks and corpus for each corpus a run was made on; worlds built once each."""

    def __init__(self, repo: Path, scratch: Path) -> None:
        self.repo, self.scratch = repo, scratch
        self.fixture = load_tasks(repo / "fixtures" / "tasks.json")
        self.worlds: dict[str, tuple[TaskSet, str]] = {}

    def for_manifest(self, manifest: dict[str, Any]) -> tuple[TaskSet, str]:
        corpus = manifest.get("corpus", {})
        path = str(corpus.get("path", ""))
        if path.rstrip("/").endswith("fixtures/history"):
            return self.fixture, "fixtures/tasks.json"
        match = _WORLD_NAME.search(path)
        if not match:
            # A committed task file of this repository (e.g. fixtures/peps/tasks.json).
            # Manifests record absolute paths, so the file is found by its in-repository part.
            named = str(manifest.get("tasks", {}).get("path", ""))
            if "fixtures/" in named:
                relative = named[named.index("fixtures/"):]
                if (self.repo / relative).is_file():
                    return load_tasks(self.repo / relative), relative
            raise RescoreError(f"no current tasks for corpus {path!r}")
        name = match.group(0)
        if name not in self.worlds:
            seed, docs, long_share = (int(g) for g in match.groups())
            root = self.scratch / name
            generate_world(WorldParams(seed=seed, docs=docs,
                                       long_session_share=long_share / 100), root)
            if corpus.get("digest") and corpus_digest(root / "history") != corpus["digest"]:
                raise RescoreError(f"regenerated {name} differs from the run's corpus "
                                   "(the generator changed its text); cannot re-score")
            self.worlds[name] = (load_tasks(root / "tasks.json"), f"{name} (regenerated)")
        return self.worlds[name]


def _read_cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _rate(passed: int, total: int) -> float | None:
    return passed / total if total else None


def rescore_run(cases_path: Path, tasks: TaskSet) -> dict[str, Any]:
    """Old and new verdicts for every case of one run."""
    per_condition: dict[str, dict[str, int]] = {}
    changed: list[dict[str, Any]] = []
    old_versions: set[str] = set()
    for record in _read_cases(cases_path):
        if "output" not in record or "score" not in record:
            raise RescoreError(f"{cases_path}: a case of task {record.get('task_id')!r} has no "
                               "recorded output or score")
        task = tasks.get(record["task_id"])
        new = score_task(task, SystemOutput.from_dict(record["output"]))
        old = record["score"]
        old_versions.add(str(old.get("grader_version")))
        counts = per_condition.setdefault(record["condition"], {"cases": 0, "old": 0, "new": 0})
        counts["cases"] += 1
        counts["old"] += bool(old["passed"])
        counts["new"] += new.passed
        if bool(old["passed"]) != new.passed or old["outcome"] != new.outcome:
            changed.append({
                "task_id": task.id, "question_type": task.question_type,
                "condition": record["condition"],
                "old_passed": bool(old["passed"]), "new_passed": new.passed,
                "old_outcome": old["outcome"], "new_outcome": new.outcome,
                "why": _why(new),
                "answer": record["output"]["answer"][:ANSWER_EXCERPT_CHARS],
            })
    conditions = {
        name: {**c, "old_pass_rate": _rate(c["old"], c["cases"]),
               "new_pass_rate": _rate(c["new"], c["cases"])}
        for name, c in per_condition.items()
    }
    total = {key: sum(c[key] for c in per_condition.values()) for key in ("cases", "old", "new")}
    return {
        "old_grader_versions": sorted(old_versions),
        "cases": total["cases"],
        "old_passed": total["old"], "new_passed": total["new"],
        "old_pass_rate": _rate(total["old"], total["cases"]),
        "new_pass_rate": _rate(total["new"], total["cases"]),
        "verdicts_changed": sum(c["old_passed"] != c["new_passed"] for c in changed),
        "conditions": conditions,
        "changed": changed,
    }


def _why(score: Any) -> str:
    """One line on what decided the new verdict."""
    parts: list[str] = []
    if score.unmatched_groups:
        parts.append(f"unmatched {[list(g) for g in score.unmatched_groups]}")
    if score.must_not_include_hits:
        parts.append(f"forbidden {list(score.must_not_include_hits)}")
    parts += [f"{c.check.get('expect')}: {c.reason}" for c in score.typed_checks if not c.passed]
    if score.decisive_claim_supported is False:
        parts.append("no decisive claim cites a supporting expected source")
    if score.abstention_signal:
        parts.append(f"abstention ({score.abstention_signal})")
    return "; ".join(parts) or "all checks pass"


def rescore_all(repo: Path, case_files: Iterable[Path] | None = None) -> dict[str, Any]:
    """Re-score every committed run; the document `benchmarks/results/rescore.json` holds."""
    files = list(case_files) if case_files is not None else committed_case_files(repo)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rescore-worlds-") as scratch:
        source = _TaskSource(repo, Path(scratch))
        for cases_path in files:
            manifest = json.loads((cases_path.parent / "manifest.json").read_text(encoding="utf-8"))
            entry: dict[str, Any] = {"run": cases_path.parent.relative_to(repo).as_posix()}
            try:
                tasks, tasks_from = source.for_manifest(manifest)
                entry |= {"tasks": tasks_from, **rescore_run(cases_path, tasks)}
            except (RescoreError, KeyError) as exc:
                entry["not_rescored"] = str(exc)
            runs.append(entry)
    scored = [r for r in runs if "cases" in r]
    cases = sum(r["cases"] for r in scored)
    old = sum(r["old_passed"] for r in scored)
    new = sum(r["new_passed"] for r in scored)
    return {
        "grader_version": GRADER_VERSION,
        "runs_rescored": len(scored), "runs_not_rescored": len(runs) - len(scored),
        "cases": cases, "old_passed": old, "new_passed": new,
        "old_pass_rate": _rate(old, cases), "new_pass_rate": _rate(new, cases),
        "verdicts_changed": sum(r["verdicts_changed"] for r in scored),
        "runs": runs,
    }


def write_rescore(repo: Path, out: Path | None = None) -> Path:
    target = out or repo / "benchmarks" / "results" / "rescore.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(rescore_all(repo), indent=1, ensure_ascii=False) + "\n",
                      encoding="utf-8")
    return target


def check_heldout(repo: Path) -> dict[str, Any]:
    """The grader against the held-out labels on real recorded answers
    (`fixtures/grader/heldout.json`): the same confusion counts as the probes."""
    from memory_instrument.validation import Confusion

    document = json.loads((repo / "fixtures" / "grader" / "heldout.json").read_text(encoding="utf-8"))
    tasks = load_tasks(repo / "fixtures" / "tasks.json")
    records: dict[tuple[str, str, str], dict[str, Any]] = {}
    for entry in document["cases"]:
        run = entry["run"]
        if not any(key[0] == run for key in records):
            for record in _read_cases(repo / run / "cases.jsonl"):
                records[(run, record["task_id"], record["condition"])] = record
    overall, recorded, by_type, misjudged = Confusion(), Confusion(), {}, []
    for entry in document["cases"]:
        record = records[(entry["run"], entry["task_id"], entry["condition"])]
        task = tasks.get(entry["task_id"])
        score = score_task(task, SystemOutput.from_dict(record["output"]))
        overall.add(entry["label"], score.passed)
        recorded.add(entry["label"], bool(record["score"]["passed"]))
        by_type.setdefault(task.question_type, Confusion()).add(entry["label"], score.passed)
        if score.passed != (entry["label"] == "pass"):
            misjudged.append({"id": entry["id"], "task_id": task.id, "label": entry["label"],
                              "grader": "pass" if score.passed else "fail",
                              "reason": entry["reason"], "why": _why(score),
                              "answer": record["output"]["answer"][:ANSWER_EXCERPT_CHARS]})
    return {"cases_file": "fixtures/grader/heldout.json", "overall": overall.to_dict(),
            "recorded_grader": {"versions": sorted({str(r["score"].get("grader_version"))
                                                    for r in records.values()}),
                                **recorded.to_dict()},
            "by_question_type": {k: v.to_dict() for k, v in sorted(by_type.items())},
            "misjudged": misjudged}


def write_grader_validation(repo: Path, out: Path | None = None) -> Path:
    """Score the labelled probes and claims; `benchmarks/results/grader-validation.json`."""
    from memory_instrument.judges import load_claims, measure_claim_checks
    from memory_instrument.validation import load_probes, validate_grader

    fixtures = repo / "fixtures"
    validation = validate_grader(load_probes(fixtures / "grader" / "probes.json"),
                                 load_tasks(fixtures / "tasks.json"), fixtures / "history")
    claims = measure_claim_checks(load_claims(fixtures / "grader" / "claims.json"),
                                  fixtures / "history")
    document = {
        "probes_file": "fixtures/grader/probes.json",
        **validation.to_dict(),
        "heldout": check_heldout(repo),
        "claim_support": {
            "claims_file": "fixtures/grader/claims.json",
            **{k: v for k, v in claims.items() if k != "rows"},
            "lexical_misjudged": [r["id"] for r in claims["rows"] if r["lexical"] != r["label"]],
            "model_judge": "not measured: no Ollama server here and the local reader was not "
                           "run (CPU budget); the lab measures one with judges.admit_judge",
        },
    }
    target = out or repo / "benchmarks" / "results" / "grader-validation.json"
    if target.is_file():  # the old grader's figures (memory_lab.ladders.grader_history) stay
        previous = json.loads(target.read_text(encoding="utf-8"))
        if "before" in previous:
            document["before"] = previous["before"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target
