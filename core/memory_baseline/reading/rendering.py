"""How a style's reply becomes the answer text, and whether its quotes occur in its sources.

The answer text of the structured styles is rendered from the fields:
``Status: <status>. <answer> [ids]`` plus a fenced block for an artifact. The
quotes stay in ``extra["evidence"]`` (each marked verified when it occurs in
the cited passage, whitespace and case ignored) and are not part of the
scored text, so a grader's phrase check cannot pass on a quote the model
merely copied. Citations come from the schema's enum: an id the reader never
saw cannot be produced at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..context import Passage
from .answers import INSUFFICIENT
from .grammars import parse_json, split_reply

_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def quote_verified(quote: str, source_id: str, passages: Sequence[Passage]) -> bool:
    wanted = _normal(quote)
    return bool(wanted) and any(wanted in _normal(p.text) for p in passages if p.source_id == source_id)


@dataclass(frozen=True)
class Rendered:
    text: str
    extra: dict[str, Any]


def render(style: str, raw_text: str, passages: Sequence[Passage]) -> Rendered:
    """The answer text of a reply: free text as is; structured fields as prose plus a code block."""
    if style in ("plain", "dated"):
        return Rendered(raw_text, {})
    if style == "itemised" and not raw_text.lstrip().startswith("{"):
        return Rendered(raw_text, {"kind": "work"})  # a work request's free text and its block
    extra: dict[str, Any] = {}
    if style == "two-step":
        both = parse_json(raw_text)
        claims = parse_json(both.get("claims")).get("claims") or []
        extra["claims"] = [{**c, "verified": quote_verified(str(c.get("quote", "")), c.get("source", ""),
                                                           passages)}
                           for c in claims if isinstance(c, dict)]
        if both.get("answer") is None:
            return Rendered(f"{INSUFFICIENT}.", extra | {"no_claims": True})
        raw_text = both["answer"]
    head, language, artifact = split_reply(raw_text)
    reply = parse_json(head)
    if not reply:
        extra["unparsed_reply"] = True  # cut off by the token limit: keep nothing unchecked
        return Rendered(f"{INSUFFICIENT}.", extra)
    evidence = [e for e in reply.get("evidence") or [] if isinstance(e, dict)]
    extra["evidence"] = [{"source": e.get("source"), "quote": e.get("quote"),
                          "verified": quote_verified(str(e.get("quote", "")), e.get("source", ""), passages)}
                         for e in evidence]
    status = reply.get("status")
    extra["status"] = status
    # Code belongs in the artifact; a fence opened inside the answer (and cut by its length
    # limit) would swallow the artifact's own fence.
    answer = str(reply.get("answer") or "").split("```", 1)[0].strip()
    if artifact is not None:  # a work request: its prose is the first line only
        answer = answer.splitlines()[0] if answer else answer
    answer = answer.rstrip(":").strip()
    if not answer or INSUFFICIENT in answer.lower():
        return Rendered(f"{INSUFFICIENT}.", extra)
    cited = list(dict.fromkeys(str(e.get("source")) for e in evidence if e.get("source")))
    missing = [c for c in cited if f"[{c}]" not in answer]
    text = answer + (f" [{', '.join(missing)}]" if missing else "")
    if status and status != "not-applicable":
        text = f"Status: {status}. {text}"
    if artifact and artifact.strip():
        text += f"\n\n```{language or ''}\n{artifact.rstrip()}\n```"
    return Rendered(text, extra)
