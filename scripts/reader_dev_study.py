"""Issue 23: the reader's dev study on corpora the fixture's choice never saw (PEPs, two worlds).

Pass the study directory to resume an interrupted run.
"""
import sys

from memory_baseline.config import Config
from memory_baseline.server import connect
from memory_lab.reader_study import run_reader_study
from memory_lab.studies.setup import prepare_world

resume = sys.argv[1] if len(sys.argv) > 1 else None
worlds = {s: prepare_world("benchmarks/worlds", seed=s, docs=60) for s in (7, 11)}
corpora = {
    "world_s7": (worlds[7].history, worlds[7].tasks_path, None),
    "world_s11": (worlds[11].history, worlds[11].tasks_path, None),
    "peps": ("../shared/data/peps/corpus", "fixtures/peps/tasks.json", None),
}
base = Config(index="reader_dev").with_overrides(reader={"name": "qwen-1.5b"})
with connect() as conn:
    study = run_reader_study(conn, base, corpora, ["focused", "structured", "plain"],
                             conditions=["oracle-source"], runs_root="benchmarks/runs",
                             resume=resume, split="dev")
print(study.run_dir)
