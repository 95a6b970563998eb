"""Chunking: decide which characters of a source travel together.

Three policies, each with a version string that becomes part of the index's
representation identity (a changed chunker is therefore visible and
rebuildable):

- ``sentences`` (default): pack whole sentences up to a target size
  (2,000 characters), starting each next chunk at a sentence boundary inside
  the last ``overlap`` characters (300) so a qualification that straddles a
  boundary is seen whole at least once. A sentence longer than the target is
  cut into windows.
- ``sections``: one chunk per Markdown section (a heading and its body); a
  section may exceed the target, which is the point of the policy.
- ``fixed``: windows of the target size with the overlap, ignoring structure.
- ``whole``: one chunk per source (benchmarks such as BEIR score whole documents).

Section titles come from the source's own markup, chosen by its file name:
Markdown ``#`` headings; reStructuredText titles (a line underlined, and
optionally overlined, by a repeated punctuation character at least as long as
the title); AsciiDoc ``=`` titles. Field lists (`Status:`, `Created:`) are text
like any other and stay in the chunk that holds them. Code (`.py`, and the
languages of `code_chunks.PARSERS`) is cut by `memory_baseline.code_chunks`
under the ``sentences`` and ``sections`` policies: a function or class is one
unit, with the definition's name as its section.

Every chunk keeps its character span: ``text == source[start:end]`` always,
so a passage can be traced to the exact bytes it came from.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from .code_chunks import code_spans, is_code, parser_identity
from .config import ChunkingConfig
from .hashing import content_digest
from .identifiers import IDENTIFIER_RULES_VERSION

# -2: section titles of reStructuredText and AsciiDoc; code cut by definitions.
CHUNKER_VERSIONS = {"sentences": "sentences-2", "sections": "sections-2", "fixed": "fixed-1",
                    "whole": "whole-1"}
CODE_AWARE_POLICIES = ("sentences", "sections")

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# reStructuredText: optional overline, a title line, an underline of one repeated
# punctuation character (docutils' adornment characters).
_RST_HEADING = re.compile(
    r"^(?:([!-/:-@\[-`{-~])\1{2,}[ \t]*\n)?([^\s].*?)[ \t]*\n([!-/:-@\[-`{-~])\3{2,}[ \t]*$",
    re.MULTILINE,
)
_ASCIIDOC_HEADING = re.compile(r"^(={1,6}|#{1,6})[ \t]+(.+?)[ \t]*$", re.MULTILINE)
RST_SUFFIXES = (".rst", ".rest")
ASCIIDOC_SUFFIXES = (".adoc", ".asciidoc", ".asc")
# A sentence ends at ., ! or ? followed by whitespace, or at a blank line, or at a
# line break before a list item/heading. Good enough for notes and logs; no model needed.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n+|\n(?=\s*(?:[-*+] |\d+\. |#|\|))|\n")


_NEWLINE = re.compile("\n")


class ChunkingError(ValueError):
    """Invalid chunking parameters."""


@dataclass(frozen=True)
class Chunk:
    source_id: str
    ordinal: int
    start: int
    end: int
    text: str
    section: str | None
    content_hash: str
    line_start: int = 0  # the lines [start, end) covers, 1-based and inclusive
    line_end: int = 0

    @property
    def chunk_id(self) -> str:
        return f"{self.source_id}#{self.ordinal}"


def chunker_identity(config: ChunkingConfig) -> dict[str, object]:
    """What a chunk's representation records about the chunker that cut it."""
    if config.policy not in CHUNKER_VERSIONS:
        raise ChunkingError(
            f"unknown chunking policy {config.policy!r}; choose one of {sorted(CHUNKER_VERSIONS)}"
        )
    identity: dict[str, object] = {
        "policy": config.policy,
        "version": CHUNKER_VERSIONS[config.policy],
        "target_chars": config.target_chars,
    }
    if config.policy in ("sentences", "fixed"):
        identity["overlap_chars"] = config.overlap_chars
    if config.policy == "whole":
        identity.pop("target_chars")
    if config.policy in CODE_AWARE_POLICIES:
        identity["code"] = parser_identity()
    identity["identifiers"] = IDENTIFIER_RULES_VERSION
    return identity


