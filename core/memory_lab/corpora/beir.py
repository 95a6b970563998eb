"""Measure the retrieval stages on any BEIR-format dataset, against published numbers.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``).
The pipeline indexes files, so each document is materialised once as a text file
(title, a blank line, the text) under ``<memory home>/beir/<dataset>/docs/`` — never
inside the repository — and indexed with the ``whole`` chunking policy (one passage
per document) into the index ``beir_<dataset>``. An id that is not a safe file name
gets a hashed file name, recorded in ``doc_ids.json`` beside the documents.

Conditions run the real `Retriever` with a condition-specific configuration:

- ``lexical-bm25``, ``lexical-bm25-k1.5``, ``lexical-tsrank-cd``, ``dense``: one path,
  ``depth`` (100) candidates deep, so R@100 is meaningful.
- ``hybrid-bm25``, ``hybrid-tsrank-cd`` (RRF), ``hybrid-bm25-blend`` (convex blend):
  reported twice. The plain name is the pipeline as configured, each path
  ``per_path_candidates`` (30) deep, so its fused list holds at most 60 documents and
  its R@100 is really recall at that union; the ``@<depth>`` name runs each path
  ``depth`` deep, the fair comparison for R@100.
- ``hybrid-reranked``: hybrid-bm25 plus a real reranker; expensive, only on request.

The blend's dense weight is tuned on a dev split drawn from the dataset's *train*
queries (``qrels/train.tsv``), never on test; the optional RRF-k sweep uses the same
dev split. A document ranks at its best chunk (its score is the max over its chunks);
the score column of the TREC files encodes that rank, because identifier priority and
RRF ties make raw fused scores non-monotone and a metric tool would otherwise re-sort.
Metrics (nDCG@10, R@100, RR@10) come from ``ir_measures``. The base configuration's
``identifier_priority`` applies to every condition (it re-sorts single-path lists too);
`beir.json` records whether it was on, since on SciFact it costs nDCG@10.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from tqdm.auto import tqdm

from memory_baseline.config import Config
from memory_baseline.embedders import get_embedder
from memory_baseline.hashing import file_digest
from memory_baseline.refresh import SyncReport, sync
from memory_baseline.retrieval import Retriever
from memory_baseline.server import memory_home
from memory_lab.conditions import BEIR, ConditionError, condition_config, descriptions, spec
from memory_lab.ladders.tuning import QueryCachingEmbedder
from memory_lab.runs import finish_run, start_run, write_json
from memory_lab.stats import latency_summary

BEIR_CONDITIONS: dict[str, str] = descriptions("beir")
DEFAULT_BEIR_CONDITIONS: tuple[str, ...] = tuple(n for n in BEIR if n != "hybrid-reranked")
BLEND_WEIGHTS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
RRF_K_SWEEP: tuple[int, ...] = (1, 10, 30, 60, 100)
DEV_QUERIES = 200
DEV_SEED = 13

# Published nDCG@10 (and R@100 where published) on SciFact test, for comparison.
PUBLISHED_SCIFACT: dict[str, dict[str, Any]] = {
    "BM25 (BEIR paper, Thakur et al. 2021)": {"nDCG@10": 0.665},
    "BM25 flat (Anserini BEIR regressions)": {"nDCG@10": 0.679, "R@100": 0.925},
    "all-MiniLM-L6-v2 (MTEB)": {"nDCG@10": 0.645},
    "BM25 top-100 + cross-encoder ms-marco-MiniLM-L-6-v2 (BEIR paper)": {"nDCG@10": 0.688},
    "bge-small-en-v1.5 (MTEB)": {"nDCG@10": 0.713, "R@100": 0.945},
}

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
ID_MAP_FILE = "doc_ids.json"


class BeirError(ValueError):
    """The BEIR folder is malformed or the request cannot be run as asked."""


@dataclass(frozen=True)
class BeirDataset:
    name: str
    root: Path
    corpus_digest: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, dict[str, int]]]  # split -> query id -> doc id -> relevance


# -- reading and materialising ------------------------------------------------------


def dataset_name(beir_dir: str | Path) -> str:
    """`beir-scifact` -> `scifact`: lower case, a-z0-9_ only."""
    name = Path(beir_dir).resolve().name.lower()
    name = re.sub(r"^beir[-_]", "", name)
    name = re.sub(r"[^a-z0-9_]+", "_", name).strip("_")
    if not name:
        raise BeirError(f"cannot derive a dataset name from {beir_dir}")
    return name[:40]


def _read_jsonl(path: Path) -> Iterable[dict]:
    if not path.is_file():
        raise BeirError(f"{path} is missing (a BEIR folder needs corpus.jsonl and queries.jsonl)")
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BeirError(f"{path}:{line_number}: not JSON ({exc.msg})") from exc
            if "_id" not in record:
                raise BeirError(f"{path}:{line_number}: record has no '_id'")
            yield record


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> doc id -> relevance, from a BEIR qrels TSV (header line optional)."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (line_number == 1 and parts[0] == "query-id"):
                continue
            try:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
            except ValueError as exc:
                raise BeirError(f"{path}:{line_number}: relevance must be an integer") from exc
    return qrels


def load_dataset(beir_dir: str | Path) -> BeirDataset:
    root = Path(beir_dir).resolve()
    if not root.is_dir():
        raise BeirError(f"{beir_dir} is not a directory")
    corpus_path = root / "corpus.jsonl"
    queries = {str(q["_id"]): str(q.get("text", "")) for q in _read_jsonl(root / "queries.jsonl")}
    qrels = {p.stem: read_qrels(p) for p in sorted((root / "qrels").glob("*.tsv"))}
    if not corpus_path.is_file():
        raise BeirError(f"{corpus_path} is missing")
    return BeirDataset(dataset_name(root), root, file_digest(corpus_path), queries, qrels)


def doc_file_name(doc_id: str) -> str:
    """A file name for a document id: the id itself when safe, else a digest of it."""
    if _SAFE_ID.fullmatch(doc_id) and doc_id not in (".", ".."):
        return f"{doc_id}.txt"
    return f"_id-{hashlib.sha256(doc_id.encode('utf-8')).hexdigest()[:24]}.txt"


def beir_home(name: str) -> Path:
    """Where a dataset's materialised documents live (never inside the repository)."""
    return memory_home() / "beir" / name


