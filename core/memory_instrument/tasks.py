"""Load task files and refuse anything that does not follow the task-file contract.

A task file is the instrument's statement of what success means, so a typo in
it must stop the run rather than silently change a score. Every error names the
task and the field at fault, in one line.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, NoReturn

from .harness import HarnessError, load_harness

# Version 2 adds typed expectations (`answer.expect`); version-1 files still load, without them.
TASK_FILE_VERSION = 2
SUPPORTED_TASK_FILE_VERSIONS = (1, 2)

QUESTION_TYPES: tuple[str, ...] = (
    "locate",
    "outcome",
    "provenance",
    "temporal",
    "obligations",
    "downstream",
)
# Question types whose answer is a claim at a moment, so the moment must be stated.
TIME_BOUND_TYPES = frozenset({"temporal", "obligations"})

ARTIFACT_FORMATS: tuple[str, ...] = ("yaml", "json", "toml")
# What the sources can say happened to the thing asked about; a system's structured status
# field is scored against these (the same seven values a structured reader chooses from).
OUTCOME_STATUSES: tuple[str, ...] = (
    "decided", "proposed", "rejected", "superseded", "open", "done", "not-applicable",
)
EXPECT_KINDS: tuple[str, ...] = ("status", "date", "number", "choice", "obligations")
OBLIGATION_REQUIRE: tuple[str, ...] = ("open", "all")
ARTIFACT_CHECK_KINDS: tuple[str, ...] = ("parses", "key_equals", "matches", "not_matches")

_TASK_REQUIRED = ("id", "question_type", "query", "as_of", "expected_sources", "answer")
_TASK_OPTIONAL = ("notes", "metadata")
_ANSWER_REQUIRED = ("must_include", "must_not_include", "abstain", "evidenced_negative")
_ANSWER_OPTIONAL = ("artifact_checks", "evidence", "expect", "harness")
# A task's harness lives in this folder next to its task file: harnesses/<name>/.
HARNESS_FOLDER = "harnesses"
_HARNESS_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
_CHECK_FIELDS = {
    "parses": ("check", "format"),
    "key_equals": ("check", "format", "key", "any_of"),
    "matches": ("check", "pattern"),
    "not_matches": ("check", "pattern"),
}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# A query that speaks of the present depends on when it is asked.
_PRESENT_TENSE_WORDS = re.compile(r"\b(today|now|currently)\b", re.IGNORECASE)


class TaskFileError(ValueError):
    """A task file breaks the contract; the message names the task and the field."""


@dataclass(frozen=True)
class ArtifactCheck:
    """One executable check against the work a downstream task asks for."""

    check: str
    format: str | None = None
    key: str | None = None
    any_of: tuple[str, ...] = ()
    pattern: str | None = None

    def to_dict(self) -> dict[str, Any]:
        wanted = _CHECK_FIELDS[self.check]
        full = {
            "check": self.check,
            "format": self.format,
            "key": self.key,
            "any_of": list(self.any_of),
            "pattern": self.pattern,
        }
        return {name: full[name] for name in wanted}


@dataclass(frozen=True)
class EvidenceSpan:
    """An exact quote from one source that holds (part of) a task's evidence."""

    source: str
    quote: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "quote": self.quote}


@dataclass(frozen=True)
class ChoiceExpectation:
    """One of several named alternatives is the answer ("which store ran in production?").

    The answer's choice is the alternative it asserts as the state
    (`matching.chosen_option`): not negated, not hedged, not left behind ("moved off X",
    "X was replaced", "X was only proposed"); a correct answer may still name the others
    ("SQLite, until the cutover to PostgreSQL", "Kafka isn't live yet: the outbox poller").
    """

    options: tuple[tuple[str, tuple[str, ...]], ...]  # (name, phrasings), in file order
    answer: str

    def to_dict(self) -> dict[str, Any]:
        return {"options": {name: list(phr) for name, phr in self.options}, "answer": self.answer}


