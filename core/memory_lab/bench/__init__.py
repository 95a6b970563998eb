"""Benchmarks of the baseline's cost and scale: each writes one JSON result and, most, a figure.

Eight benchmarks (`memory-lab bench NAME`, or `python -m memory_lab.bench NAME`),
one module each:

- ``ingest`` (`ingest`): wall time of `refresh.sync` on a generated world against
  the encoder alone on the same chunk texts, with the per-phase breakdown.
- ``latency`` (`latency`): p50/p95 of every retrieval stage at 10k and 100k chunks,
  BM25 exactness against exhaustive scoring, the whole hybrid retrieval with the
  real query encoding, and the encoder's own one-thread latency in the same run.
- ``scale`` (`scale`): one million chunks: load, storage, HNSW build, recall@10
  against ``ef_search``, BM25 top-30 and hybrid latency (build once with
  ``--build-only``, time later with ``--reuse-index``).
- ``scifact`` (`scifact`): retrieval quality on BEIR SciFact beside the published
  figures, plus the BM25 stage's latency there.
- ``scifact-train`` (`scifact`): the two identifier rules chosen on SciFact's train
  queries (the test split is for ``scifact`` alone).
- ``compression`` (`compression`): prompt tokens saved by sentence compression of
  the oracle context, and the evidence quotes it keeps (no reading).
- ``encoder-threads`` (`encoder_threads`): the torch thread counts the encoder
  uses for queries and for ingest, measured.
- ``mcp`` (`mcp`): a warm `search` through the MCP server against a cold CLI search
  at the fixture, the PEPs and 100k chunks, and the first streamed token of `ask`.

Shared parts: `common` (results folder, machine description, timing),
`synthetic` (generated corpora, synthetic vectors, bulk loads through the store),
`exactness` (the exhaustive BM25 yardstick). Percentiles come from
`memory_lab.stats`, the lab's one definition.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from memory_lab.bench.common import RESULTS_DIR, BenchError, code_version, int_list, write_result
from memory_lab.bench.compression import bench_compression
from memory_lab.bench.encoder_threads import bench_encoder_threads
from memory_lab.bench.ingest import bench_ingest
from memory_lab.bench.ingest import figure as _figure_ingest
from memory_lab.bench.latency import bench_latency
from memory_lab.bench.latency import figure as _figure_latency
from memory_lab.bench.mcp import bench_mcp
from memory_lab.bench.scale import bench_scale
from memory_lab.bench.scale import figure as _figure_scale
from memory_lab.bench.scifact import bench_scifact, bench_scifact_train
from memory_lab.bench.scifact import figure as _figure_scifact
from memory_lab.bench.synthetic import (
    DIMENSION,
    VectorModel,
    recombined_corpus,
    vector_statistics,
    world_corpus,
)

BENCHMARKS = ("ingest", "latency", "scale", "scifact", "scifact-train", "compression", "encoder-threads",
              "mcp")
FIGURES: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "ingest": _figure_ingest, "latency": _figure_latency, "scale": _figure_scale,
    "scifact": _figure_scifact,
}

__all__ = ["BENCHMARKS", "DIMENSION", "FIGURES", "BenchError", "VectorModel", "bench_encoder_threads",
           "bench_ingest", "bench_latency", "bench_scale", "bench_scifact", "bench_scifact_train",
           "configure_parser",
           "int_list", "main", "recombined_corpus", "run_benchmark", "vector_statistics",
           "world_corpus", "write_result"]


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Arguments of `bench NAME`; the CLI adds these to its `bench` subcommand."""
    parser.add_argument("name", choices=BENCHMARKS, help="which benchmark to run")
    parser.add_argument("--json", action="store_true", help="print the result document on stdout")
    parser.add_argument("--out", default=str(RESULTS_DIR), help="folder for NAME.json and NAME.png")
    parser.add_argument("--queries", type=int, default=200, help="latency/scale: query count")
    parser.add_argument("--sizes", default="10000,100000", help="latency: chunk counts, comma-separated")
    parser.add_argument("--llm-queries", type=int, default=0,
                        help="latency: queries for the reranker and reader stages (slow)")
    parser.add_argument("--reranker", default="llm-qwen-0.5b", help="latency: reranker name")
    parser.add_argument("--reader", default="qwen-1.5b", help="latency: reader name")
    parser.add_argument("--chunks", type=int, default=1_000_000, help="scale: chunk count")
    parser.add_argument("--ef-search", default="10,20,40,64,100,200,400",
                        help="scale: ef_search values, comma-separated")
    parser.add_argument("--hybrid-ef-search", default="40,100,200",
                        help="scale: ef_search values at which the whole hybrid query is timed")
    parser.add_argument("--maintenance-work-mem", default="4GB", help="scale: for the HNSW build")
    parser.add_argument("--docs", type=int, default=400, help="ingest: world documents")
    parser.add_argument("--repeats", type=int, default=2,
                        help="ingest / encoder-threads: repeats (order alternates)")
    parser.add_argument("--beir-dir", default=os.environ.get("BEIR_SCIFACT", "data/beir-scifact"),
                        help="scifact: the BEIR folder")
    parser.add_argument("--max-queries", type=int, default=None, help="scifact: limit queries")
    parser.add_argument("--conditions", default=None,
                        help="scifact: BEIR conditions, comma-separated (default: beir's defaults)")
    parser.add_argument("--embedder", default="minilm",
                        help="scifact: the index's encoder (lexical conditions do not depend on it)")
    parser.add_argument("--corpus", action="append", default=[], metavar="NAME=HISTORY:TASKS",
                        help="compression: a corpus and its task file (repeatable; default fixture and PEPs)")
    parser.add_argument("--split", default="dev", help="compression: the tasks' split (dev)")
    parser.add_argument("--runs-root", default="benchmarks/runs",
                        help="scifact: where its BEIR run directory goes (committed beside the results)")
    parser.add_argument("--keep-index", action="store_true", help="keep the benchmark's index")
    parser.add_argument("--reuse-index", action="store_true",
                        help="latency/scale: reuse indexes kept by an earlier --keep-index run")
    parser.add_argument("--peps-index", default="bench_peps",
                        help="mcp: an index holding the PEPs (measured only when it exists)")
    parser.add_argument("--cold-queries", type=int, default=5, help="mcp: cold CLI searches per index")
    parser.add_argument("--ask-questions", type=int, default=3,
                        help="mcp: fixture questions read for the first streamed token (0: none)")
    parser.add_argument("--build-only", action="store_true",
                        help="latency/scale: build and keep the indexes, time nothing")
    return parser