def materialise_corpus(dataset: BeirDataset, *, progress: bool = False) -> tuple[Path, dict[str, str]]:
    """Write each document once as `docs/<safe id>.txt`; return the folder and source->doc id map.

    A marker holding the corpus digest makes a second call free; a changed corpus is
    rewritten and files of documents no longer present are removed.
    """
    home = beir_home(dataset.name)
    docs = home / "docs"
    marker = home / "corpus.sha256"
    map_path = home / ID_MAP_FILE
    if marker.is_file() and marker.read_text().strip() == dataset.corpus_digest and map_path.is_file():
        return docs, json.loads(map_path.read_text(encoding="utf-8"))
    docs.mkdir(parents=True, exist_ok=True)
    source_to_doc: dict[str, str] = {}
    records = list(_read_jsonl(dataset.root / "corpus.jsonl"))
    for record in tqdm(records, desc="materialise", unit="doc", disable=not progress):
        doc_id = str(record["_id"])
        file_name = doc_file_name(doc_id)
        if file_name in source_to_doc:
            raise BeirError(f"two documents map to the file {file_name} (duplicate id {doc_id!r}?)")
        source_to_doc[file_name] = doc_id
        title, text = str(record.get("title") or "").strip(), str(record.get("text") or "")
        body = f"{title}\n\n{text}" if title else text
        target = docs / file_name
        data = body.encode("utf-8")
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
    for stale in docs.glob("*.txt"):
        if stale.name not in source_to_doc:
            stale.unlink()
    map_path.write_text(json.dumps(source_to_doc, indent=0, sort_keys=True), encoding="utf-8")
    marker.write_text(dataset.corpus_digest + "\n")
    return docs, source_to_doc


def index_config(base: Config, dataset: BeirDataset) -> Config:
    """The dataset's own index: `beir_<name>`, one passage per document."""
    return base.with_overrides(index=f"beir_{dataset.name}", chunking={"policy": "whole"},
                               rerank={"name": "none"})


