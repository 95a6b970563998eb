"""Commit the answers a run used: `memory-lab study answers RUN_DIR [RUN_DIR ...]`.

A reading run costs hours on a laptop CPU; its answers are worth keeping beside
it. This copies the answer-cache entries its cases name (`reader_trace.cache.key`,
from any layer the user's cache reads) into ``benchmarks/answer-cache``, the
read-first layer a fresh clone uses (`book`, `evaluate` with
``MEMORY_BASELINE_ANSWER_CACHE_PATH``), so a rerun of the same code, prompt and
model reads them instead of computing them. A study directory is searched for
the runs inside it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from memory_baseline.answer_cache import AnswerCache
from memory_lab.ladders.reports import load_run

COMMITTED = Path("benchmarks/answer-cache")


def run_keys(run_dir: str | Path) -> set[str]:
    """The answer-cache keys of every case under `run_dir` (a run, or a study holding runs)."""
    root = Path(run_dir)
    manifests = [root / "manifest.json"] if (root / "cases.jsonl").is_file() else \
        sorted(p for p in root.rglob("manifest.json") if (p.parent / "cases.jsonl").is_file())
    keys: set[str] = set()
    for manifest in manifests:
        _, cases = load_run(manifest.parent)
        for case in cases:
            key = ((case.get("reader_trace") or {}).get("cache") or {}).get("key")
            if key:
                keys.add(key)
    return keys


def export_answers(run_dirs: Iterable[str | Path], target: str | Path = COMMITTED,
                   ) -> tuple[int, int, list[str]]:
    """Copy the runs' answers into `target`; returns (keys named, entries newly written, keys no
    cache layer here holds). The ones found are exported even when some are missing: an answer
    read on another machine whose cache was not exported is lost, and rereading it recomputes it."""
    keys: set[str] = set()
    for run_dir in run_dirs:
        keys |= run_keys(run_dir)
    missing: list[str] = []
    written = AnswerCache(read_first=[COMMITTED]).export(keys, target, missing=missing)
    return len(keys), written, missing


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if not args:
        print("usage: memory-lab study answers RUN_DIR [RUN_DIR ...]", file=sys.stderr)
        return 2
    named, written, missing = export_answers(args)
    print(f"{named} answers named by the runs; {written} new entries in {COMMITTED}; "
          f"{len(missing)} in no cache here")
    if missing:
        print(f"error: {len(missing)} answers the runs name are in no cache layer (first: {missing[0]}); "
              "a rerun computes them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
