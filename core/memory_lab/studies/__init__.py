"""Each chapter's study, one module per chapter, on shared plumbing (`setup`, `display`).

The chapters read them through `memory_lab.experiments`, which re-exports every name.
"""
