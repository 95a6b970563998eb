"""The program a harness runs inside its sandbox: guard the interpreter, load the work, run the tests.

It is started by `memory_instrument.harness` as a script under ``python -I -S -B`` and
imports nothing but the standard library. It is never imported by the instrument itself.

Order matters. The result pipe is opened and the audit hook installed before the
work product is compiled or imported, so everything the work product does — at
import time or inside a test — passes through the hook. The hook refuses (raises
PermissionError) and records:

- network: creating a socket, resolving a name, `urllib` requests;
- SQLite: `sqlite3.connect` of any database, file or ``:memory:``;
- processes: `subprocess`, `os.system`, the `exec`/`spawn`/`fork` family, `os.kill`;
- native code: `ctypes.dlopen` (the one way round the hook from Python code);
- its own limits: `resource.setrlimit`/`prlimit` (root may raise a hard limit);
- writes outside the sandbox folder: `open` with a writing mode or flag, and
  remove, rename, mkdir, rmdir, chmod, chown, link, symlink, truncate, utime,
  rmtree, whose path resolves (symlinks followed) outside it. `/dev/null` is allowed.

Every refusal is recorded even when the work product catches the exception, and any
refusal fails the run. What the hook does not do: it is no defence against code
written to defeat it (an extension module already importable could do anything,
and code in this interpreter can forge its own test results), and it does not
limit reading. Those are out of scope: the work products are model answers to a
request, and the harness asks whether they do the right thing, not whether they
can escape. Before any of this the runner sets its rlimits (CPU, address space, file
size, open files, core files; hard limits too, so they cannot be raised); the
parent kills the process group at the wall timeout.
"""

from __future__ import annotations

import io
import json
import os
import resource
import sys
import traceback
import unittest

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_NETWORK_EVENTS = frozenset({
    "socket.__new__", "socket.bind", "socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
    "socket.gethostbyaddr", "socket.getnameinfo", "socket.sendto", "urllib.Request",
})
_PROCESS_EVENTS = frozenset({
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "os.kill", "os.killpg", "pty.spawn", "os.startfile",
})
# event -> positions of the path arguments that are changed
_PATH_EVENTS = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.chmod": (0,), "os.chown": (0,),
    "os.rename": (0, 1), "os.link": (0, 1), "os.symlink": (1,), "os.truncate": (0,),
    "os.utime": (0,), "shutil.rmtree": (0,), "os.chflags": (0,), "os.lchown": (0,),
}


