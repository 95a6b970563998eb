"""Issue 23: the chosen default reader on the test tasks of every corpus, measured once.

    PYTHONPATH=core .venv/bin/python scripts/reader_test_study.py STYLE [STUDY_DIR to resume]

STYLE is the one `memory_lab.reader_study.pooled_choice` picked on the dev tasks (the
fixture's study and scripts/reader_dev_study.py's); nothing here feeds back into it.
"""
import sys

from memory_baseline.config import Config
from memory_baseline.server import connect
from memory_lab.reader_study import run_reader_study
from memory_lab.studies.setup import prepare_world

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
style, resume = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
worlds = {s: prepare_world("benchmarks/worlds", seed=s, docs=60) for s in (7, 11)}
corpora = {
    "fixture": ("fixtures/history", "fixtures/tasks.json", None),
    "world_s7": (worlds[7].history, worlds[7].tasks_path, None),
    "world_s11": (worlds[11].history, worlds[11].tasks_path, None),
    "peps": ("../shared/data/peps/corpus", "fixtures/peps/tasks.json", None),
}
base = Config(index="reader_test").with_overrides(reader={"name": "qwen-1.5b"})
with connect() as conn:
    study = run_reader_study(conn, base, corpora, [style], conditions=["oracle-source"],
                             runs_root="benchmarks/runs", resume=resume, split="test")
print(study.run_dir)
