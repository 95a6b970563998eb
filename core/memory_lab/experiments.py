"""The studies behind the book's chapters: each one measures, returns plain rows, and records itself.

The notebooks hold narrative, parameters, tables and figures; the measuring lives
here so it can be read, tested and rerun without a notebook. Every study writes a
run directory of its own (`<runs_root>/<study>-<UTC time>-<random>/`) holding a
`manifest.json` (code version, corpus digests, model identities, the effective
configuration of every variant, parameters, start and end times) and one CSV per
table, and a figure or table in the book names that directory in its caption.
Ladder runs (chapter 7) are written by `memory_lab.evaluation` instead.

Stages are compared the way the instrument compares them: at source level, with
`memory_instrument.stage_metrics`, so "recall at k" means the same thing here as
in a scorecard.
"""

from __future__ import annotations

import csv
import hashlib
import json
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.chunking import CHUNKER_VERSIONS, chunk_text
from memory_baseline.config import ChunkingConfig, Config
from memory_baseline.context import ContextTrace, Passage
from memory_baseline.health import check_health
from memory_baseline.ingest import discover
from memory_baseline.readers import Reader, get_reader
from memory_baseline.refresh import SyncReport, sync
from memory_baseline.representation import representation_id
from memory_baseline.retrieval import RetrievalResult
from memory_baseline.store import HNSW_INDEX, Store
from memory_instrument import Task, load_tasks, stage_metrics, write_task_file

# The chapters build their sweeps from the registry through this module (`ex.fusion_variants`).
from .conditions import (  # noqa: F401
    context_variants,
    fusion_variants,
    rerank_variants,
    sweep_factor,
)
from .paths import project_root
from .runs import corpus_digest, file_digest, finish_run, start_run, write_json

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


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return display_path(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "to_dict"):
        return _jsonable(value.to_dict())
    return value


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
        self.manifest[key] = _jsonable(value)
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
        finish_run(self.run_dir, self.manifest, **_jsonable(facts))

    def _write(self) -> None:
        write_json(self.manifest_path, self.manifest)


def _cell(value: Any) -> Any:
    if isinstance(value, list | tuple | dict):
        return json.dumps(_jsonable(value), ensure_ascii=False)
    return value


