"""The grader against every labelled set at once: the tuning set, the probes, the held-out answers.

The tuning set (`fixtures/grader/tuning/answers.json`) spans three corpora and five
task files; each item names its task file, and this module finds the corpus that
file's sources are read from: the fixture's `fixtures/history`, a generated world's
`history/` beside its task file, and the PEP snapshot outside the repository
(`../shared/data/peps/corpus`) with the dated versions the temporal PEP tasks expect
(`pep-0572.rst@8846efd62353`) read from a git mirror of python/peps
(`memory_lab.corpora.peps.read_version`).

    memory-lab study grader-tuning [--out FILE] [--mirror DIR]

writes one document: agreement, false-pass and false-fail rates with their 95%
intervals, per question type, answer-source family and phenomenon, and the
misjudged items, for each set (default `benchmarks/results/grader-tuning.json`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from memory_instrument.grader_version import GRADER_VERSION
from memory_instrument.tasks import TaskSet, load_tasks
from memory_instrument.validation import (
    LabelledAnswer,
    load_labelled_answers,
    load_probes,
    validate_grader,
)
from memory_lab.book.paths import project_root
from memory_lab.ladders.rescore import check_heldout

TUNING = Path("fixtures/grader/tuning/answers.json")
PEP_SNAPSHOT = Path("../shared/data/peps/corpus")
PEP_MIRROR = Path("/work/.mirror/python+peps/repo")


def source_reader(repo: Path, corpus: str, task_file: str,
                  mirror: Path = PEP_MIRROR) -> Callable[[str], str]:
    """The text of a source id of `corpus`, as the reader of a run on it saw the whole file."""
    if corpus == "fixture":
        root = repo / "fixtures" / "history"
    elif corpus == "peps":
        root = (repo / PEP_SNAPSHOT).resolve()
    else:  # a generated world: its history/ sits beside its task file
        root = (repo / task_file).parent / "history"

    @cache
    def read(source: str) -> str:
        path = root / source
        if path.is_file():
            return path.read_text(encoding="utf-8")
        if "@" in source:  # a past version, `path@sha12`, of a file of the snapshot
            from memory_lab.corpora.peps import read_version

            return read_version(mirror, source).text
        raise FileNotFoundError(f"source {source!r} of corpus {corpus} is not in {root}")

    return read


def validate_labelled_set(repo: Path, path: Path, mirror: Path = PEP_MIRROR) -> dict[str, Any]:
    """Validate the grader on a labelled-answer set whose items name their task files."""
    answers: list[LabelledAnswer] = load_labelled_answers(path)
    files = sorted({a.task_file for a in answers if a.task_file})
    tasks: dict[str, TaskSet] = {name: load_tasks(repo / name) for name in files}
    corpora = {name: source_reader(repo, next(a.corpus for a in answers if a.task_file == name)
                                   or "fixture", name, mirror) for name in files}
    validation = validate_grader(answers, tasks, corpora).to_dict()
    return {"file": path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path),
            "task_files": files, **validation}


def grader_tuning(repo: Path, mirror: Path = PEP_MIRROR) -> dict[str, Any]:
    """The tuning set, the probes and the held-out answers under the current grader."""
    probes = validate_grader(load_probes(repo / "fixtures/grader/probes.json"),
                             load_tasks(repo / "fixtures/tasks.json"),
                             repo / "fixtures/history").to_dict()
    return {
        "grader_version": GRADER_VERSION,
        "tuning": validate_labelled_set(repo, repo / TUNING, mirror),
        "probes": {"file": "fixtures/grader/probes.json", **probes},
        "heldout": check_heldout(repo),
    }


def summary(document: dict[str, Any], path: str) -> dict[str, Any]:
    """The overall and per-family figures of a grader-tuning document, for comparison."""
    return {"file": path, "grader_version": document["grader_version"],
            **{name: {"overall": document[name]["overall"],
                      **({"by_source": document[name]["by_source"]}
                         if "by_source" in document[name] else {})}
               for name in ("tuning", "probes", "heldout")}}


def summary_line(name: str, table: dict[str, Any]) -> str:
    def pct(key: str) -> str:
        value, ci = table[key], table.get(f"{key}_ci")
        return f"{value:.1%} [{ci[0]:.1%}, {ci[1]:.1%}]" if value is not None and ci else "-"
    return (f"{name}: {table['probes']} labelled, agreement {pct('agreement')}, "
            f"false-pass {pct('false_pass_rate')}, false-fail {pct('false_fail_rate')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory-lab study grader-tuning", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/grader-tuning.json")
    parser.add_argument("--mirror", default=str(PEP_MIRROR),
                        help="a git mirror of python/peps, for the dated PEP versions")
    parser.add_argument("--before", default="benchmarks/results/grader-tuning-before.json",
                        help="an earlier grader's document, whose summary is kept beside")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    repo = project_root()
    document = grader_tuning(repo, Path(args.mirror))
    before = repo / args.before
    if before.is_file() and before != repo / args.out:
        document["before"] = summary(json.loads(before.read_text(encoding="utf-8")),
                                     args.before)
    out = Path(args.out) if Path(args.out).is_absolute() else repo / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name in ("tuning", "probes", "heldout"):
        print(summary_line(name, document[name]["overall"]))
    for family, table in document["tuning"]["by_source"].items():
        print("  " + summary_line(family, table))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
