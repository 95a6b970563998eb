"""LoCoMo made ingestible: the importer's corpus, dialog-id map and task file, LoCoMo's own answer
metric on hand-checked pairs, the gold answers' typed expectations, turn recall from chunk spans,
and the answer study's stratified sample."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from memory_instrument import find_evidence_mismatches, load_tasks
from memory_lab.corpora import locomo
from memory_lab.corpora.locomo import (
    answer_expectations,
    locomo_metric,
    locomo_normalise,
    parse_session_date,
    resolve_evidence,
)

REPO = Path(__file__).resolve().parents[1]
ZIP = REPO.parent / "shared" / "data" / "locomo" / "locomo10.zip"
needs_zip = pytest.mark.skipif(not ZIP.is_file(), reason=f"the LoCoMo release is not at {ZIP} "
                               "(CC BY-NC data, never committed; see ../shared/data/locomo/README.md)")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("locomo")
    summary = locomo.import_locomo(ZIP, out, conversations=["30"])
    return out, summary


@needs_zip
def test_import_writes_one_markdown_file_per_session_with_its_date_and_speakers(imported):
    out, summary = imported
    paths = locomo.layout(out, "30")
    sessions = sorted((paths.history / "sessions").glob("*.md"))
    assert summary["conversations"]["conv-30"]["sessions"] == len(sessions) == 19
    assert [p.name for p in sessions][:2] == ["session-01.md", "session-02.md"]
    # Only the sessions are in the corpus: no task file, no map, no annotations.
    files = [p for p in paths.history.rglob("*") if p.is_file()]
    assert {p.relative_to(paths.history).parts[0] for p in files} == {"sessions"}
    with zipfile.ZipFile(ZIP) as archive:
        raw = json.loads(archive.read("data/multimodal_dialog/locomo10_v2/30.json"))
    first = sessions[0].read_text(encoding="utf-8")
    head = first.splitlines()
    when = parse_session_date(raw["session_1_date_time"])
    assert head[0] == "# Session 1 — Jon and Gina"
    assert head[2] == f"Date: {when:%Y-%m-%d %H:%M} ({raw['session_1_date_time']})"
    assert head[3] == "Speakers: Jon, Gina"
    turn = raw["session_1"][0]
    assert f"**{turn['speaker']}** ({turn['dia_id']}): {' '.join(turn['text'].split())}" in first
    corpus = "".join(p.read_text(encoding="utf-8") for p in sessions)
    photo = next(t for t in raw["session_1"] if t.get("blip_caption"))
    assert f"[shares a photo: {photo['blip_caption']}]" in corpus
    events = raw["events_session_1"]
    event_text = next(v for v in events.values() if isinstance(v, list) and v)[0]
    assert event_text not in corpus
    assert raw["qa"][0]["question"] not in corpus


@needs_zip
def test_the_dialog_id_map_gives_each_turn_its_line(imported):
    out, _ = imported
    paths = locomo.layout(out, "30")
    spans = json.loads(paths.dia_map.read_text(encoding="utf-8"))
    assert len(spans) == 369
    texts = {}
    for dia_id, span in spans.items():
        text = texts.setdefault(span["source"], (paths.history / span["source"]).read_text(encoding="utf-8"))
        line = text[span["start"]:span["end"]]
        assert line.startswith(f"**{span['speaker']}** ({dia_id}): ")
        assert "\n" not in line and text[span["end"]] == "\n"
    assert spans["D1:1"]["source"] == "sessions/session-01.md"


@needs_zip
def test_the_task_file_follows_the_instrument_contract(imported):
    out, summary = imported
    paths = locomo.layout(out, "30")
    tasks = load_tasks(paths.tasks)
    assert len(tasks) == summary["conversations"]["conv-30"]["tasks"] == 105  # every question has evidence
    assert not find_evidence_mismatches(tasks, paths.history)
    by_category = {}
    for task in tasks:
        by_category.setdefault(task.metadata["locomo_category"], []).append(task)
        assert task.metadata["split"] == "dev" and task.metadata["conversation"] == "conv-30"
        assert task.as_of.isoformat() == summary["conversations"]["conv-30"]["as_of"]
        assert list(task.expected_sources) == list(dict.fromkeys(
            locomo.session_source(int(d[1:].split(":")[0])) for d in task.metadata["evidence"]))
    assert {k: len(v) for k, v in by_category.items()} == {1: 11, 2: 26, 4: 44, 5: 24}
    assert all(t.question_type == "temporal" for t in by_category[2])
    assert all(t.answer.abstain and not t.answer.must_include for t in by_category[5])
    assert all(not t.answer.abstain for c in (1, 2, 4) for t in by_category[c])
    first = tasks.tasks[0]
    assert first.id == "conv-30-q001" and first.metadata["locomo_answer"]
    assert load_tasks(out / "tasks.json").ids == tasks.ids  # the pooled file


def test_evidence_ids_are_repaired_only_where_unambiguous():
    turns = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:18", "D1:20"}
    assert resolve_evidence(["D8:6; D9:17"], turns) == (["D8:6", "D9:17"], [])
    assert resolve_evidence(["D:11:26", "D30:05"], turns) == (["D11:26", "D30:5"], [])
    assert resolve_evidence(["D1:18", "D", "D1:20", "D10:19"], turns) == (["D1:18", "D1:20"], ["D", "D10:19"])


@pytest.mark.parametrize(("gold", "category", "groups", "expect"), [
    ("7 May 2023", 2, [], {"date": ["2023-05-07"]}),
    ("The week before 27 June 2023", 2, [["week before"]], {"date": ["2023-06-27"]}),
    ("The Friday before 10July, 2022.", 2, [["friday before"]], {"date": ["2022-07-10"]}),
    ("Januarty 5, 2024", 2, [], {"date": ["2024-01-05"]}),
    ("Since 2016", 2, [], {"number": [2016]}),
    ("June, 2023", 2, [["june 2023", "june, 2023"]], {}),
    ("last week of August 2023", 2, [["last week of"], ["august 2023", "august, 2023"]], {}),
    ("4 years", 2, [["year", "years"]], {"number": [4]}),
    ("four months", 2, [["four months", "4 months"]], {}),
    ("bowls, cup", 1, [["bowls", "bowl"], ["cup", "cups"]], {}),
    ('"Nothing is Impossible", "Charlotte\'s Web"', 1, [["nothing is impossible"], ["charlotte's web"]], {}),
    ("Ireland", 4, [["ireland"]], {}),
    ("LIkely no; though she likes reading, she wants to be a counselor", 3, [["no"]], {}),
    ("between 26 March and 20 April 2023", 2, [["between 26 march and 20 april 2023"]], {}),
])
def test_gold_answers_become_phrase_groups_or_typed_expectations(gold, category, groups, expect):
    found, typed, _ = answer_expectations(gold, category)
    assert (found, typed) == (groups, expect)


# LoCoMo's metric (task_eval/evaluation.py at 9228632), each value worked out by hand.
@pytest.mark.parametrize(("prediction", "gold", "category", "score"), [
    # "painting of sunset" vs "painting inspired by sunset": 2 shared stems of 3 and 4 -> 4/7.
    ("The painting of a sunset", "A painting inspired by sunsets", 4, 4 / 7),
    # Commas go before tokenising; "on" is the one extra token: P 3/4, R 1 -> 6/7.
    ("On 7 May, 2023", "7 May 2023", 2, 6 / 7),
    # Category 1: each gold part's best F1 against a predicted part; "bowl cup" vs "bowl" -> 2/3.
    ("bowls and a cup", "bowls, cup", 1, 2 / 3),
    ("cups, bowls", "bowls, cup", 1, 1.0),
    # Category 3 keeps the gold before ";"; "likely" stems to "like": P 1/2, R 1 -> 2/3.
    ("No", "No; she's in the process of adopting children.", 3, 1.0),
    ("Likely no", "No; she's in the process of adopting children.", 3, 2 / 3),
    # Category 5: a point for saying it is not there, in their words only.
    ("Not mentioned in the conversation", "self-care is important", 5, 1.0),
    ("No information available.", None, 5, 1.0),
    ("insufficient evidence", "self-care is important", 5, 0.0),
    ("Pottery", "painting", 4, 0.0),
])
def test_locomo_metric_on_hand_checked_pairs(prediction, gold, category, score):
    assert locomo_metric(prediction, gold, category) == pytest.approx(score)


def test_locomo_normalisation_drops_commas_punctuation_articles_and_and():
    assert locomo_normalise("Charlotte's Web, and the Cat!") == "charlottes web cat"


def test_turn_recall_counts_a_turn_only_inside_a_chunk_and_what_a_cut_chunk_kept():
    from memory_baseline.context import ContextTrace
    from memory_baseline.passages import Passage
    from memory_baseline.retrieval import Candidate, RetrievalResult, Stage
    from memory_instrument import parse_task
    from memory_lab.ladders.locomo_retrieval import Span, case_row

    source = "sessions/session-01.md"
    text = "x" * 300

    def passage(chunk_id, start, end, other=source):
        return Passage(chunk_id, other, text[start:end], None, "markdown", None, char_start=start,
                       char_end=end)

    passages = {"a#0": passage("a#0", 0, 120), "a#1": passage("a#1", 100, 260),
                "b#0": passage("b#0", 0, 100, "sessions/session-02.md")}
    fused = Stage("fused", tuple(Candidate(cid, p.source_id, 1.0, i)
                                 for i, (cid, p) in enumerate(passages.items(), 1)), 0.0)
    retrieval = RetrievalResult("q", (fused,), passages, "rep")
    # a#1 was admitted cut to its first 40 characters (100-140).
    admitted = (Passage("a#1", source, text[100:140], None, "markdown", None, 1, truncated=True),)
    context = ContextTrace(admitted, (), (), (), (), "a#1", 900, 3000, 6, "rank", "truncate", "t")
    task = parse_task({"id": "t", "question_type": "outcome", "query": "q", "as_of": "2023-01-01",
                       "expected_sources": [source, "sessions/session-03.md"],
                       "answer": {"must_include": [["x"]], "must_not_include": [], "abstain": False,
                                  "evidenced_negative": False},
                       "metadata": {"conversation": "conv-0", "split": "dev", "locomo_category": 1,
                                    "evidence": ["D1:1", "D1:2", "D1:3", "D3:1"]}})
    turns = {"D1:1": Span(source, 10, 50),     # inside a#0 only
             "D1:2": Span(source, 105, 118),   # inside a#0 and a#1, and in what a#1 kept
             "D1:3": Span(source, 150, 200),   # inside a#1, but cut away from the admitted text
             "D3:1": Span("sessions/session-03.md", 0, 10)}
    row = case_row(task, "hybrid", SimpleNamespace(retrieval=retrieval, context=context), turns)
    assert row["turn_rank"] == {"D1:1": 1, "D1:2": 1, "D1:3": 2, "D3:1": None}
    assert row["turn_admitted"] == ["D1:2"]
    assert row["recall"] == {"session_candidates": 0.5, "session_admitted": 0.5,
                             "turn_candidates": 0.75, "turn_admitted": 0.25}


def test_the_answer_sample_covers_every_category_and_conversation():
    from memory_instrument import parse_task
    from memory_lab.ladders.locomo_answers import stratified_sample

    tasks = [parse_task({"id": f"conv-{c}-q{c}{k}{i}", "question_type": "outcome", "query": "q",
                         "as_of": None, "expected_sources": ["s.md"],
                         "answer": {"must_include": [["x"]], "must_not_include": [], "abstain": False,
                                    "evidenced_negative": False},
                         "metadata": {"conversation": f"conv-{c}", "locomo_category": k}})
             for c in locomo.CONVERSATIONS for k in range(1, 6) for i in range(6)]
    small = stratified_sample(tasks, 10, seed=1)
    assert len(small) == 10
    assert {t.metadata["locomo_category"] for t in small} == {1, 2, 3, 4, 5}
    assert len({t.metadata["conversation"] for t in small}) == 10
    big = stratified_sample(tasks, 200, seed=1)
    assert len(big) == 200 and len({t.id for t in big}) == 200
    per_category = {k: sum(t.metadata["locomo_category"] == k for t in big) for k in range(1, 6)}
    assert per_category == dict.fromkeys(range(1, 6), 40)
    assert [t.id for t in stratified_sample(tasks, 200, seed=1)] == [t.id for t in big]


def test_locomo_metric_reads_the_answer_without_status_and_citations():
    from memory_lab.ladders.locomo_answers import prediction_text

    assert prediction_text("Status: done. Bowls and a cup [sessions/session-05.md] [a.md, b.md]") == \
        "Bowls and a cup"
    assert prediction_text("She painted it [shares a photo: a sunset] [sessions/s.md]") == \
        "She painted it [shares a photo: a sunset]"
