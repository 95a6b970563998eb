"""Consistency of the canonical fixture: tasks, ledger and history must tell one story.

Rule for answer phrasings: every must_include group of an answerable task has at least
one phrasing that occurs (case-insensitive, whitespace-normalised) in its expected
sources' ids or texts. Ledger dates must occur in the named file as ISO or `22 July 2024`.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from memory_instrument.scoring import run_artifact_check, run_task_harness
from memory_instrument.tasks import QUESTION_TYPES, TaskSet, find_evidence_mismatches, load_tasks
from memory_instrument.world import (
    find_ledger_date_mismatches,
    find_unsupported_phrasings,
    read_ledger_dates,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HISTORY = FIXTURES / "history"
LEDGER = FIXTURES / "LEDGER.md"


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    return load_tasks(FIXTURES / "tasks.json")


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return {
        path.relative_to(HISTORY).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(HISTORY.rglob("*"))
        if path.is_file()
    }


def test_history_is_a_small_realistic_corpus(corpus: dict[str, str]) -> None:
    size = sum(len(text.encode("utf-8")) for text in corpus.values())
    suffixes = {Path(name).suffix for name in corpus}
    assert 25 <= len(corpus) <= 60
    assert 50_000 <= size <= 150_000
    assert {".md", ".txt", ".log", ".yaml", ".toml", ".json", ".py"} <= suffixes


def test_task_file_sits_outside_the_corpus() -> None:
    assert not (HISTORY / "tasks.json").exists()
    assert not (HISTORY / "LEDGER.md").exists()


def test_tasks_cover_all_types_and_both_splits(tasks: TaskSet) -> None:
    assert 30 <= len(tasks) <= 60  # 41 questions and nine downstream tasks in all
    assert set(Counter(task.question_type for task in tasks)) == set(QUESTION_TYPES)
    splits = Counter(task.metadata.get("split") for task in tasks)
    assert set(splits) == {"dev", "test"}
    assert 0.3 <= splits["dev"] / len(tasks) <= 0.5


def test_time_dependent_queries_carry_as_of(tasks: TaskSet) -> None:
    for task in tasks:
        if task.question_type in ("temporal", "obligations"):
            assert task.as_of is not None, task.id
        assert not re.search(r"\b(today|now|currently)\b", task.query, re.IGNORECASE), task.id


def test_expected_sources_exist_and_quotes_are_exact(tasks: TaskSet) -> None:
    assert find_evidence_mismatches(tasks, HISTORY) == []


def test_answer_phrasings_are_supported_by_expected_sources(tasks: TaskSet) -> None:
    assert find_unsupported_phrasings(tasks, HISTORY) == []


def test_abstentions_ask_about_things_the_history_never_mentions(
    tasks: TaskSet, corpus: dict[str, str]
) -> None:
    abstentions = [task for task in tasks if task.answer.abstain]
    assert len(abstentions) >= 4
    everything = "\n".join(corpus.values()).lower()
    for task in abstentions:
        assert task.expected_sources == ()
        terms = task.metadata["absent_terms"]
        assert terms, task.id
        for term in terms:
            assert term.lower() not in everything, (task.id, term)


def test_cache_question_is_an_evidenced_negative_not_an_abstention(tasks: TaskSet) -> None:
    redis = tasks.get("outcome-redis-adopted")
    assert redis.answer.evidenced_negative and not redis.answer.abstain
    assert "decisions/adr-009.md" in redis.expected_sources


def test_ledger_dates_match_the_files() -> None:
    claims = read_ledger_dates(LEDGER)
    assert len(claims) >= 30
    assert find_ledger_date_mismatches(LEDGER, HISTORY) == []
    pairs = {(claim.iso, claim.source) for claim in claims}
    for expected in [
        ("2024-07-10", "decisions/adr-007.md"),
        ("2024-07-22", "logs/deploy-2024-07.log"),
        ("2024-08-05", "sessions/session-040.md"),
        ("2024-08-08", "sessions/session-044.md"),
        ("2024-08-12", "decisions/adr-009.md"),
        ("2024-08-20", "incidents/evt-204.md"),
        ("2024-10-07", "requests/2024-10-07-shipments-service.md"),
    ]:
        assert expected in pairs


def _ledger_obligations() -> list[dict[str, str]]:
    rows, header = [], None
    for line in LEDGER.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| id |"):
            header = cells
        elif header and line.startswith("| OB-"):
            rows.append(dict(zip(header, cells, strict=True)))
        elif not line.startswith("|"):
            header = None
    return rows


def _open_on(day: date) -> list[dict[str, str]]:
    return [
        row for row in _ledger_obligations()
        if date.fromisoformat(row["opened"]) <= day
        and (row["closed"] == "—" or date.fromisoformat(row["closed"]) > day)
    ]


def test_ledger_has_kept_and_unkept_promises() -> None:
    rows = _ledger_obligations()
    assert any(row["closed"] == "—" for row in rows)
    assert any(row["closed"] != "—" for row in rows)


@pytest.mark.parametrize("task_id", ["obligations-open-1001", "obligations-open-1020"])
def test_open_obligation_tasks_agree_with_the_ledger(tasks: TaskSet, task_id: str) -> None:
    task = tasks.get(task_id)
    assert task.as_of is not None
    still_open = _open_on(task.as_of)
    obligations = task.answer.expect.obligations
    assert obligations is not None and obligations.require == "open"
    assert len(obligations.open) == len(still_open)
    assert {row["opened in"] for row in still_open} == set(task.expected_sources)
    closed_by_then = [row for row in _ledger_obligations()
                      if row["closed"] != "—" and date.fromisoformat(row["closed"]) <= task.as_of]
    assert len(obligations.closed) == len(closed_by_then)


def test_evt_204_means_only_the_importer_incident(corpus: dict[str, str]) -> None:
    mentioning = [name for name, text in corpus.items() if "evt-204" in text.lower()]
    assert "incidents/evt-204.md" in mentioning
    for name in mentioning:
        assert "import" in corpus[name].lower(), name
        for line in corpus[name].lower().splitlines():
            if "evt-204" in line:
                assert not re.search(r"throughput|appends/s|per second", line), (name, line)


def test_error_code_occurs_in_exactly_one_file(corpus: dict[str, str]) -> None:
    holders = [name for name, text in corpus.items() if "E-BRK-042" in text]
    assert holders == ["docs/runbooks/broker-errors.md"]


def test_long_session_separates_decision_from_rationale(corpus: dict[str, str]) -> None:
    session = corpus["sessions/session-036.md"]
    assert len(session) > 8_000
    rationale = session.index("4.1% of appends time out")
    decision = session.index("Decision: from now on all new event-store work targets PostgreSQL")
    assert decision - rationale > 3_000


def test_misleading_heading_and_outdated_guide(corpus: dict[str, str]) -> None:
    verdict = corpus["sessions/session-044.md"].split("## Redis cache rollout", 1)[1]
    assert "there is no rollout" in verdict.split("##", 1)[0]
    guide = corpus["docs/setup-sqlite-eventstore.md"]
    assert "Outdated" in guide and "backend: sqlite" in corpus["config/legacy/eventstore-sqlite.yaml"]


GOOD_ARTIFACTS = {
    "downstream-shipments-config": (
        "```yaml\neventstore:\n  backend: postgresql\n  dsn_env: EVENTSTORE_DSN\n"
        "  schema: shipments_events\n  stream_table: events\n"
        "  notify_channel: events_shipments\n```\n"
    ),
    "downstream-shipments-service-entry": (
        '```toml\n[services.shipments]\nmodule = "kestrel.shipments"\n'
        'event_store = "postgresql"\nschema = "shipments_events"\nowner = "lena"\n```\n'
    ),
    # Runs as written: it imports NewEvent from the adapter (the harness runs it, see below).
    "downstream-publish-shipment-event": (
        "```python\nfrom kestrel.eventstore.postgres import NewEvent\n\n"
        "SHIPMENT_EVENT_TYPES = {'ShipmentCreated', 'LabelPrinted', 'HandedToCarrier', "
        "'DeliveryConfirmed'}\n\n\n"
        "def publish_shipment_event(store, shipment_id, event_type, payload, expected):\n"
        "    if event_type not in SHIPMENT_EVENT_TYPES:\n"
        "        raise ValueError(f'unknown shipment event type: {event_type}')\n"
        "    return store.append(shipment_id, [NewEvent(event_type, payload)], expected)\n```\n"
    ),
}
BAD_ARTIFACTS = {
    "downstream-shipments-config": (
        "```yaml\neventstore:\n  backend: sqlite\n  path: var/shipments.db\n```\n"
    ),
    "downstream-shipments-service-entry": (
        '```toml\n[services.shipments]\nevent_store = "postgresql"\nschema = "orders_events"\n```\n'
    ),
    "downstream-publish-shipment-event": (
        "```python\nimport sqlite3\ndef publish_shipment_event(event):\n"
        "    sqlite3.connect('var/events.db').execute('insert ...')\n```\n"
    ),
}


def _artifact(text: str) -> str:
    match = re.search(r"```[^\n]*\n(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


@pytest.mark.parametrize("task_id", sorted(GOOD_ARTIFACTS))
def test_downstream_checks_accept_good_work_and_reject_sqlite_work(
    tasks: TaskSet, task_id: str
) -> None:
    task = tasks.get(task_id)
    assert task.question_type == "downstream" and task.answer.artifact_checks
    good = [run_artifact_check(c, _artifact(GOOD_ARTIFACTS[task_id])) for c in task.answer.artifact_checks]
    bad = [run_artifact_check(c, _artifact(BAD_ARTIFACTS[task_id])) for c in task.answer.artifact_checks]
    assert all(result.passed for result in good), [r.reason for r in good if not r.passed]
    assert not all(result.passed for result in bad)


def test_every_downstream_task_has_a_harness_with_reference_work(tasks: TaskSet) -> None:
    downstream = [task for task in tasks if task.question_type == "downstream"]
    assert len(downstream) >= 8
    assert set(GOOD_ARTIFACTS) <= {task.id for task in downstream}
    for task in downstream:
        assert task.answer.harness_dir is not None, task.id
        examples = {path.stem for path in (task.answer.harness_dir / "examples").iterdir()}
        assert examples == {"good", "bad"}, task.id


@pytest.mark.parametrize("task_id", sorted(GOOD_ARTIFACTS))
def test_reference_work_of_the_lexical_checks_runs_in_its_harness(tasks: TaskSet, task_id: str) -> None:
    task = tasks.get(task_id)
    assert run_task_harness(task, _artifact(GOOD_ARTIFACTS[task_id])).passed
    assert not run_task_harness(task, _artifact(BAD_ARTIFACTS[task_id])).passed
