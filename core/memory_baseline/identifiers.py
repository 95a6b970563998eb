"""Identifier terms that PostgreSQL's English parser would break apart.

The built-in text-search parser splits `E-BRK-042` into `e-brk` and `042`,
`session-040` into `session` and a signed number `-040`, and
`publish_shipment_event` into three words, so a query naming an identifier
matches every passage that shares a fragment of it. We therefore extract
punctuated identifiers, version strings and file names in Python with one
rule, lower-case them, and store them beside the English lexemes in the same
tsvector (`array_to_tsvector`), so they are indexed by the same GIN index and
scored by the same BM25 statistics as words. The query side runs the same
function, so an identifier in a question matches the identical identifier in
a passage — and, because identifiers are rare, BM25 gives them a high IDF.
The source path, its file name and its stem are stored with every chunk of
that source as *name terms*, a second BM25 field: a question naming
`adr-007.md` or `adr-007` finds the file of that name first.
"""

from __future__ import annotations

import re

# Alphanumeric runs joined by - _ . / : (at least one joiner), e.g. adr-007,
# E-BRK-042, publish_shipment_event, v2.3.1, config/eventstore.yaml.
IDENTIFIER_PATTERN = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+(?![\w-])")
_FILE_SUFFIX = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")
MAX_IDENTIFIER_CHARS = 200


def _variants(token: str) -> list[str]:
    token = token.lower().strip("./:")
    if not token or len(token) > MAX_IDENTIFIER_CHARS:
        return []
    out = [token]
    if "/" in token:
        out.extend(part for part in token.split("/") if part)
    for part in list(out):
        if _FILE_SUFFIX.search(part) and not re.fullmatch(r"v?\d+(\.\d+)+", part):
            stem = _FILE_SUFFIX.sub("", part)
            if stem:
                out.append(stem)
    return out


def extract_identifiers(text: str) -> list[str]:
    """Distinct identifier terms in `text`, in first-seen order."""
    seen: dict[str, None] = {}
    for match in IDENTIFIER_PATTERN.finditer(text):
        token = match.group(0)
        # Plain words joined only by '.' or ':' are sentence punctuation, not identifiers.
        if not re.search(r"[-_/]|\d", token):
            continue
        for variant in _variants(token):
            if any(ch in variant for ch in "-_./:") or re.search(r"\d", variant):
                seen.setdefault(variant, None)
    return list(seen)


def path_identifiers(source_id: str) -> list[str]:
    """Terms naming a source: its path, file name and stem."""
    path = source_id.lower()
    name = path.rsplit("/", 1)[-1]
    stem = _FILE_SUFFIX.sub("", name) or name
    return list(dict.fromkeys([path, name, stem]))
