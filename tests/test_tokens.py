"""Weight-free prompt rendering and counting equal the runtime's own, token for token."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_baseline.models import GGUF_MODELS, assemble_gguf, get_llm, get_spec
from memory_baseline.tokens import GGUFTokenizer, gguf_tokenizer

HISTORY = Path(__file__).resolve().parents[1] / "fixtures" / "history"


def _prompts() -> list[list[dict]]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(HISTORY.rglob("*")) if p.is_file()][:12]
    return [[{"role": "system", "content": "Answer from the history; cite [ids]."},
             {"role": "user", "content": text[:4000] + "\n\nQ: what's decided? 2024-07-15 é — ok"}]
            for text in texts] + [[{"role": "user", "content": "<|im_end|> special text, parsed"}]]


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(m for m in GGUF_MODELS if m != "qwen-1.5b"))
def test_rendering_and_counts_equal_the_runtime(model):
    tokenizer = gguf_tokenizer(model)
    llm = get_llm(model, n_ctx=8192)
    for messages in _prompts():
        assert tokenizer.render_chat(messages) == llm.render_chat(messages)
        assert tokenizer.count_chat_tokens(messages) == llm.count_chat_tokens(messages)
    assert tokenizer.tokenize("event log") == llm.tokenize("event log")


def test_the_vocabulary_sidecar_is_rebuilt_when_the_model_file_changes(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(assemble_gguf(get_spec("smollm2")).read_bytes())
    first = GGUFTokenizer(model).count_tokens("event log")
    sidecar = model.with_name("m.gguf.vocab.json")
    assert sidecar.is_file()
    sidecar.write_text("{not json", encoding="utf-8")
    assert GGUFTokenizer(model).count_tokens("event log") == first  # a broken sidecar is rebuilt
