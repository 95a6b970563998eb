"""The grader reads commitment, not words: one test per rule, on sentences readers write.

Each case scores a whole answer against a real task of the fixture (or a generated
world), with the task's expected sources admitted as whole files, exactly as
`validate_grader` does; a few rules that no committed task exercises use a small
task written here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_instrument import matching
from memory_instrument.outputs import Passage, SystemOutput
from memory_instrument.reading import expected_reply, read_answer, reply_of
from memory_instrument.scoring import score_task
from memory_instrument.tasks import load_tasks, parse_task

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "fixtures" / "history"
WORLD = REPO / "benchmarks" / "worlds" / "world-s7-d60-l30"
FIXTURE = load_tasks(REPO / "fixtures" / "tasks.json")
WORLD_TASKS = load_tasks(WORLD / "tasks.json")


def _passes(task_id: str, answer: str, *, world: bool = False, abstained: bool = False,
            citations: tuple[str, ...] = ()) -> bool:
    tasks, root = (WORLD_TASKS, WORLD / "history") if world else (FIXTURE, HISTORY)
    task = tasks.get(task_id)
    passages = [Passage(s, f"{s}#0", (root / s).read_text(encoding="utf-8"))
                for s in task.expected_sources]
    output = SystemOutput(task.id, "test", answer, abstained, admitted_passages=passages,
                          citations=list(citations))
    return score_task(task, output).passed


def _task(must_include, *, query="What is the status of the proposal?", **answer):
    spec = {"must_include": must_include, "must_not_include": [], "abstain": False,
            "evidenced_negative": False, **answer}
    return parse_task({"id": "t", "question_type": "outcome", "query": query, "as_of": None,
                       "expected_sources": ["a.md"], "answer": spec})


def _reads(task, answer: str) -> bool:
    return read_answer(task, answer).passes


# --- hedges: an answer that offers alternatives asserts none of them -------------------------

@pytest.mark.parametrize(("task_id", "answer", "passes"), [
    ("outcome-store-new-services", "The notes don't settle it; maybe PostgreSQL, maybe SQLite.",
     False),
    ("outcome-store-new-services", "It could be either. ADR-007 points new work at PostgreSQL, "
     "but the repository still ships the SQLite guide.", False),
    ("temporal-prod-0715", "Either SQLite or PostgreSQL — I cannot tell from the notes whether "
     "production had switched yet.", False),
    ("temporal-prod-0723", "Probably PostgreSQL, unless the cutover slipped — it could still "
     "have been SQLite.", False),
    ("outcome-fanout", "Unclear — possibly LISTEN/NOTIFY, possibly the workers still poll the "
     "events table.", False),
    ("outcome-cache-layer", "The notes don't say whether the cache shipped.", False),
    # A softener around one answer is a commitment.
    ("outcome-store-new-services", "I'm fairly sure it's PostgreSQL — ADR-007 moved all new "
     "event-store work there.", True),
    ("temporal-prod-0723", "Most likely PostgreSQL: the deploy log shows the cutover on "
     "22 July.", True),
])
def test_a_hedge_commits_to_nothing(task_id: str, answer: str, passes: bool) -> None:
    assert _passes(task_id, answer) is passes


def test_an_embedded_question_is_neither_yes_nor_no() -> None:
    text = matching.normalise("the notes don't say whether the cache shipped")
    assert not matching.asserts(text, "not shipped") and not matching.asserts(text, "shipped")


# --- negation: scope, subjects of negated states, changes of state, lists -----------------------

@pytest.mark.parametrize(("task_id", "answer", "passes"), [
    ("outcome-store-new-services", "Not SQLite any more: every new service uses PostgreSQL.",
     True),
    ("temporal-prod-0715", "PostgreSQL isn't live yet: production still runs SQLite.", True),
    ("temporal-prod-0715", "SQLite isn't live any more: production runs PostgreSQL.", False),
    ("temporal-prod-0723", "SQLite is no longer the event store; production is on PostgreSQL.",
     True),
    ("temporal-prod-0723", "Production moved off SQLite to PostgreSQL on 22 July.", True),
    ("temporal-prod-0723", "SQLite was replaced by PostgreSQL at the 22 July cutover.", True),
    ("temporal-prod-0723", "PostgreSQL was replaced by SQLite after the cutover failed.", False),
    ("outcome-store-new-services", "PostgreSQL, not SQLite.", True),
    ("outcome-store-new-services", "SQLite, not PostgreSQL.", False),
    ("outcome-redis-adopted", "We decided against Redis: fan-out uses LISTEN/NOTIFY.", True),
    ("outcome-redis-adopted", "No longer undecided: Redis was adopted for fan-out.", False),
])
def test_negation_reaches_what_it_denies(task_id: str, answer: str, passes: bool) -> None:
    assert _passes(task_id, answer) is passes


def test_negation_covers_a_list_and_stops_at_a_new_clause() -> None:
    listed = matching.normalise("not the replay procedure, the lag alert or the backup volume")
    assert not any(matching.asserts(listed, p) for p in ("replay procedure", "lag alert",
                                                          "backup volume"))
    clause = matching.normalise("it was not accepted, the community preferred pep 343")
    assert matching.asserts(clause, "pep 343")
    # A judgement is not a state: the retry stays asserted in "retrying ... is not safe".
    judged = matching.normalise("retrying a partially imported file is therefore not safe")
    assert matching.asserts(judged, "retrying")


def test_the_question_subject_is_not_denied_by_its_own_state() -> None:
    text = matching.normalise("the idempotency keys had not been added by 1 september")
    subject = frozenset(matching.words("have the importer idempotency keys been added"))
    assert matching.asserts(text, "idempotency keys", subject)
    assert not matching.asserts(text, "idempotency keys")


def test_words_in_code_negate_nothing() -> None:
    text = matching.normalise("it is a feature that ``None`` raises an error when called")
    assert matching.asserts(text, "raises an error")


# --- choice: the option asserted as the state, not the first one named -----------------------

@pytest.mark.parametrize(("answer", "chosen"), [
    ("Kafka isn't live yet: the outbox poller still runs.", "outbox"),
    ("It moved off Kafka to the outbox poller in April.", "outbox"),
    ("Kafka was proposed in March; the outbox poller relays events.", "outbox"),
    ("The outbox poller, until the switch to Kafka came later.", "outbox"),
    ("Kafka, replacing the outbox poller.", "kafka"),
    ("We decided against Kafka and kept the outbox poller.", "outbox"),
    ("Maybe Kafka, maybe the outbox poller.", None),
])
def test_choice_is_the_state_the_answer_asserts(answer: str, chosen: str | None) -> None:
    options = (("kafka", ("kafka",)), ("outbox", ("outbox poller", "outbox")))
    assert matching.chosen_option(matching.normalise(answer), options) == chosen


# --- abstentions: recognised in other words; a guess is a claim ------------------------------

@pytest.mark.parametrize(("task_id", "answer", "passes"), [
    ("abstain-graphql", "Nothing in the history gives a place where GraphQL federation was "
     "discussed.", True),
    ("abstain-kafka", "The records don't mention Kafka at all.", True),
    ("abstain-kafka", "There is no record of us choosing Kafka: events live in PostgreSQL and "
     "fan-out uses LISTEN/NOTIFY.", True),
    ("abstain-k8s-autoscaling", "I could not find it written down, but it was probably a "
     "Horizontal Pod Autoscaler on 70% CPU.", False),
    ("abstain-ios-release", "Version 2.3.1 of the iOS app was live.", False),
])
def test_an_unanswerable_question_is_answered_only_by_abstaining(
    task_id: str, answer: str, passes: bool
) -> None:
    assert _passes(task_id, answer) is passes


# --- the status line is a claim -------------------------------------------------------------


def test_a_status_line_alone_satisfies_the_group_asking_for_it() -> None:
    assert _passes("outcome-redis-adopted", "Status: rejected. No.")
    assert not _passes("outcome-redis-adopted", "Status: rejected. Redis now caches the order "
                                                "read models.")


def test_a_status_line_must_be_able_to_name_the_state_asked_for() -> None:
    final = _task([["Final", "final"]], query="What is the final status of PEP 572?")
    assert not _reads(final, "Status: proposed. Its final status is that it is proposed.")
    assert _reads(final, "Status: decided. It is Final.")
    withdrawn = _task([["withdrawn"]], query="Was PEP 501 accepted?", evidenced_negative=True)
    assert not _reads(withdrawn, "Status: rejected. No, it was withdrawn in favour of PEP 750.")
    assert _reads(withdrawn, "Status: superseded. No, it was withdrawn in favour of PEP 750.")


# --- yes/no questions: the reply answers the question asked ----------------------------------

@pytest.mark.parametrize(("task_id", "answer", "passes"), [
    ("temporal-redis-0810", "No, not formally.", True),
    ("temporal-redis-0810", "Yes, ADR-009 had formally rejected it.", False),
    ("temporal-redis-0813", "Yes: ADR-009, dated 12 August 2024.", True),
    ("temporal-redis-0813", "Yes, the Redis proposal was formally rejected in an ADR.", True),
    ("obligations-idempotency-0910", "Yes, the importer idempotency keys promised after evt-204 "
     "have been added.", True),
    ("obligations-idempotency-0910", "Yes, they were added on 21 August 2024.", False),
    ("outcome-cache-layer", "No, there is no cache layer in front of the order read models.",
     True),
])
def test_a_reply_that_matches_answers_the_question(task_id: str, answer: str, passes: bool
                                                   ) -> None:
    assert _passes(task_id, answer) is passes


def test_the_expected_reply_comes_from_the_task() -> None:
    assert expected_reply(FIXTURE.get("outcome-redis-adopted")) == "no"
    assert expected_reply(FIXTURE.get("temporal-redis-0813")) == "yes"
    assert expected_reply(FIXTURE.get("outcome-store-new-services")) is None
    assert reply_of("no longer mysql: the service moved") is None
    assert reply_of("no [pep-0621.rst]") == "no" and reply_of("not yet.") == "no"


def test_no_to_a_which_question_means_none() -> None:
    none = _task([["None"]], query="Which open issues does PEP 621 still list?")
    assert _reads(none, "No [pep-0621.rst]")
    assert not _reads(none, "No, the open issues are the dynamic fields.")


# --- paraphrase where the evidence allows it, inflections -------------------------------------


def test_restating_the_evidence_satisfies_the_groups_it_shares_words_with() -> None:
    assert _passes("provenance-d0002", "RabbitMQ was chosen because Beanstalkd's p99 latency "
                   "reached 120 ms in the nightly batch [reports/2022/"
                   "2022-02-24-fulfilment-service-queue.md].", world=True)
    # The evidence quote of a locate task is the question's own title: restating it names
    # nothing.
    style = _task([["pep-0008", "PEP 8"]], query="Where is the style guide for Python code?",
                  evidence=[{"source": "a.md", "quote": "Title: Style Guide for Python Code"}])
    assert not _reads(style, "The style guide for Python code is PEP 257.")


def test_a_phrase_meets_its_inflections() -> None:
    withdrawn = _task([["withdrawn"]], query="Was PEP 504 accepted?", evidenced_negative=True)
    assert _reads(withdrawn, "No. Alyssa Coghlan withdrew it in favour of PEP 506.")
    provisional = _task([["Provisional"]])
    assert _reads(provisional, "It was provisionally accepted in July 2018.")
    final = _task([["Final"]])
    assert not _reads(final, "It was finally accepted in 2018.")  # short adverbs drift
    assert _passes("outcome-fanout", "The append transaction fires a Postgres notification "
                   "and the workers wake up on it instead of polling.")


# --- citations -------------------------------------------------------------------------------


def test_citations_reported_beside_the_answer_cover_it() -> None:
    answer = "It had zero operational cost and was deployable in March."
    assert _passes("provenance-why-sqlite-first", answer, citations=("decisions/adr-003.md",))
    assert not _passes("provenance-why-sqlite-first", answer)


def test_a_citation_covers_its_paragraph_and_the_sentence_its_full_stop_ended() -> None:
    listed = ("Status: rejected. It had zero operational cost:\n- deployable in March\n"
              "- backed up with the host [decisions/adr-003.md]")
    assert _passes("provenance-why-sqlite-first", listed)


def test_a_quote_dump_names_no_document_unless_it_quotes_a_title_or_record_line() -> None:
    report = "[reports/sqlite-contention-2024-07.md]"
    dump = (f"Under eight concurrent writers, 4.1% of appends failed with `sqlite3.OperationalError: "
            f"database is locked` after waiting out the 5-second busy timeout. {report} "
            f"WAL mode does not help here: it lets readers proceed during a write, but there is "
            f"still exactly one writer at a time. "
            f"{report}")
    assert not _passes("locate-contention-report", dump)
    titled = f"# SQLite write contention under importer backfill {report} {dump}"
    assert _passes("locate-contention-report", titled)
    # One copied sentence with its source is an answer, not a dump; so is the reader's own prose.
    assert _passes("locate-contention-report", dump.split(report)[0] + report)
    assert _passes("locate-contention-report", f"The measurements are in the contention report "
                   f"{report}.")


# --- obligations ------------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "passes"), [
    ("Still open on 1 October: the replay procedure, the projection-lag alert and the SQLite "
     "backup volume (destroyed only on 14 October).", True),
    ("Not the idempotency keys, the retention job or the setup guide: those are done. Still "
     "open: the replay procedure, the projection-lag alert and the SQLite backup volume.", True),
    ("Still open: the replay procedure, the projection-lag alert, the SQLite backup volume and "
     "the idempotency keys.", False),
    ("Maybe the replay procedure and the lag alert, maybe the backup volume.", False),
])
def test_obligation_states_on_the_as_of_date(answer: str, passes: bool) -> None:
    assert _passes("obligations-open-1001", answer) is passes


def test_a_promise_is_named_by_its_distinctive_words_and_an_unknown_one_is_invented() -> None:
    verbose = ("Two promises were still open on 6 March 2022: Priya's alert on search engine "
               "errors and Kwame's restore drill for the message queue.")
    assert _passes("obligations-fulfilment-service-open-list", verbose, world=True)
    invented = verbose.replace(".", ":\n- alert on search engine errors\n"
                               "- restore drill for the message queue\n- migrate the cache")
    assert not _passes("obligations-fulfilment-service-open-list", invented, world=True)