DEFAULT_COMPRESSION_CORPORA = {
    "fixture": ("fixtures/history", "fixtures/tasks.json"),
    "peps": ("../shared/data/peps/corpus", "fixtures/peps/tasks.json"),
}


def _corpus_argument(value: str) -> tuple[str, tuple[str, str]]:
    name, _, paths = value.partition("=")
    history, _, tasks = paths.partition(":")
    if not (name and history and tasks):
        raise BenchError(f"--corpus wants NAME=HISTORY:TASKS, got {value!r}")
    return name, (history, tasks)


def run_benchmark(args: argparse.Namespace, conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """Run the benchmark `args.name` and write its JSON and figure; returns the document."""
    from memory_baseline.server import connect

    own = conn is None
    conn = conn or connect()
    progress = not args.json
    # The code as it was when the benchmark started: editing the tree during a long run
    # must not mark its results as from a dirty tree, nor a dirty start as clean.
    version = code_version()
    try:
        if args.name == "ingest":
            document = bench_ingest(conn, docs=args.docs, repeats=args.repeats, progress=progress)
        elif args.name == "latency":
            document = bench_latency(conn, sizes=int_list(args.sizes), queries=args.queries,
                                     llm_queries=args.llm_queries, reranker=args.reranker,
                                     reader=args.reader, keep=args.keep_index or args.build_only,
                                     reuse=args.reuse_index, build_only=args.build_only,
                                     progress=progress)
        elif args.name == "scale":
            document = bench_scale(conn, chunks=args.chunks, queries=args.queries,
                                   ef_search=int_list(args.ef_search),
                                   hybrid_ef_search=int_list(args.hybrid_ef_search),
                                   maintenance_work_mem=args.maintenance_work_mem,
                                   keep=args.keep_index or args.build_only,
                                   reuse=args.reuse_index, build_only=args.build_only,
                                   progress=progress)
        elif args.name == "scifact-train":
            document = bench_scifact_train(conn, beir_dir=args.beir_dir, max_queries=args.max_queries,
                                           embedder=args.embedder, progress=progress)
        elif args.name == "compression":
            corpora = dict(_corpus_argument(item) for item in args.corpus)
            document = bench_compression(conn, corpora or DEFAULT_COMPRESSION_CORPORA, split=args.split)
        elif args.name == "mcp":
            document = bench_mcp(conn, queries=args.queries, cold_queries=args.cold_queries,
                                 peps_index=args.peps_index, ask_questions=args.ask_questions,
                                 reuse=args.reuse_index)
        elif args.name == "encoder-threads":
            document = bench_encoder_threads(repeats=args.repeats)
        elif args.name == "scifact":
            document = bench_scifact(conn, beir_dir=args.beir_dir, max_queries=args.max_queries,
                                     runs_root=args.runs_root,
                                     conditions=[c for c in args.conditions.split(",") if c]
                                     if args.conditions else None,
                                     embedder=args.embedder, progress=progress)
        else:
            raise BenchError(f"unknown benchmark {args.name!r}; choose one of {BENCHMARKS}")
    finally:
        if own:
            conn.close()
    document.setdefault("code_version", version)
    name = f"{args.name}-build" if args.build_only and args.name in ("latency", "scale") else args.name
    path = write_result(name, document, args.out, FIGURES.get(name))
    document["result_path"] = str(path)
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = configure_parser(argparse.ArgumentParser(
        prog="memory-lab bench", description="Run a benchmark; write its JSON and figure."))
    args = parser.parse_args(argv)
    try:
        document = run_benchmark(args)
    except (BenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(document, default=str))
    else:
        print(f"wrote {document['result_path']}", file=sys.stderr)
    return 0
