"""The grader's version: a content hash of the code that decides a score and the task schema.

A hand-bumped version string is forgotten exactly when it matters; a hash of
what decides (scoring, answer reading, the citation grammar, stage metrics and
the task-file schema) changes whenever any of them does, so two scores with the
same version were made by the same rules. The scorecard module only aggregates
and is not part of it. A downstream task's own harness files (fixtures/harnesses/)
are versioned per score: each harness result carries the digest of its folder.

The series names a generation of rules, so a reader of two scores sees at once that
they were judged differently:

* instrument-2: phrases as words with polarity, the status line as a field, typed
  expectations (status, date, number, first asserted choice, obligation states).
* instrument-3: the grader reads commitment. A hedge asserts none of its alternatives;
  negation reaches the subject of a negated state, changes of state ("moved off X",
  "X was replaced by Y", "decided against X"), lists and embedded questions; `choice`
  is the option asserted as the state, not the first one named; a yes/no question is
  answered by its reply; the status line is a claim (it must be able to name the state
  asked for, and alone it satisfies the group asking for its word); an unanswerable
  question's abstention that goes on to guess fails; abstentions in other words are
  recognised; the evidence quotes allow paraphrase; quotes copied out of a source name
  no answer; obligation lists may invent no item; phrases meet their inflections
  (`reading`, a new deciding module, and `matching`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# The modules whose text decides what a score is, in a fixed order.
DECIDING_MODULES: tuple[str, ...] = (
    "scoring.py", "reading.py", "matching.py", "citations.py", "metrics.py", "tasks.py",
    "outputs.py", "harness.py", "sandbox_runner.py",
)
GRADER_SERIES = "instrument-3"


def grader_version(package_dir: Path | None = None) -> str:
    """``instrument-3+<first 12 hex of sha256 over the deciding modules' bytes>``."""
    root = package_dir or Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in DECIDING_MODULES:
        digest.update(name.encode("utf-8") + b"\0")
        digest.update((root / name).read_bytes().replace(b"\r\n", b"\n"))
        digest.update(b"\0")
    return f"{GRADER_SERIES}+{digest.hexdigest()[:12]}"


GRADER_VERSION = grader_version()
