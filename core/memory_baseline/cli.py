"""The `memory-baseline` command line.

Every subcommand takes `--index NAME`, `--json`, `--config FILE` and `--debug`.
With `--json` it prints exactly one JSON document on stdout. Exit codes: 0
success, 1 a failed check (`health`), 2 bad usage, bad input or an environment
failure (the database unreachable or lost mid-command), with a one-line reason
on stderr and nothing written; a traceback only with `--debug`. Text output
shows control characters in file names as escapes, never raw to the terminal;
secrets (a password in `DATABASE_URL`) are never printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from .config import Config, ConfigError, validate_index_name
from .reading import STYLES
from .redaction import guarded_output, install_excepthook, redact

EXIT_OK, EXIT_FAILED_CHECK, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(Exception):
    """Bad usage or bad input: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        raise UsageError(message)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "tolist"):
        return value.tolist()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, default=_json_default, indent=2, ensure_ascii=False))
    sys.stdout.write("\n")


def shown(text: str) -> str:
    """`text` with control characters escaped: a file name cannot drive the terminal."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode()
                   for c in text)


def load_config(args: argparse.Namespace) -> Config:
    config = Config.load(getattr(args, "config", None))
    if getattr(args, "index", None) is not None:
        config = config.with_overrides(index=validate_index_name(args.index))
    if getattr(args, "embedder", None):
        config = config.with_overrides(embedder={"name": args.embedder})
    if getattr(args, "reader", None):
        config = config.with_overrides(reader={"name": args.reader})
    if getattr(args, "style", None):
        config = config.with_overrides(reader={"style": args.style})
    if getattr(args, "reranker", None):
        config = config.with_overrides(rerank={"name": args.reranker})
    return config


# -- commands -----------------------------------------------------------------

def cmd_init(args: argparse.Namespace) -> int:
    from .embedders import get_embedder
    from .refresh import open_index
    from .server import connect

    config = load_config(args)
    embedder = get_embedder(config.embedder)
    with connect() as conn:
        store, rep_id = open_index(conn, config, embedder)
        counts = store.counts()
    result = {"index": config.index, "representation_id": rep_id,
              "embedder": embedder.identity.to_dict(), "counts": counts}
    if args.json:
        emit_json(result)
    else:
        print(f"index {config.index!r} ready: {counts['sources']} sources, "
              f"{counts['chunks']} chunks, representation {rep_id}")
    return EXIT_OK


def _sync_command(args: argparse.Namespace, *, remove_missing: bool) -> int:
    from .health import check_health
    from .refresh import sync
    from .server import connect

    config = load_config(args)
    if not args.path.strip():
        raise UsageError("the corpus path is empty (an unset shell variable?): name a folder")
    root = Path(args.path)
    if not root.is_dir():
        raise UsageError(f"{shown(args.path)} is not a directory")

    def progress_line(message: str) -> None:
        print(f"memory-baseline: {message}", file=sys.stderr, flush=True)

    with connect() as conn:
        report = sync(conn, config, str(root), remove_missing=remove_missing, git=args.git,
                      progress=not args.json and sys.stderr.isatty(),
                      prune=getattr(args, "prune", False),
                      on_progress=None if args.json else progress_line)
        health = check_health(conn, config.index, report.representation_id,
                              expect_hnsw=config.hnsw_build) if remove_missing else None
    document = report.to_dict()
    if health is not None:
        document["health"] = health.to_dict()
    if args.json:
        emit_json(document)
    else:
        _print_sync(report, "refresh" if remove_missing else "ingest")
        if health is not None:
            _print_health(health)
    return EXIT_OK if health is None or health.ok else EXIT_FAILED_CHECK


def _print_sync(report, verb: str) -> None:
    if not report.changed_anything and not report.failed_observations:
        print(f"{verb}: nothing changed ({report.unchanged} sources unchanged)")
    else:
        print(f"{verb}: {len(report.added)} added, {len(report.changed)} changed, "
              f"{len(report.reembedded)} re-embedded, {len(report.removed)} removed, "
              f"{len(report.pruned)} pruned, "
              f"{report.unchanged} unchanged; {report.chunks_written} chunks written")
    for source_id in report.pruned:
        print(f"  pruned (present but unusable): {shown(source_id)}")
    for failure in report.failed_observations:
        print(f"  failed observation (kept): {shown(failure.source_id)}: {failure.reason}")
    for source_id in report.carried_over:
        print("  carried over (unreadable, re-embedded with its old chunk boundaries): "
              f"{shown(source_id)}")
    for skipped in report.skipped:
        print(f"  skipped: {shown(skipped['path'])}: {skipped['reason']}")
    print("  seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in report.seconds.items()))


def cmd_ingest(args: argparse.Namespace) -> int:
    return _sync_command(args, remove_missing=False)


def cmd_refresh(args: argparse.Namespace) -> int:
    return _sync_command(args, remove_missing=True)


def _print_health(report) -> None:
    print(f"index {report.index!r}: {report.counts['sources']} sources, "
          f"{report.counts['chunks']} chunks — {'OK' if report.ok else 'FAILED'}")
    for check in report.checks:
        mark = "ok " if check.ok else ("WARN" if check.severity == "warning" else "FAIL")
        print(f"  [{mark}] {check.name}: {check.detail}")


def cmd_health(args: argparse.Namespace) -> int:
    from .embedders import get_embedder
    from .health import check_health
    from .representation import representation_id
    from .server import connect

    config = load_config(args)
    expected = representation_id(config, get_embedder(config.embedder))
    with connect() as conn:
        report = check_health(conn, config.index, expected, expect_hnsw=config.hnsw_build)
    if args.json:
        emit_json(report.to_dict())
    else:
        _print_health(report)
    return EXIT_OK if report.ok else EXIT_FAILED_CHECK


def cmd_server(args: argparse.Namespace) -> int:
    from . import server

    if args.action == "stop":
        done = server.shutdown()
        result = {"stopped": done.stopped, "note": done.note}
    elif args.action == "start":
        server.database_url()
        result = server.status().__dict__
    else:
        result = server.status().__dict__
    if result.get("note") is None:
        result.pop("note", None)  # only a pid file not trusted has something to say
    else:
        result["note"] = shown(result["note"])
    result["url"] = redact(result.get("url") or "")
    if args.json:
        emit_json(result)
    else:
        print(" ".join(f"{k}={v}" for k, v in result.items()))
    return EXIT_OK


def _parse_as_of(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError as exc:
        raise UsageError(f"--as-of must be an ISO date (YYYY-MM-DD), got {value!r}") from exc


def cmd_search(args: argparse.Namespace) -> int:
    from .baseline import Baseline
    from .server import connect

    config = load_config(args)
    if args.explain:
        config = config.with_overrides(retrieval={"explain": True})
    with connect() as conn:
        baseline = Baseline(conn, config)
        found = baseline.search(args.query, _parse_as_of(args.as_of))
    retrieval, context = found.retrieval, found.context
    if args.json:
        document = retrieval.to_dict()
        document["timings_ms"] = found.timings_ms
        document["stages"].append({
            "name": "admitted", "ms": found.timings_ms["assembly"],
            "source_ids": context.admitted_sources,
            "candidates": [{"chunk_id": p.chunk_id, "source_id": p.source_id, "rank": i,
                            "retrieval_rank": p.rank, "truncated": p.truncated}
                           for i, p in enumerate(context.admitted, 1)],
            "detail": {k: v for k, v in context.to_dict().items() if k != "admitted"},
        })
        emit_json(document)
        return EXIT_OK
    for stage in retrieval.stages:
        print(f"== {stage.name} ({stage.ms:.1f} ms, {len(stage.candidates)} candidates)")
        for candidate in stage.candidates[: args.show]:
            print(f"  {candidate.rank:>3}  {candidate.score:8.4f}  {shown(candidate.chunk_id)}")
    print(f"== admitted ({len(context.admitted)} passages, {context.prompt_tokens} prompt tokens "
          f"of {context.token_budget}, {context.tokenizer})")
    for passage in context.admitted:
        print(f"  {passage.rank:>3}  {shown(passage.chunk_id)}"
              f"{'  (truncated)' if passage.truncated else ''}")
    return EXIT_OK


def cmd_ask(args: argparse.Namespace) -> int:
    from .baseline import Baseline
    from .server import connect

    config = load_config(args)
    with connect() as conn:
        result = Baseline(conn, config).ask(args.query, _parse_as_of(args.as_of))
    if args.json:
        emit_json(result.to_dict())
        return EXIT_OK
    answer = result.answer
    print(answer.text.strip())
    print()
    print("cited: " + (", ".join(answer.citations) or "(none)"))
    if answer.unknown_citations:
        print("cited but not admitted (flagged): " + ", ".join(answer.unknown_citations))
    print(f"reader {answer.reader.get('name')}: {answer.usage.prompt_tokens} prompt + "
          f"{answer.usage.completion_tokens} completion tokens, {answer.usage.seconds:.1f} s"
          f"{' (cache hit)' if answer.cached else ''}")
    return EXIT_OK


def _query_options(parser: argparse.ArgumentParser, *, show: bool) -> None:
    parser.add_argument("query")
    parser.add_argument("--as-of", default=None, help="the question's date (ISO)")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--reranker", default=None)
    parser.add_argument("--reader", default=None, help="reader (default: qwen-1.5b)")
    parser.add_argument("--style", default=None, choices=sorted(STYLES),
                        help=f"how an LLM reader is asked (default: {Config().reader.style})")
    if show:
        parser.add_argument("--show", type=int, default=10, help="rows per stage in the table")
        parser.add_argument("--explain", action="store_true", help="record the dense query plan")


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
    from memory_lab.book import BookBuildFailed, book

    try:
        result = book(profile=args.profile, only=args.only, execute=not args.no_execute,
                      build=not args.no_build, publish_after=args.publish,
                      published=args.from_published, progress=not args.json, repo=args.root,
                      cached_only=args.cached_only)
    except BookBuildFailed as exc:
        print(f"memory-baseline: book failed: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
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
    from memory_lab.evaluation import report_text, run_evaluation

    from .server import connect

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
    from memory_lab.evaluation import report_document, report_text

    if not Path(args.run_dir).is_dir():
        raise UsageError(f"{args.run_dir} is not a run directory")
    if args.json:
        emit_json(report_document(args.run_dir))
    else:
        print(report_text(args.run_dir))
    return EXIT_OK


def cmd_beir(args: argparse.Namespace) -> int:
    from memory_lab.beir import format_beir, run_beir

    from .server import connect

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
    from memory_lab.beir import DEFAULT_BEIR_CONDITIONS

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


CommandTable = dict[str, tuple[Callable[[argparse.Namespace], int], Callable[[argparse.ArgumentParser], None], str]]  # noqa: E501


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", default=None, help="index (PostgreSQL schema) name")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    parser.add_argument("--config", default=None, help="TOML configuration file")
    parser.add_argument("--debug", action="store_true", help="print the traceback of a failure")


def _embedder_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--embedder", default=None, help="embedder name (default: minilm)")


def _corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="corpus folder (or, with --git, a git repository)")
    parser.add_argument("--git", action="store_true",
                        help="also index commit messages and every historical version (path@commit)")
    _embedder_option(parser)


def _refresh_options(parser: argparse.ArgumentParser) -> None:
    _corpus_options(parser)
    parser.add_argument("--prune", action="store_true",
                        help="also remove sources that are present but unusable (and unreachable "
                             "history), and allow removing more than max_remove_share")


COMMANDS: CommandTable = {
    "init": (cmd_init, _embedder_option, "create the index schema"),
    "ingest": (cmd_ingest, lambda p: _corpus_options(p), "index a corpus folder (add and update)"),
    "refresh": (cmd_refresh, _refresh_options,
                "bring the index in line with a corpus folder, then check health"),
    "health": (cmd_health, _embedder_option, "check the index's integrity (exit 1 on failure)"),
    "search": (cmd_search, lambda p: _query_options(p, show=True),
               "retrieve and assemble context; print every stage"),
    "ask": (cmd_ask, lambda p: _query_options(p, show=False),
            "answer a question with citations from the index"),
    "world": (cmd_world, _world_options,
              "generate a controlled world (history, ledger, tasks) deterministically"),
    "evaluate": (cmd_evaluate, _evaluate_options,
                 "run the condition ladder on a task file and write a run directory"),
    "report": (cmd_report, lambda p: p.add_argument("run_dir"),
               "print the scorecard of a run directory"),
    "beir": (cmd_beir, _beir_options, "retrieval quality on a BEIR folder (nDCG@10, R@100, MRR@10)"),
    "bench": (cmd_bench, _bench_options,
              "benchmarks: ingest, latency, scale, scifact (JSON + figure in benchmarks/results)"),
    "book": (cmd_book, _book_options,
             "execute every notebook with Papermill, then build the Jupyter Book"),
    "server": (cmd_server,
               lambda p: p.add_argument("action", choices=["status", "start", "stop"]),
               "the embedded PostgreSQL server"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memory-baseline", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name, (handler, configure, help_text) in COMMANDS.items():
        # "resolve": a stage's own options (bench has its own --json) may restate common ones.
        child = sub.add_parser(name, help=help_text, conflict_handler="resolve")
        _common(child)
        configure(child)
        child.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import psycopg

    from .chunking import ChunkingError
    from .ingest import IngestError
    from .server import ServerError
    from .store import StoreError

    bad_input: tuple[type[BaseException], ...] = (
        UsageError, ConfigError, IngestError, StoreError, ServerError, ChunkingError, ValueError,
        FileNotFoundError,
    )
    arguments = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in arguments
    if debug:  # the traceback the interpreter prints passes through the same redaction
        install_excepthook()
    # Everything printed passes through one redaction; results never drive the terminal.
    with guarded_output(json_output="--json" in arguments):
        try:
            args = build_parser().parse_args(arguments)
            if not getattr(args, "handler", None):
                raise UsageError("missing subcommand; see `memory-baseline --help`")
            _check_query(args)
            return args.handler(args)
        except KeyboardInterrupt:
            print("memory-baseline: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:
            if debug:
                raise
            print(f"memory-baseline: error: {_one_line(exc, bad_input, psycopg.Error)}",
                  file=sys.stderr)
            return EXIT_BAD_INPUT


def _check_query(args: argparse.Namespace) -> None:
    """A query must be text: bytes that are not UTF-8 reach Python as lone surrogates."""
    query = getattr(args, "query", None)
    if isinstance(query, str):
        try:
            query.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"the query is not valid UTF-8 text: {shown(query)}") from None


def _one_line(exc: BaseException, bad_input: tuple[type[BaseException], ...],
              database_error: type[BaseException]) -> str:
    """The reason of a failure on one line, secrets redacted."""
    text = redact(str(exc)).strip()  # before cutting: a secret may span the first line
    first = text.splitlines()[0] if text else type(exc).__name__
    full = _no_space_left(exc)
    if full is not None:
        message = full
    elif isinstance(exc, bad_input):
        message = first
    elif isinstance(exc, database_error):
        lost = getattr(exc, "sqlstate", None) in ("57P01", "57P02", "57P03") or (
            type(exc).__name__ == "OperationalError")
        what = "lost the connection to PostgreSQL" if lost else "database error"
        message = f"{what} ({type(exc).__name__}): {first}; the index keeps its last committed state"
    else:
        message = f"unexpected {type(exc).__name__}: {first} (run with --debug for the traceback)"
    return shown(redact(message))


def _no_space_left(exc: BaseException) -> str | None:
    """The one line for a full disk, wherever in the chain of causes it was met."""
    import errno

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        where = ""
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f" (writing {current.filename})" if current.filename else ""
        elif getattr(current, "sqlstate", None) == "53100":  # PostgreSQL's disk_full
            where = " (PostgreSQL could not extend its files; the index keeps its last committed state)"
        elif "No space left on device" not in str(current):
            current = current.__cause__ or current.__context__
            continue
        return f"no space left on the device{where}: free some space and run the command again"
    return None


if __name__ == "__main__":
    sys.exit(main())