def start_study(
    runs_root: str | Path, study: str, parameters: Mapping[str, Any],
    *, corpora: Mapping[str, str | Path] | None = None, tasks_path: str | Path | None = None,
) -> StudyRun:
    """Create a fresh run directory for `study`; an existing one is never reused."""
    facts: dict[str, Any] = {
        "study": study,
        "parameters": _jsonable(dict(parameters)),
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
    """Bring `config.index` in line with `corpus_dir` (a no-op when nothing changed)."""
    root = repo_path(corpus_dir)
    if not root.is_dir():
        raise StudyError(f"corpus folder {root} does not exist")
    return sync(conn, config, str(root), remove_missing=True, progress=progress)


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


# -- tables and figures in the book ---------------------------------------------------------


def table_frame(rows: Sequence[Mapping[str, Any]] | Any, columns: Sequence[str] | None = None) -> Any:
    """Rows as a pandas DataFrame of the values as they are (no dtype coercion).

    Columns are the union of the rows' keys in first-seen order, or `columns`. The
    frame holds Python objects, so an integer column with a gap stays integers and
    a missing value stays None, and the table shows each value as it was computed.
    A DataFrame passed in is returned as it is (restricted to `columns`).
    """
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        return rows[list(columns)] if columns else rows
    cols = list(columns) if columns else list(dict.fromkeys(k for row in rows for k in row))
    return pd.DataFrame([[row.get(c) for c in cols] for row in rows], columns=cols, dtype=object)


def pivot(rows: Sequence[Mapping[str, Any]] | Any, index: str | Sequence[str], columns: str,
          values: str, *, row_order: Sequence[Any] | None = None,
          column_order: Sequence[str] | None = None) -> Any:
    """A long table turned the way one reads it: one row per `index`, one column per `columns` value.

    pandas does the pivot (each cell is the one value of its row and column; a
    duplicate is an error, not an average). Rows and columns keep the order in which
    they first appear; `row_order` gives exactly the rows to show (one with no
    values shows "–"), `column_order` the columns to put first.
    """
    frame = table_frame(rows)
    keys = [index] if isinstance(index, str) else list(index)
    wide = frame.pivot(index=keys, columns=columns, values=values)
    first_rows = list(dict.fromkeys(tuple(r) if len(keys) > 1 else r[0]
                                    for r in frame[keys].itertuples(index=False)))
    seen = list(dict.fromkeys(frame[columns]))
    named = [c for c in (column_order or []) if c in seen]
    wide = wide.reindex(index=list(row_order) if row_order is not None else first_rows,
                        columns=named + [c for c in seen if c not in named])
    wide.columns.name = None
    return wide.astype(object).where(wide.notna(), None)


def table_html(frame: Any, digits: int = 3) -> str:
    """A DataFrame as an HTML table that scrolls sideways instead of being clipped.

    `Styler.format` shows floats with `digits` decimals, integers and text as they
    are, and a missing value as "–". A named index (the rows of a pivot) becomes the
    leading columns, so the table has one header row; a plain 0..n-1 index is not
    shown. Styler's random ids and style block are left out (`exclude_styles`), so
    the same table renders to the same HTML (nbval compares the executed notebooks
    output by output); the book's stylesheet (`_static/tables.css`) styles the wrapper.
    """
    if any(name is not None for name in frame.index.names):
        frame = frame.reset_index()
    styler = frame.style.format(precision=digits, na_rep="–", escape="html").hide(axis="index")
    return f'<div class="memory-table-scroll">\n{styler.to_html(exclude_styles=True)}</div>'


def show_table(rows: Sequence[Mapping[str, Any]] | Any, caption: str,
               columns: Sequence[str] | None = None, digits: int = 3) -> None:
    """Display rows (or a DataFrame) as a scrolling HTML table, with its caption under it.

    The caption is Markdown of its own, so it names its run directory the way every
    caption does (`CAPTION_SOURCE`), which `book.runs_named` reads back.
    """
    from IPython.display import HTML, Markdown, display

    frame = table_frame(rows, columns)
    if frame.empty:
        display(Markdown(f"*(no rows)*\n\n*{caption}*"))
        return
    display(HTML(table_html(frame, digits)))
    display(Markdown(f"*{caption}*"))


def show_figure(fig: Any, caption: str, *, run_name: str, save_as: Path | None = None) -> None:
    """Display a figure with the run that produced it written on it and under it.

    The run name is drawn into the image itself, so a figure copied out of the book
    still says where it came from; `save_as` keeps a PNG copy in the run directory.
    """
    from IPython.display import Markdown, display

    fig.text(0.005, 0.005, f"run: {run_name}", fontsize=7, color="0.35", ha="left", va="bottom")
    if save_as is not None:
        fig.savefig(save_as, dpi=110, bbox_inches="tight")
    display(fig)
    import matplotlib.pyplot as plt

    plt.close(fig)
    display(Markdown(f"*{caption}*"))


# How every caption names its run; `book.runs_named` reads it back to publish those runs.
CAPTION_SOURCE = "Source: run `{run}` (`manifest.json` there)."


def run_caption(run_dir: str | Path, text: str) -> str:
    """A caption naming a run directory (a study's, or one written by evaluation or BEIR)."""
    return f"{text.rstrip('.')}. {CAPTION_SOURCE.format(run=display_path(run_dir))}"


def summarise(rows: Sequence[Mapping[str, Any]], by: Sequence[str], metrics: Sequence[str],
              *, digits: int = 3) -> list[dict[str, Any]]:
    """Mean of each metric per group (None values are left out of a mean), plus a count."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(k) for k in by), []).append(row)
    out = []
    for key, members in groups.items():
        summary: dict[str, Any] = dict(zip(by, key, strict=True))
        summary["n"] = len(members)
        for metric in metrics:
            values = [float(m[metric]) for m in members if m.get(metric) is not None]
            summary[metric] = round(statistics.fmean(values), digits) if values else None
        out.append(summary)
    return out


# -- chapter 1: the corpus and the index ---------------------------------------------------


def corpus_inventory(corpus_dir: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Sources per kind (files, bytes, how many state their own date) and the files not read."""
    found = discover(repo_path(corpus_dir))
    kinds: dict[str, dict[str, Any]] = {}
    for source in found.sources:
        row = kinds.setdefault(source.kind, {"kind": source.kind, "files": 0, "bytes": 0, "dated": 0})
        row["files"] += 1
        row["bytes"] += source.size_bytes
        row["dated"] += source.artifact_time is not None
    rows = sorted(kinds.values(), key=lambda r: (-r["files"], r["kind"]))
    not_read = [{"path": s.path, "reason": s.reason} for s in found.skipped]
    not_read += [{"path": f.source_id, "reason": f"failed: {f.reason}"} for f in found.failed]
    return rows, not_read


def chunk_statistics(
    corpus_dir: str | Path, policies: Sequence[str], *, target_chars: int, overlap_chars: int,
) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """Chunk counts and sizes per policy, and how many stored characters are repeats (overlap)."""
    found = discover(repo_path(corpus_dir))
    rows, sizes = [], {}
    for policy in policies:
        config = ChunkingConfig(policy=policy, target_chars=target_chars, overlap_chars=overlap_chars)
        lengths: list[int] = []
        stored = covered = 0
        over_target = 0
        for source in found.sources:
            chunks = chunk_text(source.source_id, source.text, config)
            lengths += [c.end - c.start for c in chunks]
            stored += sum(c.end - c.start for c in chunks)
            covered += _union_length([(c.start, c.end) for c in chunks])
            over_target += sum(1 for c in chunks if c.end - c.start > target_chars)
        sizes[policy] = lengths
        rows.append({
            "policy": policy, "chunks": len(lengths),
            "mean_chars": round(statistics.fmean(lengths), 1) if lengths else None,
            "median_chars": statistics.median(lengths) if lengths else None,
            "max_chars": max(lengths, default=None),
            "over_target": over_target,
            "repeated_share": round(1 - covered / stored, 3) if stored else None,
        })
    return rows, sizes


def _union_length(spans: Iterable[tuple[int, int]]) -> int:
    total, end = 0, -1
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def health_rows(conn: psycopg.Connection, config: Config) -> tuple[bool, list[dict[str, Any]]]:
    from memory_baseline.embedders import get_embedder

    expected = representation_id(config, get_embedder(config.embedder))
    report = check_health(conn, config.index, expected, expect_hnsw=config.hnsw_build)
    rows = [{"check": c.name, "result": "ok" if c.ok else ("warning" if c.severity == "warning"
                                                            else "FAILED"), "detail": c.detail}
            for c in report.checks]
    return report.ok, rows


def storage_bytes(conn: psycopg.Connection, index: str) -> dict[str, int]:
    """On-disk size of the index's tables and indexes (PostgreSQL's own accounting)."""
    store = Store(conn, index)
    store.require()
    sizes = store.storage()
    return {"chunks_total": sizes["bytes"]["chunks"],
            "gin": sizes["index_bytes"].get("chunks_tsv_gin", 0),
            "hnsw": sizes["index_bytes"].get(HNSW_INDEX, 0),
            "bm25_postings": sizes["bytes"]["bm25_segments"]}


# -- one retrieval condition over a task set ---------------------------------------------


@dataclass(frozen=True)
class Trace:
    """Retrieval and the context decision for one task under one configuration."""

    task: Task
    retrieval: RetrievalResult
    context: ContextTrace
    seconds: float


def trace_tasks(conn: psycopg.Connection, config: Config, tasks: Sequence[Task], *, reader: Reader,
                label: str = "", progress: bool = False) -> list[Trace]:
    """Retrieve and assemble (no reading) for every task: the cheap part of the pipeline."""
    baseline = Baseline(conn, config, reader=reader)
    traces = []
    for task in tqdm(tasks, desc=label or "retrieve", unit="task", disable=not progress, leave=False):
        as_of = task.as_of.isoformat() if task.as_of else None
        started = time.perf_counter()
        found = baseline.search(task.query, as_of)
        traces.append(Trace(task, found.retrieval, found.context, time.perf_counter() - started))
    return traces


def stage_row(trace: Trace, ks: Sequence[int]) -> dict[str, Any]:
    """Source-level recall@k and reciprocal rank of every stage, plus sizes and timings."""
    expected = trace.task.expected_sources
    row: dict[str, Any] = {"task": trace.task.id, "question_type": trace.task.question_type}
    for stage_name in RETRIEVAL_STAGES:
        stage = trace.retrieval.stage(stage_name)
        if stage is None:
            continue
        ranked = stage.source_ids
        for k in ks:
            row[f"{stage_name}_R@{k}"] = stage_metrics(stage_name, ranked[:k], expected).recall
        row[f"{stage_name}_RR"] = stage_metrics(stage_name, ranked, expected).reciprocal_rank
        row[f"{stage_name}_ms"] = round(stage.ms, 2)
    fused = trace.retrieval.stage("fused")
    row["union_size"] = len(fused.candidates) if fused else None
    admitted = stage_metrics("admitted", trace.context.admitted_sources, expected)
    row["admitted_recall"] = admitted.recall
    row["admitted_passages"] = len(trace.context.admitted)
    row["prompt_tokens"] = trace.context.prompt_tokens
    dense = trace.retrieval.stage("dense")
    row["encode_ms"] = dense.detail.get("encode_ms") if dense else None
    row["search_ms"] = round(trace.seconds * 1000, 2)
    return row


def run_variants(
    conn: psycopg.Connection, base_config: Config, tasks: Sequence[Task],
    variants: Mapping[str, Mapping[str, Any]], *, reader: Reader, ks: Sequence[int] = (1, 5, 10),
    run: StudyRun | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """One row per (variant, task); a variant is a set of configuration overrides by section."""
    rows = []
    configs = {}
    for name, overrides in tqdm(list(variants.items()), desc="variants", unit="variant",
                                disable=not progress):
        config = base_config.with_overrides(**overrides)
        configs[name] = config.to_dict()
        for trace in trace_tasks(conn, config, tasks, reader=reader, label=name, progress=progress):
            rows.append({"variant": name, **stage_row(trace, ks)})
    if run is not None:
        run.record("configurations", configs)
    return rows


# -- chapter 2: chunking ----------------------------------------------------------------------


def available_chunkers() -> list[str]:
    return list(CHUNKER_VERSIONS)


def _covered(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    """Is [start, end) inside the union of `spans`?"""
    position = start
    for span_start, span_end in sorted(spans):
        if span_start > position:
            break
        position = max(position, span_end)
        if position >= end:
            return True
    return position >= end


def evidence_coverage(
    task: Task, spans_by_source: Mapping[str, Sequence[tuple[int, int]]], texts: Mapping[str, str],
) -> float | None:
    """Share of the task's evidence quotes wholly inside the given character spans."""
    quotes = task.answer.evidence
    if not quotes:
        return None
    hits = 0
    for span in quotes:
        text = texts.get(span.source, "")
        spans = spans_by_source.get(span.source, ())
        start = text.find(span.quote)
        while start >= 0:
            if _covered(spans, start, start + len(span.quote)):
                hits += 1
                break
            start = text.find(span.quote, start + 1)
    return hits / len(quotes)


def _admitted_spans(trace: Trace) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for passage in trace.context.admitted:
        known = trace.retrieval.passages.get(passage.chunk_id)
        if known is None:
            continue
        # A truncated passage keeps a prefix of its chunk.
        spans.setdefault(passage.source_id, []).append(
            (known.char_start, known.char_start + len(passage.text)))
    return spans


def _candidate_spans(trace: Trace, depth: int) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for candidate in trace.retrieval.final.candidates[:depth]:
        known = trace.retrieval.passages.get(candidate.chunk_id)
        if known is not None:
            spans.setdefault(known.source_id, []).append((known.char_start, known.char_end))
    return spans


def wasted_overlap(trace: Trace) -> tuple[int, int]:
    """(admitted characters, of which repeats of characters already admitted from that source)."""
    total = repeated = 0
    for spans in _admitted_spans(trace).values():
        stored = sum(end - start for start, end in spans)
        total += stored
        repeated += stored - _union_length(spans)
    return total, repeated


def chunking_study(
    conn: psycopg.Connection, base_config: Config, corpus_dir: str | Path, tasks: Sequence[Task],
    policies: Sequence[str], *, index_prefix: str, reader: Reader, candidate_depth: int = 20,
    run: StudyRun | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """Evidence coverage before and after context assembly, and wasted overlap, per policy.

    Each policy gets its own index (`<prefix>_<policy>`) over the same corpus; the
    retrieval, context and budget settings are identical. "Before" is the union of
    the top `candidate_depth` final candidates; "after" is what the reader would see.
    """
    root = repo_path(corpus_dir)
    unknown = [p for p in policies if p not in CHUNKER_VERSIONS]
    if unknown:
        raise StudyError(f"unknown chunking policy {unknown[0]!r}; available: {available_chunkers()}")
    texts = {t: (root / t).read_text(encoding="utf-8") for task in tasks
             for t in {s.source for s in task.answer.evidence} if (root / t).is_file()}
    rows, configs = [], {}
    for policy in policies:
        # Exact dense search: this study is about boundaries, and an approximate index whose
        # graph changes as sources are replaced would add noise that is not the chunker's.
        config = base_config.with_overrides(
            index=f"{index_prefix}_{policy.replace('-', '_')}", chunking={"policy": policy},
            retrieval={"dense_plan": "exact"})
        configs[policy] = config.to_dict()
        report = index_corpus(conn, config, root, progress=progress)
        counts = Store(conn, config.index).counts()
        for trace in trace_tasks(conn, config, tasks, reader=reader, label=policy, progress=progress):
            admitted_chars, repeated_chars = wasted_overlap(trace)
            row = {
                "policy": policy, "task": trace.task.id, "question_type": trace.task.question_type,
                "chunks_in_index": counts["chunks"],
                "coverage_candidates": evidence_coverage(trace.task, _candidate_spans(trace, candidate_depth),
                                                         texts),
                "coverage_admitted": evidence_coverage(trace.task, _admitted_spans(trace), texts),
                "admitted_passages": len(trace.context.admitted),
                "admitted_chars": admitted_chars,
                "repeated_chars": repeated_chars,
                "wasted_share": round(repeated_chars / admitted_chars, 4) if admitted_chars else 0.0,
                "prompt_tokens": trace.context.prompt_tokens,
                "index_seconds": report.seconds.get("total"),
            }
            row["complete_candidates"] = None if row["coverage_candidates"] is None else float(
                row["coverage_candidates"] == 1.0)
            row["complete_admitted"] = None if row["coverage_admitted"] is None else float(
                row["coverage_admitted"] == 1.0)
            rows.append(row)
    if run is not None:
        run.record("configurations", configs)
    return rows


# -- chapter 3: encoders ------------------------------------------------------------------------


def embedding_study(
    conn: psycopg.Connection, base_config: Config, corpus_dir: str | Path, tasks: Sequence[Task],
    embedders: Sequence[str], *, index_prefix: str, reader: Reader, ks: Sequence[int] = (1, 5, 10),
    run: StudyRun | None = None, progress: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Dense-only retrieval quality, query latency, indexing time and storage per encoder.

    Returns (per-task rows, per-encoder cost rows). Each encoder gets its own index,
    so vectors of two encoders never meet, and search is exact, so a difference is the
    encoder's and not the approximate index's. An encoder that cannot be built here (an
    Ollama model without a server) gives a cost row with the reason, not a crash.
    """
    from memory_baseline.embedders import get_embedder

    task_rows, cost_rows, identities, configs = [], [], {}, {}
    for name in embedders:
        config = base_config.with_overrides(
            index=f"{index_prefix}_{name.replace('-', '_')}", embedder={"name": name},
            retrieval={"lexical": "none", "dense": True, "identifier_priority": False,
                       "dense_plan": "exact"})
        try:
            embedder = get_embedder(config.embedder)
        except ValueError as exc:
            cost_rows.append({"embedder": name, "error": str(exc).splitlines()[0]})
            continue
        identities[name] = embedder.identity.to_dict()
        configs[name] = config.to_dict()
        report = index_corpus(conn, config, corpus_dir, progress=progress)
        traces = trace_tasks(conn, config, tasks, reader=reader, label=name, progress=progress)
        for trace in traces:
            row = stage_row(trace, ks)
            task_rows.append({"embedder": name, "task": row["task"],
                              "question_type": row["question_type"],
                              **{f"R@{k}": row[f"dense_R@{k}"] for k in ks}, "RR": row["dense_RR"]})
        encode = [t.retrieval.stage("dense").detail.get("encode_ms", 0.0) for t in traces]
        search = [t.retrieval.stage("dense").ms for t in traces]
        sizes = storage_bytes(conn, config.index)
        chunks = Store(conn, config.index).counts()["chunks"]
        cost_rows.append({
            "embedder": name, "dimension": embedder.identity.dimension,
            "max_tokens": embedder.identity.max_tokens, "chunks": chunks,
            "embed_seconds": report.seconds.get("embed"),
            "reembedded_now": len(report.added) + len(report.changed) + len(report.reembedded),
            "query_encode_p50_ms": round(statistics.median(encode), 1) if encode else None,
            "dense_search_p50_ms": round(statistics.median(search), 1) if search else None,
            "vector_bytes": chunks * embedder.identity.dimension * 4,
            "hnsw_bytes": sizes["hnsw"],
        })
    if run is not None:
        run.record("embedders", identities)
        run.record("configurations", configs)
    return task_rows, cost_rows


def beir_subset(beir_dir: str | Path, out_root: str | Path, *, max_queries: int, max_docs: int,
                split: str = "test", seed: int = 7) -> Path:
    """A smaller BEIR folder: the first `max_queries` judged queries, their relevant documents,
    and seeded random other documents up to `max_docs`. Written once, then reused.

    A smoke run cannot embed 5,183 abstracts per encoder; a subset keeps the task's
    shape (every query has its judged documents among distractors) at a fraction of it.
    """
    import random

    from .beir import load_dataset, read_qrels

    source = repo_path(beir_dir)
    dataset = load_dataset(source)
    name = f"beir-{dataset.name}-q{max_queries}-d{max_docs}-s{seed}"
    target = repo_path(out_root) / name
    if (target / "corpus.jsonl").is_file():
        return target
    qrels = read_qrels(source / "qrels" / f"{split}.tsv")
    query_ids = [q for q in sorted(qrels, key=lambda q: (len(q), q)) if q in dataset.queries][:max_queries]
    relevant = {doc for q in query_ids for doc in qrels[q]}
    records = [json.loads(line) for line in (source / "corpus.jsonl").read_text("utf-8").splitlines()
               if line.strip()]
    others = [r for r in records if str(r["_id"]) not in relevant]
    rng = random.Random(seed)
    keep = relevant | {str(r["_id"]) for r in rng.sample(others, max(0, min(len(others),
                                                                        max_docs - len(relevant))))}
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            if str(record["_id"]) in keep:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (target / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for qid in query_ids:
            handle.write(json.dumps({"_id": qid, "text": dataset.queries[qid]}) + "\n")
    with (target / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for qid in query_ids:
            for doc, score in qrels[qid].items():
                handle.write(f"{qid}\t{doc}\t{score}\n")
    return target


def beir_embedding_rows(
    conn: psycopg.Connection, base_config: Config, beir_dir: str | Path, embedders: Sequence[str],
    *, runs_root: str | Path, max_queries: int | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """Dense-only BEIR metrics per encoder, each from its own `beir` run directory."""
    from .beir import run_beir

    rows = []
    for name in embedders:
        config = base_config.with_overrides(embedder={"name": name}, retrieval={"dense_plan": "exact"})
        document = run_beir(conn, config, repo_path(beir_dir), ["dense"], runs_root=repo_path(runs_root),
                            max_queries=max_queries, progress=progress)
        result = document["conditions"]["dense"]
        rows.append({"embedder": name, "queries": document["queries"], **result["metrics"],
                     "p50_ms": result["latency"]["p50_ms"],
                     "run": display_path(document["run_dir"])})
    return rows


# -- chapter 4: fusion ---------------------------------------------------------------------------


# -- chapter 5: reranking ------------------------------------------------------------------------


def available_rerankers() -> list[str]:
    from memory_baseline.rerank import RERANKERS

    return list(RERANKERS)


def usable_rerankers(names: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The rerankers that can be built here, and for the others the one-line reason.

    A cross-encoder whose weights are not on this machine is a fact about the
    installation, shown in the chapter, not a reason to abandon the other rows.
    """
    from memory_baseline.config import RerankConfig
    from memory_baseline.rerank import RerankError, get_reranker

    usable, unavailable = [], {}
    for name in names:
        try:
            get_reranker(RerankConfig(name=name))
        except RerankError as exc:
            unavailable[name] = str(exc).splitlines()[0]
            continue
        usable.append(name)
    return usable, unavailable


# -- chapter 6: context ---------------------------------------------------------------------------


def read_and_score(
    conn: psycopg.Connection, config: Config, tasks: Sequence[Task], *, condition: str,
    reader: Reader | None = None, progress: bool = True,
) -> list[dict[str, Any]]:
    """Ask every task with `config`, score with the instrument, and keep cost and waste per task.

    The bridge to the instrument is the evaluation harness's `to_system_output`, so a
    sweep is scored exactly as a ladder run is.
    """
    from memory_instrument import score_task

    from .evaluation import to_system_output

    baseline = Baseline(conn, config, reader=reader)
    rows = []
    for task in tqdm(tasks, desc=condition, unit="task", disable=not progress, leave=False):
        as_of = task.as_of.isoformat() if task.as_of else None
        started = time.perf_counter()
        result = baseline.ask(task.query, as_of)
        seconds = time.perf_counter() - started
        output = to_system_output(task, condition, result.retrieval, result.context, result.answer,
                                  result.timings_ms, context_kind="retrieval")
        score = score_task(task, output)
        admitted = stage_metrics("admitted", result.context.admitted_sources, task.expected_sources)
        admitted_chars, repeated = wasted_overlap(Trace(task, result.retrieval, result.context, seconds))
        rows.append({
            "variant": condition, "task": task.id, "question_type": task.question_type,
            "passed": float(score.passed), "outcome": score.outcome,
            "admitted_recall": admitted.recall, "admitted_passages": len(result.context.admitted),
            "duplicate_drops": len(result.context.duplicate_drops),
            "budget_drops": len(result.context.budget_drops),
            "quota_drops": len(result.context.quota_drops),
            "wasted_share": round(repeated / admitted_chars, 4) if admitted_chars else 0.0,
            "prompt_tokens": result.answer.usage.prompt_tokens or result.context.prompt_tokens,
            "completion_tokens": result.answer.usage.completion_tokens,
            "reader_seconds": round(result.timings_ms.get("reader", 0.0) / 1000, 3),
            "cached": result.answer.cached,
        })
    return rows


def context_study(
    conn: psycopg.Connection, base_config: Config, tasks: Sequence[Task],
    variants: Mapping[str, Mapping[str, Any]], *, reader_name: str, run: StudyRun | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Read and score every task under each context variant, with one reader instance."""
    base = base_config.with_overrides(reader={"name": reader_name})
    reader = get_reader(base.reader)
    rows, configs = [], {}
    done: dict[str, str] = {}  # effective configuration -> the variant that already ran it
    for name, overrides in tqdm(list(variants.items()), desc="variants", unit="variant",
                                disable=not progress):
        config = base.with_overrides(**overrides)
        configs[name] = config.to_dict()
        key = json.dumps(configs[name], sort_keys=True)
        if key in done:
            # The default appears once per sweep; read it once and label the copy.
            rows += [{**row, "variant": name} for row in rows if row["variant"] == done[key]]
            continue
        done[key] = name
        rows += read_and_score(conn, config, tasks, condition=name, reader=reader, progress=progress)
    if run is not None:
        run.record("configurations", configs)
        run.record("reader", reader.identity)
    return rows


# -- chapter 7: the ladder -------------------------------------------------------------------------


def ladder_cost_rows(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per condition: cases, pass rate, and what they cost (tokens, reader calls, seconds)."""
    by_condition: dict[str, list[Mapping[str, Any]]] = {}
    for case in cases:
        by_condition.setdefault(case["condition"], []).append(case)
    rows = []
    for condition, members in by_condition.items():
        n = len(members)
        rows.append({
            "condition": condition, "cases": n,
            "pass_rate": round(sum(bool(c["score"]["passed"]) for c in members) / n, 3),
            "prompt_tokens_mean": round(statistics.fmean(c["tokens"]["prompt"] for c in members), 1),
            "completion_tokens_mean": round(statistics.fmean(c["tokens"]["completion"] for c in members), 1),
            "reader_calls": int(sum(c["usage"].get("calls", 0) for c in members)),
            "seconds_total": round(sum(c["timings_ms"].get("total", 0.0) for c in members) / 1000, 2),
            "cache_hits": sum(bool(c.get("cache_hit")) for c in members),
        })
    return rows


def latest_run(runs_root: str | Path, kind: str = "evaluation") -> Path | None:
    """The most recent complete run of `kind` under `runs_root` (by start time), if any."""
    root = repo_path(runs_root)
    found = []
    for manifest_path in root.glob("*/manifest.json"):
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if manifest.get("kind") == kind and manifest.get("status") == "complete":
            found.append((manifest.get("started", ""), manifest_path.parent))
    return max(found)[1] if found else None


# -- chapter 8: where the evidence was lost ----------------------------------------------------------

LOSS_STAGES = ("never indexed", "not a candidate", "fused out", "reranked out", "not admitted",
               "admitted but misread")


def loss_stage(
    expected_source: str, indexed_sources: set[str], retrieval: RetrievalResult,
    context: ContextTrace, *, rerank_top_n: int,
) -> str:
    """The pipeline stage at which one expected source dropped out (or 'admitted but misread').

    Read from the trace, never guessed: a source absent from the index was never
    indexed; present but in neither path's list was not a candidate; in a path's
    list but below what the next stage looked at was fused out (the reranker's head
    when one ran, otherwise the passages assembly considered); lifted into the
    reranker's head but then placed where assembly never looked was reranked out;
    considered by assembly but dropped (budget, duplicate, quota) was not admitted.
    """
    if expected_source in context.admitted_sources:
        return "admitted but misread"
    if expected_source not in indexed_sources:
        return "never indexed"
    path_sources = {c.source_id for name in ("lexical", "dense")
                    if (stage := retrieval.stage(name)) for c in stage.candidates}
    if expected_source not in path_sources:
        return "not a candidate"
    fused = retrieval.stage("fused")
    fused_rank = min((c.rank for c in fused.candidates if c.source_id == expected_source), default=None)
    never_considered = set(context.not_considered)
    final_chunks = [c for c in retrieval.final.candidates if c.source_id == expected_source]
    considered = [c for c in final_chunks if c.chunk_id not in never_considered]
    if retrieval.reranker_ran:
        if fused_rank is None or fused_rank > rerank_top_n:
            return "fused out"
        return "not admitted" if considered else "reranked out"
    return "not admitted" if considered else "fused out"


def diagnose_case(
    task: Task, passed: bool, indexed_sources: set[str], retrieval: RetrievalResult | None,
    context: ContextTrace, *, rerank_top_n: int,
) -> dict[str, Any]:
    """Per expected source, where it was lost; the task's stage is the earliest loss."""
    if not task.expected_sources or retrieval is None:
        stages = {}
        stage = "admitted but misread" if not passed else "passed"
    else:
        stages = {s: loss_stage(s, indexed_sources, retrieval, context, rerank_top_n=rerank_top_n)
                  for s in task.expected_sources}
        stage = "passed" if passed else min(stages.values(), key=LOSS_STAGES.index)
    return {"task": task.id, "question_type": task.question_type, "passed": passed,
            "stage": stage, "per_source": stages}


def recorded_context(case: Mapping[str, Any]) -> ContextTrace:
    """The context decision of a case record (admitted passages without their text)."""
    recorded = case["context"]
    admitted = tuple(Passage(p["chunk_id"], p["source_id"], "", None, "", None, p["rank"],
                             p.get("truncated", False)) for p in case["admitted"])
    return ContextTrace(
        admitted=admitted, duplicate_drops=tuple(recorded["duplicate_drops"]),
        budget_drops=tuple(recorded["budget_drops"]), quota_drops=tuple(recorded["quota_drops"]),
        not_considered=tuple(recorded["not_considered"]), truncated=recorded.get("truncated"),
        prompt_tokens=recorded["prompt_tokens"], token_budget=recorded["token_budget"],
        max_passages=recorded["max_passages"], order=recorded.get("order", "rank"),
        oversize_policy=recorded.get("oversize_policy", "truncate"), tokenizer=recorded["tokenizer"])


def diagnose_run(
    conn: psycopg.Connection, run_dir: str | Path, condition: str, *, progress: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Where each failed task of `condition` in a ladder run lost its evidence, with the trace.

    The case record says what the reader saw, how the instrument scored it and, since
    case records keep every stage's chunk-level ranking, the whole trace: the diagnosis
    reads it and searches nothing. Runs written before that (no ``retrieval`` in the
    case) are diagnosed by rerunning retrieval and assembly with the condition's
    recorded configuration on the same index; `trace_source` says which, and
    `trace_matches` whether a rerun admitted the same sources as the recorded case.
    """
    from .evaluation import load_run

    manifest, cases = load_run(repo_path(run_dir))
    if condition not in manifest.get("conditions", {}):
        raise StudyError(f"run {display_path(run_dir)} has no condition {condition!r}; it has "
                         f"{sorted(manifest.get('conditions', {}))}")
    if manifest["conditions"][condition].get("context_source") != "retrieval":
        raise StudyError(f"condition {condition!r} does not retrieve; choose a retrieval condition")
    config = Config.from_dict(manifest["conditions"][condition]["config"])
    tasks = {t.id: t for t in load_tasks(manifest["tasks"]["path"])}
    failed = [c for c in cases if c["condition"] == condition and not c["score"]["passed"]]
    indexed = set(Store(conn, config.index).sources())
    baseline = Baseline(conn, config)
    rows: list[dict[str, Any]] = []
    traces: dict[str, dict[str, Any]] = {}
    for case in tqdm(failed, desc="diagnose", unit="case", disable=not progress, leave=False):
        task = tasks[case["task_id"]]
        if case.get("retrieval"):
            retrieval, context, trace_source = (RetrievalResult.from_dict(case["retrieval"]),
                                                recorded_context(case), "case record")
        else:
            found = baseline.search(task.query, case.get("as_of"))
            retrieval, context, trace_source = found.retrieval, found.context, "rerun"
        diagnosis = diagnose_case(task, False, indexed, retrieval, context,
                                  rerank_top_n=config.rerank.top_n)
        recorded = case["stages"].get("admitted", [])
        diagnosis.update({
            "outcome": case["score"]["outcome"],
            "trace_source": trace_source,
            "trace_matches": set(recorded) == set(context.admitted_sources),
        })
        rows.append(diagnosis)
        traces[task.id] = {
            "query": task.query, "as_of": case.get("as_of"), "expected": list(task.expected_sources),
            "answer": case["answer"], "outcome": case["score"]["outcome"],
            "stages": {s.name: s.source_ids[:10] for s in retrieval.stages},
            "admitted": context.admitted_sources, "not_considered": len(context.not_considered),
            "budget_drops": list(context.budget_drops), "duplicate_drops": list(context.duplicate_drops),
        }
    return rows, traces
