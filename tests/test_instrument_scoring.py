"""score_task on hand-made outputs: each outcome label, citations, artifacts, stage metrics,
and the scorecard built from the resulting case records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_instrument import (
    CORRECT_OUTCOMES,
    GRADER_VERSION,
    OUTCOMES,
    OutputError,
    Passage,
    Score,
    ScorecardError,
    ScoringError,
    SystemOutput,
    Task,
    build_scorecard,
    downstream_gain,
    parse_citations,
    parse_task,
    score_task,
)

ADR_007 = Passage(
    "decisions/adr-007.md",
    "decisions/adr-007.md#0",
    "ADR-007 (2024-07-10): new services use PostgreSQL as the event store. SQLite write "
    "contention under concurrent importers made it unsuitable; production moves on 22 July.",
)
ADR_009 = Passage(
    "decisions/adr-009.md",
    "decisions/adr-009.md#0",
    "ADR-009 (2024-08-12): the Redis cache proposed in session-040 is rejected. No cache is "
    "adopted; query latency is within budget without one.",
)
SETUP_GUIDE = Passage(
    "notes/setup.md",
    "notes/setup.md#0",
    "Install SQLite locally with the bootstrap script and run the importer once.",
)
BENCHMARK = Passage(
    "reports/benchmark.md",
    "reports/benchmark.md#0",
    "Benchmark: SQLite stalls at eight concurrent writers; PostgreSQL sustains forty.",
)


def task(
    task_id: str = "t1",
    *,
    question_type: str = "outcome",
    expected: Sequence[str] = ("decisions/adr-007.md",),
    must_include: Sequence[Sequence[str]] = (("PostgreSQL", "Postgres"),),
    must_not_include: Sequence[str] = (),
    abstain: bool = False,
    evidenced_negative: bool = False,
    artifact_checks: Sequence[dict[str, Any]] = (),
) -> Task:
    answer: dict[str, Any] = {
        "must_include": [list(group) for group in must_include],
        "must_not_include": list(must_not_include),
        "abstain": abstain,
        "evidenced_negative": evidenced_negative,
    }
    if artifact_checks:
        answer["artifact_checks"] = list(artifact_checks)
    return parse_task({
        "id": task_id,
        "question_type": question_type,
        "query": "Which event store should new services use?",
        "as_of": None,
        "expected_sources": list(expected),
        "answer": answer,
    })


def output(
    answer: str,
    *,
    task_id: str = "t1",
    abstained: bool = False,
    passages: Sequence[Passage] = (ADR_007,),
    stages: dict[str, list[str]] | None = None,
    condition: str = "hybrid-reranked",
    **extra: Any,
) -> SystemOutput:
    admitted = list(dict.fromkeys(p.source_id for p in passages))
    return SystemOutput(
        task_id=task_id,
        condition=condition,
        answer=answer,
        abstained=abstained,
        stages=stages if stages is not None else {"admitted": admitted},
        admitted_passages=list(passages),
        **extra,
    )


# --- outcome labels -------------------------------------------------------------------


def test_correct_answer() -> None:
    score = score_task(task(), output("New services use PostgreSQL [decisions/adr-007.md]."))
    assert score.outcome == "correct_answer"
    assert score.passed and score.answer_checks_pass
    assert score.must_include_groups_matched == score.must_include_groups_total == 1
    assert score.grader_version == GRADER_VERSION


def cache_task() -> Task:
    return task(
        "cache",
        expected=("decisions/adr-009.md",),
        must_include=(("no cache",), ("redis",), ("rejected", "declined")),
        must_not_include=("redis was adopted",),
        evidenced_negative=True,
    )


def test_evidenced_negative_is_an_answer_not_an_abstention() -> None:
    answer = "No cache was adopted: Redis was proposed and rejected [decisions/adr-009.md]."
    score = score_task(cache_task(), output(answer, task_id="cache", passages=[ADR_009]))
    assert score.outcome == "correct_evidenced_negative"
    assert score.passed
    assert not score.abstained


def test_evidenced_negative_with_hedging_phrase_still_counts_as_answer() -> None:
    answer = (
        "There is insufficient evidence of any cache in use. Redis was proposed and rejected, "
        "so no cache was adopted [decisions/adr-009.md]."
    )
    score = score_task(cache_task(), output(answer, task_id="cache", passages=[ADR_009]))
    assert score.abstention_signal == "text"
    assert score.outcome == "correct_evidenced_negative"


def test_false_abstention_when_evidence_was_admitted() -> None:
    out = output(
        "I cannot tell which store to use.", abstained=True, passages=[ADR_007, SETUP_GUIDE]
    )
    score = score_task(task(), out)
    assert score.outcome == "false_abstention"
    assert score.abstained and not score.passed
    assert score.expected_admitted == ("decisions/adr-007.md",)


def test_missed_evidence_abstention_when_evidence_never_reached_the_reader() -> None:
    out = output("Insufficient evidence in the supplied history.", passages=[SETUP_GUIDE])
    score = score_task(task(), out)
    assert score.abstention_signal == "text"
    assert score.outcome == "missed_evidence_abstention"
    assert score.expected_admitted == ()


def abstain_task() -> Task:
    return task("deadline", expected=(), must_include=(), abstain=True)


@pytest.mark.parametrize(
    ("answer", "flag"),
    [("I don't know.", True), ("The history holds insufficient   Evidence to say.", False)],
)
def test_correct_abstention(answer: str, flag: bool) -> None:
    out = output(answer, task_id="deadline", abstained=flag, passages=[SETUP_GUIDE])
    score = score_task(abstain_task(), out)
    assert score.outcome == "correct_abstention"
    assert score.passed
    # Nothing is expected, so source metrics are undefined rather than zero.
    assert score.stage("admitted").recall is None
    assert score.extraneous_admitted == ("notes/setup.md",)


def test_unsupported_answer_when_task_says_abstain() -> None:
    out = output("The deadline is 1 March.", task_id="deadline", passages=[SETUP_GUIDE])
    score = score_task(abstain_task(), out)
    assert score.outcome == "unsupported_answer"
    assert not score.passed


def test_wrong_answer_and_must_not_include_hit() -> None:
    t = task(must_not_include=("sqlite is the event store",))
    score = score_task(t, output("SQLite is the event store; PostgreSQL was only discussed."))
    assert score.outcome == "wrong_answer"
    assert score.must_not_include_hits == ("sqlite is the event store",)
    assert score.must_include_groups_matched == 1
    assert not score.answer_checks_pass


# --- citations ------------------------------------------------------------------------


def test_unknown_citation_is_found_even_when_the_system_does_not_report_it() -> None:
    out = output(
        "New services use PostgreSQL [decisions/adr-099.md].",
        citations=["decisions/adr-099.md"],
        unknown_citations=[],
    )
    score = score_task(task(), out)
    assert score.unknown_citations == ("decisions/adr-099.md",)
    assert score.reported_unknown_citations == ()
    assert any("unknown citations" in note for note in score.notes)
    [claim] = score.unsupported_claims
    assert claim.reason == "no cited id was admitted"


def test_unsupported_citation_claim_words_absent_from_cited_passage() -> None:
    answer = (
        "New services use PostgreSQL [decisions/adr-007.md]. "
        "The team adopted Redis to cache dashboards [notes/setup.md]."
    )
    score = score_task(task(), output(answer, passages=[ADR_007, SETUP_GUIDE]))
    assert score.unknown_citations == ()
    [unsupported] = score.unsupported_claims
    assert unsupported.claim == "The team adopted Redis to cache dashboards."
    assert unsupported.cited_ids == ("notes/setup.md",)
    assert unsupported.overlap is not None and unsupported.overlap < 0.6
    [supported] = score.supported_claims
    assert supported.cited_ids == ("decisions/adr-007.md",)
    # The answer is still correct: citation quality is reported, not folded into the label.
    assert score.outcome == "correct_answer"


def test_supported_citation_by_overlap_and_by_quote() -> None:
    answer = (
        "SQLite was unsuitable because of write contention with concurrent importers "
        "(source: decisions/adr-007.md). The benchmark notes that \"PostgreSQL sustains "
        "forty\" [S2: reports/benchmark.md]"
    )
    score = score_task(task(), output(answer, passages=[ADR_007, BENCHMARK]))
    assert score.unsupported_claims == ()
    methods = {c.cited_ids: c.method for c in score.supported_claims}
    assert methods == {("decisions/adr-007.md",): "overlap", ("reports/benchmark.md",): "quote"}


def test_citation_by_chunk_id_matches_the_admitted_passage() -> None:
    score = score_task(task(), output("New services use PostgreSQL [decisions/adr-007.md#0]."))
    assert score.unknown_citations == ()
    assert len(score.supported_claims) == 1


def test_parse_citations_forms() -> None:
    text = (
        "- PostgreSQL is the store [decisions/adr-007.md].\n"
        "- SQLite stalled under load. [source: reports/benchmark.md; notes/setup.md]\n"
        "Uncited closing remark with list[str] and [1] in it.\n"
        "See [the ADR](decisions/adr-007.md) for more.\n"
        "```yaml\nstore: postgresql  # [decisions/adr-007.md]\n```"
    )
    assert parse_citations(text) == [
        ("PostgreSQL is the store.", ["decisions/adr-007.md"]),
        ("SQLite stalled under load.", ["reports/benchmark.md", "notes/setup.md"]),
        ("Uncited closing remark with list[str] and [1] in it.", []),
        ("See [the ADR](decisions/adr-007.md) for more.", []),
    ]


class KeywordJudge:
    """A tiny real judge: supported when the claim's last word appears in a cited passage."""

    identity = {"name": "keyword-judge", "version": "test"}

    def supports(self, claim: str, passages: Sequence[Passage]) -> bool:
        last_word = claim.rstrip(". ").split()[-1].lower()
        return any(last_word in p.text.lower() for p in passages)