class Guard:
    """The audit hook: refuses what the module docstring lists and remembers every refusal."""

    def __init__(self, sandbox: str) -> None:
        self.sandbox = os.path.realpath(sandbox)
        self.violations: list[str] = []
        self._busy = False

    def inside(self, path: object) -> bool:
        if isinstance(path, int):  # an already open descriptor: its opening was checked
            return True
        raw = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else str(path)
        resolved = os.path.realpath(os.path.join(os.getcwd(), raw))
        return resolved == "/dev/null" or resolved == self.sandbox or resolved.startswith(
            self.sandbox + os.sep)

    def refuse(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)
        raise PermissionError(f"sandbox refused {what}")

    def __call__(self, event: str, args: tuple) -> None:
        if self._busy:  # events raised while the hook itself resolves a path
            return
        self._busy = True
        try:
            self._check(event, args)
        finally:
            self._busy = False

    def _check(self, event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writes = bool(mode and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE_FLAGS)
            if writes and path is not None and not self.inside(path):
                self.refuse(f"a write outside the sandbox: open({os.fsdecode(path)!r}, {mode or flags!r})")
        elif event == "sqlite3.connect":
            self.refuse(f"an SQLite database: sqlite3.connect({args[0]!r})")
        elif event in _NETWORK_EVENTS:
            self.refuse(f"network access: {event}")
        elif event in _PROCESS_EVENTS:
            self.refuse(f"a new process: {event}")
        elif event in ("resource.setrlimit", "resource.prlimit"):
            self.refuse(f"a change of its limits: {event}")  # root could raise hard limits
        elif event == "ctypes.dlopen":
            self.refuse(f"native code: ctypes.dlopen({args[0]!r})")
        elif event in _PATH_EVENTS:
            for position in _PATH_EVENTS[event]:
                if position < len(args) and args[position] is not None and not self.inside(args[position]):
                    self.refuse(f"a change outside the sandbox: {event}({os.fsdecode(args[position])!r})")


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _exception_line(text: str) -> str:
    """The exception's own first line in a traceback (not the last line of a long diff)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    for line in lines[starts[-1] + 1 if starts else 0:]:
        if line.strip() and not line.startswith((" ", "\t")):
            return line.strip()
    return _first_line(text)


def _module_name(artifact_path: str) -> str:
    return artifact_path.removesuffix(".py").replace("/", ".")


def run(config: dict, report: io.TextIOBase) -> None:
    guard = Guard(config["sandbox"])
    # Under -I -S the interpreter's own path is the standard library and nothing else.
    sys.path[:] = [config["sandbox"], *config["extra_paths"], *sys.path]
    sys.addaudithook(guard)
    result: dict = {"status": "passed", "reason": "", "checks": [], "violations": guard.violations}

    def finish(status: str, reason: str) -> None:
        if guard.violations and status in ("passed", "test_failed", "import_error"):
            status, reason = "refused", guard.violations[0]
        result.update(status=status, reason=reason)
        report.write(json.dumps(result))
        report.flush()

    artifact_path = config["artifact_path"]
    if config["language"] == "python":
        source = open(os.path.join(config["sandbox"], artifact_path), encoding="utf-8").read()
        try:
            compile(source, artifact_path, "exec")
        except SyntaxError as exc:
            finish("syntax_error", f"{artifact_path}, line {exc.lineno}: {exc.msg}")
            return
        try:
            __import__(_module_name(artifact_path))
        except BaseException as exc:  # the work product's own failure, whatever it is
            finish("import_error", f"importing {artifact_path}: {type(exc).__name__}: {exc}")
            return

    suite = unittest.TestSuite()
    try:
        for name in config["tests"]:
            suite.addTests(unittest.defaultTestLoader.loadTestsFromName(name))
    except BaseException as exc:
        finish("import_error", f"loading the harness tests: {type(exc).__name__}: {exc}")
        return
    tests = list(_tests_of(suite))  # a suite forgets its tests once it has run them
    outcome = unittest.TestResult()
    suite.run(outcome)
    problems = {test.id(): (kind, text) for kind, pairs in
                (("failure", outcome.failures), ("error", outcome.errors)) for test, text in pairs}
    for test in tests:
        kind, text = problems.get(test.id(), (None, ""))
        doc = (test.shortDescription() or test.id().rsplit(".", 1)[-1])
        result["checks"].append({"name": test.id().rsplit(".", 1)[-1], "description": doc,
                                 "passed": kind is None,
                                 "detail": "" if kind is None else f"{kind}: {_exception_line(text)}"})
    failed = [c for c in result["checks"] if not c["passed"]]
    if not result["checks"]:
        finish("crash", "the harness ran no test")
    elif failed:
        finish("test_failed", f"{failed[0]['name']}: {failed[0]['detail']}")
    else:
        finish("passed", f"{len(result['checks'])} tests passed")


def _tests_of(suite: unittest.TestSuite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests_of(item)
        else:
            yield item


def set_limits(limits: dict) -> None:
    """Soft and hard limits alike, so the work product cannot raise them again."""
    cpu = limits["cpu_seconds"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU at the soft limit
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    set_limits(config["limits"])
    report = os.fdopen(config["result_fd"], "w", encoding="utf-8")
    os.chdir(config["sandbox"])
    try:
        run(config, report)
    except BaseException:  # the runner itself broke: say so rather than die silently
        report.write(json.dumps({"status": "crash", "reason": _first_line(traceback.format_exc()),
                                 "checks": [], "violations": []}))
        report.flush()


if __name__ == "__main__":
    main()