@dataclass(frozen=True)
class ObligationExpectation:
    """The true state of each promise at the task's as-of date.

    `open` and `closed` are items (each a group of phrasings). `require` says which items a
    correct answer must state with their true state: "open" (a list of what is open; closed
    items may be left out, but never stated as open) or "all" (what was promised and what of
    it is done). `unmarked` is how an item named without any state word is read: "open" for
    an answer to "which are still open?", None when naming an item claims nothing.
    """

    open: tuple[tuple[str, ...], ...]
    closed: tuple[tuple[str, ...], ...]
    require: str = "open"
    unmarked: str | None = "open"

    def to_dict(self) -> dict[str, Any]:
        return {"open": [list(g) for g in self.open], "closed": [list(g) for g in self.closed],
                "require": self.require, "unmarked": self.unmarked}


@dataclass(frozen=True)
class Expectations:
    """Typed expectations, for what a phrase list cannot decide. Every one present must hold.

    `status`: the values a system's structured status field may take (checked when the
    system reports one). `date`: ISO dates, at least one of which the answer must state.
    `number`: values, at least one of which the answer must state. `choice` and
    `obligations`: see their classes.
    """

    status: tuple[str, ...] = ()
    date: tuple[str, ...] = ()
    number: tuple[float, ...] = ()
    choice: ChoiceExpectation | None = None
    obligations: ObligationExpectation | None = None

    def __bool__(self) -> bool:
        return bool(self.status or self.date or self.number or self.choice or self.obligations)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.status:
            out["status"] = list(self.status)
        if self.date:
            out["date"] = list(self.date)
        if self.number:
            out["number"] = [int(n) if float(n).is_integer() else n for n in self.number]
        if self.choice is not None:
            out["choice"] = self.choice.to_dict()
        if self.obligations is not None:
            out["obligations"] = self.obligations.to_dict()
        return out


@dataclass(frozen=True)
class AnswerSpec:
    """What a correct answer must and must not say, and whether to abstain."""

    must_include: tuple[tuple[str, ...], ...]
    must_not_include: tuple[str, ...]
    abstain: bool
    evidenced_negative: bool
    artifact_checks: tuple[ArtifactCheck, ...] = ()
    evidence: tuple[EvidenceSpan, ...] = ()
    # The executed harness (`memory_instrument.harness`) that checks the work product, by
    # name, and where it was found (resolved when the task file is loaded from disk).
    harness: str | None = None
    harness_dir: Path | None = field(default=None, compare=False)
    expect: Expectations = field(default_factory=Expectations)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "must_include": [list(group) for group in self.must_include],
            "must_not_include": list(self.must_not_include),
            "abstain": self.abstain,
            "evidenced_negative": self.evidenced_negative,
        }
        if self.artifact_checks:
            out["artifact_checks"] = [check.to_dict() for check in self.artifact_checks]
        if self.evidence:
            out["evidence"] = [span.to_dict() for span in self.evidence]
        if self.harness is not None:
            out["harness"] = self.harness
        if self.expect:
            out["expect"] = self.expect.to_dict()
        return out


@dataclass(frozen=True)
class Task:
    """One question put to a system, with the instrument's definition of success."""

    id: str
    question_type: str
    query: str
    as_of: date | None
    expected_sources: tuple[str, ...]
    answer: AnswerSpec
    notes: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return not self.answer.abstain

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "question_type": self.question_type,
            "query": self.query,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "expected_sources": list(self.expected_sources),
            "answer": self.answer.to_dict(),
        }
        if self.notes is not None:
            out["notes"] = self.notes
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


@dataclass(frozen=True)
class TaskSet:
    """The validated tasks of one file, in file order."""

    tasks: tuple[Task, ...]
    version: int = TASK_FILE_VERSION
    origin: str | None = None

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def get(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(task.id for task in self.tasks)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "tasks": [task.to_dict() for task in self.tasks]}


