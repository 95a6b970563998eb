"""Reading styles: prompts, schemas, grammars, rendering, template hashes; on a real model and in a study."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURE_HISTORY, FIXTURE_TASKS

from memory_baseline.answer_cache import AnswerCache
from memory_baseline.config import Config, ReaderConfig
from memory_baseline.passages import Passage
from memory_baseline.reading import (
    STATUSES,
    answer_schema,
    claims_schema,
    get_reader,
    messages_for,
    ordered_for_reading,
    quote_verified,
    render,
    reply_grammar,
    routed_style,
    split_reply,
)
from memory_baseline.store import Store
from memory_lab.chapters.reader import (
    ceiling_rows,
    choose_style,
    held_out_figures,
    outcome_rows,
    pooled_choice,
    run_reader_study,
)

ADR7 = Passage("decisions/adr-007.md#0", "decisions/adr-007.md",
               "# ADR-007\nNew services store their events in PostgreSQL.", None, "decision",
               "2024-07-10", 1)
ADR9 = Passage("decisions/adr-009.md#0", "decisions/adr-009.md",
               "# ADR-009\nWe do not adopt Redis. The proposal is rejected.", None, "decision",
               "2024-08-14", 2)
SESSION = Passage("sessions/session-040.md#0", "sessions/session-040.md",
                  "Omar proposed Redis for fan-out.", None, "session", "2024-08-01", 3)


def test_dated_prompt_states_the_date_first_and_orders_passages_by_date():
    messages = messages_for("structured", "Did we adopt Redis?", [ADR9, ADR7, SESSION], "2024-09-01")
    user = messages[1]["content"]
    assert user.startswith("Today is 2024-09-01.")
    positions = [user.index(f"[{p.source_id}]") for p in (ADR7, SESSION, ADR9)]
    assert positions == sorted(positions)
    assert "dated: 2024-08-01" in user and "kind: session" in user
    # Without a date the retrieval rank order stands.
    assert [p.source_id for p in ordered_for_reading([ADR9, ADR7], None)] == [ADR9.source_id, ADR7.source_id]


def test_schema_restricts_citations_to_admitted_ids_and_closes_objects():
    schema = answer_schema([ADR7.source_id, ADR9.source_id], "Did we adopt Redis?")
    item = schema["properties"]["evidence"]["items"]
    assert item["properties"]["source"] == {"enum": [ADR7.source_id, ADR9.source_id]}
    assert schema["properties"]["status"] == {"enum": list(STATUSES)}
    grammar = reply_grammar(schema, "Did we adopt Redis?")
    head = json.loads(grammar.split("%json ", 1)[1])
    assert head["x-guidance"] == {"whitespace_flexible": False}
    assert head["additionalProperties"] is False
    assert head["properties"]["evidence"]["items"]["additionalProperties"] is False
    assert "```" not in grammar


def test_work_request_gets_a_fenced_block_in_the_named_language_and_no_status():
    query = "Write the TOML entry that registers the service. Reply with one fenced toml block."
    schema = answer_schema([ADR7.source_id], query)
    assert "status" not in schema["properties"]
    grammar = reply_grammar(schema, query)
    assert 'lang: "toml"' in grammar and "body: /[^`]+/" in grammar
    assert "claims" in claims_schema([ADR7.source_id])["properties"]


def test_render_structured_reply():
    reply = json.dumps({"evidence": [{"source": ADR9.source_id, "quote": "We do not adopt Redis."}],
                        "answer": "No, Redis was not adopted.", "status": "rejected"})
    rendered = render("structured", reply, [ADR9])
    assert rendered.text == f"Status: rejected. No, Redis was not adopted. [{ADR9.source_id}]"
    assert rendered.extra["evidence"][0]["verified"] is True
    # The quote is kept for the trace, not put into the scored text.
    assert "We do not adopt" not in rendered.text


def test_render_abstention_unparsed_and_artifact():
    abstain = json.dumps({"evidence": [], "answer": "insufficient evidence", "status": "not-applicable"})
    assert render("structured", abstain, [ADR7]).text == "insufficient evidence."
    cut = render("structured", '{"evidence":[{"source":"decisions/adr-007.md","quote":"New', [ADR7])
    assert cut.text == "insufficient evidence." and cut.extra["unparsed_reply"]
    work = (json.dumps({"evidence": [], "answer": "It follows ADR-007:\n```toml\n[services.x"})
            + '\n```toml\n[services.shipments]\nevent_store = "postgresql"\n```')
    assert split_reply(work)[1] == "toml"
    text = render("structured", work, [ADR7]).text
    assert text == 'It follows ADR-007\n\n```toml\n[services.shipments]\nevent_store = "postgresql"\n```'


def test_render_two_step_without_claims_abstains():
    raw = json.dumps({"claims": json.dumps({"claims": []}), "answer": None})
    rendered = render("two-step", raw, [ADR7])
    assert rendered.text == "insufficient evidence." and rendered.extra["no_claims"]


def test_quote_verification_ignores_case_and_whitespace():
    assert quote_verified("we do NOT   adopt redis", ADR9.source_id, [ADR9])
    assert not quote_verified("we adopt redis", ADR9.source_id, [ADR9])
    assert not quote_verified("We do not adopt Redis.", ADR7.source_id, [ADR9])


@pytest.mark.slow
@pytest.mark.parametrize("style", ["structured", "two-step", "focused", "itemised"])
def test_styles_on_a_real_model_cite_only_admitted_ids(style, tmp_path):
    reader = get_reader(ReaderConfig(name="smollm2", style=style, max_answer_tokens=160),
                        cache=AnswerCache(tmp_path))
    answer = reader.answer("Did we adopt Redis for fan-out?", [ADR9, SESSION], "2024-09-01")
    assert set(answer.citations) <= {ADR9.source_id, SESSION.source_id}
    assert answer.unknown_citations == () or "removed_citations" in answer.extra
    # itemised hands an outcome question to structured, under structured's identity.
    assert 1 <= answer.usage.calls <= 2 and answer.reader["style"] == routed_style(style, "Did we adopt")
    again = reader.answer("Did we adopt Redis for fan-out?", [ADR9, SESSION], "2024-09-01")
    assert again.cached and again.text == answer.text


@pytest.mark.slow
def test_reader_study_runs_oracle_conditions_per_style(conn, index_name, tmp_path):
    corpora = {"fixture": (FIXTURE_HISTORY, FIXTURE_TASKS, 6)}
    config = Config(index=index_name).with_overrides(reader={"name": "smollm2", "max_answer_tokens": 96})
    try:
        _check_study(conn, config, corpora, tmp_path)
    finally:
        Store(conn, f"{index_name}_fixture").drop()  # the study's index for this corpus


def _check_study(conn, config, corpora, tmp_path):
    study = run_reader_study(conn, config, corpora, ["plain", "structured"], conditions=["oracle-span"],
                             runs_root=tmp_path, progress=False)
    rows = ceiling_rows(study.run_dir)
    overall = {r["style"]: r for r in rows if r["question_type"] == "all"}
    assert set(overall) == {"plain", "structured"}
    assert all(r["cases"] == 6 and r["cited_outside_context"] == 0 for r in overall.values())
    assert overall["structured"]["calls_per_answer"] <= 1
    assert len(outcome_rows(study.run_dir)) == 12
    choice = choose_style(study.run_dir, condition="oracle-span")
    assert choice["style"] in {"plain", "structured"} and choice["split"] == "dev"
    # Pooled over corpora (here one), the same rule picks the same style, with its paired test.
    pooled = pooled_choice([study.run_dir], condition="oracle-span")
    assert pooled["style"] == choice["style"] and pooled["corpora"] == ["fixture"]
    (other,) = pooled["chosen_against_others"]
    assert other["upper"] == choice["style"] and 0 <= other["mcnemar_p"] <= 1
    # The chosen style's test figures count only the test tasks (3 of the first 6), per corpus.
    figures = held_out_figures(study.run_dir, choice["style"], condition="oracle-span")
    (fixture,) = figures["corpora"]
    assert fixture["corpus"] == "fixture" and fixture["cases"] == 3 and figures["gap"] == 0
    assert fixture["low"] <= fixture["pass_rate"] <= fixture["high"]
    assert sum(t["cases"] for t in fixture["per_question_type"].values()) == 3
    # A later study that reads a corpus again in a style replaces the earlier reading, not adds to it.
    second = run_reader_study(conn, config, corpora, ["structured"], conditions=["oracle-span"],
                              runs_root=tmp_path / "again", progress=False)
    both = pooled_choice([study.run_dir, second.run_dir], condition="oracle-span")
    replaced = [(r["corpus"], r["style"], r["tasks"]) for r in both["replaced"]]
    assert replaced == [("fixture", "structured", 3)]  # its dev tasks
    counted = {r["style"]: r["cases"] for r in both["styles"]}
    assert counted == {r["style"]: r["cases"] for r in pooled["styles"]}
    (source,) = held_out_figures([study.run_dir, second.run_dir], "structured",
                                 condition="oracle-span")["by_corpus"]["fixture"]
    assert source.endswith(second.run_dir.name)
    # Replacement is per task: a study that read only some tasks again replaces those alone.
    third = run_reader_study(conn, config, {"fixture": (FIXTURE_HISTORY, FIXTURE_TASKS, 2)}, ["structured"],
                             conditions=["oracle-span"], runs_root=tmp_path / "part", progress=False)
    part = pooled_choice([study.run_dir, second.run_dir, third.run_dir], condition="oracle-span")
    assert {r["style"]: r["cases"] for r in part["styles"]} == counted
    renewed = [r for r in part["replaced"] if r["replaced_by"].endswith(third.run_dir.name)]
    reread = [json.loads(line) for path in third.run_dir.rglob("cases.jsonl")
              for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["tasks"] for r in renewed] == [sum(c["split"] == "dev" for c in reread)] != [0]
    # A resumed study finds every run complete and adds none.
    again = run_reader_study(conn, config, corpora, ["plain", "structured"], conditions=["oracle-span"],
                             resume=study.run_dir, progress=False)
    assert len(again.manifest["runs"]) == 2


def test_itemised_answers_a_promise_question_without_a_status_and_keeps_work_as_written():
    from memory_baseline.reading import items_schema

    schema = items_schema([ADR7.source_id], "Which follow-ups remain open?")
    assert list(schema["properties"]) == schema["required"] == ["evidence", "answer"]
    reply = {"evidence": [{"source": ADR7.source_id, "quote": "New services store their events"}],
             "answer": "The replay procedure is still open; the keys were done on 2024-09-04."}
    rendered = render("itemised", json.dumps(reply), [ADR7])
    assert rendered.text == reply["answer"] + f" [{ADR7.source_id}]" and rendered.extra["status"] is None
    # A work request's reply is free text: the cited ids, then the fenced block, kept as written.
    work = "Follows [decisions/adr-007.md].\n\n```toml\n[services.x]\nowner = \"a\"\n```"
    assert render("itemised", work, [ADR7]).text == work


def test_itemised_schemas_compile_to_grammars():
    from memory_baseline.reading import items_schema, work_grammar

    schema = items_schema([SESSION.source_id, ADR7.source_id], "Which follow-ups remain open?")
    grammar = reply_grammar(schema, "Which follow-ups remain open?")
    assert grammar.startswith("%llguidance") and '"additionalProperties":false' in grammar.replace(" ", "")
    work = work_grammar("Write the TOML entry for the service. Reply with one fenced toml block.",
                        [ADR7.source_id])
    assert 'lang: "toml"' in work and 'cite: "[decisions/adr-007.md]"' in work
    assert 'lang: "bash"' in work_grammar("Reply with one fenced block holding the shell commands.",
                                          [ADR7.source_id])
    assert "cite" not in work_grammar("Write the TOML entry.", [])  # no-memory: the block alone


@pytest.mark.slow
def test_itemised_on_a_real_model_cites_only_admitted_ids(tmp_path):
    reader = get_reader(ReaderConfig(name="smollm2", style="itemised", max_answer_tokens=160),
                        cache=AnswerCache(tmp_path))
    answer = reader.answer("Which follow-ups about fan-out were still open?", [ADR9, SESSION], "2024-09-01")
    assert answer.reader["style"] == "itemised" and answer.usage.calls == 1
    assert set(answer.citations) <= {ADR9.source_id, SESSION.source_id} and "status" not in answer.text[:8]
    # The matched no-memory control keeps the style: a work request is the fenced block alone.
    control = reader.answer("Write the TOML entry for fan-out. Reply with one fenced toml block.", [],
                            "2024-09-01", history=False)
    assert control.text.startswith("```toml") and control.usage.calls == 1
    work = reader.answer("Write the TOML entry for fan-out. Reply with one fenced toml block.",
                         [ADR9, SESSION], "2024-09-01")
    assert work.text.startswith("Follows [") and "```toml" in work.text
    assert set(work.citations) <= {ADR9.source_id, SESSION.source_id}


def test_each_style_has_its_own_template_hash():
    from memory_baseline.reading import STYLES, template_sha256

    hashes = {style: template_sha256(style) for style in STYLES if style != "plain"}
    assert len(set(hashes.values())) == len(hashes)
