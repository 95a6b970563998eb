"""The command line shared by the resumable studies: `run [STUDY_DIR]` and `summarise STUDY_DIR`.

A study reads for hours, so `run` resumes the study directory it is given, and
`summarise` writes its results file whether or not it has finished; the README
and the book render from that file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def write_results(document: Mapping[str, Any], out: str | Path) -> Path:
    """Write a results document as indented JSON with a final newline."""
    target = Path(out)
    target.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return target


def summarise_to(make: Callable[[], dict[str, Any]], out: str | Path, *, failure: str,
                 done: Callable[[dict[str, Any]], str]) -> int:
    """Write the results document `make()` builds to `out`, or one line on stderr (exit 2) when
    its inputs are missing or are not what they claim; `done` says what was written."""
    try:
        document = make()
    except (FileNotFoundError, KeyError, ValueError, json.JSONDecodeError) as exc:
        print(f"error: {failure} ({exc})", file=sys.stderr)
        return 2
    write_results(document, out)
    print(done(document))
    return 0


def main(argv: list[str] | None, *, description: str, kind: str,
         run: Callable[[str | None], Path], summarise: Callable[[str], dict[str, Any]],
         default_out: str) -> int:
    """Parse `argv`, then run (or resume) the study or write its results file."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help=f"read (or resume) the {kind}")
    go.add_argument("study_dir", nargs="?")
    report = sub.add_parser("summarise", help="write the results file of a study (finished or not)")
    report.add_argument("study_dir")
    report.add_argument("--out", default=default_out)
    args = parser.parse_args(argv)
    if args.command == "run":
        print(run(args.study_dir))
        return 0
    return summarise_to(lambda: summarise(args.study_dir), args.out,
                        failure=f"cannot summarise {args.study_dir} as the {kind}",
                        done=lambda document: f"{document['tasks']} tasks -> {args.out}")


def standard_corpora(world_seeds: Sequence[int], world_docs: int,
                     worlds_root: str | Path = "benchmarks/worlds") -> dict[str, tuple[Path, Path]]:
    """name -> (history folder, task file): the fixture, the PEPs and the generated worlds asked for.

    A world is generated on first use under `worlds_root` and reused after that.
    """
    from memory_lab.studies.setup import prepare_world, repo_path

    found = {"fixture": (repo_path("fixtures/history"), repo_path("fixtures/tasks.json")),
             "peps": (repo_path("../shared/data/peps/corpus"), repo_path("fixtures/peps/tasks.json"))}
    for seed in world_seeds:
        world = prepare_world(worlds_root, seed=seed, docs=world_docs)
        found[f"world_s{seed}"] = (world.history, world.tasks_path)
    return found


def open_study(study_dir: str | Path | None, runs_root: str | Path, kind: str,
               parameters: Mapping[str, Any], found: Mapping[str, tuple[Path, Path]]) -> Any:
    """A new study of `kind` over the corpora `found` (recorded with `parameters`), or the one
    in `study_dir` to resume."""
    from memory_lab.studies.setup import StudyRun, display_path, repo_path, start_study

    if study_dir is not None:
        run_dir = repo_path(study_dir)
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        return StudyRun(kind, run_dir, manifest)
    return start_study(runs_root, kind,
                       {**parameters, "corpora": {n: {"history": display_path(h), "tasks": display_path(t)}
                                                  for n, (h, t) in found.items()}},
                       corpora={n: h for n, (h, _) in found.items()})


def study_cases(study_dir: str | Path, *, include_running: bool = True) -> list[dict[str, Any]]:
    """Every case of the study with its task keyed `corpus/task` (unfinished runs too, if asked).

    A slot folder is named after its corpus, optionally with a phase after a dot
    (`fixture.full-history`); finished runs are the ones the manifest lists."""
    from memory_lab.chapters.peps import read_cases
    from memory_lab.studies.setup import repo_path

    study_dir = repo_path(study_dir)
    manifest = json.loads((study_dir / "manifest.json").read_text(encoding="utf-8"))
    entries = [(e["corpus"], repo_path(e["run_dir"])) for e in manifest.get("runs", [])]
    if include_running:
        done = {path for _, path in entries}
        for slot in sorted((study_dir / "runs").glob("*")) if (study_dir / "runs").is_dir() else []:
            for run_dir in sorted(p.parent for p in slot.glob("*/cases.jsonl")):
                if run_dir not in done:
                    entries.append((slot.name.split(".")[0], run_dir))
    cases = []
    for corpus, run_dir in entries:
        for case in read_cases(run_dir):
            cases.append({**case, "corpus": corpus, "task_id": f"{corpus}/{case['task_id']}"})
    return cases
