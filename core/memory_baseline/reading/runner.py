"""Running a style: which constraint each call is decoded under, and two-step's second call.

The backend supplies one function, `Complete`, that makes a single model call; the
runner decides the calls. Its result, `StyleRun`, is what the answer cache stores, so
its fields are a stored format: a cached record of an older shape must still load.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..context import Passage
from .grammars import parse_json, work_grammar
from .kinds import is_work_request, itemised_kind, routed_style
from .prompts import SYSTEM_DATED, answer_ask, ordered_for_reading, render_dated_passage
from .schemas import answer_schema, claims_schema, items_schema


@dataclass(frozen=True)
class Completion:
    """One constrained or free model call, as a style sees it."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    prompt_seconds: float
    generation_seconds: float
    finish_reason: str
    cached_prompt_tokens: int = 0  # prompt tokens whose state the runtime reused (prefix cache)


# complete(messages, constraint) -> Completion; the reader supplies settings. The constraint is
# a JSON schema (made into `reply_grammar`), a ready llguidance grammar (a str), or None (free).
Complete = Callable[[list[dict], dict[str, Any] | str | None], Completion]


@dataclass(frozen=True)
class StyleRun:
    """What a style produced: the raw replies and their summed cost; the answer cache stores it."""

    raw_text: str  # the reply; for two-step a JSON object {"claims": ..., "answer": ...}
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    prompt_seconds: float
    generation_seconds: float
    finish_reason: str
    calls: int = 1  # records cached before two-step existed have no count: they made one call
    cached_prompt_tokens: int = 0  # of prompt_tokens, reused from the prefix cache (none before it)


def _claims_messages(query: str, claims: list[dict], passages: Sequence[Passage], as_of: str | None,
                     ) -> list[dict]:
    dates = {p.source_id: p.artifact_date for p in passages}
    ordered = sorted(claims, key=lambda c: (dates.get(c["source"]) is None, dates.get(c["source"]) or ""))
    lines = [f"- ({dates.get(c['source']) or 'undated'}) [{c['source']}] {c['claim'].strip()} "
             f"(quote: \"{c['quote'].strip()}\")" for c in ordered]
    parts = []
    if as_of:
        parts.append(f"Today is {as_of}. Answer as of {as_of}.")
    parts.append("Claims extracted from the project's sources (oldest first):\n" + "\n".join(lines))
    if is_work_request(query):
        parts.append("Sources:\n\n" + "\n\n".join(render_dated_passage(p)
                                                 for p in ordered_for_reading(passages, as_of)))
    parts.append(f"Question{f' (as of {as_of})' if as_of else ''}: {query.strip()}")
    parts.append(answer_ask(query))
    return [{"role": "system", "content": SYSTEM_DATED}, {"role": "user", "content": "\n\n".join(parts)}]


def run_style(style: str, complete: Complete, messages: list[dict], query: str,
              passages: Sequence[Passage], as_of: str | None) -> StyleRun:
    """Ask the model in `style`, starting from `messages` (the reader's first prompt, which it has
    already built and counted); the caller renders `raw_text` with `render`."""
    style = routed_style(style, query)
    if style in ("plain", "dated"):
        return single(complete(messages, None))
    ids = list(dict.fromkeys(p.source_id for p in passages))
    # No passages reach here only without history (readers abstain otherwise); two-step then
    # asks its answer step alone (see messages_for).
    if style == "structured" or (style == "two-step" and not passages):
        return single(complete(messages, answer_schema(ids, query)))
    if style == "focused":
        return single(complete(messages, answer_schema(ids, query, focused=True)))
    if style == "itemised":
        if itemised_kind(query) == "work":
            return single(complete(messages, work_grammar(query, ids)))
        return single(complete(messages, items_schema(ids, query)))
    first = complete(messages, claims_schema(ids))
    claims = parse_json(first.text).get("claims") or []
    claims = [c for c in claims if isinstance(c, dict) and c.get("source") in ids]
    if not claims:  # a cut-off or empty extraction: no second call
        return StyleRun(json.dumps({"claims": first.text, "answer": None}), first.prompt_tokens,
                        first.completion_tokens, first.seconds, first.prompt_seconds,
                        first.generation_seconds, first.finish_reason, calls=1,
                        cached_prompt_tokens=first.cached_prompt_tokens)
    claimed = list(dict.fromkeys(c["source"] for c in claims))
    second = complete(_claims_messages(query, claims, passages, as_of), answer_schema(claimed, query))
    return StyleRun(
        json.dumps({"claims": first.text, "answer": second.text}),
        first.prompt_tokens + second.prompt_tokens, first.completion_tokens + second.completion_tokens,
        first.seconds + second.seconds, first.prompt_seconds + second.prompt_seconds,
        first.generation_seconds + second.generation_seconds, second.finish_reason, calls=2,
        cached_prompt_tokens=first.cached_prompt_tokens + second.cached_prompt_tokens,
    )


def single(completion: Completion) -> StyleRun:
    return StyleRun(completion.text, completion.prompt_tokens, completion.completion_tokens,
                    completion.seconds, completion.prompt_seconds, completion.generation_seconds,
                    completion.finish_reason, calls=1,
                    cached_prompt_tokens=completion.cached_prompt_tokens)