def test_claim_judge_identity_is_recorded_and_verdicts_kept_apart() -> None:
    out = output("New services use PostgreSQL [decisions/adr-007.md].")
    score = score_task(task(), out, claim_judge=KeywordJudge())
    assert score.claim_judge == {"name": "keyword-judge", "version": "test"}
    [claim] = score.supported_claims
    assert claim.judge_supported is True and claim.method == "overlap"
    assert score_task(task(), out).claim_judge is None


# --- stages ---------------------------------------------------------------------------


def test_stage_metrics_for_candidates_and_admitted_of_one_output() -> None:
    t = task(expected=("decisions/adr-007.md", "reports/benchmark.md"))
    stages = {
        "candidates": [
            "notes/setup.md", "decisions/adr-007.md", "notes/setup.md",
            "sessions/s-1.md", "reports/benchmark.md",
        ],
        "reranked": ["decisions/adr-007.md", "notes/setup.md", "reports/benchmark.md"],
        "admitted": ["decisions/adr-007.md", "notes/setup.md"],
    }
    out = output("PostgreSQL.", stages=stages, passages=[ADR_007, SETUP_GUIDE])
    score = score_task(t, out)

    candidates = score.stage("candidates")
    # Source-level ranking: the repeated setup.md chunk does not take a rank of its own.
    assert candidates.ranked_sources == (
        "notes/setup.md", "decisions/adr-007.md", "sessions/s-1.md", "reports/benchmark.md"
    )
    assert candidates.recall == 1.0
    assert candidates.precision == 0.5
    assert candidates.reciprocal_rank == 0.5
    assert score.stage("reranked").reciprocal_rank == 1.0

    admitted = score.stage("admitted")
    assert admitted.recall == 0.5
    assert admitted.precision == 0.5
    assert admitted.reciprocal_rank == 1.0
    assert admitted.missing_expected == ("reports/benchmark.md",)
    assert score.stage("cited") is None  # not reported by this output, so not invented
    assert score.extraneous_admitted == ("notes/setup.md",)


