"""The passage: one chunk's text and where it came from, from retrieval to the reader.

Retrieval reads it from the store, with the chunk's span and the terms that
identifier priority looks at; context assembly gives it its rank among the
candidates it walked (and marks the one it cut to fit the budget); the reader
renders its source id, kind, date, section and text. One frozen type for all of
them, so no stage copies another's fields by hand.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    source_id: str
    text: str
    section: str | None
    kind: str
    artifact_date: str | None
    rank: int = 0  # position among the candidates context assembly walked; 0 before assembly
    truncated: bool = False  # cut to its longest prefix that fits the token budget
    char_start: int = 0  # the chunk's span in its source's text
    char_end: int = 0
    identifiers: tuple[str, ...] = ()  # identifier terms of its text
    name_terms: tuple[str, ...] = ()  # its source's path, file name and stem
