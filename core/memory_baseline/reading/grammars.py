"""llguidance grammars a reply is decoded under, and how such a reply is taken apart again.

A JSON schema (`schemas`) becomes compact JSON with closed objects; a work request's
artifact follows as an ordinary fenced block, since an artifact written as a JSON
string made a small model loop on escaped newlines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .kinds import is_work_request, requested_languages, work_languages

# Bump when the schemas or grammars change shape: the answer cache keys on the prompt text,
# which a schema change leaves as it was.
GRAMMAR_VERSION = 2


def work_grammar(query: str, source_ids: Sequence[str]) -> str:
    """A work answer outside JSON (so the artifact has real line breaks): ``Follows [id], [id].``
    with ids from the admitted ones only, then one fenced block in a requested language. Free prose
    first came back as the ask repeated, or a source header copied, instead of what it follows."""
    languages = " | ".join(json.dumps(lang) for lang in work_languages(query))
    block = f"lang: {languages}\nbody: /[^`]+/\n"
    if not source_ids:  # the no-memory control: no sources to follow, the block alone
        return "%llguidance {}\nstart: \"```\" lang \"\\n\" body \"```\"\n" + block
    ids = " | ".join(json.dumps(f"[{sid}]") for sid in source_ids)
    return ("%llguidance {}\n"
            "start: \"Follows \" cite (\", \" cite)* \".\\n\\n```\" lang \"\\n\" body \"```\"\n"
            f"cite: {ids}\n" + block)


def reply_grammar(schema: dict[str, Any], query: str) -> str:
    """The llguidance grammar of a reply: compact JSON, then for a work request a fenced block.

    The runtime's own ``json_schema`` path lets the model indent, which costs a small
    model a third of its tokens; llguidance's ``x-guidance`` option forbids it. An
    artifact written as a JSON string made the 1.5B model loop on escaped newlines,
    so a work request's artifact follows the JSON as an ordinary fenced block in one
    of the languages the request names.
    """
    head = "%json " + json.dumps({"x-guidance": {"whitespace_flexible": False}, **_closed(schema)})
    if not is_work_request(query) or "claims" in schema["properties"]:
        return "%llguidance {}\nstart: " + head
    languages = " | ".join(json.dumps(lang) for lang in requested_languages(query))
    return ("%llguidance {}\nstart: head \"\\n```\" lang \"\\n\" body \"```\"\n"
            f"head: {head}\nlang: {languages}\nbody: /[^`]+/\n")


def split_reply(text: str) -> tuple[str, str | None, str | None]:
    """(JSON head, artifact language, artifact) of a reply made under `reply_grammar`."""
    head, fence, rest = text.partition("\n```")
    if not fence:
        return text, None, None
    language, _, body = rest.partition("\n")
    return head, language.strip() or None, body.removesuffix("```").strip("\n")


def parse_json(text: str | None) -> dict[str, Any]:
    """A constrained reply is JSON unless generation hit the token limit; then it is not."""
    try:
        value = json.loads(text or "")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _closed(schema: Any) -> Any:
    """Every object of `schema` with ``additionalProperties: false``: llguidance follows JSON
    Schema's default (extra keys allowed), and a small model then invents keys until it runs out."""
    if isinstance(schema, dict):
        closed = {key: _closed(value) for key, value in schema.items()}
        if schema.get("type") == "object":
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema
