"""The grader earns its labels: validation thresholds, four answers that once fooled it, one grammar.

The probes and the held-out cases are labelled by reading the ledger and the history
(`fixtures/grader/`); these tests keep the grader from drifting away from those labels.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_baseline.passages import Passage as ReaderPassage
from memory_baseline.reading import citations as reader_citations
from memory_instrument import citations
from memory_instrument.grader_version import GRADER_VERSION, grader_version
from memory_instrument.judges import (
    CallableClaimJudge,
    admit_judge,
    load_claims,
    measure_answer_judge,
)
from memory_instrument.outputs import Passage, SystemOutput
from memory_instrument.scoring import parse_citations, score_task
from memory_instrument.tasks import TaskFileError, load_tasks, parse_task
from memory_instrument.validation import (
    Confusion,
    load_labelled_answers,
    load_probes,
    source_family,
    validate_grader,
    wilson_interval,
)
from memory_lab.ladders.grader_tuning import PEP_MIRROR, PEP_SNAPSHOT, validate_labelled_set
from memory_lab.ladders.rescore import check_heldout, rescore_run

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
HISTORY = FIXTURES / "history"
MAX_FALSE_PASS_RATE = 0.02
MIN_AGREEMENT = 0.97


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(FIXTURES / "tasks.json")


@pytest.fixture(scope="module")
def validation(tasks):
    return validate_grader(load_probes(FIXTURES / "grader" / "probes.json"), tasks, HISTORY)


def test_every_fixture_task_has_labelled_probes_of_the_required_kinds(tasks) -> None:
    probes = load_probes(FIXTURES / "grader" / "probes.json")
    by_task: dict[str, set[str]] = {}
    for probe in probes:
        assert probe.reason.strip(), probe.id
        by_task.setdefault(probe.task_id, set()).add(probe.kind)
    assert set(by_task) == set(tasks.ids)
    for task in tasks:
        kinds = by_task[task.id]
        if task.answer.abstain:
            assert {"flagged_abstention", "textual_abstention", "hedge", "fabricated"} <= kinds
        elif task.question_type == "downstream":
            assert "correct" in kinds and "flagged_abstention" in kinds
        else:
            assert {"textual_abstention", "hedge"} <= kinds, task.id
            assert kinds & {"flagged_abstention", "bare_abstention"}, task.id
            assert kinds & {"paraphrase", "sourced_negative"}, task.id
            assert kinds & {"negated", "reversed"}, task.id
        if task.answer.evidenced_negative:
            assert {"sourced_negative", "bare_abstention"} <= kinds, task.id
        if task.question_type == "obligations" and task.answer.expect.obligations:
            assert "partial" in kinds, task.id


def test_grader_agrees_with_the_expert_labels(validation) -> None:
    overall = validation.overall
    assert overall.false_pass_rate is not None and overall.false_pass_rate <= MAX_FALSE_PASS_RATE, \
        validation.misjudged
    assert overall.agreement is not None and overall.agreement >= MIN_AGREEMENT, validation.misjudged
    assert set(validation.by_question_type) == {"locate", "outcome", "provenance", "temporal",
                                                "obligations", "downstream"}


def test_heldout_real_answers_are_never_passed_when_wrong() -> None:
    result = check_heldout(REPO)
    assert result["overall"]["false_pass"] == 0, result["misjudged"]
    assert result["overall"]["agreement"] >= MIN_AGREEMENT, result["misjudged"]


TUNING = FIXTURES / "grader" / "tuning" / "answers.json"


def test_the_tuning_set_loads_in_the_labelled_answers_format() -> None:
    items = load_labelled_answers(TUNING)
    assert len(items) == 540 and {i.label for i in items} == {"pass", "fail"}
    assert {i.task_file for i in items} >= {"fixtures/tasks.json", "fixtures/peps/tasks.json"}
    assert sum(i.admitted is not None for i in items) == 66
    assert source_family("real:qwen-1.5b/structured (oracle-source; benchmarks/runs/x)") == \
        "real:qwen-1.5b"
    assert source_family("imitated:smollm2") == "imitated:smollm2"
    # The probe file reads through the same loader.
    assert len(load_labelled_answers(FIXTURES / "grader" / "probes.json")) == 299


@pytest.mark.skipif(not (REPO / PEP_SNAPSHOT).is_dir() or not PEP_MIRROR.is_dir(),
                    reason="the PEP snapshot and the python/peps mirror live outside the repository")
def test_grader_agrees_with_the_tuning_labels() -> None:
    result = validate_labelled_set(REPO, TUNING)
    overall = result["overall"]
    misjudged = [(m["id"], m["label"], m["kind"]) for m in result["misjudged"]]
    assert overall["agreement"] >= MIN_AGREEMENT, misjudged
    assert overall["false_pass_rate"] <= MAX_FALSE_PASS_RATE, misjudged
    # Every family is measured; the two imitated verbose styles are the weakest (their
    # misses are paraphrases with none of the task's words, listed in grader-tuning.json).
    families = result["by_source"]
    assert set(families) >= {"real:qwen-1.5b", "real:extractive", "imitated:smollm2"}
    assert all(f["agreement"] >= 0.93 for f in families.values()), families
    assert families["real:qwen-1.5b"]["agreement"] >= 0.95


def test_an_answer_judge_is_measured_beside_the_lexical_grader(tasks) -> None:
    probes = load_probes(FIXTURES / "grader" / "probes.json")[:40]

    class AlwaysPass:
        identity = {"kind": "constant"}

        def judge(self, task, answer, passages) -> bool:
            return True

    measured = measure_answer_judge(AlwaysPass(), probes, tasks, HISTORY)
    assert measured["judge_agreement"] == sum(p.label == "pass" for p in probes) / len(probes)
    assert measured["lexical_agreement"] == 1.0 and measured["answers"] == 40


def test_wilson_intervals_match_scipy() -> None:
    from scipy.stats import binomtest

    for successes, trials in [(0, 9), (3, 40), (171, 235), (540, 540), (1, 2)]:
        ours = wilson_interval(successes, trials)
        theirs = binomtest(successes, trials).proportion_ci(method="wilson")
        assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-9)
    assert wilson_interval(0, 0) is None
    table = Confusion(true_pass=10, false_fail=2, false_pass=1, true_fail=20).to_dict()
    assert table["agreement_ci"][0] < table["agreement"] < table["agreement_ci"][1]
    assert table["false_pass_rate_ci"] == pytest.approx(list(wilson_interval(1, 21)))


def _output(task, answer, *, sources=None, abstained=False, reported=()):
    admitted = task.expected_sources if sources is None else sources
    passages = [Passage(s, f"{s}#0", (HISTORY / s).read_text(encoding="utf-8")) for s in admitted]
    return SystemOutput(task.id, "test", answer, abstained, admitted_passages=passages,
                        unknown_citations=list(reported))


@pytest.mark.parametrize(("task_id", "wrong", "right"), [
    ("obligations-idempotency-0901", "Yes, the keys were added and are now live.",
     "Not yet: on 1 September the idempotency keys were still pending."),
    ("obligations-evt-204-followups",
     "Both the idempotency keys and the projection-lag alert are done; nothing is open.",
     "The idempotency keys were merged on 4 September; the projection-lag alert is still open."),
    ("obligations-retention-job", "The retention job was never delivered.",
     "Yes, it was delivered: session 049 on 27 August 2024 reports it merged."),
    ("obligations-open-1020",
     "Still open: the replay procedure, the projection-lag alert and the SQLite backup volume.",
     "The replay procedure and the projection-lag alert are still open; the backup volume was "
     "destroyed on 14 October."),
])
def test_the_issues_four_answers_fail_and_their_correct_counterparts_pass(
    tasks, task_id, wrong, right
) -> None:
    task = tasks.get(task_id)
    assert not score_task(task, _output(task, wrong)).passed
    assert score_task(task, _output(task, right)).passed


def test_status_field_is_scored_as_a_field_not_as_text(tasks) -> None:
    task = tasks.get("obligations-idempotency-0901")  # "open" is one of its phrasings
    assert not score_task(task, _output(task, "Status: open. The keys were merged.")).passed
    redis = tasks.get("temporal-redis-0806")
    wrong_status = score_task(redis, _output(redis, "Status: rejected. Aisha made a proposal."))
    assert not wrong_status.passed and wrong_status.status_field == "rejected"
    right = score_task(redis, _output(redis, "Status: proposed. Aisha made a proposal."))
    assert right.passed and right.typed_checks[0].passed


def test_provenance_needs_a_cited_expected_source_that_supports_the_claim(tasks) -> None:
    task = tasks.get("provenance-why-sqlite-first")
    claim = "It had zero operational cost and was deployable in March"
    assert score_task(task, _output(task, f"{claim} [decisions/adr-003.md].")).passed
    uncited = score_task(task, _output(task, f"{claim}."))
    assert uncited.outcome == "unsupported_claim" and not uncited.passed
    paragraph = score_task(task, _output(task, f"{claim}. The file is backed up with the host. "
                                               "[decisions/adr-003.md]"))
    assert paragraph.passed  # a paragraph's closing citation covers its sentences


def test_reported_and_counted_unknown_citations_are_both_kept(tasks) -> None:
    task = tasks.get("locate-evt-204")
    cleaned = score_task(task, _output(task, "It is incidents/evt-204.md.",
                                       reported=["notes/secret.md"]))
    assert cleaned.unknown_citations == () and cleaned.reported_unknown_citations == (
        "notes/secret.md",)
    assert not cleaned.unknown_citations_agree
    raw = score_task(task, _output(task, "It is incidents/evt-204.md [S1: notes/secret.md].",
                                   reported=["notes/secret.md"]))
    assert raw.unknown_citations == ("notes/secret.md",) and raw.unknown_citations_agree


GRAMMAR_CASES = [
    ("Kept [S1: notes/secret.md].", ["notes/secret.md"]),
    ("Pinned [src/app.py@1a2b3c4d].", ["src/app.py@1a2b3c4d"]),
    ("Two (source: decisions/adr-007.md; reports/r.md).", ["decisions/adr-007.md", "reports/r.md"]),
    ("Chunk [decisions/adr-007.md#3] and [`notes/a.txt`].", ["decisions/adr-007.md#3", "notes/a.txt"]),
    ("Not citations: [1], [optional], list[str], [link](http://x/y.md).", []),
    ("```toml\n[services/shipments.toml]\n```\nDone [README.md].", ["README.md"]),
]


@pytest.mark.parametrize(("text", "ids"), GRAMMAR_CASES)
def test_reader_and_instrument_read_one_citation_grammar(text, ids) -> None:
    assert reader_citations.citation_grammar is citations  # the library imports the contract module
    reader_ids = list(reader_citations.check_citations(text, [], enforce=False).unknown)
    instrument_ids = list(dict.fromkeys(i for _, group in parse_citations(text) for i in group))
    assert reader_ids == instrument_ids == ids


def test_enforcement_removes_exactly_what_the_instrument_would_count() -> None:
    adr = ReaderPassage("decisions/adr-007.md#0", "decisions/adr-007.md", "PostgreSQL.", None,
                        "markdown", None, 1)
    text = "PostgreSQL [decisions/adr-007.md]. Secret [S1: notes/secret.md]. Pinned [adr-007.md@abc1234]."
    checked = reader_citations.check_citations(text, [adr], enforce=True)
    assert checked.unknown == ("notes/secret.md",)
    assert checked.resolved == {"adr-007.md@abc1234": "decisions/adr-007.md"}
    assert "secret" not in checked.text
    assert citations.cited_ids(checked.text) == ["decisions/adr-007.md"]


def test_the_library_loads_only_the_grammar_of_the_instrument() -> None:
    code = ("import sys, memory_baseline.reading; "
            "print(sorted(m for m in sys.modules if m.startswith('memory_instrument')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "['memory_instrument', 'memory_instrument.citations']"


def test_grader_version_is_a_hash_of_the_deciding_code(tmp_path, tasks) -> None:
    package = Path(citations.__file__).parent
    copy = tmp_path / "memory_instrument"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert grader_version(copy) == GRADER_VERSION
    scoring = copy / "scoring.py"
    scoring.write_text(scoring.read_text(encoding="utf-8") + "\n# a changed rule\n", encoding="utf-8")
    assert grader_version(copy) != GRADER_VERSION
    task = tasks.get("locate-evt-204")
    assert score_task(task, _output(task, "incidents/evt-204.md")).grader_version == GRADER_VERSION


def test_typed_expectations_need_version_2_and_valid_values() -> None:
    base = {"id": "t", "question_type": "outcome", "query": "q?", "as_of": None,
            "expected_sources": ["a.md"],
            "answer": {"must_include": [["x"]], "must_not_include": [], "abstain": False,
                       "evidenced_negative": False, "expect": {"status": ["rejected"]}}}
    assert parse_task(base).answer.expect.status == ("rejected",)
    with pytest.raises(TaskFileError, match="needs task-file version 2"):
        parse_task(base, version=1)
    bad = json.loads(json.dumps(base))
    bad["answer"]["expect"] = {"status": ["maybe"]}
    with pytest.raises(TaskFileError, match="answer.expect.status' values must be among"):
        parse_task(bad)
    bad["answer"]["expect"] = {"choice": {"options": {"a": ["a"], "b": ["b"]}, "answer": "c"}}
    with pytest.raises(TaskFileError, match="must be one of the options"):
        parse_task(bad)


def test_a_judge_joins_the_pass_rule_only_if_it_beats_the_lexical_check() -> None:
    claims = load_claims(FIXTURES / "grader" / "claims.json")
    always_yes = CallableClaimJudge(lambda prompt: "yes", {"kind": "constant"})
    judge, measured = admit_judge(always_yes, claims, HISTORY)
    supported_share = sum(c.supported for c in claims) / len(claims)
    assert not judge.in_pass_rule and measured["judge_accuracy"] == supported_share
    labels = {c.claim: c.supported for c in claims}

    def by_label(prompt: str) -> str:  # a judge that knows the labels: the upper bound
        claim = prompt.rsplit("Claim: ", 1)[1].rsplit("\n\nAnswer:", 1)[0]
        return "yes" if labels[claim] else "no"

    judge, measured = admit_judge(CallableClaimJudge(by_label, {"kind": "labels"}), claims, HISTORY)
    assert judge.in_pass_rule and measured["judge_accuracy"] == 1.0
    assert measured["lexical_accuracy"] < 1.0


def test_rescoring_a_committed_run_reads_the_recorded_answers(tasks) -> None:
    cases = REPO / "benchmarks/runs/20261202T194755Z-4ab167/cases.jsonl"
    result = rescore_run(cases, tasks)
    assert result["cases"] == sum(1 for line in cases.read_text().splitlines() if line)
    assert result["old_grader_versions"] == ["instrument-1.0"]
    for change in result["changed"]:
        assert (change["old_passed"], change["old_outcome"]) != (change["new_passed"],
                                                                  change["new_outcome"])
