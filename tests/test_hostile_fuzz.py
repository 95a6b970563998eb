"""Generated hostile settings: connection strings, configuration values, pid files.

- URLs: a few hundred generated `DATABASE_URL`s carrying a marker password (well
  formed, rejected by the parser, keyword form, query parameters, garbage) run
  through every command, with and without `--debug`: the marker appears in no
  output, stdout, stderr or traceback;
- configuration: every numeric key set to NaN, infinities, negative, huge and
  wrongly typed values either loads a configuration whose every number is finite
  and in range, or is refused at load with one line (exit 2);
- pid files: missing, empty, garbage, truncated, naming a dead process, an
  unrelated live one, an impostor named postgres, or this test itself: the
  embedded server never signals a process it cannot prove is its postmaster,
  and always starts again. These run against a server of their own.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path

import psutil
import pytest

from memory_baseline import cli
from memory_baseline.config import RANGES, Config, ConfigError
from memory_baseline.models import models_home

MARKER = "Zq7kMarkerPw"
URL_COUNT = int(os.environ.get("MEMORY_BASELINE_URL_FUZZ", "320"))

# Where the marker sits inside a password: plain, next to characters the URL or
# keyword parser rejects or treats specially, encoded.
PASSWORDS = [
    "{m}", "50%{m}", "{m}%off", "{m}%zz", "%{m}", "{m} word", "pass {m}", "{m}@x", "{m}:x",
    "{m}/x", "{m}?x", "{m}#x", "{m}&x", "'{m}", "{m}'", "{m}\"", "{m}\\", "{m}=x", "{m}\t",
    "{m}é", "é{m}", "{m}%40at", "{m}%2Fslash", "{m},x", "[{m}]", "{m};x",
]
URL_SHAPES = [
    "postgresql://memuser:{p}@127.0.0.1:1/memory",
    "postgres://memuser:{p}@127.0.0.1:1/memory?sslmode=disable",
    "postgresql://memuser:{p}@[::1]:1/memory",
    "postgresql://memuser:{p}@127.0.0.1:1,127.0.0.1:2/memory",
    "postgresql://memuser:{p}@/memory?host=/nonexistent-socket-dir",
    "postgresql://:{p}@127.0.0.1:1/memory",
    "postgresql://memuser:{p}@127.0.0.1:1",
    "postgresql://memuser:{p}@:1/memory",
    "postgresql://memuser:{p}@127.0.0.1:notaport/memory",
    "postgresql://memuser:{p}@127.0.0.1:1/memory?nosuchoption=1",
    "postgresql://memuser@127.0.0.1:1/memory?password={p}",
    "postgresql://127.0.0.1:1/memory?user=memuser&password={p}&sslmode=disable",
    "postgresql://memuser:{p}@127.0.0.1:1/memory?connect_timeout=abc",
    "postgresql:/memuser:{p}@127.0.0.1:1/memory",
    "mysql://memuser:{p}@127.0.0.1:1/memory",
    "host=127.0.0.1 port=1 password={p}",
    "host=127.0.0.1 port=1 password='{p}'",
    "password={p} host=127.0.0.1 port=1 dbname=memory",
    "host=127.0.0.1 password = {p} port=1",
    "host=127.0.0.1 port=1 password='{p}",
    "host=127.0.0.1 port=1 user=memuser password={p} sslmode=nonsense",
    "{p}",
    "  {p}  ",
]


def generated_urls(count: int = URL_COUNT, seed: int = 20250107) -> list[str]:
    """`count` distinct connection strings, every shape with every password first."""
    rng = random.Random(seed)
    urls = [shape.format(p=password.format(m=MARKER)) for shape in URL_SHAPES
            for password in PASSWORDS]
    rng.shuffle(urls)
    return list(dict.fromkeys(urls))[:count]


def every_command(tmp_path: Path, index: str) -> list[list[str]]:
    """One argv per command of the CLI that can run here (the book build and the
    benchmarks excluded: they execute notebooks and long measurements)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    (corpus / "note.md").write_text("A note.\n")
    taken = tmp_path / "taken"
    taken.mkdir(exist_ok=True)
    (taken / "x").write_text("x")
    tasks = tmp_path / "tasks.json"
    tasks.write_text("[]")
    argvs = {
        "init": ["init"], "ingest": ["ingest", str(corpus)], "refresh": ["refresh", str(corpus)],
        "health": ["health"], "search": ["search", "a question"],
        "ask": ["ask", "a question", "--reader", "extractive"],
        "world": ["world", "generate", str(taken), "--seed", "1", "--docs", "20"],
        "evaluate": ["evaluate", "--tasks", str(tasks), "--corpus", str(corpus),
                     "--conditions", "lexical", "--reader", "extractive",
                     "--runs-root", str(tmp_path / "runs")],
        "report": ["report", str(tmp_path / "no-run")],
        "beir": ["beir", str(tmp_path / "no-beir")],
    }
    from memory_lab import cli as lab_cli

    chosen = [[*argv, "--index", index] for name, argv in argvs.items()
              if name in cli.COMMANDS or name in lab_cli.COMMANDS]
    chosen += [["server", action] for action in ("status", "start", "stop")]
    assert {"init", "ingest", "refresh", "health", "search", "ask", "server"} <= set(cli.COMMANDS)
    return chosen


