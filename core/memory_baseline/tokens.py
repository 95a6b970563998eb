"""Prompt rendering and token counting from a GGUF file's vocabulary, without its weights.

Context assembly asks "how many tokens is this prompt?" many times per question,
and `search` asks it without ever generating. Loading a 1.5B model (about 1 GB
of weights, seconds of start-up) only to count would make every search pay for a
reader it never uses. A GGUF file carries everything counting needs in its
metadata: the BPE vocabulary and merges, the token types (which tokens are
special), the pre-tokenizer name and the chat template. This module rebuilds
the tokenizer with the `tokenizers` library and renders the chat template with
Jinja, reading the metadata through `gguf` (memory-mapped: the tensor data is
never touched).

Equality with the runtime is a claim, so it is tested: tests/test_tokens.py
compares rendered prompts and counts with llama.cpp's own `/apply-template`
and `/tokenize` for every model in the catalogue on real prompts.

The pre-tokenizer expressions are llama.cpp's for the named pre-tokenizer
types (`llama-vocab.cpp`); a GGUF whose type is not listed here fails with one
line rather than counting wrongly.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

# llama.cpp's split expressions per `tokenizer.ggml.pre`, applied in order.
PRE_TOKENIZER_SPLITS: dict[str, tuple[str, ...]] = {
    "qwen2": (
        r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    "smollm": (
        r"\p{N}",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
    ),
}
# GGUF token types (gguf.TokenType): CONTROL and USER_DEFINED are matched as whole
# special tokens when a rendered chat prompt is tokenized (llama.cpp's parse_special).
_SPECIAL_TYPES = {3, 4}


class TokenizerError(ValueError):
    """The GGUF file's vocabulary cannot be rebuilt faithfully."""


@dataclass(frozen=True)
class _Vocabulary:
    tokenizer_json: str
    chat_template: str
    bos_token: str
    eos_token: str
    add_bos: bool


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def _read_vocabulary(model_path: Path) -> _Vocabulary:
    from gguf import GGUFReader  # deferred: only counting needs it

    reader = GGUFReader(str(model_path))
    model_type = _field(reader, "tokenizer.ggml.model")
    pre = _field(reader, "tokenizer.ggml.pre")
    if model_type != "gpt2" or pre not in PRE_TOKENIZER_SPLITS:
        raise TokenizerError(f"{model_path.name}: tokenizer {model_type}/{pre} is not supported for "
                             f"weight-free counting (known: gpt2 with {', '.join(PRE_TOKENIZER_SPLITS)})")
    tokens: list[str] = _field(reader, "tokenizer.ggml.tokens")
    types: list[int] = _field(reader, "tokenizer.ggml.token_type")
    merges: list[str] = _field(reader, "tokenizer.ggml.merges")
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for i, (t, kind) in enumerate(zip(tokens, types, strict=True)) if kind in _SPECIAL_TYPES
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            *({"type": "Split", "pattern": {"Regex": expression}, "behavior": "Isolated", "invert": False}
              for expression in PRE_TOKENIZER_SPLITS[pre]),
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        ]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [m.split(" ", 1) for m in merges]},
    }
    bos_id = _field(reader, "tokenizer.ggml.bos_token_id")
    eos_id = _field(reader, "tokenizer.ggml.eos_token_id")
    return _Vocabulary(
        tokenizer_json=json.dumps(document),
        chat_template=_field(reader, "tokenizer.chat_template", ""),
        bos_token=tokens[bos_id] if bos_id is not None else "",
        eos_token=tokens[eos_id] if eos_id is not None else "",
        add_bos=bool(_field(reader, "tokenizer.ggml.add_bos_token", False)),
    )


def _cached_vocabulary(model_path: Path) -> _Vocabulary:
    """The vocabulary, from a sidecar file written beside the model on first use.

    Reading 150k tokens and merges out of GGUF metadata takes seconds; the
    sidecar is valid for the exact file it was made from (size and mtime).
    """
    stat = model_path.stat()
    stamp = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "format": 1}
    sidecar = model_path.with_name(model_path.name + ".vocab.json")
    if sidecar.exists():
        try:
            document = json.loads(sidecar.read_text(encoding="utf-8"))
            if document.get("stamp") == stamp:
                return _Vocabulary(**document["vocabulary"])
        except (OSError, ValueError, TypeError, KeyError):
            pass  # unreadable or stale sidecar: rebuild it below
    vocabulary = _read_vocabulary(model_path)
    partial = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({"stamp": stamp, "vocabulary": asdict(vocabulary)}), encoding="utf-8")
    os.replace(partial, sidecar)  # atomic: a concurrent reader sees the old or the new file
    return vocabulary


class GGUFTokenizer:
    """The tokenizer and chat template of one GGUF model, weights left on disk."""

    def __init__(self, model_path: str | Path) -> None:
        import jinja2
        from tokenizers import Tokenizer

        vocabulary = _cached_vocabulary(Path(model_path))
        self._tokenizer = Tokenizer.from_str(vocabulary.tokenizer_json)
        environment = jinja2.Environment(trim_blocks=False, lstrip_blocks=False,
                                         undefined=jinja2.StrictUndefined,
                                         extensions=["jinja2.ext.loopcontrols"])
        environment.filters["tojson"] = lambda value, **_: json.dumps(value, ensure_ascii=False)
        self._template = environment.from_string(vocabulary.chat_template)
        self._bos = vocabulary.bos_token
        self._eos = vocabulary.eos_token
        self._add_bos = vocabulary.add_bos
        self._lock = threading.Lock()  # a Tokenizer is not documented as thread-safe

    def render_chat(self, messages: list[dict[str, Any]]) -> str:
        """The prompt text the model's chat template makes of `messages`, ending with the
        assistant generation prompt (as llama.cpp's `/apply-template` renders it)."""
        return self._template.render(messages=messages, add_generation_prompt=True, tools=None,
                                     bos_token=self._bos, eos_token=self._eos)

    def tokenize(self, text: str, *, add_special: bool = False) -> list[int]:
        """Token ids of `text`, special-token text parsed as the special token."""
        with self._lock:
            ids = self._tokenizer.encode(text, add_special_tokens=False).ids
        if add_special and self._add_bos:
            ids = [self._tokenizer.token_to_id(self._bos), *ids]
        return ids

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def count_chat_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens a chat of `messages` consumes in the runtime."""
        return len(self.tokenize(self.render_chat(messages), add_special=True))


@cache
def gguf_tokenizer(model: str) -> GGUFTokenizer:
    """The weight-free tokenizer of catalogue model `model`, built once per process."""
    from .models import assemble_gguf, get_spec

    return GGUFTokenizer(assemble_gguf(get_spec(model)))
