"""The condition ladder: every task of a task file under named conditions, into a run directory.

The instrument (`memory_instrument`) decides what success is; this module only
runs the baseline under named conditions, reports what each stage did as the
instrument's `SystemOutput` (`adapter`), scores it with `score_task`, and writes
the run (`reports` rebuilds its scorecard). `best` is tuned in `tuning`, the
oracles' passages are built in `oracles`.

Conditions. Each is a function of the base configuration: an effective `Config`
plus a *context source*, the thing that decides which passages reach the reader:

- ``retrieval``: the pipeline's own search (``lexical``, ``dense``, ``hybrid``,
  ``hybrid-reranked``, ``best``, ``lexical-tsrank-cd``, ``hybrid-tsrank-cd``);
- ``none`` (``no-memory``): the reader gets the question and no history at all, asked
  in the same reading style, layout and output format as the history conditions (the
  matched control: `memory_lab.ladders.downstream_tasks`);
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

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.baseline import Baseline
from memory_baseline.config import Config, ConfigError, ReaderConfig
from memory_baseline.context_sources import (
    ContextSource,
    NoHistory,
    Retrieved,
    WholeHistory,
    given,
)
from memory_baseline.embedders import Embedder, get_embedder
from memory_baseline.hashing import file_digest
from memory_baseline.ingest import Discovery, SourceRecord, discover
from memory_baseline.reading import Reader, get_reader
from memory_baseline.refresh import sync
from memory_baseline.retrieval import Retriever
from memory_instrument import (
    GRADER_VERSION,
    SystemOutput,
    Task,
    load_tasks,
    score_task,
)
from memory_lab.conditions import DEFAULT_RERANKER, EvaluationError, condition_config, spec
from memory_lab.ladders.adapter import to_system_output
from memory_lab.ladders.downstream_tasks import (
    MATCHED_CONTROL,
)
from memory_lab.ladders.oracles import full_history_passages, oracle_source_passages, oracle_span_passages
from memory_lab.ladders.reports import _read_cases, load_run, write_reports
from memory_lab.ladders.tuning import BestChoice, QueryCachingEmbedder, tune_best
from memory_lab.runs import (
    MANIFEST,
    corpus_digest,
    manifest_header,
    new_run_dir,
    write_json,
)

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
    versions, `memory_lab.corpora.peps`): it replaces reading `corpus_dir`, for the index
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
        # Where answers are looked up (the cache section) does not change what a condition is:
        # a resumed run may read the same answers from another checkout's folders.
        before.pop("cache", None)
        if before != {k: v for k, v in document["config"].items() if k != "cache"}:
            raise EvaluationError(
                f"cannot resume: the effective configuration of {name!r} differs from the manifest"
            )


# -- reports ----------------------------------------------------------------------------------
