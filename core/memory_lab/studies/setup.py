"""Study plumbing: book-relative paths, study run directories, corpora, worlds, task subsets, readers."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.config import Config
from memory_baseline.hashing import file_digest
from memory_baseline.jsonable import jsonable
from memory_baseline.reading import Reader, get_reader
from memory_baseline.refresh import SyncReport, sync
from memory_instrument import Task, load_tasks, write_task_file
from memory_lab.book.paths import project_root
from memory_lab.runs import corpus_digest, finish_run, start_run, write_json

RETRIEVAL_STAGES = ("lexical", "dense", "fused", "reranked")


class StudyError(ValueError):
    """A study was asked for something it cannot measure (bad parameter, missing input)."""


# -- paths, versions, digests ---------------------------------------------------------


def repo_path(path: str | Path) -> Path:
    """An absolute path; a relative one is taken from the book root (`paths.project_root`).

    Papermill runs each chapter with its output folder as the working directory, so
    a parameter such as `fixtures/history` must not depend on where the kernel runs.
    """
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else (project_root() / candidate).resolve()


def display_path(path: str | Path) -> str:
    """A path as the book shows it: relative to the book root when it lies inside it."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(project_root()).as_posix()
    except ValueError:
        return str(resolved)


# -- study run directories ---------------------------------------------------------------


@dataclass
class StudyRun:
    """One study's run directory; the manifest is written at start and completed at finish."""

    study: str
    run_dir: Path
    manifest: dict[str, Any]
    tables: dict[str, Path] = field(default_factory=dict)

    @property
    def manifest_path(self) -> Path:
        return self.run_dir / "manifest.json"

    @property
    def name(self) -> str:
        return display_path(self.run_dir)

    def caption(self, text: str) -> str:
        """A caption that names the run directory the figure or table came from."""
        return run_caption(self.run_dir, text)

    def record(self, key: str, value: Any) -> None:
        """Add a fact (a configuration, a model identity) to the manifest now."""
        self.manifest[key] = jsonable(value, path=display_path)
        self._write()

    def write_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> Path:
        """Write rows as `<name>.csv` in the run directory (columns: union, first-seen order)."""
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        path = self.run_dir / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(columns))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _cell(v) for k, v in row.items()})
        self.tables[name] = path
        self.manifest["tables"] = sorted(p.name for p in self.tables.values())
        self._write()
        return path

    def finish(self, **facts: Any) -> None:
        finish_run(self.run_dir, self.manifest, **jsonable(facts, path=display_path))

    def _write(self) -> None:
        write_json(self.manifest_path, self.manifest)


def _cell(value: Any) -> Any:
    if isinstance(value, list | tuple | dict):
        return json.dumps(jsonable(value, path=display_path), ensure_ascii=False)
    return value


def start_study(
    runs_root: str | Path, study: str, parameters: Mapping[str, Any],
    *, corpora: Mapping[str, str | Path] | None = None, tasks_path: str | Path | None = None,
) -> StudyRun:
    """Create a fresh run directory for `study`; an existing one is never reused."""
    facts: dict[str, Any] = {
        "study": study,
        "parameters": jsonable(dict(parameters), path=display_path),
        "corpora": {name: {"path": display_path(path), "digest": corpus_digest(path)}
                    for name, path in (corpora or {}).items()},
    }
    if tasks_path is not None:
        facts["tasks"] = {"path": display_path(tasks_path), "sha256": file_digest(tasks_path)}
    run_dir, manifest = start_run(repo_path(runs_root), "study", prefix=f"{study}-", **facts)
    return StudyRun(study, run_dir, manifest)


# -- corpora, worlds, indexes, tasks ---------------------------------------------------


@dataclass(frozen=True)
class World:
    """A generated world on disk: the corpus a system may read and the instrument's tasks."""

    root: Path
    history: Path
    tasks_path: Path
    digest: str


