"""The one bridge between a system and the instrument: what a system reports per task.

A system's adapter builds a `SystemOutput`; the instrument scores it. Stage names
are fixed so that "recall at admitted" means the same thing in every condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# Pipeline stages in flow order. A condition reports only the stages it has:
# one without retrieval (oracle, full-history, no-memory) has no candidates/reranked.
STAGES: tuple[str, ...] = ("candidates", "reranked", "admitted", "cited")


class OutputError(ValueError):
    """A SystemOutput (or its dict form) is malformed."""


@dataclass(frozen=True)
class Passage:
    """A passage the reader actually saw."""

    source_id: str
    chunk_id: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"source_id": self.source_id, "chunk_id": self.chunk_id, "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Passage:
        _refuse_unknown(data, cls, "passage")
        try:
            return cls(
                source_id=str(data["source_id"]), chunk_id=str(data["chunk_id"]), text=data["text"]
            )
        except KeyError as exc:
            raise OutputError(f"passage: field '{exc.args[0]}' is required") from exc


@dataclass(frozen=True)
class SystemOutput:
    """Everything a system reports for one task under one condition."""

    task_id: str
    condition: str
    answer: str
    abstained: bool
    stages: dict[str, list[str]] = field(default_factory=dict)
    admitted_passages: list[Passage] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    # As reported by the system; the instrument recomputes this and never trusts it.
    unknown_citations: list[str] = field(default_factory=list)
    artifact: str | None = None
    usage: dict[str, float] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"output for task '{self.task_id}' ({self.condition})"
        unknown = [name for name in self.stages if name not in STAGES]
        if unknown:
            raise OutputError(
                f"{where}: unknown stage '{unknown[0]}' (stages are {', '.join(STAGES)})"
            )
        for name, ranked in self.stages.items():
            if not isinstance(ranked, list) or not all(isinstance(s, str) for s in ranked):
                raise OutputError(f"{where}: stage '{name}' must be a list of source ids")
        if not isinstance(self.abstained, bool):
            raise OutputError(f"{where}: field 'abstained' must be a bool")
        if not isinstance(self.answer, str):
            raise OutputError(f"{where}: field 'answer' must be a string")
        if not all(isinstance(p, Passage) for p in self.admitted_passages):
            raise OutputError(f"{where}: field 'admitted_passages' must hold Passage objects")

    @property
    def admitted_sources(self) -> list[str]:
        """Source ids of the passages the reader saw, first-seen order, without repeats."""
        return list(dict.fromkeys(p.source_id for p in self.admitted_passages))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "condition": self.condition,
            "answer": self.answer,
            "abstained": self.abstained,
            "stages": {name: list(ids) for name, ids in self.stages.items()},
            "admitted_passages": [p.to_dict() for p in self.admitted_passages],
            "citations": list(self.citations),
            "unknown_citations": list(self.unknown_citations),
            "artifact": self.artifact,
            "usage": dict(self.usage),
            "timings_ms": dict(self.timings_ms),
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemOutput:
        _refuse_unknown(data, cls, "system output")
        missing = [k for k in ("task_id", "condition", "answer", "abstained") if k not in data]
        if missing:
            raise OutputError(f"system output: field '{missing[0]}' is required")
        return cls(
            task_id=data["task_id"],
            condition=data["condition"],
            answer=data["answer"],
            abstained=data["abstained"],
            stages={name: list(ids) for name, ids in data.get("stages", {}).items()},
            admitted_passages=[Passage.from_dict(p) for p in data.get("admitted_passages", [])],
            citations=list(data.get("citations", [])),
            unknown_citations=list(data.get("unknown_citations", [])),
            artifact=data.get("artifact"),
            usage=dict(data.get("usage", {})),
            timings_ms=dict(data.get("timings_ms", {})),
            metadata=dict(data.get("metadata", {})),
        )


def _refuse_unknown(data: Any, cls: type, what: str) -> None:
    if not isinstance(data, dict):
        raise OutputError(f"{what}: expected an object, got {type(data).__name__}")
    allowed = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise OutputError(f"{what}: unknown field '{unknown[0]}'")