def load_tasks(path: str | Path) -> TaskSet:
    """Read and validate a task file; raise TaskFileError on any breach of the contract."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read task file ({exc.strerror or exc})") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    return parse_task_file(document, origin=str(path))


def parse_task_file(document: Any, origin: str | None = None) -> TaskSet:
    """Validate an already-decoded task file (the same rules as load_tasks)."""
    where = origin or "task file"
    if not isinstance(document, dict):
        raise TaskFileError(f"{where}: top level must be an object with 'version' and 'tasks'")
    unknown = sorted(set(document) - {"version", "tasks"})
    if unknown:
        raise TaskFileError(f"{where}: unknown top-level field '{unknown[0]}'")
    version = document.get("version")
    if version not in SUPPORTED_TASK_FILE_VERSIONS or isinstance(version, bool):
        raise TaskFileError(
            f"{where}: field 'version' must be one of {list(SUPPORTED_TASK_FILE_VERSIONS)}, "
            f"got {version!r}"
        )
    raw_tasks = document.get("tasks")
    if not isinstance(raw_tasks, list):
        raise TaskFileError(f"{where}: field 'tasks' must be a list")

    tasks: list[Task] = []
    first_index: dict[str, int] = {}
    for index, raw in enumerate(raw_tasks):
        task = parse_task(raw, index, version=version)
        if task.id in first_index:
            raise TaskFileError(
                f"task '{task.id}': field 'id' duplicates task #{first_index[task.id]} "
                f"(ids must be unique in a file)"
            )
        first_index[task.id] = index
        tasks.append(_with_harness(task, origin))
    return TaskSet(tasks=tuple(tasks), version=version, origin=origin)


def _with_harness(task: Task, origin: str | None) -> Task:
    """Find and validate the task's harness next to its task file (nothing to do without one).

    A task file read from memory (no origin) keeps the name only; scoring such a task
    then says that its harness cannot be found.
    """
    name = task.answer.harness
    if name is None or origin is None:
        return task
    directory = Path(origin).resolve().parent / HARNESS_FOLDER / name
    try:
        load_harness(directory)
    except HarnessError as exc:
        raise TaskFileError(f"task '{task.id}': field 'answer.harness' names a broken harness: {exc}") \
            from exc
    return replace(task, answer=replace(task.answer, harness_dir=directory))


def parse_task(raw: Any, index: int = 0, version: int = TASK_FILE_VERSION) -> Task:
    """Validate one task object; `index` is its position, used when it has no usable id."""
    if not isinstance(raw, dict):
        raise TaskFileError(f"task #{index}: must be an object, got {type(raw).__name__}")
    raw_id = raw.get("id")
    if not isinstance(raw_id, str) or not raw_id.strip():
        raise TaskFileError(f"task #{index}: field 'id' is required and must be a non-empty string")
    fail = _Failer(raw_id)

    _check_keys(raw, _TASK_REQUIRED, _TASK_OPTIONAL, fail, prefix="")

    question_type = raw["question_type"]
    if question_type not in QUESTION_TYPES:
        fail("question_type", f"must be one of {', '.join(QUESTION_TYPES)}; got {question_type!r}")

    query = raw["query"]
    if not isinstance(query, str) or not query.strip():
        fail("query", "must be a non-empty string")

    as_of = _parse_as_of(raw["as_of"], fail)
    if as_of is None and question_type in TIME_BOUND_TYPES:
        fail("as_of", f"is required for question_type '{question_type}'")
    present_word = _PRESENT_TENSE_WORDS.search(query)
    if as_of is None and present_word:
        fail("as_of", f"is required because the query says '{present_word.group(0)}'")

    expected_sources = _parse_sources(raw["expected_sources"], fail)
    answer = _parse_answer(raw["answer"], expected_sources, fail)
    if version < 2 and answer.expect:
        fail("answer.expect", "needs task-file version 2")

    if not answer.abstain and not expected_sources:
        fail("expected_sources", "may be empty only when answer.abstain is true")
    if question_type == "downstream" and not answer.artifact_checks and answer.harness is None:
        fail("answer.artifact_checks", "is required for question_type 'downstream'")

    notes = raw.get("notes")
    if notes is not None and not isinstance(notes, str):
        fail("notes", "must be a string")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        fail("metadata", "must be an object")

    return Task(
        id=raw_id,
        question_type=question_type,
        query=query,
        as_of=as_of,
        expected_sources=expected_sources,
        answer=answer,
        notes=notes,
        metadata=dict(metadata),
    )


class _Failer:
    """Raise TaskFileError naming one task, so call sites only state the field and reason."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id

    def __call__(self, field_name: str, reason: str) -> NoReturn:
        raise TaskFileError(f"task '{self.task_id}': field '{field_name}' {reason}")


def _check_keys(
    obj: Mapping[str, Any],
    required: tuple[str, ...],
    optional: tuple[str, ...],
    fail: _Failer,
    prefix: str,
) -> None:
    for key in obj:
        if key not in required and key not in optional:
            fail(f"{prefix}{key}", f"is not allowed (allowed: {', '.join(required + optional)})")
    for key in required:
        if key not in obj:
            fail(f"{prefix}{key}", "is required")