def prepare_world(
    worlds_root: str | Path, *, seed: int, docs: int, long_session_share: float = 0.3,
) -> World:
    """Generate a controlled world once (deterministic from its parameters) and reuse it after."""
    from memory_instrument.world import WorldParams, generate_world, world_digest

    root = repo_path(worlds_root) / f"world-s{seed}-d{docs}-l{round(long_session_share * 100)}"
    if not (root / "tasks.json").is_file():
        if root.exists():
            # A half-written world from an interrupted run; generation needs an empty folder.
            for path in sorted(root.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
        generate_world(WorldParams(seed=seed, docs=docs, long_session_share=long_session_share), root)
    return World(root=root, history=root / "history", tasks_path=root / "tasks.json",
                 digest=world_digest(root))


def index_corpus(conn: psycopg.Connection, config: Config, corpus_dir: str | Path,
                 *, progress: bool = False) -> SyncReport:
    """Bring `config.index` in line with `corpus_dir` (a no-op when nothing changed).

    A study's index is a disposable mirror of the corpus its parameters name, so it
    follows that corpus wholesale (`prune`): rerunning a chapter with another world
    size or seed replaces the sources a previous run left. The removal guard exists
    to protect a user's index from a mistyped path; here the path comes from the
    study, and refusing would only leave the index describing a corpus nobody asked for.
    """
    root = repo_path(corpus_dir)
    if not root.is_dir():
        raise StudyError(f"corpus folder {root} does not exist")
    return sync(conn, config, str(root), remove_missing=True, prune=True, progress=progress)


def load_task_subset(
    tasks_path: str | Path, *, limit: int | None = None, question_types: Iterable[str] | None = None,
    needs_sources: bool = False, needs_evidence: bool = False,
) -> list[Task]:
    """Tasks from a file, filtered, and spread over question types when `limit` cuts them.

    Taking the first `limit` tasks would often give one question type only; a
    round-robin over types keeps a small subset representative.
    """
    wanted = set(question_types) if question_types else None
    tasks = [t for t in load_tasks(repo_path(tasks_path))
             if (wanted is None or t.question_type in wanted)
             and (not needs_sources or t.expected_sources)
             and (not needs_evidence or t.answer.evidence)]
    if limit is None or limit >= len(tasks):
        return tasks
    return _spread(tasks, limit, lambda t: t.question_type)


def _spread(tasks: Sequence[Task], limit: int, group_of: Callable[[Task], Any]) -> list[Task]:
    """`limit` tasks taken round-robin over the groups `group_of` makes, in file order."""
    groups: dict[Any, list[Task]] = {}
    for task in tasks:
        groups.setdefault(group_of(task), []).append(task)
    chosen: list[Task] = []
    while len(chosen) < limit:
        for group in groups.values():
            if group and len(chosen) < limit:
                chosen.append(group.pop(0))
    order = {t.id: i for i, t in enumerate(tasks)}
    return sorted(chosen, key=lambda t: order[t.id])


def write_task_subset(tasks_path: str | Path, out_dir: str | Path, *, limit: int | None) -> Path:
    """A task file holding a spread subset (every question type and split), outside any corpus.

    Used when a smoke run can afford a dozen tasks: the first dozen of a file would be
    one question type, and a ladder needs every type and some `dev` tasks to tune on.
    """
    tasks = load_task_subset(tasks_path)
    if limit is not None and limit < len(tasks):
        tasks = _spread(tasks, limit, lambda t: (t.question_type, t.metadata.get("split")))
    digest = hashlib.sha256("\n".join(t.id for t in tasks).encode()).hexdigest()[:10]
    # write_task_file copies the harnesses the tasks name, so the subset's downstream
    # tasks are judged as they are in the full file.
    return write_task_file(tasks, repo_path(out_dir) / f"tasks-{len(tasks)}-{digest}.json")


def reader_for(name: str, config: Config) -> Reader:
    return get_reader(config.with_overrides(reader={"name": name}).reader)


CAPTION_SOURCE = "Source: run `{run}` (`manifest.json` there)."


def run_caption(run_dir: str | Path, text: str) -> str:
    """A caption naming a run directory (a study's, or one written by evaluation or BEIR)."""
    return f"{text.rstrip('.')}. {CAPTION_SOURCE.format(run=display_path(run_dir))}"
