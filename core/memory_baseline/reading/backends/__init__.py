"""The readers by name: two LLM backends and one without a model.

- ``qwen-1.5b`` (default), ``qwen-0.5b``, ``smollm2``: a GGUF model from
  `memory_baseline.models`, run in-process by xllamacpp at temperature 0 with a
  fixed seed; its own tokenizer and chat template count the prompt (`local_gguf`).
- ``ollama`` (model from `ReaderConfig.ollama_model`) or ``ollama:<model>``: a
  model on the Ollama server at ``OLLAMA_HOST``; the server counts the prompt
  (`ollama_server`).
- ``extractive``: no LLM; the sentences of the admitted passages that share the
  most content words with the question (`extractive`).
"""

from __future__ import annotations

from ...answer_cache import AnswerCache
from ...config import ReaderConfig
from ..answers import Reader, ReaderError
from .extractive import ExtractiveReader
from .local_gguf import LocalLLMReader
from .ollama_server import DEFAULT_OLLAMA_HOST, OllamaReader

__all__ = ["DEFAULT_OLLAMA_HOST", "READERS", "ExtractiveReader", "LocalLLMReader", "OllamaReader",
           "get_reader"]

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
    from ...models import GGUF_MODELS

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
