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

Every chunk keeps its character span: ``text == source[start:end]`` always,
so a passage can be traced to the exact bytes it came from.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass

from .config import ChunkingConfig

CHUNKER_VERSIONS = {"sentences": "sentences-1", "sections": "sections-1", "fixed": "fixed-1",
                    "whole": "whole-1"}

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# A sentence ends at ., ! or ? followed by whitespace, or at a blank line, or at a
# line break before a list item/heading. Good enough for notes and logs; no model needed.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n+|\n(?=\s*(?:[-*+] |\d+\. |#|\|))|\n")


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
    return identity


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
    if config.policy == "whole":
        spans = [(0, len(text))]
    elif config.policy == "sections":
        spans = _section_spans(text)
    elif config.policy == "fixed":
        spans = _windows(0, len(text), config.target_chars, config.overlap_chars)
    else:
        spans = _sentence_spans(text, config.target_chars, config.overlap_chars)
    headings = [(m.start(), m.group(2).strip()) for m in _HEADING.finditer(text)]
    heading_starts = [start for start, _ in headings]
    chunks: list[Chunk] = []
    for start, end in spans:
        piece = text[start:end]
        if not piece.strip():
            continue
        at = bisect_right(heading_starts, start + _leading_space(piece)) - 1
        section = headings[at][1] if at >= 0 else None
        chunks.append(
            Chunk(
                source_id=source_id,
                ordinal=len(chunks),
                start=start,
                end=end,
                text=piece,
                section=section,
                content_hash=hashlib.sha256(piece.encode("utf-8")).hexdigest(),
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


def _section_spans(text: str) -> list[tuple[int, int]]:
    starts = [m.start() for m in _HEADING.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    ends = starts[1:] + [len(text)]
    return [(s, e) for s, e in zip(starts, ends, strict=True) if e > s]