def test_condition_without_retrieval_has_only_admitted_stage() -> None:
    out = output("PostgreSQL.", condition="oracle")
    score = score_task(task(), out)
    assert set(score.stage_metrics) == {"admitted"}
    assert score.stage("admitted").recall == 1.0


def test_admitted_stage_disagreeing_with_passages_is_noted() -> None:
    out = output("PostgreSQL.", stages={"admitted": ["reports/benchmark.md"]})
    assert "stage 'admitted' differs" in score_task(task(), out).notes[0]


# --- downstream artifacts -------------------------------------------------------------

STORE_CHECKS = (
    {"check": "parses", "format": "yaml"},
    {"check": "key_equals", "format": "yaml", "key": "event_store.backend",
     "any_of": ["postgresql", "postgres"]},
    {"check": "not_matches", "pattern": r"sqlite"},
)


def downstream_task() -> Task:
    return task("billing", question_type="downstream", must_include=(),
                artifact_checks=STORE_CHECKS)


def test_downstream_artifact_using_the_wrong_store_fails() -> None:
    answer = "Here is the config:\n```yaml\nevent_store:\n  backend: sqlite\n  path: ev.db\n```\n"
    score = score_task(downstream_task(), output(answer, task_id="billing"))
    assert score.artifact_source == "fenced_block"
    assert [c.passed for c in score.artifact_checks] == [True, False, False]
    assert "'sqlite'" in score.artifact_checks[1].reason
    assert score.artifact_pass is False
    assert score.outcome == "correct_answer"  # nothing wrong in the prose itself...
    assert not score.passed  # ...but the work is wrong


