"""The llama.cpp backend: a GGUF model from `memory_baseline.models`, run in-process by xllamacpp.

Decoding is greedy (temperature 0 by default) with a fixed seed, so the same prompt
gives the same answer; the model's own tokenizer and chat template count the prompt,
and a constrained style's schema is handed to the runtime as an llguidance grammar.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ...answer_cache import AnswerCache
from ...config import ReaderConfig
from ...context import Passage
from ..answers import Answer, ReaderError, no_evidence_answer
from ..generation import answer_cache, cached_or_generated, generation_settings, routed
from ..grammars import reply_grammar
from ..runner import Completion, run_style
from ..styles import check_style, style_messages
from ..templates import PROMPT_TEMPLATE_SHA256, template_sha256


class LocalLLMReader:
    """A GGUF model run in-process by xllamacpp; its tokenizer counts the prompt.

    The model loads on first use and is shared with every other stage of the
    process (`models.get_llm`). Decoding is greedy (temperature 0 by default)
    with a fixed seed, so the same prompt gives the same answer.
    """

    def __init__(self, config: ReaderConfig, model: str, *, cache: AnswerCache | None = None) -> None:
        from ...models import assemble_gguf, get_spec, model_identity

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
        self.style = check_style(config.style, model)
        if self.style != "plain":  # the plain identity stays as it was, so its cached answers still hit
            self.identity |= {"style": self.style, "style_template": template_sha256(self.style)}
        if config.prefix_cache:  # a warm read may differ from a cold one (models.LocalLLM)
            self.identity |= {"prefix_cache": True}
        self._cache = answer_cache(config, cache)
        # Receives the model's text as it is generated (a terminal's `ask`); None: not streamed.
        self.on_text: Callable[[str], None] | None = None

    @property
    def llm(self):
        from ...models import get_llm

        # Threads apply to the first load of the model in this process only.
        return get_llm(self.model, n_ctx=self.config.context_window,
                       n_threads=self.config.threads or None)

    @property
    def tokenizer(self):
        """The model's vocabulary and chat template, without its weights (`memory_baseline.tokens`):
        counting, rendering and cache hits never load the model."""
        from ...tokens import gguf_tokenizer

        return gguf_tokenizer(self.model)

    def count_prompt_tokens(self, messages: list[dict]) -> int:
        return self.tokenizer.count_chat_tokens(messages)

    def messages(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
        return style_messages(self.style, query, passages, as_of, history=history)

    def answer(self, query: str, passages: Sequence[Passage], as_of: str | None, *,
               history: bool = True) -> Answer:
        started = time.perf_counter()
        style, identity = routed(self.identity, self.style, query)
        if history and not passages:
            return no_evidence_answer(identity)
        messages = self.messages(query, passages, as_of, history=history)
        tokenizer = self.tokenizer
        prompt = tokenizer.render_chat(messages)
        settings = generation_settings(self.config, style, query, tokenizer.count_chat_tokens(messages),
                                       f"reader {self.model}")

        def complete(call_messages: list[dict], schema: dict | str | None) -> Completion:
            max_tokens = settings["max_tokens"]
            if call_messages is not messages:  # a two-step read's second prompt, not yet counted
                left = self.config.context_window - tokenizer.count_chat_tokens(call_messages)
                if left < 1:
                    raise ReaderError(f"reader {self.model}: a {style} prompt does not fit the "
                                      f"context window of {self.config.context_window} tokens")
                max_tokens = min(max_tokens, left)
            grammar = schema if isinstance(schema, str) or schema is None else \
                reply_grammar(schema, query)
            done = self.llm.chat(call_messages, **{**settings, "max_tokens": max_tokens}, grammar=grammar,
                                 reuse_prefix=self.config.prefix_cache, on_text=self.on_text)
            return Completion(done.text, done.prompt_tokens, done.completion_tokens, done.seconds,
                              done.prompt_seconds, done.generation_seconds, done.finish_reason,
                              done.cached_prompt_tokens)

        return cached_or_generated(
            self._cache, identity, prompt, settings, passages,
            lambda: run_style(style, complete, messages, query, passages, as_of), started,
            style=style)