def headings(source_id: str, text: str) -> list[tuple[int, str]]:
    """(offset, title) of each section heading, in the markup the file name says."""
    name = source_id.lower()
    if name.endswith(RST_SUFFIXES):
        found = []
        for match in _RST_HEADING.finditer(text):
            over, title, under = match.group(1), match.group(2), match.group(3)
            underline = match.group(0).rstrip().rsplit("\n", 1)[-1].strip()
            if (over and over != under) or len(underline) < len(title.strip()):
                continue
            if re.fullmatch(r"([!-/:-@\[-`{-~])\1+", title.strip()):
                continue  # a transition or table border, not a title
            found.append((match.start(), title.strip()))
        return found
    pattern = _ASCIIDOC_HEADING if name.endswith(ASCIIDOC_SUFFIXES) else _HEADING
    return [(m.start(), m.group(2).strip()) for m in pattern.finditer(text)]


def chunk_text(source_id: str, text: str, config: ChunkingConfig) -> list[Chunk]:
    """Cut `text` into chunks under `config`; empty or whitespace-only text gives none."""
    chunker_identity(config)  # validates the policy name
    if config.target_chars < 1 or not 0 <= config.overlap_chars < config.target_chars:
        raise ChunkingError(
            "need target_chars >= 1 and 0 <= overlap_chars < target_chars, got "
            f"{config.target_chars} and {config.overlap_chars}"
        )
    if not text.strip():
        return []
    code_sections: dict[tuple[int, int], str | None] = {}
    found = [] if is_code(source_id) else headings(source_id, text)
    if config.policy == "whole":
        spans = [(0, len(text))]
    elif config.policy in CODE_AWARE_POLICIES and is_code(source_id):
        pieces = code_spans(source_id, text, config.target_chars)
        spans = [(p.start, p.end) for p in pieces]
        code_sections = {(p.start, p.end): p.section for p in pieces}
    elif config.policy == "sections":
        spans = _section_spans(text, [start for start, _ in found])
    elif config.policy == "fixed":
        spans = _windows(0, len(text), config.target_chars, config.overlap_chars)
    else:
        spans = _sentence_spans(text, config.target_chars, config.overlap_chars)
    heading_starts = [start for start, _ in found]
    newlines = [m.start() for m in _NEWLINE.finditer(text)]
    chunks: list[Chunk] = []
    for start, end in spans:
        piece = text[start:end]
        if not piece.strip():
            continue
        if (start, end) in code_sections:
            section = code_sections[(start, end)]
        else:
            at = bisect_right(heading_starts, start + _leading_space(piece)) - 1
            section = found[at][1] if at >= 0 else None
        chunks.append(
            Chunk(
                source_id=source_id,
                ordinal=len(chunks),
                start=start,
                end=end,
                text=piece,
                section=section,
                content_hash=content_digest(piece),
                # Line k starts after the (k-1)th newline: a chunk's lines are counted from the
                # newlines before its first and its last character.
                line_start=bisect_left(newlines, start) + 1,
                line_end=bisect_left(newlines, end - 1) + 1,
            )
        )
    return chunks


def _leading_space(piece: str) -> int:
    return len(piece) - len(piece.lstrip())


def _windows(start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    spans = []
    position = start
    while position < end:
        stop = min(position + size, end)
        spans.append((position, stop))
        if stop == end:
            break
        position = stop - overlap
    return spans


def sentence_boundaries(text: str) -> list[int]:
    """Offsets where sentences start (always includes 0)."""
    starts = [0]
    for match in _SENTENCE_END.finditer(text):
        if 0 < match.end() < len(text) and match.end() != starts[-1]:
            starts.append(match.end())
    return starts


def _sentence_spans(text: str, target: int, overlap: int) -> list[tuple[int, int]]:
    starts = sentence_boundaries(text)
    ends = starts[1:] + [len(text)]
    sentences = list(zip(starts, ends, strict=True))
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(sentences):
        chunk_start = sentences[index][0]
        last = index
        while last + 1 < len(sentences) and sentences[last + 1][1] - chunk_start <= target:
            last += 1
        chunk_end = sentences[last][1]
        if chunk_end - chunk_start > target:
            # One sentence longer than the target: cut it into overlapping windows.
            spans.extend(_windows(chunk_start, chunk_end, target, overlap))
            index = last + 1
            continue
        spans.append((chunk_start, chunk_end))
        if last + 1 >= len(sentences):
            break
        # Next chunk starts at the earliest sentence inside the overlap region, but
        # always moves forward so the walk terminates.
        next_index = last + 1
        for candidate in range(index + 1, last + 1):
            if sentences[candidate][0] >= chunk_end - overlap:
                next_index = candidate
                break
        index = next_index
    return spans


def _section_spans(text: str, heading_starts: list[int]) -> list[tuple[int, int]]:
    starts = list(heading_starts)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    ends = starts[1:] + [len(text)]
    return [(s, e) for s, e in zip(starts, ends, strict=True) if e > s]