def run_as_the_process_would(argv: list[str], capsys) -> str:
    """Everything the user sees: stdout, stderr, and with --debug the traceback printed by
    the process's exception hook."""
    from memory_lab import cli as lab_cli

    try:
        (lab_cli.main if argv[0] in lab_cli.COMMANDS else cli.main)(argv)
    except BaseException as exc:  # --debug lets it through; the interpreter would print it
        sys.excepthook(type(exc), exc, exc.__traceback__)
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_no_generated_url_leaks_its_password_through_any_command(tmp_path, capsys, monkeypatch,
                                                                 index_name):
    urls = generated_urls()
    assert len(urls) >= min(300, URL_COUNT)
    commands = every_command(tmp_path, index_name)
    excepthook = sys.excepthook
    runs = leaks = 0
    examples: list[str] = []
    try:
        for url in urls:
            monkeypatch.setenv("DATABASE_URL", url)
            for argv in commands:
                for debug in ([], ["--debug"]):
                    seen = run_as_the_process_would([*argv, *debug], capsys)
                    runs += 1
                    if MARKER in seen:
                        leaks += 1
                        if len(examples) < 3:
                            examples.append(f"{url!r} {argv} {debug}: {seen[-600:]}")
    finally:
        sys.excepthook = excepthook
    print(f"\nURL fuzz: {len(urls)} URLs x {len(commands)} commands x 2 (with and without "
          f"--debug) = {runs} runs; marker found {leaks} times")
    assert leaks == 0, "\n".join(examples)


