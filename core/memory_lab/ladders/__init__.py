"""The ladders: every condition of chapter 7 on a task file, and the resumable studies built on it.

`evaluation` runs a condition ladder into a run directory (the adapter to the
instrument's `SystemOutput`, oracles, tuning of `best` on dev tasks, resume,
scorecards); `retrieval`, `answer`, `downstream` and `compression` are the
long, resumable studies (`memory-lab study NAME run|summarise`) whose results
files the README and the book render; `rescore` re-scores committed runs under
the current grader; `study_cli` is their shared command line.
"""
