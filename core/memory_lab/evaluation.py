"""The evaluation harness: conditions, the adapter to the instrument, and run artifacts.

The instrument (`memory_instrument`) decides what success is; this module only
runs the baseline under named conditions, reports what each stage did as the
instrument's `SystemOutput`, scores it with `score_task`, and writes the run.

Conditions. Each is a function of the base configuration: an effective `Config`
plus a *context source*, the thing that decides which passages reach the reader:

- ``retrieval``: the pipeline's own search (``lexical``, ``dense``, ``hybrid``,
  ``hybrid-reranked``, ``best``, ``lexical-tsrank-cd``, ``hybrid-tsrank-cd``);
- ``none`` (``no-memory``): the reader gets the question and no history at all, asked
  in the same reading style, layout and output format as the history conditions (the
  matched control: `memory_lab.downstream`);
- ``oracle-span``: each evidence quote of the task with a sentence of context on
  each side, from the corpus file;
- ``oracle-source``: the whole expected files, under the context budget;
- ``full-history``: every source in artifact-date order, as many as fit the
  reader's context window minus its answer allowance.

All context sources go through `context.assemble` with the reader's own token
counter, so prompt sizes and cuts are recorded the same way everywhere.

Stages reported to the instrument mean the same thing in every condition:
``candidates`` is the fused list (source ids, rank order), ``reranked`` exists only
when a reranker ran, ``admitted`` is what the reader saw, ``cited`` what the answer
cites. Conditions without retrieval have no ``candidates``/``reranked`` stage.

``best`` is tuned on the ``dev`` split only (task ``metadata.split``) by a small grid
(`BEST_GRID`): mean recall of expected sources at the admitted stage, then mean MRR
at that stage, then fewer prompt tokens; the grid, every dev score and the choice are
written into the manifest. Test tasks are never looked at while tuning.

Run directories (``runs/<run-id>/``): ``manifest.json``, ``cases.jsonl`` (one record
per task and condition, appended as they finish, so an interrupted run resumes),
``summary.csv`` and the scorecard (``scorecard.txt``, ``scorecard.json``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.chunking import sentence_boundaries
from memory_baseline.config import Config, ConfigError, ReaderConfig
from memory_baseline.context import ContextTrace
from memory_baseline.context_sources import (
    ContextSource,
    NoHistory,
    Prefetched,
    Retrieved,
    WholeHistory,
    given,
)
from memory_baseline.embedders import Embedder, get_embedder
from memory_baseline.hashing import file_digest
from memory_baseline.ingest import Discovery, SourceRecord, discover
from memory_baseline.passages import Passage
from memory_baseline.readers import Answer, Reader, get_reader
from memory_baseline.refresh import sync
from memory_baseline.retrieval import RetrievalResult, Retriever
from memory_instrument import (
    GRADER_VERSION,
    OUTCOMES,
    CheckResult,
    ClaimCheck,
    Score,
    Scorecard,
    StageMetrics,
    SystemOutput,
    Task,
    build_scorecard,
    downstream_gain,
    load_tasks,
    score_task,
    stage_metrics,
)
from memory_instrument import Passage as InstrumentPassage

from .conditions import DEFAULT_RERANKER, condition_config, spec
from .downstream import MATCHED_CONTROL, downstream_gains_by_condition, downstream_table_text
from .runs import (
    MANIFEST,
    RunError,
    corpus_digest,
    manifest_header,
    new_run_dir,
    read_manifest,
    write_json,
)

# The grid `best` searches on the dev split; blend ignores rrf_k, so it is not repeated.
BEST_GRID: dict[str, tuple] = {
    "fusion": ("rrf", "blend"),
    "rrf_k": (10, 60),
    "per_path_candidates": (20, 50),
    "max_passages": (4, 6, 8),
}
OUTCOME_LABELS = OUTCOMES
SPAN_CONTEXT_SENTENCES = 1
SPAN_CONTEXT_MAX_CHARS = 400


class EvaluationError(ValueError):
    """The evaluation cannot run as asked (bad condition, mismatched resume, ...)."""


# -- conditions ---------------------------------------------------------------------------


def _known(name: str) -> None:
    spec(name, "ladder")


@dataclass(frozen=True)
class Condition:
    name: str
    config: Config
    context_source: str

    def to_dict(self) -> dict[str, Any]:
        return {"description": spec(self.name).description, "context_source": self.context_source,
                "config": self.config.to_dict()}


class QueryCachingEmbedder:
    """An embedder that encodes each distinct query once per run.

    Several conditions (and every point of a tuning grid) search the same questions;
    the vector of a question does not depend on the condition, so re-encoding it only
    costs time. The first encoding's duration is kept (`first_encode_ms`) so that a
    latency figure can still include one honest query encoding.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.identity = inner.identity
        self._vectors: dict[str, Any] = {}
        self.first_encode_ms: dict[str, float] = {}

    def __contains__(self, query: str) -> bool:
        return query in self._vectors

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False):
        return self.inner.embed_documents(texts, progress=progress)

    def embed_query(self, text: str):
        if text not in self._vectors:
            started = time.perf_counter()
            self._vectors[text] = self.inner.embed_query(text)
            self.first_encode_ms[text] = (time.perf_counter() - started) * 1000
        return self._vectors[text]


