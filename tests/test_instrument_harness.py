"""Executed harnesses: sandboxed work products, config schemas and decided values, scoring.

The sandbox tests run real child interpreters against the fixture harness of the
October shipments service (its fake PostgreSQL adapter and test suite), varying only
the work product and, where a test needs a short limit, the harness's limits.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from memory_instrument import SystemOutput, load_tasks, parse_task_file, score_task, write_task_file
from memory_instrument.harness import HarnessError, load_harness, run_harness
from memory_instrument.scoring import ScoringError
from memory_instrument.tasks import TaskFileError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HARNESSES = FIXTURES / "harnesses"
PUBLISH = HARNESSES / "downstream-publish-shipment-event"
GOOD = (PUBLISH / "examples" / "good.py").read_text(encoding="utf-8")
# The same work without its __future__ import, so a test may put lines before it.
BODY = GOOD.replace("from __future__ import annotations\n", "")


def variant(tmp_path: Path, source: Path = PUBLISH, **changes) -> Path:
    """A copy of a fixture harness with some harness.json fields changed."""
    target = tmp_path / source.name
    shutil.copytree(source, target)
    document = json.loads((target / "harness.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        document[key] = {**document.get(key, {}), **value} if isinstance(value, dict) else value
    (target / "harness.json").write_text(json.dumps(document), encoding="utf-8")
    return target


def run_publish(artifact: str, directory: Path = PUBLISH):
    return run_harness(load_harness(directory), artifact)


# --- every fixture harness against its reference work --------------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in HARNESSES.iterdir() if p.is_dir()))
def test_fixture_harness_passes_its_good_work_and_fails_its_bad_work(name: str) -> None:
    harness = load_harness(HARNESSES / name)
    examples = {p.stem: p.read_text(encoding="utf-8") for p in (harness.directory / "examples").iterdir()}
    good, bad = run_harness(harness, examples["good"]), run_harness(harness, examples["bad"])
    assert good.passed, (good.status, good.reason)
    assert good.checks and all(c.passed for c in good.checks)
    assert not bad.passed and bad.reason


# --- the sandbox -------------------------------------------------------------------------------


def test_correct_artifact_passes() -> None:
    result = run_publish(GOOD)
    assert result.status == "passed" and result.violations == ()
    assert len(result.checks) == 6 and result.digest == load_harness(PUBLISH).digest


def test_syntax_error_fails_with_its_line() -> None:
    broken = GOOD.replace("def publish_shipment_event(", "def publish_shipment_event(:", 1)
    result = run_publish(broken)
    assert result.status == "syntax_error"
    assert result.reason.startswith("kestrel/shipments/events.py, line 12:")


def test_import_error_fails() -> None:
    result = run_publish("from kestrel.eventstore.sqlite import SQLiteEventStore\n" + BODY)
    assert result.status == "import_error"
    assert "ModuleNotFoundError" in result.reason and "kestrel.eventstore.sqlite" in result.reason


def test_opening_sqlite_fails_even_when_the_error_is_caught() -> None:
    sneaky = GOOD + (
        "\n\ntry:\n    import sqlite3\n    sqlite3.connect('var/shipments.db')\n"
        "except PermissionError:\n    pass\n"
    )
    result = run_publish(sneaky)
    assert result.status == "refused"
    assert result.reason == "an SQLite database: sqlite3.connect('var/shipments.db')"


def test_the_bad_example_that_writes_to_sqlite_fails_in_every_test() -> None:
    result = run_publish((PUBLISH / "examples" / "bad.py").read_text(encoding="utf-8"))
    assert result.status == "refused"
    assert [c.passed for c in result.checks].count(False) == 5  # all but "the function exists"


def test_sleep_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    directory = variant(tmp_path, limits={"wall_seconds": 1.5})
    started = time.perf_counter()
    result = run_publish("import time\ntime.sleep(60)\n" + BODY, directory)
    assert time.perf_counter() - started < 10
    assert result.status == "timeout" and result.reason == "stopped at the wall limit of 1.5 s"


def test_busy_loop_is_stopped_at_its_cpu_limit(tmp_path: Path) -> None:
    directory = variant(tmp_path, limits={"cpu_seconds": 1, "wall_seconds": 30})
    result = run_publish("while True:\n    pass\n", directory)
    assert result.status == "cpu_limit" and "CPU limit of 1 s" in result.reason


def test_memory_is_limited(tmp_path: Path) -> None:
    directory = variant(tmp_path, limits={"memory_mb": 256})
    result = run_publish("buffer = bytearray(1024 ** 3)\n" + BODY, directory)
    assert result.status == "import_error" and "MemoryError" in result.reason


@pytest.mark.parametrize("network", [
    "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n",
    "import socket\nsocket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n",
    "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/')\n",
])
def test_opening_a_network_socket_fails(network: str) -> None:
    result = run_publish(GOOD + "\n" + network)
    assert result.status == "refused" and result.reason.startswith("network access:")


def test_writing_outside_its_directory_fails(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    result = run_publish(GOOD + f"\nopen({str(outside)!r}, 'w').write('x')\n")
    assert result.status == "refused" and "a write outside the sandbox" in result.reason
    assert not outside.exists()
    removal = run_publish(GOOD + f"\nimport os\nos.remove({str(PUBLISH / 'harness.json')!r})\n")
    assert removal.status == "refused" and (PUBLISH / "harness.json").exists()


def test_writing_inside_its_directory_is_allowed() -> None:
    result = run_publish(GOOD + "\nimport tempfile\nopen('notes.txt', 'w').write('x')\n"
                         "tempfile.NamedTemporaryFile().close()\n")
    assert result.status == "passed", result.reason


def test_new_processes_are_refused() -> None:
    result = run_publish(GOOD + "\nimport os\nos.system('true')\n")
    assert result.status == "refused" and result.reason == "a new process: os.system"


def test_limits_cannot_be_raised_from_inside() -> None:
    result = run_publish(GOOD + "\nimport resource\nresource.setrlimit(resource.RLIMIT_CPU, (-1, -1))\n")
    assert result.status == "refused" and result.reason == "a change of its limits: resource.setrlimit"


def test_crash_without_result_is_recorded() -> None:
    result = run_publish("import os\nos._exit(3)\n")
    assert result.status == "crash" and result.reason.startswith("exit code 3")


def test_environment_is_scrubbed_and_site_packages_are_out_of_reach(monkeypatch) -> None:
    monkeypatch.setenv("EVENTSTORE_DSN", "postgresql://secret@db/kestrel")
    result = run_publish(GOOD + "\nimport os\nassert 'EVENTSTORE_DSN' not in os.environ\n")
    assert result.status == "passed", result.reason
    assert run_publish("import yaml\n" + BODY).status == "import_error"
    assert run_publish("import psycopg\n" + BODY).status == "import_error"


def test_named_test_dependencies_and_only_they_are_importable(tmp_path: Path) -> None:
    directory = variant(tmp_path, dependencies=["yaml"])
    assert run_publish("import yaml\n" + BODY, directory).status == "passed"
    assert run_publish("import jsonschema\n" + BODY, directory).status == "import_error"


def test_failed_test_names_the_test_and_the_reason() -> None:
    lax = GOOD.replace("    if event_type not in SHIPMENT_EVENT_TYPES:\n", "    if False:\n")
    result = run_publish(lax)
    assert result.status == "test_failed"
    assert result.reason.startswith("test_unknown_event_type_is_refused: failure: AssertionError")


# --- config harnesses ----------------------------------------------------------------------------

CONFIG = HARNESSES / "downstream-shipments-config"


@pytest.mark.parametrize(("yaml_text", "status", "reason"), [
    ("eventstore:\n  backend: postgresql\n  schema: shipments_events\n  notify_channel: events_shipments\n"
     "  # copied from the orders file, not from the SQLite guide\n", "passed", "schema and 5 decided values"),
    ("eventstore: [unclosed\n", "parse_error", "not valid yaml"),
    ("eventstore:\n  backend: postgresql\n  schema: shipments_events\n", "schema_error",
     "'notify_channel' is a required property"),
    ("eventstore:\n  backend: postgresql\n  schema: shipments_events\n  notify_channel: events_shipments\n"
     "  path: var/events.db\n", "schema_error", "Additional properties are not allowed ('path'"),
    ("eventstore:\n  backend: sqlite\n  schema: shipments_events\n  notify_channel: events_shipments\n",
     "semantic_error", "'eventstore.backend' is 'sqlite', expected one of ['postgresql', 'postgres']"),
    ("eventstore:\n  backend: postgresql\n  schema: orders_events\n  notify_channel: events_shipments\n",
     "semantic_error", "expected none of ['orders_events']"),
    ("eventstore:\n  backend: postgresql\n  schema: shipments_events\n  notify_channel: events_orders\n",
     "semantic_error", "'eventstore.notify_channel' is 'events_orders'"),
    ("eventstore:\n  backend: postgresql\n  schema: shipments_events\n  notify_channel: events_shipments\n"
     "  dsn_env: SQLITE_PATH\n", "semantic_error", "found 'SQLITE_PATH'"),
])
def test_config_is_checked_against_schema_then_decided_values(yaml_text: str, status: str,
                                                              reason: str) -> None:
    result = run_harness(load_harness(CONFIG), yaml_text)
    assert result.status == status
    assert reason in result.reason


def test_config_numbers_compare_by_value() -> None:
    harness = load_harness(HARNESSES / "downstream-shipments-snapshots")
    wrong = run_harness(harness, "eventstore:\n  snapshots:\n    every_n_events: 1000\n    keep_last: 3\n")
    assert wrong.status == "semantic_error" and "ADR-008" in wrong.reason


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "docker"}, "field 'kind' must be one of config, python"),
    ({"tests": ["test_missing"]}, "files/test_missing.py is missing"),
    ({"limits": {"cpu_seconds": -1}}, "field 'limits.cpu_seconds' must be a positive number"),
    ({"artifact": {"language": "python", "path": "../escape.py"}},
     "field 'artifact.path' must be a relative"),
    ({"schema": "schema.json"}, "field 'schema' belongs to the config kind"),
])
def test_broken_harness_files_are_refused(tmp_path: Path, change: dict, message: str) -> None:
    directory = variant(tmp_path, **change)
    with pytest.raises(HarnessError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_harness(directory)


def test_broken_semantic_rule_is_refused(tmp_path: Path) -> None:
    directory = variant(tmp_path, CONFIG, semantic=[{"key": "eventstore.backend", "equals": "x"}])
    with pytest.raises(HarnessError, match=r"field 'semantic\[0\]' needs 'key'"):
        load_harness(directory)


# --- tasks and scoring -------------------------------------------------------------------------


def _output(task_id: str, answer: str) -> SystemOutput:
    return SystemOutput(task_id=task_id, condition="hybrid", answer=answer, abstained=False,
                        admitted_passages=[], citations=[], stages={})


def test_score_records_the_harness_verdict_and_reason() -> None:
    task = load_tasks(FIXTURES / "tasks.json").get("downstream-publish-shipment-event")
    good = score_task(task, _output(task.id, "Follows ADR-007 (PostgreSQL).\n\n```python\n"
                                    + GOOD + "```\n"))
    assert good.artifact_pass is True and good.passed
    assert good.harness["status"] == "passed" and good.harness["harness"] == task.id
    assert good.artifact_checks[0].check["check"] == "harness"
    broken = score_task(task, _output(task.id, "PostgreSQL publish_shipment_event.\n\n```python\n"
                                      "def publish_shipment_event(:\n    pass\n```\n"))
    assert broken.artifact_pass is False and not broken.passed
    assert broken.artifact_checks[0].reason.startswith("syntax_error: ")
    assert json.loads(json.dumps(broken.to_dict()))["harness"]["status"] == "syntax_error"


def _task_document(harness: str) -> dict:
    return {"version": 1, "tasks": [{
        "id": "d1", "question_type": "downstream", "query": "Write the config.", "as_of": None,
        "expected_sources": ["config/eventstore.yaml"],
        "answer": {"must_include": [], "must_not_include": [], "abstain": False,
                   "evidenced_negative": False, "harness": harness}}]}


def test_task_harness_is_validated_when_the_task_file_loads(tmp_path: Path) -> None:
    shutil.copytree(CONFIG, tmp_path / "harnesses" / "cfg")
    (tmp_path / "tasks.json").write_text(json.dumps(_task_document("cfg")), encoding="utf-8")
    assert load_tasks(tmp_path / "tasks.json").get("d1").answer.harness_dir == tmp_path / "harnesses" / "cfg"
    (tmp_path / "tasks.json").write_text(json.dumps(_task_document("absent")), encoding="utf-8")
    with pytest.raises(TaskFileError, match="task 'd1': field 'answer.harness' names a broken harness"):
        load_tasks(tmp_path / "tasks.json")
    with pytest.raises(TaskFileError, match="field 'answer.harness' must name a folder"):
        parse_task_file(_task_document("../escape"))


def test_a_task_read_from_memory_cannot_find_its_harness() -> None:
    task = parse_task_file(_task_document("cfg")).get("d1")
    assert task.to_dict()["answer"]["harness"] == "cfg"
    with pytest.raises(ScoringError, match="harness 'cfg' cannot be found"):
        score_task(task, _output("d1", "```yaml\na: 1\n```"))


def test_a_task_subset_written_elsewhere_takes_its_harnesses_along(tmp_path: Path) -> None:
    tasks = load_tasks(FIXTURES / "tasks.json")
    chosen = [t for t in tasks if t.question_type == "downstream"][:2] + [tasks.get("locate-evt-204")]
    path = write_task_file(chosen, tmp_path / "subset" / "tasks.json")
    again = load_tasks(path)
    assert again.ids == tuple(t.id for t in chosen)
    for task in again:
        if task.answer.harness:
            assert task.answer.harness_dir == tmp_path / "subset" / "harnesses" / task.answer.harness
            assert load_harness(task.answer.harness_dir).digest == load_harness(
                HARNESSES / task.answer.harness).digest
