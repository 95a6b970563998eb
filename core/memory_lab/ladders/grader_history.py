"""Score the labelled probes with the grader of an older commit, beside the current one.

The old instrument is exported from git into a scratch folder (with the current
`validation.py`, which only reads probes and calls `score_task`) and run in a
subprocess on that commit's own task file, so its verdicts are the ones it gave.
Writes the old confusion counts into `benchmarks/results/grader-validation.json`
under "before".

    memory-lab study grader-history [COMMIT]   # default f9aea96, the last instrument-1.0
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memory_lab.book.paths import project_root

REPO = project_root()
RESULT = REPO / "benchmarks" / "results" / "grader-validation.json"

_RUN = """
import json, sys
from memory_instrument.validation import load_probes, validate_grader
from memory_instrument.tasks import load_tasks
from memory_instrument.scoring import GRADER_VERSION
tasks = load_tasks(sys.argv[2])
# Probes of tasks the old task file did not have yet cannot be scored by the old grader.
probes = [p for p in load_probes(sys.argv[1]) if p.task_id in set(tasks.ids)]
v = validate_grader(probes, tasks, sys.argv[3]).to_dict()
v["grader_version"] = GRADER_VERSION
print(json.dumps(v))
"""


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout


def before_after(commit: str = "f9aea96") -> None:
    with tempfile.TemporaryDirectory() as scratch:
        package = Path(scratch) / "memory_instrument"
        package.mkdir()
        for name in _git("ls-tree", "--name-only", commit, "core/memory_instrument/").split():
            (package / Path(name).name).write_text(_git("show", f"{commit}:{name}"), encoding="utf-8")
        validation = (REPO / "core/memory_instrument/validation.py").read_text(encoding="utf-8")
        # The old Score has none of the new evidence fields; keep the verdicts only.
        validation = validation.replace('"grader_evidence": _evidence(score)', '"grader_evidence": {}')
        (package / "validation.py").write_text(validation, encoding="utf-8")
        tasks = Path(scratch) / "tasks.json"
        tasks.write_text(_git("show", f"{commit}:fixtures/tasks.json"), encoding="utf-8")
        out = subprocess.run(
            [sys.executable, "-c", _RUN, str(REPO / "fixtures/grader/probes.json"), str(tasks),
             str(REPO / "fixtures/history")],
            env={"PYTHONPATH": scratch}, capture_output=True, text=True, check=True).stdout
    before = json.loads(out)
    document = json.loads(RESULT.read_text(encoding="utf-8"))
    document["before"] = {"commit": commit, "grader_version": before["grader_version"],
                          "overall": before["overall"],
                          "by_question_type": before["by_question_type"],
                          "misjudged_ids": [m["id"] for m in before["misjudged"]]}
    RESULT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{before['grader_version']}: agreement {before['overall']['agreement']:.3f}, "
          f"false-pass rate {before['overall']['false_pass_rate']:.3f}")


def main(argv: list[str] | None = None) -> int:
    before_after(*(sys.argv[1:2] if argv is None else argv[:1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