def _parse_as_of(value: Any, fail: _Failer) -> date | None:
    if value is None:
        return None
    # date.fromisoformat alone also accepts forms like "20240715"; the contract says YYYY-MM-DD.
    if not isinstance(value, str) or not _ISO_DATE.fullmatch(value):
        fail("as_of", f"must be an ISO date 'YYYY-MM-DD' or null; got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        fail("as_of", f"is not a real calendar date: {value!r}")


def _parse_sources(value: Any, fail: _Failer) -> tuple[str, ...]:
    if not isinstance(value, list):
        fail("expected_sources", "must be a list of source ids")
    seen: set[str] = set()
    for position, source in enumerate(value):
        name = f"expected_sources[{position}]"
        if not isinstance(source, str) or not source.strip():
            fail(name, "must be a non-empty string")
        if source.startswith("/") or "\\" in source or ".." in source.split("/"):
            fail(name, f"must be a path relative to the corpus root; got {source!r}")
        if source in seen:
            fail(name, f"repeats {source!r}")
        seen.add(source)
    return tuple(value)


def _parse_answer(value: Any, expected_sources: tuple[str, ...], fail: _Failer) -> AnswerSpec:
    if not isinstance(value, dict):
        fail("answer", "must be an object")
    _check_keys(value, _ANSWER_REQUIRED, _ANSWER_OPTIONAL, fail, prefix="answer.")

    must_include = value["must_include"]
    if not isinstance(must_include, list):
        fail("answer.must_include", "must be a list of groups (lists of phrasings)")
    groups: list[tuple[str, ...]] = []
    for position, group in enumerate(must_include):
        name = f"answer.must_include[{position}]"
        if not isinstance(group, list) or not group:
            fail(name, "must be a non-empty list of acceptable phrasings")
        groups.append(_string_list(group, name, fail))

    must_not_include = value["must_not_include"]
    if not isinstance(must_not_include, list):
        fail("answer.must_not_include", "must be a list of phrasings")
    forbidden = _string_list(must_not_include, "answer.must_not_include", fail)

    for flag in ("abstain", "evidenced_negative"):
        if not isinstance(value[flag], bool):
            fail(f"answer.{flag}", f"must be true or false; got {value[flag]!r}")
    abstain, evidenced_negative = value["abstain"], value["evidenced_negative"]
    if abstain and evidenced_negative:
        fail(
            "answer.evidenced_negative",
            "cannot be true together with answer.abstain (a recorded negative is an answer)",
        )

    checks = tuple(
        _parse_artifact_check(raw, position, fail)
        for position, raw in enumerate(_list_field(value, "artifact_checks", fail))
    )
    evidence = tuple(
        _parse_evidence(raw, position, expected_sources, fail)
        for position, raw in enumerate(_list_field(value, "evidence", fail))
    )
    harness = _parse_harness_name(value, fail)
    expect = _parse_expect(value.get("expect", {}), fail)
    if not abstain and not groups and not checks and harness is None and not expect:
        fail(
            "answer.must_include",
            "needs at least one group when abstain is false and there are no artifact_checks "
            "or typed expectations",
        )
    if abstain and expect:
        fail("answer.expect", "cannot be set when answer.abstain is true")
    return AnswerSpec(
        must_include=tuple(groups),
        must_not_include=forbidden,
        abstain=abstain,
        evidenced_negative=evidenced_negative,
        artifact_checks=checks,
        evidence=evidence,
        harness=harness,
        expect=expect,
    )


def _parse_harness_name(answer: Mapping[str, Any], fail: _Failer) -> str | None:
    name = answer.get("harness")
    if name is not None and (not isinstance(name, str) or not _HARNESS_NAME.fullmatch(name)):
        fail("answer.harness",
             f"must name a folder under {HARNESS_FOLDER}/ like 'downstream-x'; got {name!r}")
    return name


def _parse_expect(value: Any, fail: _Failer) -> Expectations:
    name = "answer.expect"
    if not isinstance(value, dict):
        fail(name, "must be an object")
    _check_keys(value, (), EXPECT_KINDS, fail, prefix=f"{name}.")
    status: tuple[str, ...] = ()
    if "status" in value:
        status = _nonempty_strings(value["status"], f"{name}.status", fail)
        bad = [s for s in status if s not in OUTCOME_STATUSES]
        if bad:
            fail(f"{name}.status", f"values must be among {', '.join(OUTCOME_STATUSES)}; "
                 f"got {bad[0]!r}")
    dates: tuple[str, ...] = ()
    if "date" in value:
        dates = _nonempty_strings(value["date"], f"{name}.date", fail)
        for position, day in enumerate(dates):
            if not _ISO_DATE.fullmatch(day):
                fail(f"{name}.date[{position}]", f"must be an ISO date 'YYYY-MM-DD'; got {day!r}")
            try:
                date.fromisoformat(day)
            except ValueError:
                fail(f"{name}.date[{position}]", f"is not a real calendar date: {day!r}")
    numbers: tuple[float, ...] = ()
    if "number" in value:
        raw = value["number"]
        if not isinstance(raw, list) or not raw or any(
            isinstance(n, bool) or not isinstance(n, int | float) for n in raw
        ):
            fail(f"{name}.number", "must be a non-empty list of numbers")
        numbers = tuple(float(n) for n in raw)
    choice = _parse_choice(value["choice"], fail) if "choice" in value else None
    obligations = (
        _parse_obligations(value["obligations"], fail) if "obligations" in value else None
    )
    return Expectations(status=status, date=dates, number=numbers, choice=choice,
                        obligations=obligations)


def _nonempty_strings(raw: Any, name: str, fail: _Failer) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        fail(name, "must be a non-empty list of strings")
    return _string_list(raw, name, fail)


def _groups(raw: Any, name: str, fail: _Failer) -> tuple[tuple[str, ...], ...]:
    if not isinstance(raw, list):
        fail(name, "must be a list of groups (lists of phrasings)")
    return tuple(_nonempty_strings(g, f"{name}[{i}]", fail) for i, g in enumerate(raw))


def _parse_choice(raw: Any, fail: _Failer) -> ChoiceExpectation:
    name = "answer.expect.choice"
    if not isinstance(raw, dict):
        fail(name, "must be an object with 'options' and 'answer'")
    _check_keys(raw, ("options", "answer"), (), fail, prefix=f"{name}.")
    options = raw["options"]
    if not isinstance(options, dict) or len(options) < 2:
        fail(f"{name}.options", "must map at least two option names to lists of phrasings")
    parsed = tuple(
        (option, _nonempty_strings(phrasings, f"{name}.options.{option}", fail))
        for option, phrasings in options.items()
    )
    if raw["answer"] not in options:
        fail(f"{name}.answer", f"must be one of the options {sorted(options)}; "
             f"got {raw['answer']!r}")
    return ChoiceExpectation(options=parsed, answer=raw["answer"])


def _parse_obligations(raw: Any, fail: _Failer) -> ObligationExpectation:
    name = "answer.expect.obligations"
    if not isinstance(raw, dict):
        fail(name, "must be an object")
    _check_keys(raw, ("open", "closed"), ("require", "unmarked"), fail, prefix=f"{name}.")
    open_items = _groups(raw["open"], f"{name}.open", fail)
    closed_items = _groups(raw["closed"], f"{name}.closed", fail)
    require = raw.get("require", "open")
    if require not in OBLIGATION_REQUIRE:
        fail(f"{name}.require", f"must be one of {', '.join(OBLIGATION_REQUIRE)}; got {require!r}")
    unmarked = raw.get("unmarked", "open")
    if unmarked not in ("open", None):
        fail(f"{name}.unmarked", f"must be 'open' or null; got {unmarked!r}")
    if not open_items and not closed_items:
        fail(name, "needs at least one open or closed item")
    return ObligationExpectation(open=open_items, closed=closed_items, require=require,
                                 unmarked=unmarked)


def _list_field(obj: Mapping[str, Any], key: str, fail: _Failer) -> list[Any]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        fail(f"answer.{key}", "must be a list")
    return value


def _string_list(values: list[Any], name: str, fail: _Failer) -> tuple[str, ...]:
    for position, item in enumerate(values):
        if not isinstance(item, str) or not item.strip():
            fail(f"{name}[{position}]", "must be a non-empty string")
    return tuple(values)


def _parse_artifact_check(raw: Any, position: int, fail: _Failer) -> ArtifactCheck:
    name = f"answer.artifact_checks[{position}]"
    if not isinstance(raw, dict):
        fail(name, "must be an object")
    kind = raw.get("check")
    if kind not in _CHECK_FIELDS:
        fail(f"{name}.check", f"must be one of {', '.join(ARTIFACT_CHECK_KINDS)}; got {kind!r}")
    allowed = _CHECK_FIELDS[kind]
    _check_keys(raw, allowed, (), fail, prefix=f"{name}.")

    fmt = raw.get("format")
    if "format" in allowed and fmt not in ARTIFACT_FORMATS:
        fail(f"{name}.format", f"must be one of {', '.join(ARTIFACT_FORMATS)}; got {fmt!r}")
    key = raw.get("key")
    if "key" in allowed and (
        not isinstance(key, str) or not key or any(not part for part in key.split("."))
    ):
        fail(f"{name}.key", f"must be a dotted path like 'store.backend'; got {key!r}")
    any_of: tuple[str, ...] = ()
    if "any_of" in allowed:
        if not isinstance(raw["any_of"], list) or not raw["any_of"]:
            fail(f"{name}.any_of", "must be a non-empty list of strings")
        any_of = _string_list(raw["any_of"], f"{name}.any_of", fail)
    pattern = raw.get("pattern")
    if "pattern" in allowed:
        if not isinstance(pattern, str) or not pattern:
            fail(f"{name}.pattern", "must be a non-empty regular expression")
        try:
            re.compile(pattern)
        except re.error as exc:
            fail(f"{name}.pattern", f"is not a valid regular expression ({exc})")
    return ArtifactCheck(check=kind, format=fmt, key=key, any_of=any_of, pattern=pattern)


def _parse_evidence(
    raw: Any, position: int, expected_sources: tuple[str, ...], fail: _Failer
) -> EvidenceSpan:
    name = f"answer.evidence[{position}]"
    if not isinstance(raw, dict):
        fail(name, "must be an object with 'source' and 'quote'")
    _check_keys(raw, ("source", "quote"), (), fail, prefix=f"{name}.")
    source, quote = raw["source"], raw["quote"]
    if not isinstance(source, str) or source not in expected_sources:
        fail(f"{name}.source", f"must be one of the task's expected_sources; got {source!r}")
    if not isinstance(quote, str) or not quote.strip():
        fail(f"{name}.quote", "must be a non-empty string")
    return EvidenceSpan(source=source, quote=quote)


def write_task_file(tasks: Iterable[Task], path: str | Path) -> Path:
    """Write tasks as a task file and copy the harnesses they name beside it.

    A subset written elsewhere (a smoke run's dozen tasks, a test's sample) must still
    find its harnesses, which live next to the task file (`HARNESS_FOLDER`); a copy, not
    a link, so a committed run folder holds the harnesses its scores name (each score
    also records the harness digest).
    """
    path = Path(path)
    chosen = list(tasks)
    path.parent.mkdir(parents=True, exist_ok=True)
    for task in chosen:
        source = task.answer.harness_dir
        if source is None:
            continue
        target = path.parent / HARNESS_FOLDER / task.answer.harness
        if target.resolve() != source.resolve():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    document = {"version": TASK_FILE_VERSION, "tasks": [task.to_dict() for task in chosen]}
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def find_evidence_mismatches(tasks: TaskSet, corpus_root: str | Path) -> list[str]:
    """List expected sources missing from the corpus and quotes not found in their source.

    Kept out of load_tasks because a task file is validated without its corpus;
    consistency tests and the oracle-span condition call this with the corpus at hand.
    """
    root = Path(corpus_root)
    problems: list[str] = []
    for task in tasks:
        for source in task.expected_sources:
            if not (root / source).is_file():
                problems.append(f"task '{task.id}': expected source {source!r} not in {root}")
        for position, span in enumerate(task.answer.evidence):
            where = f"task '{task.id}': field 'answer.evidence[{position}]'"
            try:
                text = (root / span.source).read_text(encoding="utf-8")
            except OSError:
                problems.append(f"{where} names {span.source!r}, which is not readable in {root}")
                continue
            if span.quote not in text:
                problems.append(f"{where} quote is not in {span.source!r}")
    return problems
