"""Reproduce the published book on a fresh clone and record what it took.

    memory-lab study reproduction [--clone DIR] [--out benchmarks/results/book-reproduction.json]

The README promises that its main command, on a fresh machine, rebuilds
the published book from the committed answers, computes none of them, and does
so in under 30 minutes on 2 cores. This checks it the way a newcomer would: the
committed HEAD is cloned into a new folder, installed there with
`scripts/install.sh` (timed apart: pip's downloads say nothing about the book),
and the README's main command is timed with a memory home of its own (its own
PostgreSQL cluster, model files and answer cache), so nothing this machine read
before is reused except what the repository commits. The record names the
commit, the machine and its load, the wall time, every chapter's seconds and
where the answers came from, and compares every chapter's outputs with the
published ones (`differing_outputs`: run ids aside, a table or text output that
is not the published one character for character; cells tagged
`nbval-ignore-output`, the timings, are left out, and so are figures, which
carry their run's id). The README renders it (`memory_lab.book.readme`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memory_lab.book.paths import project_root
from memory_lab.runs import machine_description

MAIN_COMMAND = (".venv/bin/memory-lab", "book", "--profile", "full")
DEFAULT_OUT = Path("benchmarks/results/book-reproduction.json")
GOAL_MINUTES = 30


class ReproductionError(RuntimeError):
    """The clone, the install or the book failed; the message names the step and its last lines."""


def _run(command: list[str], cwd: Path, env: dict[str, str] | None, log: Path) -> float:
    """Run `command` in `cwd` with its output appended to `log`; seconds taken."""
    started = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = " | ".join(log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:])
        raise ReproductionError(f"{' '.join(command)} exited {done.returncode} in {cwd}: {tail}")
    return seconds


_RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")


def _compared_outputs(notebook: Path) -> list[str]:
    """A chapter's outputs as text, run ids masked; timing cells (`nbval-ignore-output`) left out."""
    document = json.loads(notebook.read_text(encoding="utf-8"))
    texts = []
    for cell in document["cells"]:
        if cell["cell_type"] != "code" or "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            # Figures are stamped with their run's id, so they are compared through the tables
            # and text drawn from the same rows, not pixel by pixel.
            text = "".join(data.get("text/html") or data.get("text/markdown") or output.get("text", ""))
            texts.append(_RUN_ID.sub("RUN", text))
    return texts


def differing_outputs(published: Path, executed: Path) -> dict[str, int]:
    """Per published chapter: how many compared outputs of its executed copy differ (a missing
    chapter counts all of them)."""
    differing = {}
    for chapter in sorted(published.glob("[0-9][0-9]_*.ipynb")):
        expected = _compared_outputs(chapter)
        copy = executed / chapter.name
        got = _compared_outputs(copy) if copy.is_file() else []
        differing[chapter.stem] = (sum(a != b for a, b in zip(expected, got, strict=False))
                                   + abs(len(expected) - len(got)))
    return differing


def record_from_clone(clone: Path, *, book_seconds: float, install_seconds: float | None,
                      machine: dict[str, Any]) -> dict[str, Any]:
    """The record of one reproduction, from the clone's own book log (book/chapters/_execution.json)."""
    log = json.loads((clone / "book" / "chapters" / "_execution.json").read_text(encoding="utf-8"))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True,
                            check=True).stdout.strip()
    answers = log.get("answers") or {}
    return {"command": " ".join(MAIN_COMMAND), "commit": commit, "machine": machine,
            "install_seconds": None if install_seconds is None else round(install_seconds, 1),
            "book_seconds": round(book_seconds, 1), "goal_minutes": GOAL_MINUTES,
            "within_goal": book_seconds <= GOAL_MINUTES * 60,
            "build_seconds": log.get("build_seconds"),
            "chapters": {name: chapter["seconds"] for name, chapter in sorted(log["chapters"].items())},
            "answers": {"from_cache": answers.get("from_cache", 0), "by_layer": answers.get("by_layer", {}),
                        "computed": answers.get("computed", 0), "refused": answers.get("refused", 0)},
            "vectors": {k: (log.get("vectors") or {}).get(k, 0) for k in ("from_cache", "computed")},
            "differing_outputs": differing_outputs(clone / "book" / "published", clone / "book" / "chapters")}


def reproduce(repo: Path, clone: Path) -> dict[str, Any]:
    """Clone `repo`'s HEAD into `clone` (which must not exist), install, time the main command."""
    if clone.exists():
        raise ReproductionError(f"{clone} exists; the reproduction needs a new folder")
    clone.parent.mkdir(parents=True, exist_ok=True)
    log = clone.parent / f"{clone.name}.log"
    _run(["git", "clone", "--quiet", str(repo), str(clone)], repo, None, log)
    install_seconds = _run(["bash", "scripts/install.sh"], clone, None, log)
    home = clone / ".reproduction-home"   # its own database, model files and answer cache
    env = {**os.environ, "MEMORY_BASELINE_HOME": str(home)}
    machine = machine_description()
    book_seconds = _run(list(MAIN_COMMAND), clone, env, log)
    try:
        return record_from_clone(clone, book_seconds=book_seconds, install_seconds=install_seconds,
                                 machine=machine)
    finally:
        subprocess.run([str(clone / ".venv/bin/memory-baseline"), "server", "stop"], cwd=clone, env=env,
                       capture_output=True, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, default=None,
                        help="a new folder for the clone (default: a sibling of the repository, so the "
                             "shared data the profiles name as ../shared resolves as it does here)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="the record (relative to the repository)")
    args = parser.parse_args(argv)
    repo = project_root()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    clone = args.clone or repo.parent / f"{repo.name}-reproduction-{stamp}"
    try:
        document = reproduce(repo, clone.resolve())
    except ReproductionError as exc:
        print(f"reproduction failed: {exc}", file=sys.stderr)
        return 1
    out = args.out if args.out.is_absolute() else repo / args.out
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"book reproduced in {document['book_seconds'] / 60:.1f} min; answers: "
          f"{document['answers']['from_cache']} from the cache, {document['answers']['computed']} computed; "
          f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