def test_a_marker_password_on_a_working_server_is_not_printed_either(tmp_path, capsys,
                                                                     monkeypatch, database_url,
                                                                     index_name):
    """The embedded server trusts local connections, so a password in the URL is accepted
    and ignored: every command runs to its end, and still nothing shows the password."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(database_url)
    url = make_conninfo(**{**params, "password": f"{MARKER} with space"})
    monkeypatch.setenv("DATABASE_URL", url)
    excepthook = sys.excepthook
    try:
        for argv in every_command(tmp_path, index_name):
            if argv[0] == "server" and argv[1] == "stop":
                continue  # refused with DATABASE_URL set, and it is the shared server
            for debug in ([], ["--debug"]):
                for json_flag in ([], ["--json"]):
                    seen = run_as_the_process_would([*argv, *debug, *json_flag], capsys)
                    assert MARKER not in seen, (argv, seen[-800:])
    finally:
        sys.excepthook = excepthook


# -- configuration values -------------------------------------------------------------------

def numeric_keys() -> list[tuple[str, str, type]]:
    """(section, key, type) of every int and float setting."""
    keys = []
    for item in fields(Config):
        default = Config()
        value = getattr(default, item.name)
        if is_dataclass(value):
            for inner in fields(value):
                inner_value = getattr(value, inner.name)
                if isinstance(inner_value, int | float) and not isinstance(inner_value, bool):
                    keys.append((item.name, inner.name, type(inner_value)))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            keys.append(("", item.name, type(value)))
    return keys


HOSTILE_VALUES = ["nan", "inf", "-inf", "-1", "-0.5", "0", "1e308", "9223372036854775807",
                  "99999999999999999999999", "\"12\"", "true", "[1]", "{ a = 1 }", "1.5",
                  "0.000001"]


def toml_for(section: str, key: str, value: str) -> str:
    return f"[{section}]\n{key} = {value}\n" if section else f"{key} = {value}\n"


def test_hostile_config_values_load_finite_and_in_range_or_are_refused(tmp_path, capsys):
    keys = numeric_keys()
    refused = loaded = 0
    path = tmp_path / "fuzz.toml"
    for section, key, _ in keys:
        for value in HOSTILE_VALUES:
            path.write_text(toml_for(section, key, value))
            try:
                config = Config.load(path)
            except ConfigError as exc:
                refused += 1
                assert "\n" not in str(exc)
                continue
            loaded += 1
            setting = getattr(getattr(config, section), key) if section else getattr(config, key)
            name = f"{section}.{key}" if section else key
            assert isinstance(setting, int | float) and not isinstance(setting, bool), name
            assert math.isfinite(setting), (name, value)
            low, high = RANGES.get(name, (None, None))
            assert (low is None or setting >= low) and (high is None or setting <= high), name
            assert abs(setting) < 2**63, (name, value)
    # the CLI answers a refused file with one line
    path.write_text(toml_for("retrieval", "bm25_k1", "nan"))
    code = cli.main(["health", "--config", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    print(f"\nconfig fuzz: {len(keys)} numeric keys x {len(HOSTILE_VALUES)} values: "
          f"{refused} refused at load, {loaded} loaded (finite, in range)")


def test_accepted_extreme_config_values_keep_search_output_valid_json(tmp_path, capsys,
                                                                     index_name):
    root = tmp_path / "corpus"
    root.mkdir()
    for n in range(6):
        (root / f"note-{n}.md").write_text(f"The note {n} records the decision number {n}.\n")
    assert cli.main(["ingest", str(root), "--index", index_name, "--json"]) == 0
    capsys.readouterr()
    path = tmp_path / "edge.toml"
    edges = [("retrieval", "bm25_k1", "0"), ("retrieval", "bm25_k1", "1e6"),
             ("retrieval", "bm25_b", "0"), ("retrieval", "bm25_b", "1"),
             ("retrieval", "blend_weight", "0"), ("retrieval", "blend_weight", "1"),
             ("retrieval", "bm25_name_weight", "1e6"), ("retrieval", "rrf_k", "0"),
             ("retrieval", "per_path_candidates", "1000000"), ("context", "max_passages", "1000000")]
    for section, key, value in edges:
        fusion = "\nfusion = \"blend\"" if key == "blend_weight" else ""
        path.write_text(toml_for(section, key, value) + fusion + "\n")
        try:
            Config.load(path)
        except ConfigError:
            continue
        code = cli.main(["search", "decision number", "--index", index_name, "--json",
                         "--reader", "extractive", "--config", str(path)])
        captured = capsys.readouterr()
        assert code == 0, (key, value, captured.err)
        constants: list[str] = []
        json.loads(captured.out, parse_constant=constants.append)
        assert not constants, (key, value, constants)  # NaN or Infinity: not JSON
        assert "Warning" not in captured.err, (key, value, captured.err)


# -- pid-file states ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def private_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("pid-trial-home")
    shared_models = models_home()
    shared_models.mkdir(parents=True, exist_ok=True)
    (home / "models").symlink_to(shared_models)
    yield home
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "-D" in cmdline and cmdline[cmdline.index("-D") + 1:][:1] == [str(home / "pgdata")]:
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal.SIGINT)
                process.wait(20)
    shutil.rmtree(home, ignore_errors=True)


def pid_file_states(pgdata: Path, live: dict[str, int]) -> dict[str, bytes]:
    """The contents a damaged, stale or forged postmaster.pid can have."""
    def shaped(pid: int | str, data_dir: Path | str = pgdata) -> bytes:
        return (f"{pid}\n{data_dir}\n1700000000\n5432\n{pgdata}\n\n  1234  5678\nready   \n"
                .encode())

    return {
        "empty": b"", "newline": b"\n", "spaces": b"   \n", "garbage": b"garbage\nnot a pid\n",
        "binary": b"\x00\xff\xfe\x01", "truncated": shaped(live["bystander"])[:3],
        "pid only": f"{live['bystander']}\n".encode(), "negative": shaped(-5), "zero": shaped(0),
        "huge": shaped(2**40), "dead": shaped(live["dead"]), "init": shaped(1),
        "bystander": shaped(live["bystander"]), "this test": shaped(os.getpid()),
        "impostor elsewhere": shaped(live["impostor"]),
        "impostor naming our data dir": shaped(live["impostor-here"]),
        "another data dir": shaped(live["bystander"], "/nonexistent/pgdata"),
        "utf-16": shaped(live["bystander"]).decode().encode("utf-16"),
        "long": shaped(live["bystander"]) + b"x" * 100_000,
    }


def test_pid_file_states_never_signal_another_process_and_never_block(private_home, tmp_path,
                                                                      monkeypatch, capsys):
    from memory_baseline import server

    monkeypatch.setenv("MEMORY_BASELINE_HOME", str(private_home))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    server.database_url()
    pgdata = private_home / "pgdata"
    # Impostors: shells whose command line reads `postgres ... -D <dir>`, one naming another
    # data directory, one naming ours (but running elsewhere, from another executable).
    def impostor(data_dir: Path | str) -> subprocess.Popen:
        return subprocess.Popen(["postgres", "-c", "sleep 600; :", "-D", str(data_dir)],
                                executable="/bin/sh", cwd=tmp_path, start_new_session=True)

    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    impostor_elsewhere, impostor_here = impostor("/elsewhere"), impostor(pgdata)
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = {"bystander": bystander.pid, "impostor": impostor_elsewhere.pid,
            "impostor-here": impostor_here.pid, "dead": dead.pid}
    outcomes: dict[str, str] = {}
    try:
        for name, content in pid_file_states(pgdata, live).items():
            server.stop()
            (pgdata / "postmaster.pid").write_bytes(content)
            code, out, err = run_cli(capsys, "server", "status", "--json")
            assert code == 0 and json.loads(out)["running"] is False, (name, out, err)
            code, out, err = run_cli(capsys, "server", "stop")
            assert len((out + err).strip().splitlines()) == 1, (name, out, err)
            assert all(p.poll() is None for p in (bystander, impostor_elsewhere, impostor_here)), \
                f"{name}: server stop signalled a process that is not its postmaster"
            code, out, err = run_cli(capsys, "server", "start", "--json")
            assert code == 0 and json.loads(out)["running"] is True, (name, err)
            with server.connect() as conn:
                conn.execute("SELECT 1")
            outcomes[name] = "never signalled, started again"
    finally:
        for process in (bystander, impostor_elsewhere, impostor_here):
            os.killpg(process.pid, signal.SIGKILL)  # the shell and its sleep: ours, by id
            process.wait()
    print(f"\npid-file trial: {len(outcomes)} states, each through status, stop and start: "
          f"{len(outcomes)} never signalled another process and started again")
    assert len(outcomes) == len(pid_file_states(pgdata, live))


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err