def test_downstream_artifact_using_postgresql_passes_and_gain_is_computed() -> None:
    good = output("Done.", task_id="billing",
                  artifact="event_store:\n  backend: PostgreSQL\n  dsn: postgres://db/events\n")
    bad = output("```yaml\nevent_store:\n  backend: sqlite\n```", task_id="billing",
                 condition="no-memory", passages=[])
    with_history = score_task(downstream_task(), good)
    without = score_task(downstream_task(), bad)
    assert with_history.artifact_source == "artifact"
    assert with_history.artifact_pass is True and with_history.passed

    gain = downstream_gain(with_history, without)
    assert gain["checks_passed_with"] == 3 and gain["checks_passed_without"] == 1
    assert gain["gain"] == 2
    assert [c["check"] for c in gain["fixed_checks"]] == ["key_equals", "not_matches"]
    assert gain["history_made_the_difference"] is True
    with pytest.raises(ScoringError):
        downstream_gain(with_history, score_task(task(), output("PostgreSQL")))


@pytest.mark.parametrize(
    ("fmt", "text", "passes"),
    [
        ("json", '{"event_store": {"backend": "postgres"}}', True),
        ("toml", '[event_store]\nbackend = "postgresql"\n', True),
        ("toml", "[event_store\nbackend = 1", False),
        ("yaml", "Use PostgreSQL for the store.", False),  # prose is a YAML scalar, not work
    ],
)
def test_structured_formats(fmt: str, text: str, passes: bool) -> None:
    checks = ({"check": "key_equals", "format": fmt, "key": "event_store.backend",
               "any_of": ["postgresql", "postgres"]},)
    t = task("cfg", question_type="downstream", must_include=(), artifact_checks=checks)
    score = score_task(t, output(text, task_id="cfg"))
    assert score.artifact_source == "answer"
    assert score.artifact_pass is passes


# --- determinism, serialisation, contracts --------------------------------------------


def test_score_is_deterministic_and_json_round_trippable() -> None:
    out = output(
        "No cache was adopted: Redis was rejected [decisions/adr-009.md]. See [notes/x.md].",
        task_id="cache",
        passages=[ADR_009, SETUP_GUIDE],
        usage={"prompt_tokens": 812.0, "completion_tokens": 40.0, "calls": 1.0, "seconds": 2.5},
    )
    first, second = score_task(cache_task(), out), score_task(cache_task(), out)
    assert first == second
    as_json = json.dumps(first.to_dict(), sort_keys=True)
    assert json.loads(as_json) == first.to_dict()
    assert first.to_dict()["stage_metrics"]["admitted"]["recall"] == 1.0


