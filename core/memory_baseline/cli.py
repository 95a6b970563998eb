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
import json
import sys
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from .config import CHOICES, Config, ConfigError, validate_index_name
from .jsonable import jsonable
from .redaction import guarded_output, install_excepthook, redact

# The styles an LLM reader accepts, from the config's registry: importing `reading` here
# would load the retrieval stack (numpy, psycopg) before `--help` could print.
STYLES = CHOICES["reader.style"]
# Commands that moved to the lab's own entry point, so that this CLI never imports the lab.
LAB_COMMANDS = ("book", "evaluate", "report", "beir", "bench", "world")

EXIT_OK, EXIT_FAILED_CHECK, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(Exception):
    """Bad usage or bad input: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        raise UsageError(message)


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(jsonable(document), indent=2, ensure_ascii=False))
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
    embedder = get_embedder(config.embedder, config.cache)
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
    _print_skipped(report.skipped)
    print("  seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in report.seconds.items()))


SKIPPED_SHOWN = 10  # paths listed per reason; --json lists them all


def _print_skipped(skipped: list[dict[str, str]]) -> None:
    """What was not read, counted by reason: folders left out first, then files."""
    if not skipped:
        return
    by_reason: dict[str, list[str]] = {}
    for entry in skipped:
        by_reason.setdefault(entry["reason"], []).append(entry["path"])
    counts = ", ".join(f"{reason} {len(paths)}" for reason, paths in sorted(by_reason.items()))
    print(f"  not read: {len(skipped)} ({counts})")
    for reason, paths in sorted(by_reason.items(), key=lambda item: not item[0].endswith("folder")):
        for path in paths[:SKIPPED_SHOWN]:
            print(f"    {reason}: {shown(path)}")
        if len(paths) > SKIPPED_SHOWN:
            print(f"    {reason}: ... and {len(paths) - SKIPPED_SHOWN} more (--json lists them)")


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
    from .health import check_health
    from .representation import expected_representation_id
    from .server import connect

    config = load_config(args)
    expected = expected_representation_id(config)
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
                            "retrieval_rank": p.rank, "truncated": p.truncated,
                            "lines": [p.line_start, p.line_end] if p.line_start is not None else None,
                            "chars": [p.char_start, p.char_end], "location": p.location}
                           for i, p in enumerate(context.admitted, 1)],
            "detail": {k: v for k, v in context.to_dict().items() if k != "admitted"},
        })
        emit_json(document)
        return EXIT_OK
    for stage in retrieval.stages:
        print(f"== {stage.name} ({stage.ms:.1f} ms, {len(stage.candidates)} candidates)")
        print(f"  {'rank':>4}  {'score':>8}  chunk")
        for candidate in stage.candidates[: args.show]:
            print(f"  {candidate.rank:>4}  {candidate.score:8.4f}  {shown(candidate.chunk_id)}")
    print(f"== admitted ({len(context.admitted)} passages, {context.prompt_tokens} prompt tokens "
          f"of {context.token_budget}, {context.tokenizer})")
    print(f"  {'rank':>4}  {'date':<10}  location  /  first words")
    for passage in context.admitted:
        print(f"  {passage.rank:>4}  {passage.artifact_date or '-':<10}  {shown(passage.location)}"
              f"{'  (truncated)' if passage.truncated else ''}")
        print(f"        {shown(snippet(passage.text))}")
    return EXIT_OK


def snippet(text: str, width: int = 100) -> str:
    """The passage's first words on one line, cut at a word boundary."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width].rsplit(" ", 1)[0] + " ..."


def cmd_ask(args: argparse.Namespace) -> int:
    from .baseline import Baseline
    from .server import connect

    config = load_config(args)
    streaming = not args.json and sys.stdout.isatty()
    with connect() as conn:
        baseline = Baseline(conn, config)
        if streaming and hasattr(baseline.reader, "on_text"):
            baseline.reader.on_text = _print_streamed
        result = baseline.ask(args.query, _parse_as_of(args.as_of),
                              on_admitted=_print_reading if streaming else None)
    if args.json:
        emit_json(result.to_dict())
        return EXIT_OK
    answer = result.answer
    if streaming:
        print("\n")
    print(answer.text.strip())
    print()
    print("cited: " + (", ".join(_citation(result, source) for source in answer.citations) or "(none)"))
    if answer.unknown_citations:
        print("cited but not admitted (flagged): " + ", ".join(answer.unknown_citations))
    print(f"reader {answer.reader.get('name')}: {answer.usage.prompt_tokens} prompt + "
          f"{answer.usage.completion_tokens} completion tokens, {answer.usage.seconds:.1f} s"
          f"{' (cache hit)' if answer.cached else ''}")
    return EXIT_OK