# -- tuning `best` on the dev split ---------------------------------------------------------


@dataclass(frozen=True)
class BestChoice:
    overrides: dict[str, dict[str, Any]]
    dev_task_ids: tuple[str, ...]
    scores: tuple[dict[str, Any], ...]
    grid: dict[str, tuple] = field(default_factory=lambda: dict(BEST_GRID))
    criterion: str = ("mean recall of expected sources at the admitted stage, then mean MRR at "
                      "the admitted stage, then fewer prompt tokens, then grid order")

    def to_dict(self) -> dict[str, Any]:
        return {"grid": {k: list(v) for k, v in self.grid.items()}, "criterion": self.criterion,
                "dev_task_ids": list(self.dev_task_ids), "dev_scores": list(self.scores),
                "choice": self.overrides}


def _grid() -> list[dict[str, Any]]:
    settings = []
    for fusion in BEST_GRID["fusion"]:
        for rrf_k in BEST_GRID["rrf_k"] if fusion == "rrf" else (None,):
            for per_path in BEST_GRID["per_path_candidates"]:
                retrieval = {"fusion": fusion, "per_path_candidates": per_path}
                if rrf_k is not None:
                    retrieval["rrf_k"] = rrf_k
                settings.append(retrieval)
    return settings


def tune_best(
    conn: psycopg.Connection, base: Config, tasks: Sequence[Task], reader: Reader,
    *, embedder: Embedder | None = None, progress: bool = False,
) -> BestChoice:
    """Grid-search `best` on the tasks whose `metadata.split` is `dev` (never any other)."""
    dev = [t for t in tasks if t.metadata.get("split") == "dev"]
    scored_dev = [t for t in dev if t.expected_sources]
    if not scored_dev:
        raise EvaluationError("condition best is tuned on dev tasks, but the task file has no "
                              "task with metadata.split = 'dev' and expected sources")
    hybrid = condition_config("hybrid", base)
    embedder = embedder or QueryCachingEmbedder(get_embedder(base.embedder))
    scores: list[dict[str, Any]] = []
    grid = _grid()
    bar = tqdm(total=len(grid) * len(scored_dev), desc="tune best (dev)", disable=not progress)
    for retrieval in grid:
        config = hybrid.with_overrides(retrieval=retrieval)
        retriever = Retriever(conn, config, embedder=embedder)
        results = []
        for task in scored_dev:
            results.append((task, retriever.retrieve(task.query)))
            bar.update(1)
        for max_passages in BEST_GRID["max_passages"]:
            baseline = Baseline(conn, config.with_overrides(context={"max_passages": max_passages}),
                                reader=reader, retriever=retriever)
            recalls, mrrs, tokens = [], [], []
            for task, result in results:
                as_of = task.as_of.isoformat() if task.as_of else None
                trace = baseline.search(task.query, as_of, source=Prefetched(result)).context
                ranked = [p.source_id for p in sorted(trace.admitted, key=lambda p: p.rank)]
                metrics = stage_metrics("admitted", ranked, task.expected_sources)
                recalls.append(metrics.recall or 0.0)
                mrrs.append(metrics.reciprocal_rank or 0.0)
                tokens.append(trace.prompt_tokens)
            scores.append({
                "retrieval": retrieval, "context": {"max_passages": max_passages},
                "recall_admitted": round(sum(recalls) / len(recalls), 4),
                "mrr_admitted": round(sum(mrrs) / len(mrrs), 4),
                "mean_prompt_tokens": round(sum(tokens) / len(tokens), 1),
            })
    bar.close()
    best = max(enumerate(scores), key=lambda item: (item[1]["recall_admitted"],
                                                    item[1]["mrr_admitted"],
                                                    -item[1]["mean_prompt_tokens"], -item[0]))[1]
    overrides = {"retrieval": dict(best["retrieval"]), "context": dict(best["context"])}
    return BestChoice(overrides, tuple(t.id for t in scored_dev), tuple(scores))


# -- non-retrieval context sources -----------------------------------------------------------


