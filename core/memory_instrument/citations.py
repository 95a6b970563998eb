"""The one citation grammar: what a cited source id looks like in an answer's text.

Part of the output contract, so it is the single rule both sides read: the
instrument counts citations with it, and a system's reader enforces its
citations with it (the baseline's readers import this module and nothing else
of the instrument). When the two read different rules, an id one side
ignores is evidence the other side counts (`[S1: notes/secret.md]` used to pass
the reader unflagged while the instrument counted it).

The grammar:

* A citation is a square bracket not followed by ``(`` (``[text](url)`` is a
  link), or a parenthesis that starts with ``source:``/``sources:``.
* Inside, an optional label — ``source:``, ``sources:``, ``src:``, ``S1:``,
  ``1:`` — then one or more ids separated by ``,`` or ``;``; each id may be
  wrapped in backticks or quotes.
* An id has the shape of a path: word characters, ``.``, ``-``, ``@`` and
  ``/``, with an optional ``#fragment`` (a chunk id), and it has a folder, a
  file extension or a git ``@commit`` (``src/app.py@1a2b3c4``). So ``[1]``,
  ``[optional]`` and ``list[str]`` are not citations.
* A bracket is a citation when at least one part is id-shaped; the other parts
  are prose the reader may keep (``[see adr-007.md, p. 2]`` cites one id).
* Text inside fenced code blocks is work product, never citations
  (``[services.shipments]`` in a TOML block is a table header).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

GRAMMAR_VERSION = 2

FENCED_BLOCK = re.compile(r"```.*?```", re.DOTALL)
BRACKET = re.compile(r"(?P<lead>[ \t]*)\[(?P<inner>[^\[\]\n]+)\](?!\()")
PAREN_SOURCE = re.compile(
    r"(?P<lead>[ \t]*)\((?P<inner>\s*sources?\s*:[^()\n]+)\)", re.IGNORECASE
)
LABEL = re.compile(r"^\s*(?:sources?|src|s\d+|\d+)\s*:\s*", re.IGNORECASE)
ID_SHAPE = re.compile(r"[\w.\-@]+(?:/[\w.\-@]+)*(?:#[\w.\-:]+)?")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]*$")
_COMMIT = re.compile(r"@[0-9a-fA-F]{4,40}$")
_SEPARATOR = re.compile(r"[,;]")
_WRAPPERS = "`'\"“”‘’"


def looks_like_source_id(candidate: str) -> bool:
    """True when `candidate` has the shape of a cited source or chunk id."""
    if not ID_SHAPE.fullmatch(candidate):
        return False
    path = candidate.split("#", 1)[0]
    if _COMMIT.search(path):
        return True
    return "/" in path or bool(_EXTENSION.search(path))


def strip_wrappers(part: str) -> str:
    return part.strip().strip(_WRAPPERS)


def base_source_id(cited: str) -> str:
    """The source id a citation names: a chunk's ``#fragment`` and a ``@commit`` dropped."""
    path = cited.split("#", 1)[0]
    return _COMMIT.sub("", path)


@dataclass(frozen=True)
class CitationSpan:
    """One citation bracket in a text: where it is, its label and its parts."""

    start: int
    end: int
    lead: str
    opening: str
    closing: str
    label: str  # the label as written ("S1: "), or ""
    parts: tuple[str, ...]  # as written, stripped of surrounding spaces

    @property
    def ids(self) -> tuple[str, ...]:
        """The id-shaped parts, unwrapped, in order."""
        return tuple(
            strip_wrappers(p) for p in self.parts if looks_like_source_id(strip_wrappers(p))
        )


def _span(match: re.Match[str], opening: str, closing: str) -> CitationSpan | None:
    inner = match.group("inner")
    label = LABEL.match(inner)
    prefix = label.group(0) if label else ""
    parts = tuple(part.strip() for part in _SEPARATOR.split(inner[len(prefix):]))
    if not any(looks_like_source_id(strip_wrappers(p)) for p in parts):
        return None
    return CitationSpan(match.start(), match.end(), match.group("lead"), opening, closing,
                        prefix, parts)


def prose_pieces(text: str) -> Iterator[tuple[int, str, bool]]:
    """(offset, piece, is_code) for the text split around fenced code blocks."""
    position = 0
    for block in FENCED_BLOCK.finditer(text):
        if block.start() > position:
            yield position, text[position:block.start()], False
        yield block.start(), block.group(0), True
        position = block.end()
    if position < len(text):
        yield position, text[position:], False


def find_citations(text: str) -> list[CitationSpan]:
    """Every citation in `text` outside fenced code, in order of position."""
    found: list[CitationSpan] = []
    for offset, piece, is_code in prose_pieces(text):
        if is_code:
            continue
        for pattern, opening, closing in ((BRACKET, "[", "]"), (PAREN_SOURCE, "(", ")")):
            for match in pattern.finditer(piece):
                span = _span(match, opening, closing)
                if span is not None:
                    found.append(CitationSpan(span.start + offset, span.end + offset, span.lead,
                                              opening, closing, span.label, span.parts))
    # A "(source: [a])" form would be found twice; keep the outermost.
    found.sort(key=lambda s: (s.start, -s.end))
    kept: list[CitationSpan] = []
    for span in found:
        if kept and span.start < kept[-1].end:
            continue
        kept.append(span)
    return kept


def cited_ids(text: str) -> list[str]:
    """The ids cited in `text`, in order of first citation, without repeats."""
    return list(dict.fromkeys(i for span in find_citations(text) for i in span.ids))


def remove_citations(text: str) -> tuple[str, list[str]]:
    """`text` with its citations removed, and the ids they cited, in order."""
    spans = find_citations(text)
    pieces: list[str] = []
    position = 0
    ids: list[str] = []
    for span in spans:
        pieces.append(text[position:span.start])
        pieces.append(" ")
        ids.extend(span.ids)
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces), ids
