"""The research lab: the experiments the book reports, run on the library and scored by the instrument.

It imports `memory_baseline` (the system under test) and `memory_instrument`
(tasks and scoring); neither of those imports the lab. Its shape is the book's:

    chapters/   one module per chapter: what that chapter's notebook calls
    ladders/    the condition ladder (`evaluation`) and the long, resumable studies built on it
    corpora/    public corpora made ingestible: BEIR SciFact, the PEPs with their past versions
    studies/    the tools every chapter's study shares: setup, variant traces, tables and figures
    book/       executing the chapters and building the book, the README's rendered results,
                the newcomer's reproduction check, the built pages checked in Chromium
    bench/      the benchmarks, one module each
    conditions, runs, stats, intervals, answers: the condition registry, run directories and
                manifests, the one percentile definition, confidence intervals, the answer caches

Its command line is `memory-lab` (`python -m memory_lab`): `book`, `evaluate`,
`report`, `beir`, `bench`, `world`, and `study NAME` for every resumable study.
"""
