"""The Ollama backend: a chat model on an Ollama server (``OLLAMA_HOST``), through the `ollama` client.

The server renders its own chat template and counts the prompt; a constrained style's
schema goes to it as ``format``. Ollama has no grammars, so a ready grammar (itemised's
work answer) decodes free.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ...answer_cache import AnswerCache
from ...config import ReaderConfig
from ...context import Passage
from ..answers import Answer, ReaderError, no_evidence_answer
from ..generation import answer_cache, cached_or_generated, generation_settings, routed
from ..runner import Completion, run_style
from ..styles import check_style, style_messages
from ..templates import PROMPT_TEMPLATE_SHA256, template_sha256

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
        self.style = check_style(config.style, "ollama")
        if self.style != "plain":
            self.identity |= {"style": self.style, "style_template": template_sha256(self.style)}
        self._cache = answer_cache(config, cache)
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
        style, identity = routed(self.identity, self.style, query)
        if history and not passages:
            return no_evidence_answer(identity)
        messages = self.messages(query, passages, as_of, history=history)
        # Ollama would silently cut a prompt that does not fit; this refuses instead.
        settings = generation_settings(self.config, style, query, self.count_prompt_tokens(messages),
                                       "ollama reader")
        max_tokens = settings["max_tokens"]

        def complete(call_messages: list[dict], schema: dict | str | None) -> Completion:
            t0 = time.perf_counter()
            # Ollama takes a JSON schema as `format` and constrains decoding with it; it has no
            # grammars, so a ready grammar (itemised's work answer) decodes free.
            constraint = {"format": schema} if isinstance(schema, dict) else {}
            reply = self._call(self._client.chat, model=self.model, messages=call_messages,
                               options=self._options(max_tokens), **constraint)
            return Completion(
                text=reply.message.content or "", prompt_tokens=int(reply.prompt_eval_count or 0),
                completion_tokens=int(reply.eval_count or 0), seconds=time.perf_counter() - t0,
                prompt_seconds=(reply.prompt_eval_duration or 0) / 1e9,
                generation_seconds=(reply.eval_duration or 0) / 1e9,
                finish_reason=str(reply.done_reason or ""),
            )

        # Ollama renders its template server-side; the messages plus the template hash
        # in the identity pin the prompt exactly.
        prompt = json.dumps(messages, sort_keys=True, ensure_ascii=False)
        return cached_or_generated(
            self._cache, identity, prompt, settings, passages,
            lambda: run_style(style, complete, messages, query, passages, as_of), started,
            style=style)
