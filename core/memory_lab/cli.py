"""`memory-lab`: the lab's own command line (the book, the ladders, the studies, benchmarks).

The library's CLI (`memory-baseline`) serves a user's index and imports none of
this. Every experiment the book reports is started from here:

    memory-lab book --profile full [--only 07] [--cached-only]
    memory-lab evaluate --tasks T --corpus C --conditions hybrid,oracle-source
    memory-lab report RUN_DIR | beir DIR | bench NAME | world generate OUT --seed 7 --docs 60
    memory-lab study answer-ladder run [STUDY_DIR]      # a resumable study, by name (see `study --help`)

Options and exit codes are the library CLI's (`--json`, `--config`, `--index`,
`--debug`; 0 success, 1 a failed check, 2 bad usage or input).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from memory_baseline.cli import (
    EXIT_FAILED_CHECK,
    EXIT_OK,
    STYLES,
    CommandTable,
    Config,
    UsageError,
    _common,
    _Parser,
    emit_json,
    load_config,
    run_command,
)

# The resumable studies and tools, each a module of the lab with its own `main(argv)`.
STUDIES = {
    "retrieval-ladder": ("ladders.retrieval", "chapter 7: every condition at retrieval level"),
    "answer-ladder": ("ladders.answer", "chapter 7: the answer-level ladder"),
    "downstream-ladder": ("ladders.downstream", "chapter 7: the downstream work requests"),
    "rescore-downstream": ("ladders.downstream_tasks", "judge recorded downstream work again"),
    "compression-reading": ("ladders.compression", "chapter 6: sentence compression, read"),
    "reader": ("chapters.reader", "chapter 9: read styles with oracle context; choose one on dev"),
    "grader-history": ("ladders.grader_history", "chapter 10: the probes under an older grader"),
    "grader-tuning": ("ladders.grader_tuning",
                      "chapter 10: the grader on the tuning set, the probes and the held-out answers"),
    "pep-history": ("corpora.peps", "chapter 11: the PEPs with their past versions"),
    "named-recall": ("chapters.peps", "chapter 11: named-identifier recall of a run"),
    "locomo": ("corpora.locomo", "chapter 12: LoCoMo imported, searched (retrieval) and read (answers)"),
    "answers": ("answers", "the answer caches: export a run's answers"),
    "readme": ("book.readme", "render the README's results sections from their artifacts"),
    "reproduction": ("book.reproduction", "clone, install and rebuild the book as a newcomer would"),
    "check-book": ("book.check", "open every built page in headless Chromium and check it"),
}


def cmd_world(args: argparse.Namespace) -> int:
    from memory_instrument.world import WorldParams, generate_world, world_digest

    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not empty; choose a new folder")
    manifest = generate_world(WorldParams(seed=args.seed, docs=args.docs), out)
    result = {"out": str(out), "seed": args.seed, "docs": args.docs, "digest": world_digest(out),
              "manifest": manifest}
    if args.json:
        emit_json(result)
    else:
        print(f"world seed {args.seed}: {args.docs} documents in {out}/history, tasks in "
              f"{out}/tasks.json, ledger in {out}/LEDGER.md; digest {result['digest']}")
    return EXIT_OK


def _world_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["generate"])
    parser.add_argument("out", help="an empty or new folder")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--docs", type=int, required=True, help="20 to 100000")


def cmd_book(args: argparse.Namespace) -> int:
    from memory_lab.book.build import BookBuildFailed, book

    try:
        result = book(profile=args.profile, only=args.only, execute=not args.no_execute,
                      build=not args.no_build, publish_after=args.publish,
                      published=args.from_published, progress=not args.json, repo=args.root,
                      cached_only=args.cached_only)
    except BookBuildFailed as exc:
        print(f"memory-lab: book failed: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return EXIT_FAILED_CHECK
    if args.json:
        emit_json(result.to_dict())
    else:
        if result.answers:
            layers = ", ".join(f"{n} from {layer}" for layer, n in result.answers["by_layer"].items())
            print(f"answers: {result.answers['from_cache']} from the cache ({layers or 'none'}), "
                  f"{result.answers['computed']} computed")
        if result.vectors:
            print(f"document vectors: {result.vectors['from_cache']} from the cache, "
                  f"{result.vectors['computed']} computed")
        print(f"book built: {result.index_html}")
    return EXIT_OK


def _book_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="smoke", help="smoke, full, or a TOML profile file")
    parser.add_argument("--only", default=None, help="execute one notebook (e.g. 03 or embeddings)")
    parser.add_argument("--no-build", action="store_true", help="execute notebooks, skip the build")
    parser.add_argument("--no-execute", action="store_true",
                        help="build from the chapters already executed in book/chapters")
    parser.add_argument("--publish", action="store_true",
                        help="then copy the chapters and the runs they name into book/published")
    parser.add_argument("--from-published", action="store_true",
                        help="build the published (full-profile) chapters; executes nothing")
    parser.add_argument("--cached-only", action="store_true",
                        help="compute no answer or reranker score: a chapter that needs one the "
                             "caches lack fails, naming it (proves a reproduction read everything)")
    parser.add_argument("--root", default=None,
                        help="the book's folder (holds _config.yml, notebooks/, book/); default: "
                             "the nearest one at or above the current directory")


def _split_conditions(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise UsageError("--conditions needs at least one name")
    return names


def cmd_evaluate(args: argparse.Namespace) -> int:
    from memory_baseline.server import connect
    from memory_lab.ladders.evaluation import run_evaluation
    from memory_lab.ladders.reports import report_text

    config = load_config(args)
    with connect() as conn:
        run_dir = run_evaluation(
            conn, config, args.tasks, args.corpus, _split_conditions(args.conditions),
            runs_root=args.runs_root, reader_name=args.reader, reranker_name=args.rerank_with,
            limit=args.limit, split=args.split, question_type=args.question_type, resume=args.resume,
            progress=not args.json,
        )
    if args.json:
        emit_json({"run_dir": str(run_dir)})
    else:
        print(report_text(run_dir))
        print(f"\nrun directory: {run_dir}")
    return EXIT_OK


def _evaluate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", required=True, help="task file (JSON), outside the corpus")
    parser.add_argument("--corpus", required=True, help="the history folder the tasks are about")
    parser.add_argument("--conditions", required=True,
                        help="comma-separated, e.g. no-memory,lexical,dense,hybrid,hybrid-reranked,"
                             "best,oracle-span,oracle-source,full-history")
    parser.add_argument("--reader", default=None, help="reader for every condition")
    parser.add_argument("--style", default=None, choices=sorted(STYLES),
                        help=f"how an LLM reader is asked (default: {Config().reader.style})")
    parser.add_argument("--rerank-with", default="llm-qwen-0.5b",
                        help="reranker of the hybrid-reranked condition")
    parser.add_argument("--runs-root", default="runs")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    parser.add_argument("--split", default=None, help="only tasks whose metadata.split is this")
    parser.add_argument("--question-type", default=None,
                        help="only tasks of this question type (e.g. downstream); best still tunes on "
                             "every dev task")
    parser.add_argument("--resume", default=None, help="continue an interrupted run directory")


def cmd_report(args: argparse.Namespace) -> int:
    from memory_lab.ladders.reports import report_document, report_text

    if not Path(args.run_dir).is_dir():
        raise UsageError(f"{args.run_dir} is not a run directory")
    if args.json:
        emit_json(report_document(args.run_dir))
    else:
        print(report_text(args.run_dir))
    return EXIT_OK


def cmd_beir(args: argparse.Namespace) -> int:
    from memory_baseline.server import connect
    from memory_lab.corpora.beir import format_beir, run_beir

    config = load_config(args)
    with connect() as conn:
        document = run_beir(conn, config, args.dir, _split_conditions(args.conditions),
                            split=args.split, runs_root=args.runs_root, depth=args.depth,
                            max_queries=args.max_queries, rrf_sweep=args.rrf_sweep,
                            progress=not args.json)
    if args.json:
        emit_json(document)
    else:
        print(format_beir(document))
    return EXIT_OK


def _beir_options(parser: argparse.ArgumentParser) -> None:
    from memory_lab.corpora.beir import DEFAULT_BEIR_CONDITIONS

    parser.add_argument("dir", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/")
    parser.add_argument("--conditions", default=",".join(DEFAULT_BEIR_CONDITIONS))
    parser.add_argument("--split", default="test")
    parser.add_argument("--runs-root", default="runs")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--max-queries", type=int, default=None)
    parser.add_argument("--rrf-sweep", action="store_true", help="RRF k sweep on a dev split")


def cmd_bench(args: argparse.Namespace) -> int:
    from memory_lab.bench import run_benchmark

    document = run_benchmark(args)
    if args.json:
        emit_json(document)
    else:
        print(f"{args.name}: results in {document['result_path']}")
    return EXIT_OK


def _bench_options(parser: argparse.ArgumentParser) -> None:
    from memory_lab.bench import configure_parser

    configure_parser(parser)


def cmd_study(args: argparse.Namespace) -> int:
    module = importlib.import_module(f"memory_lab.{STUDIES[args.study][0]}")
    sys.argv[0] = f"memory-lab study {args.study}"  # the study's own --help names itself so
    return int(module.main(list(args.rest)) or 0)


def _study_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", choices=sorted(STUDIES),
                        help="; ".join(f"{name}: {what}" for name, (_, what) in sorted(STUDIES.items())))
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the study's own arguments (--help)")


COMMANDS: CommandTable = {
    "book": (cmd_book, _book_options, "execute every notebook with Papermill, then build the Jupyter Book"),
    "evaluate": (cmd_evaluate, _evaluate_options,
                 "run the condition ladder on a task file and write a run directory"),
    "report": (cmd_report, lambda p: p.add_argument("run_dir"), "print the scorecard of a run directory"),
    "beir": (cmd_beir, _beir_options, "retrieval quality on a BEIR folder (nDCG@10, R@100, MRR@10)"),
    "bench": (cmd_bench, _bench_options,
              "benchmarks: ingest, latency, scale, scifact (JSON + figure in benchmarks/results)"),
    "world": (cmd_world, _world_options,
              "generate a controlled world (history, ledger, tasks) deterministically"),
    "study": (cmd_study, _study_options, "run, resume or summarise one of the lab's studies by name"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memory-lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name, (handler, configure, help_text) in COMMANDS.items():
        child = sub.add_parser(name, help=help_text, conflict_handler="resolve")
        if name != "study":  # a study parses its own arguments
            _common(child)
        configure(child)
        child.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(list(sys.argv[1:] if argv is None else argv), build_parser, prog="memory-lab")


if __name__ == "__main__":
    sys.exit(main())