def _passage(record: SourceRecord, start: int, end: int, chunk_id: str) -> Passage:
    return Passage(
        chunk_id=chunk_id, source_id=record.source_id, text=record.text[start:end], section=None,
        kind=record.kind,
        artifact_date=record.artifact_time.date().isoformat() if record.artifact_time else None,
        char_start=start, char_end=end,
    )


def _corpus_record(corpus: dict[str, SourceRecord], source_id: str, task: Task) -> SourceRecord:
    record = corpus.get(source_id)
    if record is None:
        raise EvaluationError(f"task '{task.id}': source {source_id!r} is not in the corpus")
    return record


def _span_with_context(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole sentences plus one neighbouring sentence each side (capped)."""
    starts = sentence_boundaries(text)
    first = bisect_right(starts, start) - 1
    after = bisect_left(starts, end)  # first sentence starting at or after the quote's end
    wide_start = starts[max(0, first - SPAN_CONTEXT_SENTENCES)]
    stop_index = after + SPAN_CONTEXT_SENTENCES
    wide_end = starts[stop_index] if stop_index < len(starts) else len(text)
    return (max(wide_start, start - SPAN_CONTEXT_MAX_CHARS),
            min(wide_end, end + SPAN_CONTEXT_MAX_CHARS))


def oracle_span_passages(task: Task, corpus: dict[str, SourceRecord]) -> list[Passage]:
    """The minimal evidence: each quote widened by a sentence, overlapping spans merged.

    An answerable task without evidence quotes falls back to its whole expected sources
    (recorded in the case); an abstention task gets nothing.
    """
    if not task.answer.evidence:
        return oracle_source_passages(task, corpus)
    spans: dict[str, list[tuple[int, int]]] = {}
    for span in task.answer.evidence:
        record = _corpus_record(corpus, span.source, task)
        at = record.text.find(span.quote)
        if at < 0:
            raise EvaluationError(
                f"task '{task.id}': evidence quote not found in {span.source}: {span.quote[:60]!r}"
            )
        spans.setdefault(span.source, []).append(_span_with_context(record.text, at, at + len(span.quote)))
    passages = []
    for source_id, ranges in spans.items():
        merged: list[list[int]] = []
        for start, end in sorted(ranges):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        record = corpus[source_id]
        passages.extend(_passage(record, s, e, f"{source_id}@{s}-{e}") for s, e in merged)
    return passages


def oracle_source_passages(task: Task, corpus: dict[str, SourceRecord]) -> list[Passage]:
    """The whole expected files, in the task's order."""
    return [_passage(record, 0, len(record.text), f"{record.source_id}#all")
            for record in (_corpus_record(corpus, s, task) for s in task.expected_sources)]


def full_history_passages(corpus: dict[str, SourceRecord]) -> list[Passage]:
    """Every source, oldest artifact date first; undated sources last, then by path."""
    ordered = sorted(corpus.values(), key=lambda r: (r.artifact_time is None,
                                                     r.artifact_time.isoformat() if r.artifact_time else "",
                                                     r.source_id))
    return [_passage(r, 0, len(r.text), f"{r.source_id}#all") for r in ordered]


# -- the adapter ---------------------------------------------------------------------------------


def to_system_output(
    task: Task, condition: str, retrieval: RetrievalResult | None, context: ContextTrace,
    answer: Answer, timings_ms: dict[str, float], *, context_kind: str,
) -> SystemOutput:
    """The instrument's view of one case; the artifact is left for the instrument to extract."""
    stages: dict[str, list[str]] = {}
    if retrieval is not None:
        fused = retrieval.stage("fused")
        stages["candidates"] = fused.source_ids if fused else []
        reranked = retrieval.stage("reranked")
        # The retriever may record a pass-through "reranked" stage; only a real rerank counts.
        if reranked is not None and not reranked.detail.get("pass_through", False):
            stages["reranked"] = reranked.source_ids
    ranked_admitted = sorted(context.admitted, key=lambda p: p.rank)
    stages["admitted"] = list(dict.fromkeys(p.source_id for p in ranked_admitted))
    stages["cited"] = list(answer.citations)
    usage = answer.usage
    return SystemOutput(
        task_id=task.id, condition=condition, answer=answer.text, abstained=answer.abstained,
        stages=stages,
        admitted_passages=[InstrumentPassage(p.source_id, p.chunk_id, p.text)
                           for p in context.admitted],
        citations=list(answer.citations), unknown_citations=list(answer.unknown_citations),
        artifact=None,
        usage={"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
               "calls": usage.calls, "seconds": round(usage.seconds, 4)},
        timings_ms=dict(timings_ms),
        metadata={"context_source": context_kind, "cache_hit": answer.cached,
                  "reader": answer.reader.get("name")},
    )


@dataclass
class _Runtime:
    conn: psycopg.Connection
    reader: Reader
    reader_config: ReaderConfig
    corpus: dict[str, SourceRecord]
    conditions: dict[str, Condition]
    embedder: Embedder
    baselines: dict[str, Baseline] = field(default_factory=dict)
    retrievers: dict[str, Retriever] = field(default_factory=dict)
    readers: dict[ReaderConfig, Reader] = field(default_factory=dict)

    def baseline(self, condition: Condition) -> Baseline:
        if condition.name not in self.baselines:
            # A condition that does not retrieve never opens the index (it may not exist).
            retriever = self.retriever(condition) if condition.context_source == "retrieval" else None
            self.baselines[condition.name] = Baseline(self.conn, condition.config,
                                                      reader=self.reader_for(condition),
                                                      retriever=retriever)
        return self.baselines[condition.name]

    def reader_for(self, condition: Condition) -> Reader:
        """The run's reader, unless the condition sets reader options of its own (full-history's
        prefix cache); the model itself is loaded once per process either way."""
        wanted = condition.config.reader
        if wanted == self.reader_config:
            return self.reader
        if wanted not in self.readers:
            self.readers[wanted] = get_reader(wanted)
        return self.readers[wanted]

    def retriever(self, condition: Condition) -> Retriever:
        if condition.name not in self.retrievers:
            self.retrievers[condition.name] = Retriever(self.conn, condition.config, embedder=self.embedder)
        return self.retrievers[condition.name]


def context_source_for(task: Task, condition: Condition, runtime: _Runtime) -> ContextSource:
    """The passages condition `condition` gives the reader for `task` (the only per-condition part)."""
    kind = condition.context_source
    if kind == "retrieval":
        return Retrieved(runtime.retriever(condition))
    if kind == "none":
        return NoHistory()
    if kind == "oracle-span":
        notes = ({"oracle_fallback": "no evidence quotes: whole expected sources"}
                 if not task.answer.evidence and task.expected_sources else {})
        return given("oracle-span", oracle_span_passages(task, runtime.corpus), **notes)
    if kind == "oracle-source":
        return given("oracle-source", oracle_source_passages(task, runtime.corpus))
    if kind == "full-history":
        return WholeHistory(tuple(full_history_passages(runtime.corpus)))
    raise EvaluationError(f"unknown context source {kind!r}")


def run_case(
    task: Task, condition: Condition, runtime: _Runtime
) -> tuple[SystemOutput, dict[str, Any]]:
    """Run one task under one condition; return the instrument output and the case record."""
    as_of = task.as_of.isoformat() if task.as_of else None
    source = context_source_for(task, condition, runtime)
    result = runtime.baseline(condition).ask(task.query, as_of, source=source)
    retrieval, context, answer = result.retrieval, result.context, result.answer
    timings = dict(result.timings_ms)
    notes: dict[str, Any] = dict(result.notes)
    if retrieval is not None and condition.config.retrieval.dense:
        # Query vectors are shared across conditions; report what the encoding cost once.
        timings["query_encode_ms_first"] = round(runtime.embedder.first_encode_ms.get(task.query, 0.0), 3)
    given_passages = getattr(source, "passages", ())
    output = to_system_output(task, condition.name, retrieval, context, answer, timings,
                              context_kind=condition.context_source)
    score = score_task(task, output)
    chunk_sources = {**{p.chunk_id: p.source_id for p in context.admitted}}
    if retrieval is not None:
        chunk_sources.update({cid: p.source_id for cid, p in retrieval.passages.items()})
    else:
        chunk_sources.update({p.chunk_id: p.source_id for p in given_passages})
    record = {
        "task_id": task.id,
        "question_type": task.question_type,
        "split": task.metadata.get("split"),
        "condition": condition.name,
        "context_source": condition.context_source,
        "query": task.query,
        "as_of": as_of,
        "answer": answer.text,
        "abstained": answer.abstained,
        "stages": output.stages,
        "admitted": [{"chunk_id": p.chunk_id, "source_id": p.source_id, "rank": p.rank,
                      "truncated": p.truncated} for p in context.admitted],
        "context": {
            "prompt_tokens": context.prompt_tokens, "token_budget": context.token_budget,
            "max_passages": context.max_passages, "tokenizer": context.tokenizer,
            "truncated": context.truncated,
            "truncated_chars": list(context.truncated_chars) if context.truncated_chars else None,
            "top_dropped": context.top_dropped, "duplicate_drops": list(context.duplicate_drops),
            "budget_drops": list(context.budget_drops), "quota_drops": list(context.quota_drops),
            "not_considered": list(context.not_considered),
            "cut_sources": sorted({chunk_sources.get(c, c) for c in
                                   [*context.budget_drops, *context.not_considered]}
                                  - set(context.admitted_sources)),
        },
        # Every stage's chunk-level ranking, so a diagnosis reads the case and never searches again.
        "retrieval": retrieval.to_dict() if retrieval is not None else None,
        "citations": list(answer.citations),
        "unknown_citations": list(answer.unknown_citations),
        "tokens": {"prompt": answer.usage.prompt_tokens, "completion": answer.usage.completion_tokens},
        "usage": dict(output.usage),
        "timings_ms": timings,
        "cache_hit": answer.cached,
        # What the model cost when it ran (a cache hit keeps the original figure).
        "answer_seconds": round(answer.extra.get("cache", {}).get("original_seconds", answer.usage.seconds)
                                if answer.cached else answer.usage.seconds, 4),
        "answer_calls": (answer.extra.get("cache", {}).get("original_calls", 1) if answer.cached
                         else answer.usage.calls),
        "reader_trace": answer.extra,
        "notes": notes,
        "output": output.to_dict(),
        "score": score.to_dict(),
    }
    return output, record


# -- run directories ----------------------------------------------------------------------------


def _read_cases(path: Path) -> list[dict[str, Any]]:
    """Records of cases.jsonl; a torn last line (an interrupted write) is dropped from the file."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    cases = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if number == len(lines):
                path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases),
                                encoding="utf-8")
                break
            raise EvaluationError(f"{path}:{number}: not a JSON record ({exc.msg})") from exc
    return cases


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest and the case records of a run directory."""
    run_dir = Path(run_dir)
    try:
        manifest = read_manifest(run_dir)
    except RunError as exc:
        raise EvaluationError(str(exc)) from None
    return manifest, _read_cases(run_dir / "cases.jsonl")


def run_evaluation(
    conn: psycopg.Connection,
    base_config: Config,
    tasks_path: str | Path,
    corpus_dir: str | Path,
    conditions: Sequence[str],
    *,
    runs_root: str | Path = "runs",
    reader_name: str | None = None,
    reranker_name: str = DEFAULT_RERANKER,
    limit: int | None = None,
    split: str | None = None,
    question_type: str | None = None,
    resume: str | Path | None = None,
    progress: bool = True,
    test_only: Sequence[str] = (),
    discovery: Discovery | None = None,
) -> Path:
    """Evaluate `conditions` on the tasks; return the run directory.

    `split` and `question_type` select the tasks answered; `best` is still tuned on
    every dev task of the file, so a run over one question type (the downstream
    ladder) uses the same `best` as a run over them all. A condition named in `test_only`
    is answered on the selected test tasks only: `best`'s dev-task scores are not held
    out and are never reported, so reading them would spend hours on nothing.

    The corpus is synced into the index first (`refresh.sync`, removing what is gone)
    so the index matches the corpus being scored. `resume` continues an interrupted
    run: its manifest must describe the same corpus, tasks, reader and conditions, and
    (task, condition) pairs already in `cases.jsonl` are skipped.

    `discovery` is a connector's observation of the corpus (a folder plus historical
    versions, `memory_lab.pep_history`): it replaces reading `corpus_dir`, for the index
    and for the oracle contexts alike, and its sources are what the digest covers.
    """
    if not conditions:
        raise EvaluationError("no conditions given")
    for name in conditions:
        _known(name)
    if not set(test_only) <= set(conditions):
        raise EvaluationError(f"test_only names conditions not in the run: "
                              f"{sorted(set(test_only) - set(conditions))}")
    if len(set(conditions)) != len(conditions):
        raise EvaluationError("a condition is named twice")
    tasks_path, corpus_dir = Path(tasks_path).resolve(), Path(corpus_dir).resolve()
    if not corpus_dir.is_dir():
        raise EvaluationError(f"corpus {corpus_dir} is not a directory")
    if tasks_path.is_relative_to(corpus_dir):
        raise EvaluationError(f"the task file {tasks_path} lives inside the corpus {corpus_dir}; "
                              "move it out (a system could read its own answers)")
    task_set = load_tasks(tasks_path)
    selected = [t for t in task_set if (split is None or t.metadata.get("split") == split)
                and (question_type is None or t.question_type == question_type)]
    if limit is not None:
        selected = selected[:limit]
    if not selected:
        raise EvaluationError(f"no task selected (split={split!r}, question_type={question_type!r}, "
                              f"limit={limit})")

    base = base_config.with_overrides(reader={"name": reader_name}) if reader_name else base_config
    started = datetime.now(UTC).isoformat()
    # Only a condition that retrieves reads the index; an oracle- or no-memory-only run (the
    # reader studies) would otherwise embed a whole corpus it never searches.
    retrieves = any(spec(name).context_source == "retrieval" for name in conditions)
    sync_report = sync(conn, base, str(corpus_dir), remove_missing=True, progress=progress,
                       discovery=discovery) if retrieves else None
    observed_by = discovery.kind if discovery is not None else None
    discovery = discovery or discover(corpus_dir, max_bytes=base.max_file_bytes)
    corpus = {r.source_id: r for r in discovery.sources}
    reader = get_reader(base.reader)
    embedder = QueryCachingEmbedder(get_embedder(base.embedder))

    previous: dict[str, Any] | None = None
    if resume is not None:
        previous, _ = load_run(resume)
    best: BestChoice | None = None
    best_overrides: dict[str, dict[str, Any]] | None = None
    if "best" in conditions:
        if previous is not None and previous.get("best"):
            best_overrides = previous["best"]["choice"]
        else:
            best = tune_best(conn, base, list(task_set), reader, embedder=embedder,
                             progress=progress)
            best_overrides = best.overrides
    built = {
        name: Condition(name, condition_config(name, base, reranker_name=reranker_name, tuned=best_overrides,
                                               family="ladder"), spec(name).context_source)
        for name in conditions
    }
    runtime = _Runtime(conn, reader, base.reader, corpus, built, embedder)

    condition_docs = {name: c.to_dict() for name, c in built.items()}
    identical = _identical_conditions(built)
    for name, twins in identical.items():
        condition_docs[name]["same_effective_configuration_as"] = twins
    reranker_identity = None
    if "hybrid-reranked" in built:
        reranker_identity = runtime.baseline(built["hybrid-reranked"]).retriever.reranker.identity
    fingerprint = {
        "corpus_digest": corpus_digest(corpus_dir) if observed_by is None
        else _observation_digest(discovery),
        "tasks_digest": file_digest(tasks_path),
        "task_ids": [t.id for t in selected],
        "reader": reader.identity,
        "conditions": condition_docs,
        "test_only": sorted(test_only),
    }

    if previous is not None:
        run_dir = Path(resume)
        _check_resume(previous, fingerprint)
        manifest = previous
        manifest.setdefault("resumed", []).append(started)
        manifest["status"] = "running"
    else:
        run_dir = new_run_dir(runs_root)
        manifest = manifest_header("evaluation", run_id=run_dir.name, conn=conn)
        manifest.update({
            "corpus": {"path": str(corpus_dir), "digest": fingerprint["corpus_digest"],
                       "sources": len(corpus),
                       **({"observed_by": observed_by, "observation": discovery.summary}
                          if observed_by is not None else {}),
                       "index_sync": {"added": len(sync_report.added),
                                      "changed": len(sync_report.changed),
                                      "reembedded": len(sync_report.reembedded),
                                      "removed": len(sync_report.removed),
                                      "unchanged": sync_report.unchanged,
                                      "skipped": sync_report.skipped}
                       if sync_report is not None else "not needed: no condition retrieves"},
            "tasks": {"path": str(tasks_path), "digest": fingerprint["tasks_digest"],
                      "split": split, "question_type": question_type, "limit": limit,
                      "task_ids": fingerprint["task_ids"]},
            "models": {"embedder": get_embedder(base.embedder).identity.to_dict(),
                       "reader": reader.identity, "reranker": reranker_identity},
            "conditions": condition_docs,
            "condition_order": list(conditions),
            "test_only": sorted(test_only),
            "best": best.to_dict() if best else None,
            "grader_version": GRADER_VERSION,
            "no_memory_control": MATCHED_CONTROL,
        })
        manifest["started"] = started
        if best is not None and split != "test":
            manifest["best"]["note"] = ("best was tuned on the dev tasks; its scores on dev tasks "
                                        "are not held out")
    write_json(run_dir / MANIFEST, manifest)

    cases_path = run_dir / "cases.jsonl"
    done = {(c["task_id"], c["condition"]) for c in _read_cases(cases_path)}
    planned = [(task, built[name]) for task in selected for name in conditions
               if name not in test_only or task.metadata.get("split") == "test"]
    todo = [(task, condition) for task, condition in planned if (task.id, condition.name) not in done]
    # A whole-history prompt is the same for every question with the same as-of date, and the
    # reader keeps the last prompt's prefix: reading those questions together prefills each
    # history once instead of once per switch (minutes each). Other conditions keep file order.
    todo.sort(key=lambda item: (item[1].context_source == "full-history",
                                str(item[0].as_of) if item[1].context_source == "full-history" else ""))
    bar = tqdm(total=len(planned), initial=len(planned) - len(todo),
               desc="evaluate", unit="case", disable=not progress)
    with cases_path.open("a", encoding="utf-8") as handle:
        for task, condition in todo:
            bar.set_postfix_str(f"{condition.name}: {task.id}", refresh=False)
            _, record = run_case(task, condition, runtime)
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            bar.update(1)
    bar.close()

    manifest["status"] = "complete"
    manifest["finished"] = datetime.now(UTC).isoformat()
    write_json(run_dir / MANIFEST, manifest)
    write_reports(run_dir)
    return run_dir


def _observation_digest(discovery: Discovery) -> str:
    """sha256 over every observed source's id and content hash, in id order."""
    digest = hashlib.sha256()
    for record in sorted(discovery.sources, key=lambda r: r.source_id):
        digest.update(f"{record.source_id}\0{record.content_hash}\0".encode())
    return digest.hexdigest()


def _identical_conditions(built: dict[str, Condition]) -> dict[str, list[str]]:
    keys = {name: json.dumps([c.context_source, c.config.to_dict()], sort_keys=True)
            for name, c in built.items()}
    return {name: [other for other in built if other != name and keys[other] == key]
            for name, key in keys.items() if list(keys.values()).count(key) > 1}


def _check_resume(previous: dict[str, Any], fingerprint: dict[str, Any]) -> None:
    if previous.get("kind") != "evaluation":
        raise EvaluationError("the run to resume is not an evaluation run")
    checks = [
        ("corpus digest", previous["corpus"]["digest"], fingerprint["corpus_digest"]),
        ("task file digest", previous["tasks"]["digest"], fingerprint["tasks_digest"]),
        ("selected tasks", previous["tasks"]["task_ids"], fingerprint["task_ids"]),
        ("reader", previous["models"]["reader"], fingerprint["reader"]),
        ("conditions", sorted(previous["conditions"]), sorted(fingerprint["conditions"])),
        ("test-only conditions", previous.get("test_only", []), fingerprint["test_only"]),
    ]
    for what, before, current in checks:
        if before != current:
            raise EvaluationError(f"cannot resume: the {what} differs from the run's manifest")
    for name, document in fingerprint["conditions"].items():
        # Read back through Config, so a setting added since the run started counts as its
        # default (what the code that started the run did), not as a change.
        try:
            before = Config.from_dict(previous["conditions"][name]["config"]).to_dict()
        except ConfigError as error:
            raise EvaluationError(f"cannot resume: the manifest's configuration of {name!r} no longer "
                                  f"loads ({error})") from None
        if before != document["config"]:
            raise EvaluationError(
                f"cannot resume: the effective configuration of {name!r} differs from the manifest"
            )


# -- reports ----------------------------------------------------------------------------------


def report(run_dir: str | Path) -> Scorecard:
    """The scorecard of a run, rebuilt from its cases.jsonl by the instrument."""
    _, cases = load_run(run_dir)
    return build_scorecard(cases)


def score_from_dict(data: dict[str, Any]) -> Score:
    """Rebuild a `Score` from its `to_dict` form (as stored in cases.jsonl)."""
    def metric(d: dict[str, Any]) -> StageMetrics:
        return StageMetrics(**{**d, "ranked_sources": tuple(d["ranked_sources"]),
                               "found_expected": tuple(d["found_expected"]),
                               "missing_expected": tuple(d["missing_expected"])})

    def claim(d: dict[str, Any]) -> ClaimCheck:
        return ClaimCheck(**{**d, "cited_ids": tuple(d["cited_ids"])})

    tuples = ("admitted_sources", "expected_admitted", "extraneous_admitted",
              "must_not_include_hits", "cited_sources", "unknown_citations",
              "reported_unknown_citations", "uncited_claims", "notes")
    return Score(**{
        **data,
        **{name: tuple(data[name]) for name in tuples},
        "unmatched_groups": tuple(tuple(g) for g in data["unmatched_groups"]),
        "stage_metrics": {k: metric(v) for k, v in data["stage_metrics"].items()},
        "supported_claims": tuple(claim(c) for c in data["supported_claims"]),
        "unsupported_claims": tuple(claim(c) for c in data["unsupported_claims"]),
        "artifact_checks": tuple(CheckResult(**c) for c in data["artifact_checks"]),
    })


def downstream_gains(
    cases: Iterable[dict[str, Any]], baseline_condition: str = "no-memory"
) -> list[dict[str, Any]]:
    """For each downstream task, each condition's artifact-check gain over no-memory."""
    by_task: dict[str, dict[str, dict[str, Any]]] = {}
    for case in cases:
        if case["question_type"] == "downstream" and case["score"].get("artifact_checks"):
            by_task.setdefault(case["task_id"], {})[case["condition"]] = case
    gains = []
    for per_condition in by_task.values():
        without = per_condition.get(baseline_condition)
        if without is None:
            continue
        for name, case in per_condition.items():
            if name != baseline_condition:
                gains.append(downstream_gain(score_from_dict(case["score"]),
                                             score_from_dict(without["score"])))
    return gains


def summary_rows(scorecard: Scorecard) -> list[dict[str, Any]]:
    rows = []
    for (condition, qtype), cell in scorecard.cells.items():
        counts = cell.outcome_counts
        rows.append({
            "condition": condition, "question_type": qtype, "n": cell.cases,
            "passed": cell.passed, "pass_rate": _round(cell.pass_rate),
            **{label: counts[label] for label in OUTCOME_LABELS},
            "mean_recall_candidates": _round(cell.mean_recall_candidates),
            "mean_recall_admitted": _round(cell.mean_recall_admitted),
            "mean_mrr_candidates": _round(cell.mean_mrr_candidates),
            "mean_prompt_tokens": _round(cell.mean_prompt_tokens, 1),
            "mean_seconds": _round(cell.mean_seconds),
        })
    return rows


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def report_document(run_dir: str | Path) -> dict[str, Any]:
    """Everything `report` shows, as one JSON-ready document."""
    manifest, cases = load_run(run_dir)
    scorecard = build_scorecard(cases)
    return {
        "run_id": manifest.get("run_id"),
        "status": manifest.get("status"),
        "grader_version": manifest.get("grader_version"),
        "scorecard": scorecard.to_dict(),
        "downstream_gains": downstream_gains(cases),
        "downstream_by_condition": [row.to_dict() for row in downstream_gains_by_condition(cases)],
        "full_history_input": _full_history_input(cases),
        "best": (manifest.get("best") or {}).get("choice"),
    }


def _full_history_input(cases: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    full = [c for c in cases if c["condition"] == "full-history"]
    if not full:
        return None
    tokens = [c["context"]["prompt_tokens"] for c in full]
    return {"token_budget": full[0]["context"]["token_budget"],
            "mean_prompt_tokens": round(sum(tokens) / len(tokens), 1), "max_prompt_tokens": max(tokens),
            "admitted_sources": len(full[0]["admitted"]),
            "cut_sources": full[0]["context"]["cut_sources"]}


def report_text(run_dir: str | Path) -> str:
    """The scorecard tables, then the downstream gains over no-memory and the full-history size."""
    document = report_document(run_dir)
    lines = [f"run {document['run_id']} ({document['status']})", report(run_dir).to_text()]
    if document["downstream_gains"]:
        lines += ["", "Downstream tasks: artifact checks passed, with history vs no-memory"]
        for gain in document["downstream_gains"]:
            lines.append(f"  {gain['task_id']:<32} {gain['with_condition']:<18} "
                         f"{gain['checks_passed_with']}/{gain['checks_total']} vs "
                         f"{gain['checks_passed_without']}/{gain['checks_total']} "
                         f"(gain {gain['gain']:+d})")
    manifest, cases = load_run(run_dir)
    table = downstream_table_text(downstream_gains_by_condition(cases),
                                  matched=manifest.get("no_memory_control") == MATCHED_CONTROL)
    if table:
        lines += ["", *table]
    full = document["full_history_input"]
    if full:
        lines += ["", f"full-history input: mean {full['mean_prompt_tokens']} prompt tokens "
                      f"(max {full['max_prompt_tokens']}, budget {full['token_budget']}); "
                      f"{full['admitted_sources']} sources admitted, {len(full['cut_sources'])} cut"]
    if document["best"]:
        lines += ["", f"best (tuned on dev): {json.dumps(document['best'], sort_keys=True)}"]
    return "\n".join(lines)


def write_reports(run_dir: str | Path) -> Scorecard:
    """(Re)write summary.csv, scorecard.txt and scorecard.json from cases.jsonl."""
    run_dir = Path(run_dir)
    scorecard = report(run_dir)
    rows = summary_rows(scorecard)
    with (run_dir / "summary.csv").open("w", encoding="utf-8", newline="") as handle:
        columns = ["condition", "question_type", "n", "passed", "pass_rate", *OUTCOME_LABELS,
                   "mean_recall_candidates", "mean_recall_admitted", "mean_mrr_candidates",
                   "mean_prompt_tokens", "mean_seconds"]
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "scorecard.txt").write_text(report_text(run_dir) + "\n", encoding="utf-8")
    write_json(run_dir / "scorecard.json", report_document(run_dir))
    return scorecard
