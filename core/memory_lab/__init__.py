"""The research lab: the experiments run on the library and scored by the instrument.

It imports `memory_baseline` (the system under test) and `memory_instrument`
(tasks and scoring); neither of those imports the lab. Modules: `evaluation`
(the adapter to `SystemOutput`, the condition ladder, run directories and
scorecards), `experiments` (each chapter's study), `reader_study`, `pep_history`
(the PEP corpus with the past versions its temporal tasks name), `retrieval_ladder`,
`answer_ladder` and `compression_reading` (resumable studies sharing `study_cli`), `beir`,
`bench` (the benchmarks, one module each), `stats` (the one percentile
definition), `conditions` (the condition registry), `runs` (run directories and
manifests), `book` (executing the chapters and building the book), `chapter`
(the one setup call every chapter makes) and `paths` (the book root, found from
the working directory, never from where the lab is installed).
"""
