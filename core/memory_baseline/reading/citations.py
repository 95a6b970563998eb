"""Citations of an answer, checked against the admitted passages, and enforced.

Citations are parsed from the answer text (bracketed ids, also ``[source: a, b]``
and ``(source: a)``; fenced code is work product, not claims, and is left
alone). An id that was not admitted goes to `Answer.unknown_citations`, never
into `citations`. The LLM readers also enforce it: the unknown id is removed
from the returned text (the model's own text stays in ``extra["raw_text"]``),
so no answer they return cites evidence the reader never saw. A bare file name
that names exactly one admitted source (``[adr-007.md]``) is rewritten to that
source's id and recorded in ``extra["resolved_citations"]``.

The grammar of a cited id is the instrument's output contract (`memory_instrument.citations`),
the one module of the instrument the library imports: the reader enforces exactly what the
instrument will count as a citation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_instrument import citations as citation_grammar

from ..context import Passage


@dataclass(frozen=True)
class CitationCheck:
    """The citations of one answer, checked against the admitted passages."""

    text: str  # the answer text; with enforcement, unknown ids removed
    citations: tuple[str, ...]
    unknown: tuple[str, ...]
    resolved: dict[str, str]  # short form written by the model -> admitted source id


def check_citations(text: str, passages: Sequence[Passage], *, enforce: bool) -> CitationCheck:
    """Parse and check the citations of `text`; with `enforce`, drop unknown ids from it."""
    by_id = {p.source_id: p.source_id for p in passages} | {p.chunk_id: p.source_id for p in passages}
    sources = list(dict.fromkeys(p.source_id for p in passages))
    cited: dict[str, None] = {}
    unknown: dict[str, None] = {}
    resolved: dict[str, str] = {}

    def admitted_id(candidate: str) -> str | None:
        if candidate in by_id:
            return candidate
        base = citation_grammar.base_source_id(candidate)  # a `path@commit` names its path
        if base != candidate and base in by_id:
            resolved[candidate] = by_id[base]
            return base
        tails = [s for s in sources if s.endswith("/" + base)]
        if len(tails) == 1:  # a bare file name that names exactly one admitted source
            resolved[candidate] = tails[0]
            return tails[0]
        return None

    def rewrite(span: citation_grammar.CitationSpan) -> str:
        kept: list[str] = []
        for part in span.parts:
            candidate = citation_grammar.strip_wrappers(part)
            if not citation_grammar.looks_like_source_id(candidate):
                kept.append(part)
                continue
            found = admitted_id(candidate)
            if found is None:
                unknown.setdefault(candidate, None)
                if not enforce:
                    kept.append(part)
                continue
            cited.setdefault(by_id[found], None)
            kept.append(resolved[candidate] if candidate in resolved else part)
        if not any(citation_grammar.looks_like_source_id(citation_grammar.strip_wrappers(k))
                   for k in kept):
            return ""  # nothing admitted is left to cite: the whole bracket goes
        return f"{span.lead}{span.opening}{span.label}{', '.join(kept)}{span.closing}"

    pieces: list[str] = []
    position = 0
    for span in citation_grammar.find_citations(text):
        pieces.append(text[position:span.start])
        pieces.append(rewrite(span))
        position = span.end
    pieces.append(text[position:])
    return CitationCheck(
        text="".join(pieces) if enforce else text, citations=tuple(cited),
        unknown=tuple(unknown), resolved=resolved,
    )


def parse_citations(text: str) -> list[str]:
    """Source ids cited in `text` (``[path]``, ``[a, b]``, ``[source: a]``), in order."""
    return list(check_citations(text, [], enforce=False).unknown)


def split_citations(text: str, passages: Sequence[Passage]) -> tuple[list[str], list[str]]:
    """(admitted citations as source ids, unknown citations) of an answer text."""
    checked = check_citations(text, passages, enforce=False)
    return list(checked.citations), list(checked.unknown)
