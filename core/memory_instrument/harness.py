"""Executed harnesses: run or validate a downstream task's work product and say why it failed.

A downstream task may name a harness (`answer.harness`), a folder that belongs to the
instrument and is versioned with the grader (the system never sees it):

    harnesses/<name>/harness.json   what kind of work it checks, and how
    harnesses/<name>/files/...      (python kind) the test suite and any fakes, copied in
    harnesses/<name>/schema.json    (config kind) the JSON Schema of the document
    harnesses/<name>/examples/      a known-good and a known-bad work product

Two kinds:

- ``config``: the artifact (YAML, TOML or JSON) is parsed, validated against the
  harness's JSON Schema (`jsonschema`), then checked semantically: the keys and values
  the project's decisions fix (`semantic` rules). Nothing is executed.
- ``python``: the artifact is written to `artifact.path` inside a fresh temporary folder
  next to the harness's files and the harness's `unittest` suite runs against it in a
  child interpreter (`sandbox_runner`). The child runs under ``python -I -S -B`` with a
  scrubbed environment (PATH, LANG, HOME and TMPDIR only; HOME and TMPDIR inside the
  sandbox), so only the standard library, the sandbox folder and the harness's named
  `dependencies` (each linked in by itself, nothing else of site-packages) are
  importable. The child's first act is to set its rlimits (CPU seconds, address space,
  file size, open files, no core files; set there rather than in a `preexec_fn`, which
  is unsafe in a parent with threads, as the lab's is); the parent keeps a wall timeout
  that kills the child's process group. The
  child's audit hook refuses sockets, SQLite, new processes, native code and writes
  outside the folder (see `sandbox_runner` for exactly what it does and does not
  guarantee). Non-Python work (SQL, a shell runbook, a requirements file) uses this
  kind too, with `artifact.language` saying what it is; its tests read the file.

Every run gives a `HarnessResult`: a status (``passed``, ``parse_error``,
``schema_error``, ``semantic_error``, ``syntax_error``, ``import_error``,
``test_failed``, ``refused``, ``timeout``, ``cpu_limit``, ``crash``), a one-line
reason, each check with its verdict, the refusals, and the harness's digest, so a
score records which version of the harness judged it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

HARNESS_FILE_VERSION = 1
HARNESS_KINDS = ("config", "python")
CONFIG_LANGUAGES = ("yaml", "toml", "json")
SANDBOX_LANGUAGES = ("python", "sql", "shell", "requirements", "text")
SEMANTIC_TESTS = ("any_of", "not_any_of", "matches", "not_matches", "absent", "present")
STATUSES = ("passed", "parse_error", "schema_error", "semantic_error", "syntax_error",
            "import_error", "test_failed", "refused", "timeout", "cpu_limit", "crash")
DEFAULT_LIMITS = {"cpu_seconds": 10, "memory_mb": 768, "wall_seconds": 20, "file_mb": 8}
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
_RELATIVE_PATH = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")
_RUNNER = Path(__file__).with_name("sandbox_runner.py")
_OUTPUT_LIMIT = 4000  # characters of the child's stdout/stderr kept in a result


class HarnessError(ValueError):
    """A harness folder breaks the harness contract; the message names the harness and field."""


@dataclass(frozen=True)
class SemanticRule:
    """One fact a decision fixes about a configuration: a key and what its value must (not) be.

    `key` is a dotted path; ``*`` as the key means every string value in the document.
    Strings compare case-insensitively; numbers and booleans compare by value.
    """

    key: str
    test: str
    values: tuple[Any, ...] = ()
    pattern: str | None = None
    why: str = ""


@dataclass(frozen=True)
class Harness:
    """A validated harness folder."""

    name: str
    directory: Path
    kind: str
    language: str
    artifact_path: str
    description: str
    tests: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    limits: dict[str, float] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    semantic: tuple[SemanticRule, ...] = ()
    digest: str = ""


@dataclass(frozen=True)
class HarnessCheck:
    """One verdict inside a harness run: a test, the schema, or one semantic rule."""

    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class HarnessResult:
    """What a harness made of one work product; the scorer stores it with the score."""

    harness: str
    digest: str
    kind: str
    status: str
    reason: str
    checks: tuple[HarnessCheck, ...] = ()
    violations: tuple[str, ...] = ()
    seconds: float = 0.0
    output: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


# --- loading -----------------------------------------------------------------------------------


def harness_digest(directory: Path) -> str:
    """sha256 over every file of the harness (relative path and bytes), in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def load_harness(directory: str | Path) -> Harness:
    """Read and validate `directory/harness.json`; raise HarnessError naming the field at fault."""
    directory = Path(directory)
    name = directory.name
    where = f"harness '{name}'"
    try:
        document = json.loads((directory / "harness.json").read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessError(f"{where}: cannot read harness.json ({exc.strerror or exc})") from exc
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{where}: harness.json is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    if not isinstance(document, dict):
        raise HarnessError(f"{where}: harness.json must be an object")

    def fail(field_name: str, reason: str) -> HarnessError:
        return HarnessError(f"{where}: field '{field_name}' {reason}")

    allowed = {"version", "kind", "description", "artifact", "tests", "dependencies", "limits",
               "schema", "semantic"}
    for key in document:
        if key not in allowed:
            raise fail(key, f"is not allowed (allowed: {', '.join(sorted(allowed))})")
    if document.get("version") != HARNESS_FILE_VERSION:
        raise fail("version", f"must be {HARNESS_FILE_VERSION}")
    kind = document.get("kind")
    if kind not in HARNESS_KINDS:
        raise fail("kind", f"must be one of {', '.join(HARNESS_KINDS)}; got {kind!r}")
    description = document.get("description")
    if not isinstance(description, str) or not description.strip():
        raise fail("description", "must say what the harness checks and how")
    artifact = document.get("artifact")
    if not isinstance(artifact, dict) or set(artifact) - {"language", "path"}:
        raise fail("artifact", "must be an object with 'language' (and 'path' for the python kind)")
    language = artifact.get("language")
    languages = CONFIG_LANGUAGES if kind == "config" else SANDBOX_LANGUAGES
    if language not in languages:
        raise fail("artifact.language", f"must be one of {', '.join(languages)}; got {language!r}")
    artifact_path = artifact.get("path", f"artifact.{language}")
    if not isinstance(artifact_path, str) or not _RELATIVE_PATH.fullmatch(artifact_path) \
            or ".." in artifact_path.split("/"):
        raise fail("artifact.path", f"must be a relative path inside the sandbox; got {artifact_path!r}")
    if language == "python" and not artifact_path.endswith(".py"):
        raise fail("artifact.path", "must end in .py for a python artifact")

    limits = {**DEFAULT_LIMITS}
    raw_limits = document.get("limits", {})
    if not isinstance(raw_limits, dict) or set(raw_limits) - set(DEFAULT_LIMITS):
        raise fail("limits", f"may set only {', '.join(DEFAULT_LIMITS)}")
    for key, value in raw_limits.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise fail(f"limits.{key}", f"must be a positive number; got {value!r}")
        limits[key] = value

    tests: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    schema: dict[str, Any] | None = None
    semantic: tuple[SemanticRule, ...] = ()
    if kind == "python":
        for key in ("schema", "semantic"):
            if key in document:
                raise fail(key, "belongs to the config kind")
        tests = _names(document.get("tests"), "tests", fail, required=True)
        dependencies = _names(document.get("dependencies", []), "dependencies", fail, required=False)
        for test in tests:
            if not (directory / "files" / (test.replace(".", "/") + ".py")).is_file():
                raise fail("tests", f"names {test!r}, but files/{test.replace('.', '/')}.py is missing")
    else:
        for key in ("tests", "dependencies"):
            if key in document:
                raise fail(key, "belongs to the python kind")
        schema_name = document.get("schema")
        if not isinstance(schema_name, str):
            raise fail("schema", "must name the JSON Schema file of the harness")
        try:
            schema = json.loads((directory / schema_name).read_text(encoding="utf-8"))
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except (OSError, json.JSONDecodeError, jsonschema.SchemaError) as exc:
            raise fail("schema", f"is not a readable, valid JSON Schema ({_one_line(exc)})") from exc
        raw_rules = document.get("semantic")
        if not isinstance(raw_rules, list) or not raw_rules:
            raise fail("semantic", "must list the decided keys and values")
        semantic = tuple(_rule(raw, f"semantic[{i}]", fail) for i, raw in enumerate(raw_rules))
    return Harness(name=name, directory=directory, kind=kind, language=language,
                   artifact_path=artifact_path, description=description.strip(), tests=tests,
                   dependencies=dependencies, limits=limits, schema=schema, semantic=semantic,
                   digest=harness_digest(directory))


def _names(value: Any, field_name: str, fail, *, required: bool) -> tuple[str, ...]:
    if not isinstance(value, list) or (required and not value) or not all(
            isinstance(v, str) and re.fullmatch(r"[A-Za-z_][\w.]*", v) for v in value):
        least = " (at least one)" if required else ""
        raise fail(field_name, f"must be a list of dotted module names{least}")
    return tuple(value)


def _rule(raw: Any, name: str, fail) -> SemanticRule:
    if not isinstance(raw, dict) or not isinstance(raw.get("key"), str) or not raw["key"]:
        raise fail(name, "must be an object with a 'key'")
    tests = [t for t in SEMANTIC_TESTS if t in raw]
    if len(tests) != 1 or set(raw) - {"key", "why", *SEMANTIC_TESTS}:
        raise fail(name, f"needs 'key', optional 'why' and exactly one of {', '.join(SEMANTIC_TESTS)}")
    test = tests[0]
    values: tuple[Any, ...] = ()
    pattern = None
    if test in ("any_of", "not_any_of"):
        if not isinstance(raw[test], list) or not raw[test]:
            raise fail(f"{name}.{test}", "must be a non-empty list")
        values = tuple(raw[test])
    elif test in ("matches", "not_matches"):
        pattern = raw[test]
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise fail(f"{name}.{test}", f"is not a regular expression ({exc})") from exc
    elif raw[test] is not True:
        raise fail(f"{name}.{test}", "must be true")
    return SemanticRule(key=raw["key"], test=test, values=values, pattern=pattern,
                        why=str(raw.get("why", "")))


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- running ------------------------------------------------------------------------------------


def run_harness(harness: Harness, artifact: str) -> HarnessResult:
    """Check one work product with its harness; never raises for a bad work product."""
    started = time.perf_counter()
    if harness.kind == "config":
        result = _check_config(harness, artifact)
    else:
        result = _run_sandboxed(harness, artifact)
    return HarnessResult(**{**asdict(result), "checks": result.checks,
                            "seconds": round(time.perf_counter() - started, 3)})


def _result(harness: Harness, status: str, reason: str, checks=(), violations=(),
            output: str = "") -> HarnessResult:
    return HarnessResult(harness=harness.name, digest=harness.digest, kind=harness.kind, status=status,
                         reason=reason, checks=tuple(checks), violations=tuple(violations),
                         output=output[-_OUTPUT_LIMIT:])


def parse_config(text: str, language: str) -> Any:
    """The document a YAML/TOML/JSON artifact holds (raises the parser's own error)."""
    if language == "yaml":
        return yaml.safe_load(text)
    if language == "toml":
        return tomllib.loads(text)
    return json.loads(text)


def _check_config(harness: Harness, artifact: str) -> HarnessResult:
    try:
        document = parse_config(artifact, harness.language)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        return _result(harness, "parse_error", f"not valid {harness.language}: {_one_line(exc)}")
    validator = jsonschema.validators.validator_for(harness.schema)(harness.schema)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "(document)"
        check = HarnessCheck("schema", False, f"{where}: {first.message}")
        return _result(harness, "schema_error", f"schema: {where}: {first.message}", [check])
    checks = [HarnessCheck("schema", True, "valid against schema.json")]
    checks += [_apply_rule(rule, document) for rule in harness.semantic]
    failed = [c for c in checks if not c.passed]
    if failed:
        return _result(harness, "semantic_error", f"{failed[0].name}: {failed[0].detail}", checks)
    return _result(harness, "passed", f"schema and {len(harness.semantic)} decided values hold", checks)


_MISSING = object()


def _lookup(document: Any, key: str) -> Any:
    value = document
    for part in key.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _same(actual: Any, wanted: Any) -> bool:
    if isinstance(actual, str) and isinstance(wanted, str):
        return actual.strip().casefold() == wanted.strip().casefold()
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return actual is wanted
    return actual == wanted


def _apply_rule(rule: SemanticRule, document: Any) -> HarnessCheck:
    name = f"{rule.key} {rule.test.replace('_', ' ')}"
    why = f" ({rule.why})" if rule.why else ""
    if rule.key == "*":
        hits = [s for s in _strings(document) if re.search(rule.pattern or "", s, re.IGNORECASE)]
        if rule.test == "not_matches":
            return HarnessCheck(name, not hits, f"found {hits[0]!r}{why}" if hits else "absent")
        return HarnessCheck(name, bool(hits), f"found {hits[0]!r}" if hits else f"nowhere{why}")
    value = _lookup(document, rule.key)
    if rule.test == "absent":
        return HarnessCheck(name, value is _MISSING, "absent" if value is _MISSING
                            else f"'{rule.key}' is set to {value!r}{why}")
    if value is _MISSING:
        return HarnessCheck(name, False, f"'{rule.key}' is missing{why}")
    if rule.test == "present":
        return HarnessCheck(name, True, f"'{rule.key}' is set")
    if rule.test in ("any_of", "not_any_of"):
        hit = any(_same(value, wanted) for wanted in rule.values)
        ok = hit if rule.test == "any_of" else not hit
        expected = ("one of " if rule.test == "any_of" else "none of ") + repr(list(rule.values))
        return HarnessCheck(name, ok, f"'{rule.key}' is {value!r}"
                            + ("" if ok else f", expected {expected}{why}"))
    found = isinstance(value, str | int | float) and re.search(rule.pattern or "", str(value), re.IGNORECASE)
    ok = bool(found) if rule.test == "matches" else not found
    return HarnessCheck(name, ok, f"'{rule.key}' is {value!r}" + ("" if ok else f"{why}"))


def _dependency_links(names: tuple[str, ...], into: Path) -> None:
    """Link each named dependency's top-level package (or module) alone into `into`."""
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None and not spec.submodule_search_locations:
            raise HarnessError(f"test dependency {name!r} is not installed")
        if spec.submodule_search_locations:
            source = Path(next(iter(spec.submodule_search_locations)))
            (into / name).symlink_to(source, target_is_directory=True)
        else:
            source = Path(spec.origin)
            (into / source.name).symlink_to(source)


def _run_sandboxed(harness: Harness, artifact: str) -> HarnessResult:
    with tempfile.TemporaryDirectory(prefix=f"harness-{harness.name}-") as root:
        root_path = Path(root)
        sandbox, runner_dir, deps = root_path / "sandbox", root_path / "runner", root_path / "deps"
        files = harness.directory / "files"
        if files.is_dir():
            shutil.copytree(files, sandbox, ignore=shutil.ignore_patterns("__pycache__"))
        sandbox.mkdir(exist_ok=True)
        (sandbox / "tmp").mkdir()
        target = sandbox / harness.artifact_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(artifact, encoding="utf-8")
        runner_dir.mkdir()
        deps.mkdir()
        _dependency_links(harness.dependencies, deps)
        shutil.copy2(_RUNNER, runner_dir / "sandbox_runner.py")
        read_end, write_end = os.pipe()
        config = {"sandbox": str(sandbox), "artifact_path": harness.artifact_path,
                  "language": harness.language, "tests": list(harness.tests),
                  "extra_paths": [str(deps)], "result_fd": write_end,
                  "limits": {"cpu_seconds": int(harness.limits["cpu_seconds"]),
                             "memory_bytes": int(harness.limits["memory_mb"] * 1024 * 1024),
                             "file_bytes": int(harness.limits["file_mb"] * 1024 * 1024)}}
        (runner_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(sandbox),
               "TMPDIR": str(sandbox / "tmp")}
        command = [sys.executable, "-I", "-S", "-B", str(runner_dir / "sandbox_runner.py"),
                   str(runner_dir / "config.json")]
        wall = float(harness.limits["wall_seconds"])
        try:
            child = subprocess.Popen(command, cwd=sandbox, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     pass_fds=(write_end,), start_new_session=True)
        finally:
            os.close(write_end)
        timed_out = False
        try:
            output, _ = child.communicate(timeout=wall)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGKILL)
            output, _ = child.communicate()
        with os.fdopen(read_end, encoding="utf-8") as pipe:
            raw = pipe.read()
        text = output.decode("utf-8", "replace")
        if timed_out:
            return _result(harness, "timeout", f"stopped at the wall limit of {wall:g} s", output=text)
        if child.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and not raw:
            return _result(harness, "cpu_limit",
                           f"stopped at the CPU limit of {harness.limits['cpu_seconds']:g} s", output=text)
        try:
            reported = json.loads(raw)
        except json.JSONDecodeError:
            last = text.strip().splitlines()[-1] if text.strip() else "no output"
            return _result(harness, "crash", f"exit code {child.returncode} without a result: {last}",
                           output=text)
        checks = [HarnessCheck(c["description"], c["passed"], c["detail"]) for c in reported["checks"]]
        return _result(harness, reported["status"], reported["reason"], checks,
                       reported["violations"], output=text)
