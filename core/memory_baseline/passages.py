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
    line_start: int | None = None  # the lines its span covers (1-based, inclusive); None for
    line_end: int | None = None  # a chunk indexed before line ranges were kept

    @property
    def location(self) -> str:
        """`path:Lstart-end`, the citation a user can open (the path alone without lines)."""
        if self.line_start is None:
            return self.source_id
        return f"{self.source_id}:L{self.line_start}-{self.line_end}"
