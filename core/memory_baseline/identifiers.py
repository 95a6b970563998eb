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

Numbered documents are written differently by the people who ask and the
repositories that store them: "PEP 8" is `pep-0008.rst`, "KEP-2033" is
`keps/sig-node/2033-kubelet-in-userns/README.md`, "ADR 31" and "adr-031" are
`docs/adr/adr-031-use-kafka.md` or `docs/adr/0031-kafka.md`. Both sides are
therefore reduced to one *document key*, ``<series>#<number>`` (lower case,
zero padding removed: `pep#8`, `kep#2033`, `adr#31`, `rfc#7231`, `ops#1234`),
from the question and the passage text by `document_keys` and from the path by
`path_keys` (the file stem, each directory, and a number-led component under a
series folder such as `adr/` or `keps/`). '#' never occurs in a text
identifier, so a key cannot collide with one. Versions get one key too:
`2.13.0` and `v2.13.0` are both `v2.13.0`.
"""

from __future__ import annotations

import re

# Alphanumeric runs joined by - _ . / : (at least one joiner), e.g. adr-007,
# E-BRK-042, publish_shipment_event, v2.3.1, config/eventstore.yaml.
IDENTIFIER_PATTERN = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+(?![\w-])")
_FILE_SUFFIX = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")
MAX_IDENTIFIER_CHARS = 200
# Part of the chunker identity (`chunking.chunker_identity`): a change of these rules
# changes what is stored with every chunk, so the index must be rebuilt.
IDENTIFIER_RULES_VERSION = "identifiers-2"

# A series name and a number: "PEP 8", "pep-0008", "KEP-2033", "ADR31", "OPS-1234".
_SERIES_NUMBER = re.compile(
    r"(?<![\w.\-#])([A-Za-z]{2,10})([-_ ]?)0*(\d{1,6})(?!\w|[.,]\d)"
)
# Series people write with a space or with nothing before the number in lower case too
# ("pep 8", "rfc7231"); any other series needs a hyphen or underscore, or capitals ("ADR 31").
KNOWN_SERIES = frozenset({"pep", "kep", "adr", "rfc", "jep", "nep", "bip", "eip", "psr", "jsr",
                          "rfd", "spec"})
# Folder names that stand for a series of numbered records (plural 's' is dropped first).
SERIES_ALIASES = {"decision": "adr", "architecture-decision": "adr", "enhancement": "kep"}
_NUMBER_LED = re.compile(r"0*(\d{1,6})(?:[-_.]|$)")
_STEM_KEY = re.compile(r"([a-z]{2,10})[-_]?0*(\d{1,6})(?:[-_.]|$)")
_SERIES_FOLDER = re.compile(r"[a-z]{2,12}(?:-[a-z]{2,12})?")
_ISO_DATE_LED = re.compile(r"\d{4}-\d{2}-\d{2}")
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+\.\d+(?:\.\d+)?)(?![\w]|\.\d)", re.I)


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


def document_keys(text: str) -> list[str]:
    """Document keys (`pep#8`) and version keys (`v2.13.0`) named in `text`, first-seen order."""
    seen: dict[str, None] = {}
    for match in _SERIES_NUMBER.finditer(text):
        series, joiner, number = match.groups()
        lower = series.lower()
        if joiner in ("", " ") and not (series.isupper() or lower in KNOWN_SERIES):
            continue  # "Python 3", "mp3": not a document series
        seen.setdefault(f"{lower}#{int(number)}", None)
    for match in _VERSION.finditer(text):
        seen.setdefault(f"v{match.group(1)}", None)
    return list(seen)


def _series_name(folder: str) -> list[str]:
    if not _SERIES_FOLDER.fullmatch(folder):
        return []
    singular = folder[:-1] if folder.endswith("s") and len(folder) > 3 else folder
    return list(dict.fromkeys(n for n in (singular, SERIES_ALIASES.get(singular)) if n))


def path_keys(path: str) -> list[str]:
    """Document and version keys a path names.

    `pep-0008.rst` and `decisions/adr-031-kafka.md` by their stem (`pep#8`, `adr#31`);
    `keps/sig-node/2033-kubelet-in-userns/README.md` and `docs/adr/0031-kafka.md` by a
    number-led component under a series folder (`kep#2033`, `adr#31`); a folder
    `pep-0001/` names every file under it; `release-v2.13.0.md` names `v2.13.0`.
    """
    parts = [p for p in path.lower().split("/") if p]
    keys: dict[str, None] = {}
    for position, part in enumerate(parts):
        component = _FILE_SUFFIX.sub("", part) if position == len(parts) - 1 else part
        stem = _STEM_KEY.match(component)
        if stem:
            keys.setdefault(f"{stem.group(1)}#{int(stem.group(2))}", None)
        led = _NUMBER_LED.match(component)
        if led and not _ISO_DATE_LED.match(component):
            for folder in reversed(parts[:position]):
                for series in _series_name(folder):
                    keys.setdefault(f"{series}#{int(led.group(1))}", None)
        for version in _VERSION.finditer(component):
            keys.setdefault(f"v{version.group(1)}", None)
    return list(keys)


def file_keys(source_id: str) -> list[str]:
    """The keys a source's own file name gives (not its folders); none for a git version id."""
    name = source_id.rsplit("/", 1)[-1]
    if "@" in name:
        return []
    stem = _STEM_KEY.match(_FILE_SUFFIX.sub("", name.lower()))
    return [f"{stem.group(1)}#{int(stem.group(2))}"] if stem else []


def extract_identifiers(text: str) -> list[str]:
    """Distinct identifier terms and document keys in `text`, in first-seen order."""
    seen: dict[str, None] = {}
    for match in IDENTIFIER_PATTERN.finditer(text):
        token = match.group(0)
        # Plain words joined only by '.' or ':' are sentence punctuation, not identifiers.
        if not re.search(r"[-_/]|\d", token):
            continue
        for variant in _variants(token):
            if any(ch in variant for ch in "-_./:") or re.search(r"\d", variant):
                seen.setdefault(variant, None)
    for key in document_keys(text):
        seen.setdefault(key, None)
    return list(seen)


def path_identifiers(source_id: str) -> list[str]:
    """Terms naming a source: its path, file name, stem and the keys of `path_keys`."""
    path = source_id.lower()
    name = path.rsplit("/", 1)[-1]
    stem = _FILE_SUFFIX.sub("", name) or name
    return list(dict.fromkeys([path, name, stem, *path_keys(source_id)]))
