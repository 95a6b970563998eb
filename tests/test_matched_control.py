"""The matched no-memory control and the downstream gains computed against it.

Prompt shapes are checked on rendered messages (no model runs); the style runner's
branching is checked with a recording completion function, which stands in for the
model call only to see which prompt and schema a style sends.
"""

from __future__ import annotations

import json

import pytest

from memory_baseline.passages import Passage
from memory_baseline.reading import (
    NO_SOURCES,
    SYSTEM_DATED,
    SYSTEM_DATED_NO_HISTORY,
    Completion,
    answer_schema,
    render,
    reply_grammar,
    run_style,
    style_messages,
)
from memory_lab.ladders.downstream_tasks import (
    downstream_gains_by_condition,
    downstream_table_text,
    paired_bootstrap,
)

QUERY = "Write the event-store configuration for the shipments service. Reply with one fenced yaml block."
ADR7 = Passage("decisions/adr-007.md#0", "decisions/adr-007.md",
               "# ADR-007\nNew services store their events in PostgreSQL.", None, "decision",
               "2024-07-10", 1)


@pytest.mark.parametrize("style", ["dated", "structured", "two-step"])
def test_no_memory_keeps_the_style_layout_and_ask_and_drops_only_the_history(style: str) -> None:
    with_history = style_messages(style, QUERY, [ADR7], "2024-10-09")
    without = style_messages(style, QUERY, [], "2024-10-09", history=False)
    assert with_history[0]["content"] == SYSTEM_DATED
    assert without[0]["content"] == SYSTEM_DATED_NO_HISTORY
    parts_with = with_history[1]["content"].split("\n\n")
    parts_without = without[1]["content"].split("\n\n")
    assert NO_SOURCES in parts_without and "adr-007" not in without[1]["content"]
    # Same date line, same sources header, same question, same ask at the end.
    assert parts_without[:2] == parts_with[:2]
    assert parts_without[-2] == parts_with[-2]
    if style != "two-step":  # two-step without sources asks its answer step (the structured ask)
        assert parts_without[-1] == parts_with[-1]
    else:
        assert parts_without[-1] == style_messages("structured", QUERY, [ADR7], "2024-10-09")[1][
            "content"].split("\n\n")[-1]


def test_plain_no_memory_is_unchanged() -> None:
    without = style_messages("plain", QUERY, [], None, history=False)
    assert "no project history is available" in without[0]["content"]


def test_no_memory_reply_has_the_same_format_with_an_empty_evidence_list() -> None:
    schema = answer_schema([], QUERY)
    assert schema["properties"]["evidence"] == {"type": "array", "maxItems": 0}
    assert set(schema["properties"]) == set(answer_schema(["decisions/adr-007.md"], QUERY)["properties"])
    assert "```" in reply_grammar(schema, QUERY)
    reply = (json.dumps({"evidence": [], "answer": "No project records were consulted; PostgreSQL."})
             + "\n```yaml\neventstore:\n  backend: postgresql\n```")
    rendered = render("structured", reply, [])
    assert rendered.text.endswith("```yaml\neventstore:\n  backend: postgresql\n```")
    assert rendered.extra["evidence"] == []


@pytest.mark.parametrize("style", ["structured", "two-step"])
def test_structured_styles_without_history_make_one_call_under_the_empty_evidence_schema(style: str) -> None:
    calls = []

    def complete(messages, schema):
        calls.append((messages, schema))
        return Completion('{"evidence": [], "answer": "x"}', 10, 5, 0.1, 0.05, 0.05, "stop")

    messages = style_messages(style, QUERY, [], None, history=False)
    run = run_style(style, complete, messages, QUERY, [], None)
    assert run.calls == 1 and len(calls) == 1
    assert calls[0][0] is messages and calls[0][1]["properties"]["evidence"]["maxItems"] == 0


def _case(condition: str, task: str, passed: bool | None, qtype: str = "downstream") -> dict:
    return {"condition": condition, "task_id": task, "question_type": qtype,
            "score": {"artifact_pass": passed}}


def test_gains_pair_tasks_with_the_control_and_carry_a_bootstrap_interval() -> None:
    cases = [_case("no-memory", f"d{i}", i < 2) for i in range(8)]
    cases += [_case("hybrid", f"d{i}", i < 6) for i in range(8)]
    cases += [_case("lexical", f"d{i}", i in (0, 5)) for i in range(8)]
    cases += [_case("hybrid", "q1", True, qtype="outcome"), _case("dense", "d0", None)]
    rows = {row.condition: row for row in downstream_gains_by_condition(cases)}
    assert list(rows)[0] == "no-memory" and rows["no-memory"].gain == 0.0
    hybrid = rows["hybrid"]
    assert (hybrid.tasks, hybrid.passed, hybrid.control_passed) == (8, 6, 2)
    assert hybrid.gain == pytest.approx(0.5) and hybrid.ci_low <= 0.5 <= hybrid.ci_high
    assert 0.0 < hybrid.ci_low  # four fixed, none broken: the interval excludes zero
    assert hybrid.fixed == ("d2", "d3", "d4", "d5") and hybrid.broken == ()
    lexical = rows["lexical"]
    assert lexical.gain == 0.0 and lexical.fixed == ("d5",) and lexical.broken == ("d1",)
    assert lexical.ci_low < 0.0 < lexical.ci_high
    assert rows["dense"].tasks == 1 and rows["dense"].pass_rate == 0.0  # no artifact fails
    text = "\n".join(downstream_table_text(list(rows.values())))
    assert "hybrid" in text and "[+" in text


def test_bootstrap_is_reproducible_and_degenerate_pairs_have_a_point_interval() -> None:
    assert paired_bootstrap([1, 0, -1, 1]) == paired_bootstrap([1, 0, -1, 1])
    assert paired_bootstrap([1.0, 1.0, 1.0]) == (1.0, 1.0)
    with pytest.raises(ValueError, match="at least one pair"):
        paired_bootstrap([])


def test_recorded_downstream_work_is_judged_again_by_its_harness() -> None:
    from pathlib import Path

    from memory_instrument import SystemOutput, load_tasks
    from memory_lab.ladders.downstream_tasks import rescore_downstream

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    tasks = load_tasks(fixtures / "tasks.json")
    good = (fixtures / "harnesses" / "downstream-shipments-config" / "examples" / "good.yaml").read_text()
    broken = good.replace("keep_last: 3", "keep_last: 3\\n")  # a literal backslash-n, as a model wrote it
    cases = [{"task_id": "downstream-shipments-config", "condition": name, "question_type": "downstream",
              "score": {"grader_version": "instrument-1.0", "artifact_pass": True},
              "output": SystemOutput("downstream-shipments-config", name, f"```yaml\n{text}```\n",
                                     False).to_dict()}
             for name, text in (("hybrid", good), ("lexical", broken))]
    rows = {row.condition: row for row in rescore_downstream(cases, tasks)}
    assert rows["hybrid"].artifact_pass is True and rows["hybrid"].status == "passed"
    assert rows["lexical"].artifact_pass is False and rows["lexical"].status == "schema_error"
    assert "keep_last" in rows["lexical"].reason and rows["lexical"].recorded_artifact_pass is True
