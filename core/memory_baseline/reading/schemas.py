"""The JSON shapes a structured reply is decoded under (`grammars` makes them llguidance grammars).

Evidence comes first, each item a source from an enum of the admitted ids with a
verbatim quote, so the model reads before it concludes and cannot cite an id it never
saw; then the answer; then, where the question is about an outcome, a status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .kinds import is_work_request, question_kind

STATUSES = ("decided", "proposed", "rejected", "superseded", "open", "done", "not-applicable")
MAX_EVIDENCE = 4
MAX_CLAIMS = 6
MAX_QUOTE_CHARS = 200  # a quote is a line or two, not the file
MAX_ANSWER_CHARS = 500


def answer_schema(source_ids: Sequence[str], query: str, *, focused: bool = False) -> dict[str, Any]:
    """Evidence (ids from the enum only), answer, status; artifact fields for a work request.

    `focused` (the focused style): a status only for an outcome question, and room for
    one evidence item per source on a where-question.
    """
    work = is_work_request(query)
    kind = question_kind(query)
    most = MAX_EVIDENCE + 2 if focused and kind == "where" else MAX_EVIDENCE
    # With no source at all (the no-memory control) the evidence list is the same field, empty.
    evidence: dict[str, Any] = {
        "type": "array", "minItems": 1, "maxItems": most,
        "items": {"type": "object",
                  "properties": {"source": {"enum": list(source_ids)},
                                 "quote": {"type": "string", "maxLength": MAX_QUOTE_CHARS}},
                  "required": ["source", "quote"]},
    } if source_ids else {"type": "array", "maxItems": 0}
    properties: dict[str, Any] = {
        "evidence": evidence,
        "answer": {"type": "string", "maxLength": 200 if work else MAX_ANSWER_CHARS},
    }
    if not work and (not focused or kind == "outcome"):  # an artifact has no outcome to classify
        properties["status"] = {"enum": list(STATUSES)}
    return {"type": "object", "properties": properties, "required": list(properties)}


def items_schema(source_ids: Sequence[str], query: str) -> dict[str, Any]:
    """The itemised reply to a question about promises: structured's evidence and answer, without
    an outcome status (the answer gives each item its own state). A first version asked for the
    items as fields (item, state, date), one list per source: the model left every list empty and
    put the items in its answer, so the fields only cost tokens."""
    schema = answer_schema(source_ids, query)
    schema["properties"].pop("status", None)
    schema["required"] = [key for key in schema["required"] if key != "status"]
    return schema


def claims_schema(source_ids: Sequence[str]) -> dict[str, Any]:
    """Two-step's first call: the claims that bear on the question, each quoted from its source."""
    return {
        "type": "object",
        "properties": {"claims": {
            "type": "array", "minItems": 1, "maxItems": MAX_CLAIMS,
            "items": {"type": "object",
                      "properties": {"source": {"enum": list(source_ids)},
                                     "quote": {"type": "string", "maxLength": MAX_QUOTE_CHARS},
                                     "claim": {"type": "string", "maxLength": MAX_QUOTE_CHARS}},
                      "required": ["source", "quote", "claim"]},
        }},
        "required": ["claims"],
    }
