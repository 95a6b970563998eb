"""What a question asks for, read from its words: kinds, routing, and the identity a routed answer has."""

from __future__ import annotations

from conftest import FIXTURE_TASKS

from memory_baseline.answer_cache import AnswerCache
from memory_baseline.config import ReaderConfig
from memory_baseline.context import Passage
from memory_baseline.reading import get_reader, is_work_request, messages_for
from memory_instrument import load_tasks

ADR7 = Passage("decisions/adr-007.md#0", "decisions/adr-007.md",
               "# ADR-007\nNew services store their events in PostgreSQL.", None, "decision",
               "2024-07-10", 1)
ADR9 = Passage("decisions/adr-009.md#0", "decisions/adr-009.md",
               "# ADR-009\nWe do not adopt Redis. The proposal is rejected.", None, "decision",
               "2024-08-14", 2)


def test_work_requests_are_exactly_the_fixture_downstream_tasks():
    for task in load_tasks(FIXTURE_TASKS):
        assert is_work_request(task.query) == (task.question_type == "downstream"), task.id


def test_focused_style_asks_for_a_status_only_when_the_question_is_about_an_outcome():
    from memory_baseline.reading import answer_schema, messages_for, question_kind

    ids = ["adr/adr-007.md", "sessions/session-012.md"]
    assert question_kind("Is ADR-003 still in force?") == "outcome"
    assert question_kind("Why did the project move the event store to PostgreSQL?") == "why"
    assert question_kind("Where did we discuss the event-store backend?") == "where"
    assert "status" in answer_schema(ids, "Is ADR-003 still in force?", focused=True)["properties"]
    why = answer_schema(ids, "Why did the project move to PostgreSQL?", focused=True)
    assert "status" not in why["properties"]
    where = answer_schema(ids, "Where did we discuss the backend?", focused=True)
    assert where["properties"]["evidence"]["maxItems"] > answer_schema(ids, "Where?")["properties"][
        "evidence"]["maxItems"]
    prompt = messages_for("focused", "Why did the project move to PostgreSQL?", [], None)[-1]["content"]
    assert "reasons the sources state" in prompt and "do not restate the question" in prompt


def test_itemised_reads_promises_and_work_its_own_way_and_hands_the_rest_to_structured(tmp_path):
    from memory_baseline.reading import itemised_kind

    routed = {task.id: itemised_kind(task.query) for task in load_tasks(FIXTURE_TASKS)}
    for task in load_tasks(FIXTURE_TASKS):
        if task.question_type == "downstream":
            assert routed[task.id] == "work", task.id
        elif task.question_type == "obligations" and task.query.startswith(("Which", "What")):
            assert routed[task.id] == "items", task.id
        elif routed[task.id] is None:  # every other question: structured's prompt, byte for byte
            assert messages_for("itemised", task.query, [ADR7], task.as_of) == \
                messages_for("structured", task.query, [ADR7], task.as_of)
    assert itemised_kind("What was the status of PEP 649, deferred evaluation of annotations?") is None
    assert itemised_kind("What did PEP 758 defer for later?") == "items"
    assert itemised_kind("Have the keys promised after evt-204 been added?") is None  # yes/no: structured
    assert itemised_kind("Write Python that dispatches on a command string.") == "work"
    # The identity under which an answer is cached follows the routing: a structured question
    # asked of an itemised reader is structured's cache entry.
    question = "Did we adopt Redis for fan-out?"
    itemised = get_reader(ReaderConfig(name="smollm2", style="itemised"), cache=AnswerCache(tmp_path))
    structured = get_reader(ReaderConfig(name="smollm2", style="structured"), cache=AnswerCache(tmp_path))
    assert itemised.messages(question, [ADR9], None) == structured.messages(question, [ADR9], None)
    assert itemised.identity["style"] == "itemised"
    from memory_baseline.reading.generation import routed

    assert routed(itemised.identity, "itemised", question) == ("structured", structured.identity)
