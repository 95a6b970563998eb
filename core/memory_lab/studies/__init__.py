"""The tools every chapter's study shares: `setup` (book-relative paths, study run
directories, corpora, worlds, task subsets, readers), `traces` (a variant's stages
per task), `display` (tables and figures with their run captions).

The chapters (`memory_lab.chapters`) import what they use from here by name.
"""
