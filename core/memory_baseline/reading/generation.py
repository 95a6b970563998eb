"""One LLM answer, whatever the backend: routing, settings, the answer cache, enforced citations.

Both LLM backends (`backends.local_gguf`, `backends.ollama_server`) answer the same way:
the question is routed to the style and identity that read it (`routed`), the call's
settings are fixed (`generation_settings`), and the style run is served from the answer
cache when the exact prompt was answered before by the same identity and settings
(`cached_or_generated`). A hit is marked `Answer.cached` and ``extra["cache"]``, costs
no model call, and keeps the original token counts. Either way the reply is rendered
(`rendering`) and its citations enforced (`citations`) on the way out, so a cached answer
is checked against the passages of the question asked now.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from ..answer_cache import AnswerCache, cache_key
from ..config import ReaderConfig
from ..context import Passage
from .answers import Answer, ReaderError, Usage, is_abstention
from .citations import check_citations
from .kinds import itemised_kind, routed_style
from .rendering import render
from .runner import StyleRun
from .styles import answer_allowance
from .templates import template_sha256


def routed(identity: dict, configured: str, query: str) -> tuple[str, dict]:
    """(style, identity) that read `query`: a routing style (itemised) hands the questions it does
    not read differently to structured, under structured's identity, so they are structured's
    answers, from the same cache entries."""
    style = routed_style(configured, query)
    kind = itemised_kind(query) if style == "itemised" else None
    if style == configured and kind is None:
        return style, identity
    return style, identity | {"style": style, "style_template": template_sha256(style, kind)}


def generation_settings(config: ReaderConfig, style: str, query: str, prompt_tokens: int,
                        who: str) -> dict[str, Any]:
    """Answer length, temperature and seed of one answer; refuse a prompt that leaves no room."""
    room = config.context_window - prompt_tokens
    if room < 1:
        raise ReaderError(f"{who}: the prompt needs {prompt_tokens} tokens, the context window "
                          f"holds {config.context_window}")
    return {"max_tokens": min(answer_allowance(style, query, config.max_answer_tokens), room),
            "temperature": config.temperature, "seed": config.seed}


def answer_cache(config: ReaderConfig, given: AnswerCache | None) -> AnswerCache | None:
    """The answer cache a reader uses: none when turned off, else `given` or the default folder."""
    if not config.cache:
        return None
    return given if given is not None else AnswerCache()


def answer_from(
    generation: StyleRun, passages: Sequence[Passage], identity: dict, *, cached: bool,
    seconds: float, cache_info: dict, style: str = "plain",
) -> Answer:
    rendered = render(style, generation.raw_text, passages)
    checked = check_citations(rendered.text, passages, enforce=True)
    text = checked.text.strip()
    extra: dict[str, Any] = {"raw_text": generation.raw_text, "finish_reason": generation.finish_reason,
                             "cache": cache_info, **rendered.extra}
    if generation.cached_prompt_tokens:  # of prompt_tokens, read from the prefix cache when generated
        extra["cached_prompt_tokens"] = generation.cached_prompt_tokens
    if checked.unknown:
        extra["removed_citations"] = list(checked.unknown)
    if checked.resolved:
        extra["resolved_citations"] = dict(checked.resolved)
    if cached:
        # Tokens describe the answer and stay; no model ran, so no call and no model time.
        usage = Usage(generation.prompt_tokens, generation.completion_tokens, calls=0, seconds=seconds)
    else:
        usage = Usage(generation.prompt_tokens, generation.completion_tokens, calls=generation.calls,
                      seconds=seconds,
                      prompt_seconds=generation.prompt_seconds,
                      generation_seconds=generation.generation_seconds)
    return Answer(
        text=text, citations=checked.citations, unknown_citations=checked.unknown,
        abstained=is_abstention(text), usage=usage, reader=identity, cached=cached, extra=extra,
    )


def cached_or_generated(
    cache_store: AnswerCache | None, identity: dict, prompt: str, settings: dict,
    passages: Sequence[Passage], generate: Callable[[], StyleRun], started: float,
    style: str = "plain",
) -> Answer:
    """Serve the answer from the cache when the exact prompt was answered before, else generate."""
    if cache_store is None:
        generation = generate()
        return answer_from(generation, passages, identity, cached=False,
                           seconds=time.perf_counter() - started, cache_info={"enabled": False},
                           style=style)
    key = cache_key(identity, prompt, settings)
    record = cache_store.get(key, prompt)
    try:
        generation = StyleRun(**record["generation"]) if record is not None else None
    except (KeyError, TypeError):
        generation = None  # a record of another shape is a miss; the put below replaces it
    if generation is not None:
        info = {"enabled": True, "hit": True, "key": key, "layer": record.get("layer"),
                "original_seconds": round(generation.seconds, 4), "original_calls": generation.calls}
        return answer_from(generation, passages, identity, cached=True,
                           seconds=time.perf_counter() - started, cache_info=info, style=style)
    cache_store.before_computing(key)
    generation = generate()
    cache_store.put(key, prompt, {"reader": identity, "settings": settings,
                                  "generation": asdict(generation)})
    return answer_from(generation, passages, identity, cached=False,
                       seconds=time.perf_counter() - started,
                       cache_info={"enabled": True, "hit": False, "key": key}, style=style)
