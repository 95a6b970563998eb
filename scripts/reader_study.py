"""Issue 23: a reader study (oracle-source) of some reading styles on the fixture and the worlds.

    PYTHONPATH=core .venv/bin/python scripts/reader_study.py --split dev --styles itemised
    PYTHONPATH=core .venv/bin/python scripts/reader_study.py --split dev --styles itemised --resume DIR

The PEPs are read by `python -m memory_lab.pep_history read` (their temporal tasks need the
versions they name). Answers come from the committed cache first (benchmarks/answer-cache).
Styles are chosen on dev (`memory_lab.reader_study choice`); a test study reads the chosen one.
"""
import argparse
import os

from memory_baseline.answer_cache import READ_FIRST_ENV
from memory_baseline.config import Config
from memory_baseline.server import connect
from memory_lab.reader_study import run_reader_study
from memory_lab.studies.setup import prepare_world

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--split", choices=["dev", "test"], required=True)
parser.add_argument("--styles", nargs="+", required=True)
parser.add_argument("--corpora", nargs="+", default=["fixture", "world_s7", "world_s11"],
                    choices=["fixture", "world_s7", "world_s11"])
parser.add_argument("--resume")
args = parser.parse_args()
os.environ.setdefault(READ_FIRST_ENV, os.pathsep.join(["benchmarks/answer-cache",
                                                       "book/published/answer-cache"]))
worlds = {s: prepare_world("benchmarks/worlds", seed=s, docs=60) for s in (7, 11)}
every = {
    "fixture": ("fixtures/history", "fixtures/tasks.json", None),
    "world_s7": (worlds[7].history, worlds[7].tasks_path, None),
    "world_s11": (worlds[11].history, worlds[11].tasks_path, None),
}
corpora = {name: every[name] for name in args.corpora}
base = Config(index=f"reader_{args.split}").with_overrides(reader={"name": "qwen-1.5b"})
with connect() as conn:
    study = run_reader_study(conn, base, corpora, args.styles, conditions=["oracle-source"],
                             runs_root="benchmarks/runs", resume=args.resume, split=args.split)
print(study.run_dir)