def _citation(result, source_id: str) -> str:
    """`path:Lstart-end` of the first admitted passage of a cited source (the lines it read)."""
    for passage in result.passages:
        if passage.source_id == source_id:
            return shown(passage.location)
    return shown(source_id)


def _print_reading(found) -> None:
    """What the reader is about to read, before it starts (it takes a while on a CPU)."""
    print(f"reading {len(found.passages)} passages ({found.context.prompt_tokens} prompt tokens):")
    for passage in found.passages:
        print(f"  {passage.rank:>3}  {shown(passage.location)}")
    print("answer (as generated):", flush=True)


def _print_streamed(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def cmd_mcp(args: argparse.Namespace) -> int:
    from .mcp_server import serve

    config = load_config(args)
    if args.corpus is not None and not Path(args.corpus).is_dir():
        raise UsageError(f"{shown(args.corpus)} is not a directory")
    serve(config, args.corpus, transport=args.transport, host=args.host, port=args.port)
    return EXIT_OK


def _mcp_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corpus", default=None,
                        help="the indexed folder: read_source reads from it, refresh refreshes it "
                             "(default: the folder the index was last refreshed from)")
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only")
    parser.add_argument("--port", type=int, default=8765, help="HTTP only")
    _embedder_option(parser)
    parser.add_argument("--reader", default=None, help="reader of the ask tool (default: qwen-1.5b)")


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
    "mcp": (cmd_mcp, _mcp_options, "serve the index to an MCP client (Claude Code, Cursor, ...)"),
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


def _refuse_lab_command(arguments: list[str]) -> None:
    command = next((a for a in arguments if not a.startswith("-")), None)
    if command in LAB_COMMANDS:
        raise UsageError(f"`{command}` is a lab command: run `memory-lab {command} ...` "
                         "(installed with the `lab` extra)")


def _bad_input_errors() -> tuple[type[BaseException], ...]:
    """The failures that are the user's input, not our bug (imported only when one happened)."""
    from .chunking import ChunkingError
    from .ingest import IngestError
    from .server import ServerError
    from .store import StoreError

    return (UsageError, ConfigError, IngestError, StoreError, ServerError, ChunkingError, ValueError,
            FileNotFoundError)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    return run_command(arguments, build_parser, prog="memory-baseline",
                       before=lambda: _refuse_lab_command(arguments), check=_check_query)


def run_command(arguments: list[str], parser: Callable[[], argparse.ArgumentParser], *, prog: str,
                before: Callable[[], None] | None = None,
                check: Callable[[argparse.Namespace], None] | None = None) -> int:
    """Parse and run one command the way both CLIs do: every printed line through one
    redaction, a failure as one line and exit 2, a traceback only with `--debug`."""
    debug = "--debug" in arguments
    if debug:  # the traceback the interpreter prints passes through the same redaction
        install_excepthook()
    # Everything printed passes through one redaction; results never drive the terminal.
    with guarded_output(json_output="--json" in arguments):
        try:
            if before is not None:
                before()
            args = parser().parse_args(arguments)
            if not getattr(args, "handler", None):
                raise UsageError(f"missing subcommand; see `{prog} --help`")
            if check is not None:
                check(args)
            return args.handler(args)
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:
            if debug:
                raise
            return report_failure(exc, prog=prog)


def report_failure(exc: BaseException, *, prog: str = "memory-baseline") -> int:
    """Print the one-line reason of a failed command on stderr; return its exit code (2)."""
    import psycopg

    print(f"{prog}: error: {_one_line(exc, _bad_input_errors(), psycopg.Error)}", file=sys.stderr)
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