def prepare_index(
    conn: psycopg.Connection, base: Config, beir_dir: str | Path, *, progress: bool = True
) -> tuple[BeirDataset, Config, dict[str, str], SyncReport]:
    """Materialise and index a dataset (a no-op when the index is already current)."""
    dataset = load_dataset(beir_dir)
    docs, source_to_doc = materialise_corpus(dataset, progress=progress)
    config = index_config(base, dataset)
    report = sync(conn, config, str(docs), remove_missing=True, progress=progress)
    return dataset, config, source_to_doc, report


# -- conditions -----------------------------------------------------------------------


def _fused(name: str) -> bool:
    retrieval = spec(name, "beir").retrieval
    return retrieval.get("lexical", "none") != "none" and bool(retrieval.get("dense"))


def beir_condition_config(
    name: str, index: Config, *, depth: int, deep: bool = False, blend_weight: float | None = None,
    rrf_k: int | None = None, reranker_name: str = "llm-qwen-0.5b",
) -> Config:
    """The registry's condition `name` on the BEIR index, `depth` deep.

    Single paths retrieve `depth` per query; a fused condition keeps the pipeline's
    per-path depth unless `deep` (each path `depth` deep).
    """
    try:
        config = condition_config(name, index, reranker_name=reranker_name, family="beir",
                                  tuned={"blend_weight": blend_weight})
    except ConditionError as exc:
        raise BeirError(str(exc)) from None
    retrieval: dict[str, Any] = {
        "per_path_candidates": depth if deep or not _fused(name) else index.retrieval.per_path_candidates}
    if rrf_k is not None:
        retrieval["rrf_k"] = rrf_k
    return config.with_overrides(retrieval=retrieval)


@dataclass(frozen=True)
class RankedRun:
    """One condition's document rankings plus per-query latency."""

    rankings: dict[str, list[str]]  # query id -> doc ids, best first
    latency_ms: dict[str, float]


def run_condition(
    conn: psycopg.Connection, config: Config, queries: dict[str, str], source_to_doc: dict[str, str],
    *, embedder: QueryCachingEmbedder | None = None, label: str = "", progress: bool = False,
) -> RankedRun:
    """Retrieve for every query with the real pipeline; a document ranks at its best chunk.

    Latency is the wall time of `Retriever.retrieve` plus, for a condition with a dense
    path whose query vector came from the run's cache, the time its first encoding took,
    so every dense condition is charged one real query encoding.
    """
    embedder = embedder or QueryCachingEmbedder(get_embedder(config.embedder))
    retriever = Retriever(conn, config, embedder=embedder)
    rankings: dict[str, list[str]] = {}
    latency: dict[str, float] = {}
    for query_id, text in tqdm(list(queries.items()), desc=label or "retrieve", unit="q",
                               disable=not progress, leave=False):
        if not text.strip():
            rankings[query_id], latency[query_id] = [], 0.0
            continue
        cached = config.retrieval.dense and text in embedder
        started = time.perf_counter()
        result = retriever.retrieve(text)
        latency[query_id] = (time.perf_counter() - started) * 1000
        if cached:
            latency[query_id] += embedder.first_encode_ms[text]
        docs = [source_to_doc.get(s, s.removesuffix(".txt")) for s in result.final.source_ids]
        rankings[query_id] = list(dict.fromkeys(docs))
    return RankedRun(rankings, latency)


def trec_run(rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Rank-encoding scores (n, n-1, ...) so any metric tool keeps the pipeline's order."""
    return {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)}
            for qid, docs in rankings.items()}


def write_trec(path: Path, rankings: dict[str, list[str]], tag: str) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for qid in sorted(rankings, key=_natural_key):
            docs = rankings[qid]
            for rank, doc in enumerate(docs, 1):
                handle.write(f"{qid} Q0 {doc} {rank} {len(docs) - rank + 1} {tag}\n")


def _natural_key(value: str) -> tuple:
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def evaluate_rankings(
    qrels: dict[str, dict[str, int]], rankings: dict[str, list[str]]
) -> dict[str, float]:
    """nDCG@10, R@100 and RR@10 (ir_measures), over the queries that have judgements."""
    import ir_measures
    from ir_measures import RR, R, nDCG

    run = trec_run({qid: docs for qid, docs in rankings.items() if qid in qrels})
    for qid in qrels:
        run.setdefault(qid, {})  # a query with no results scores 0, it is not skipped
    measures = [nDCG @ 10, R @ 100, RR @ 10]
    aggregate = ir_measures.calc_aggregate(measures, qrels, run)
    return {str(m): round(float(aggregate.get(m, 0.0)), 4) for m in measures}