def test_system_output_round_trip_and_validation() -> None:
    out = output("PostgreSQL [decisions/adr-007.md]", citations=["decisions/adr-007.md"],
                 artifact="x: 1", usage={"prompt_tokens": 10.0}, timings_ms={"reader": 5.0},
                 metadata={"seed": 1})
    assert SystemOutput.from_dict(json.loads(json.dumps(out.to_dict()))) == out
    with pytest.raises(OutputError, match="unknown stage 'fused'"):
        output("x", stages={"fused": []})
    with pytest.raises(OutputError, match="unknown field 'answers'"):
        SystemOutput.from_dict({**out.to_dict(), "answers": []})


def test_output_for_another_task_is_refused() -> None:
    with pytest.raises(ScoringError, match="output for task 'other'"):
        score_task(task(), output("PostgreSQL", task_id="other"))


# --- scorecard ------------------------------------------------------------------------


def record(t: Task, score: Score) -> dict[str, Any]:
    return {"condition": score.condition, "question_type": t.question_type,
            "task_id": t.id, "score": score.to_dict()}


def test_scorecard_cells_trace_back_to_task_ids() -> None:
    usage = {"prompt_tokens": 100.0, "seconds": 1.0}
    stages = {"candidates": ["decisions/adr-007.md"], "admitted": ["decisions/adr-007.md"]}
    records = [
        record(task(), score_task(task(), output("PostgreSQL", stages=stages, usage=usage))),
        record(cache_task(), score_task(cache_task(), output(
            "Redis was adopted.", task_id="cache", passages=[SETUP_GUIDE]))),
        record(abstain_task(), score_task(abstain_task(), output(
            "insufficient evidence", task_id="deadline", passages=[]))),
        record(task(), score_task(task(), output(
            "PostgreSQL", condition="no-memory", passages=[], usage=usage))),
    ]
    card = build_scorecard(records)
    assert card.conditions == ("hybrid-reranked", "no-memory")
    assert card.question_types == ("outcome",)

    cell = card.cell("hybrid-reranked", "outcome")
    assert (cell.passed, cell.cases) == (2, 3)
    assert cell.task_ids == ("t1", "cache", "deadline")
    assert cell.outcome_task_ids["wrong_answer"] == ("cache",)
    assert cell.outcome_counts["correct_abstention"] == 1
    assert cell.mean_recall_candidates == 1.0  # only t1 has a candidates stage
    assert cell.mean_recall_admitted == 0.5  # t1 found it, cache missed it; deadline has None
    assert cell.mean_prompt_tokens == 100.0

    text = card.to_text()
    assert "2/3" in text and "1/1" in text and "no-memory" in text
    as_dict = json.loads(json.dumps(card.to_dict()))
    assert {c["condition"] for c in as_dict["cells"]} == {"hybrid-reranked", "no-memory"}
    assert as_dict["cells"][0]["task_ids"] == ["t1", "cache", "deadline"]

    with pytest.raises(ScorecardError, match="appears twice"):
        build_scorecard(records + records[:1])
    with pytest.raises(ScorecardError, match="field 'score' is required"):
        build_scorecard([{"condition": "c", "question_type": "outcome", "task_id": "t"}])


@given(answer=st.text(max_size=300), flag=st.booleans())
@settings(max_examples=150, deadline=None)
def test_any_answer_gets_exactly_one_known_outcome(answer: str, flag: bool) -> None:
    score = score_task(cache_task(), output(answer, task_id="cache", abstained=flag,
                                            passages=[ADR_009, SETUP_GUIDE]))
    assert score.outcome in OUTCOMES
    assert score.passed == (score.outcome in CORRECT_OUTCOMES)
    assert score == score_task(cache_task(), output(answer, task_id="cache", abstained=flag,
                                                    passages=[ADR_009, SETUP_GUIDE]))
    for claim, ids in parse_citations(answer):
        assert isinstance(claim, str) and all(isinstance(i, str) for i in ids)
