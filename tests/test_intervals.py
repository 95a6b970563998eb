"""Ladder uncertainty: rate intervals, paired differences, McNemar, and the computed reading."""

from __future__ import annotations

import pytest

from memory_lab import intervals


def case(condition: str, task: str, passed: bool, kind: str = "why") -> dict:
    return {"condition": condition, "task_id": task, "question_type": kind, "score": {"passed": passed}}


def ladder(upper_wins: int, lower_wins: int, both: int, neither: int) -> list[dict]:
    cases, n = [], 0
    for up, down, count in ((True, False, upper_wins), (False, True, lower_wins),
                            (True, True, both), (False, False, neither)):
        for _ in range(count):
            n += 1
            kind = "why" if n % 2 else "locate"
            cases += [case("hybrid", f"t{n}", up, kind), case("lexical", f"t{n}", down, kind)]
    return cases


def test_rates_carry_bootstrap_intervals_around_the_observed_rate():
    rows = intervals.pass_rates(ladder(10, 0, 20, 30), ["lexical", "hybrid"])
    overall = {r.condition: r for r in rows if r.question_type == "all"}
    assert overall["hybrid"].passed == 30 and overall["hybrid"].cases == 60
    assert overall["hybrid"].low < 0.5 < overall["hybrid"].high
    assert overall["lexical"].rate == pytest.approx(20 / 60)
    assert {r.question_type for r in rows} == {"all", "why", "locate"}


def test_a_clear_paired_gain_is_separated_and_a_small_one_is_not():
    clear = intervals.paired_difference(intervals.verdicts(ladder(15, 1, 20, 24)), "hybrid", "lexical")
    assert clear.only_upper == 15 and clear.only_lower == 1
    assert clear.difference == pytest.approx(14 / 60) and clear.low > 0 and clear.mcnemar_p < 0.01
    assert clear.separated
    small = intervals.paired_difference(intervals.verdicts(ladder(4, 2, 20, 34)), "hybrid", "lexical")
    assert not small.separated and small.low < 0 < small.high


def test_two_tasks_that_both_flip_are_not_called_separated():
    tiny = intervals.paired_difference(intervals.verdicts(ladder(2, 0, 0, 0)), "hybrid", "lexical")
    assert (tiny.low, tiny.high) == (1.0, 1.0)  # the bootstrap alone would say separated
    assert tiny.mcnemar_p == pytest.approx(0.5) and not tiny.separated


def test_the_reading_is_computed_from_the_intervals():
    cases = ladder(15, 1, 20, 24)
    differences = intervals.ladder_differences(cases)
    text = intervals.reading(differences, intervals.pass_rates(cases))
    assert text[0].startswith("`hybrid` is above `lexical`: +0.23")
    assert any("not separated" in line for line in
               intervals.reading(intervals.ladder_differences(ladder(4, 2, 20, 34))))
    assert intervals.paired_difference(intervals.verdicts(cases), "dense", "lexical") is None


def test_a_sweep_is_read_against_its_default_on_the_same_tasks():
    rows = []
    for i in range(40):
        for variant, passing in (("passages=6", 30), ("passages=2", 10), ("tokens=3000", 30)):
            rows.append({"variant": variant, "task": f"t{i}", "question_type": "locate",
                         "passed": float(i < passing)})
    lines = intervals.sweep_reading(rows, "passages=6")
    assert lines[0].startswith("`passages=2` is below `passages=6`: -0.50")
    assert lines[-1] == "The same verdict as `passages=6` on every task: `tokens=3000`."