def dev_split(dataset: BeirDataset, size: int = DEV_QUERIES, seed: int = DEV_SEED) -> dict[str, str]:
    """A seeded sample of train queries with judgements: the only data tuning may see."""
    train = dataset.qrels.get("train")
    if not train:
        raise BeirError(f"{dataset.root}/qrels/train.tsv is missing or empty: nothing to tune on")
    ids = sorted((q for q in train if q in dataset.queries), key=_natural_key)
    chosen = sorted(random.Random(seed).sample(ids, min(size, len(ids))), key=_natural_key)
    return {qid: dataset.queries[qid] for qid in chosen}


def _primary(metrics: dict[str, float]) -> tuple[float, float]:
    return metrics["nDCG@10"], metrics["R@100"]


# -- the run ---------------------------------------------------------------------------


def run_beir(
    conn: psycopg.Connection,
    base_config: Config,
    beir_dir: str | Path,
    conditions: Sequence[str] = DEFAULT_BEIR_CONDITIONS,
    *,
    split: str = "test",
    runs_root: str | Path = "runs",
    depth: int = 100,
    max_queries: int | None = None,
    rrf_sweep: bool = False,
    reranker_name: str = "llm-qwen-0.5b",
    dev_queries: int = DEV_QUERIES,
    progress: bool = True,
) -> dict[str, Any]:
    """Index a BEIR folder, run the conditions on `split`, write TREC runs and `beir.json`."""
    unknown = [c for c in conditions if c not in BEIR_CONDITIONS]
    if unknown:
        raise BeirError(f"unknown BEIR condition {unknown[0]!r}; choose from {sorted(BEIR_CONDITIONS)}")
    if split == "train" and ("hybrid-bm25-blend" in conditions or rrf_sweep):
        raise BeirError("tuning uses the train queries; evaluate on another split")
    started = datetime.now(UTC)
    dataset, index, source_to_doc, sync_report = prepare_index(conn, base_config, beir_dir,
                                                               progress=progress)
    qrels = dataset.qrels.get(split)
    if not qrels:
        raise BeirError(f"{dataset.root}/qrels/{split}.tsv is missing or empty")
    query_ids = sorted((q for q in qrels if q in dataset.queries), key=_natural_key)
    if max_queries is not None:
        query_ids = query_ids[:max_queries]
    queries = {qid: dataset.queries[qid] for qid in query_ids}
    qrels = {qid: qrels[qid] for qid in query_ids}
    run_dir, manifest = start_run(runs_root, "beir", prefix=f"beir-{dataset.name}-", conn=conn,
                                  config=index, dataset=dataset.name, split=split)
    embedder = QueryCachingEmbedder(get_embedder(index.embedder))

    tuning: dict[str, Any] = {}
    blend_weight: float | None = None
    if "hybrid-bm25-blend" in conditions or rrf_sweep:
        dev = dev_split(dataset, dev_queries)
        dev_qrels = {qid: dataset.qrels["train"][qid] for qid in dev}
        tuning["dev"] = {"source": "qrels/train.tsv", "queries": len(dev), "seed": DEV_SEED}
        if "hybrid-bm25-blend" in conditions:
            scores = {}
            for weight in BLEND_WEIGHTS:
                config = beir_condition_config("hybrid-bm25-blend", index, depth=depth,
                                               blend_weight=weight)
                ranked = run_condition(conn, config, dev, source_to_doc, embedder=embedder,
                                       label=f"dev blend w={weight}", progress=progress)
                scores[weight] = evaluate_rankings(dev_qrels, ranked.rankings)
            blend_weight = max(BLEND_WEIGHTS, key=lambda w: (_primary(scores[w]), -abs(w - 0.5)))
            tuning["blend"] = {"grid": list(BLEND_WEIGHTS), "criterion": "dev nDCG@10, then R@100",
                               "dev_scores": {str(w): s for w, s in scores.items()},
                               "chosen_dense_weight": blend_weight}
        if rrf_sweep:
            sweep = {}
            for k in RRF_K_SWEEP:
                config = beir_condition_config("hybrid-bm25", index, depth=depth, rrf_k=k)
                ranked = run_condition(conn, config, dev, source_to_doc, embedder=embedder,
                                       label=f"dev rrf k={k}", progress=progress)
                sweep[str(k)] = evaluate_rankings(dev_qrels, ranked.rankings)
            tuning["rrf_k_sweep"] = {"ks": list(RRF_K_SWEEP), "dev_scores": sweep,
                                     "note": "reported only; the hybrid conditions keep their k"}

    results: dict[str, Any] = {}
    for name in conditions:
        variants = [(name, False)]
        if (_fused(name) and name != "hybrid-reranked"
                and index.retrieval.per_path_candidates != depth):
            variants.append((f"{name}@{depth}", True))
        for label, deep in variants:
            config = beir_condition_config(name, index, depth=depth, deep=deep,
                                           blend_weight=blend_weight, reranker_name=reranker_name)
            ranked = run_condition(conn, config, queries, source_to_doc, embedder=embedder,
                                   label=label, progress=progress)
            write_trec(run_dir / f"{label}.trec", ranked.rankings, label)
            results[label] = {
                "metrics": evaluate_rankings(qrels, ranked.rankings),
                "latency": latency_summary(list(ranked.latency_ms.values())),
                "per_path_candidates": config.retrieval.per_path_candidates,
                "mean_ranked_docs": round(statistics.fmean(len(d) for d in ranked.rankings.values()), 1)
                if ranked.rankings else 0.0,
                "config": config.to_dict(),
            }

    document = {
        "dataset": dataset.name,
        "beir_dir": str(dataset.root),
        "split": split,
        "queries": len(queries),
        "corpus_digest": dataset.corpus_digest,
        "index": index.index,
        "index_sync": {"added": len(sync_report.added), "changed": len(sync_report.changed),
                       "reembedded": len(sync_report.reembedded), "unchanged": sync_report.unchanged,
                       "skipped": sync_report.skipped[:20], "seconds": sync_report.seconds},
        "embedder": embedder.identity.to_dict(),
        "depth": depth,
        "depth_note": (f"single-path conditions retrieve {depth} per query; a hybrid name without "
                       f"'@' is the pipeline default ({index.retrieval.per_path_candidates} per "
                       f"path, fused), '@{depth}' runs each path {depth} deep"),
        "metric_tool": "ir_measures",
        # Identifier priority re-sorts every fused list (single-path ones too); it is a
        # pipeline rule for project identifiers, so say plainly whether it was on.
        "identifier_priority": index.retrieval.identifier_priority,
        "dense_plan": index.retrieval.dense_plan,
        "conditions": results,
        "tuning": tuning,
        "published": PUBLISHED_SCIFACT if dataset.name == "scifact" else {},
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "code_version": manifest["code_version"],
        "machine": manifest["machine"],
        "run_dir": str(run_dir),
    }
    write_json(run_dir / "beir.json", document)
    finish_run(run_dir, manifest, results="beir.json")
    return document


def format_beir(document: dict[str, Any]) -> str:
    """A plain-text table of a `run_beir` result."""
    rows = [["condition", "nDCG@10", "R@100", "RR@10", "p50 ms", "p95 ms"]]
    for name, result in document["conditions"].items():
        m, lat = result["metrics"], result["latency"]
        rows.append([name, f"{m['nDCG@10']:.3f}", f"{m['R@100']:.3f}", f"{m['RR@10']:.3f}",
                     f"{lat['p50_ms']:.1f}", f"{lat['p95_ms']:.1f}"])
    for name, figures in document.get("published", {}).items():
        rows.append([f"published: {name}", f"{figures['nDCG@10']:.3f}",
                     f"{figures['R@100']:.3f}" if "R@100" in figures else "-", "-", "-", "-"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    header = (f"{document['dataset']} ({document['split']}, {document['queries']} queries, "
              f"identifier priority {'on' if document.get('identifier_priority') else 'off'}); "
              f"{document['depth_note']}")
    return header + "\n" + "\n".join(lines)
