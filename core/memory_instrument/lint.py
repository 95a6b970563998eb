"""Every task checks itself: its own answer passes, and the wrong answers nearest to it fail.

A task's expectations are a definition of success written by hand; too weak, and a
wrong answer passes (a stale value the phrase list never forbade); too strict or
inconsistent, and the right answer fails. `lint_tasks` builds, from each task's own
expectations and evidence, the canonical answer (every required phrase, the typed
values, the reply to a yes/no question, the evidence quoted and cited where support
is required) and scores it exactly as a run would, then the mutants a careless or
misled reader would write, each of which must fail:

* negated: every required phrase denied ("not X"; a negative phrase asserted),
  promises given the opposite state, the other reply to a yes/no question; and
  the chosen option denied while named, in the ways readers deny ("Not X any
  more: Y", "X isn't live yet", "X is no longer used", "X was replaced by Y",
  "moved off X to Y", "Y, not X", "decided against X");
* hedged: the answer offered beside an alternative ("maybe X, maybe Y");
* forbidden: the answer plus each `must_not_include` value stated outright;
* swapped: the chosen option replaced by each other `choice` option;
* truncated: an obligation list cut to its first item;
* guessed: on an unanswerable question, an abstention that goes on to guess.

A finding names the task, what was built and why it was judged wrongly. Work products
(downstream tasks) are judged by their harness, whose own examples are tested with it
(`tests/test_instrument_harness.py`), so here only their prose is read.

    python -m memory_instrument.lint TASKS [--corpus DIR]

With a corpus the passages are the expected sources' whole files, as under the
oracle-source condition; without one (or for a source the corpus lacks, such as a
``path@commit`` version), the evidence quotes stand in for them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import matching
from .outputs import Passage, SystemOutput
from .reading import expected_reply, read_answer
from .scoring import score_task
from .tasks import Task, TaskSet, load_tasks

SUPPORT_REQUIRED = frozenset({"provenance"})
# How a reader denies one option while naming it, with the other as the state.
NEGATED_CHOICE: tuple[tuple[str, str], ...] = (
    ("initial", "Not {right} any more: {other}."),
    ("not-yet", "{right} isn't live yet: {other} still runs."),
    ("no-longer", "{right} is no longer used; {other} is."),
    ("replaced", "{right} was replaced by {other}."),
    ("moved", "The service moved off {right} to {other}."),
    ("contrast", "{other}, not {right}."),
    ("against", "The team decided against {right} and kept {other}."),
)


@dataclass(frozen=True)
class Finding:
    """One way a task judges an answer built from its own expectations wrongly."""

    task_id: str
    check: str  # "canonical", or the mutant: "negated", "hedged", "forbidden", ...
    answer: str
    problem: str

    def __str__(self) -> str:
        return f"{self.task_id}: {self.check} answer {self.problem}: {self.answer!r}"


@dataclass(frozen=True)
class _Verdict:
    passed: bool
    why: str


def lint_tasks(task_set: TaskSet | Iterable[Task], corpus_dir: str | Path | None = None
               ) -> list[Finding]:
    """The findings for every task: a canonical answer that fails, or a mutant that passes."""
    root = Path(corpus_dir) if corpus_dir is not None else None
    findings: list[Finding] = []
    for task in task_set:
        passages = _passages(task, root)
        canonical = canonical_answer(task)
        verdict = _judge(task, canonical, passages)
        if not verdict.passed:
            findings.append(Finding(task.id, "canonical", canonical, f"fails ({verdict.why})"))
        for name, answer in mutants(task):
            verdict = _judge(task, answer, passages)
            if verdict.passed:
                findings.append(Finding(task.id, name, answer, "passes"))
    return findings


# --- answers built from the task ------------------------------------------------------------


def _first(group: Sequence[str]) -> str:
    return group[0]


def _items(groups: Sequence[Sequence[str]]) -> str:
    names = [_first(g) for g in groups]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _core(task: Task) -> list[str]:
    """The answer's statements, without reply, status line or citation."""
    spec, expect = task.answer, task.answer.expect
    parts: list[str] = []
    if expect.choice is not None:
        parts.append(_first(dict(expect.choice.options)[expect.choice.answer]))
    parts += [_first(g) for g in spec.must_include]
    if expect.date:
        parts.append(f"on {expect.date[0]}")
    if expect.number:
        number = expect.number[0]
        parts.append(str(int(number)) if float(number).is_integer() else str(number))
    return list(dict.fromkeys(parts))


def _obligation_text(task: Task, open_items: Sequence[Sequence[str]],
                     done_items: Sequence[Sequence[str]]) -> str:
    spec = task.answer.expect.obligations
    sentences = []
    if open_items:
        sentences.append(f"Still open: {_items(open_items)}.")
    if done_items and spec is not None and (spec.require == "all" or not open_items):
        sentences.append(f"Already done: {_items(done_items)}.")
    return " ".join(sentences)


def _citation(task: Task) -> str:
    return f" [{', '.join(task.expected_sources)}]" if task.expected_sources else ""


def canonical_answer(task: Task) -> str:
    """The answer the task's own expectations describe, as a reader would write it."""
    spec, expect = task.answer, task.answer.expect
    if spec.abstain:
        return "The project history has no record of this."
    lines: list[str] = []
    if expect.status:
        lines.append(f"Status: {expect.status[0]}.")
    reply = expected_reply(task)
    if reply is not None:
        lines.append(f"{reply.capitalize()}.")
    core = _core(task)
    if core:
        lines.append("; ".join(core) + "." + _citation(task))
    if expect.obligations is not None:
        lines.append(_obligation_text(task, expect.obligations.open, expect.obligations.closed))
    if task.question_type in SUPPORT_REQUIRED:
        for span in spec.evidence:
            lines.append(f'The source says "{" ".join(span.quote.split())}" [{span.source}].')
    return " ".join(lines)


def _negation(phrase: str) -> str:
    if phrase.lower() in ("no", "none"):
        return "yes"
    tokens = phrase.split()
    if matching.phrase_is_negative(phrase) and tokens:
        skip = 2 if len(tokens) > 1 and (tokens[0].lower(), tokens[1].lower()) in \
            matching.NEGATOR_PAIRS else 1
        rest = " ".join(tokens[skip:])
        return rest if rest and rest.lower() not in ("yet",) else "already done"
    return f"not {phrase}"


def _alternative(task: Task) -> str:
    expect = task.answer.expect
    if expect.choice is not None:
        return next(_first(p) for name, p in expect.choice.options if name != expect.choice.answer)
    if task.answer.must_not_include:
        return task.answer.must_not_include[0]
    return "something else entirely"


def mutants(task: Task) -> list[tuple[str, str]]:
    """(name, answer) of the wrong answers nearest to the canonical one."""
    spec, expect = task.answer, task.answer.expect
    if spec.abstain:
        return [("guessed", "I could not find it written down, but it was probably settled "
                            "in the March planning session."),
                ("invented", "It was settled in the March planning session.")]
    out: list[tuple[str, str]] = []
    reply = expected_reply(task)
    core = _core(task)
    negated: list[str] = []
    if reply is not None:
        negated.append("No." if reply == "yes" else "Yes.")
    negated_core = [_negation(p) for p in core if not p.startswith("on ") and not p[0].isdigit()]
    if negated_core:
        negated.append("; ".join(negated_core) + ".")
    if expect.obligations is not None:
        negated.append(_obligation_text(task, expect.obligations.closed, expect.obligations.open)
                       or f"Already done: {_items(expect.obligations.open)}.")
    if negated:
        out.append(("negated", " ".join(negated)))
    if core or expect.obligations is not None:
        stated = "; ".join(core) if core else _items(
            [*expect.obligations.open, *expect.obligations.closed])  # type: ignore[union-attr]
        out.append(("hedged", f"Maybe {stated}, maybe {_alternative(task)}."))
    for forbidden in spec.must_not_include:
        out.append((f"forbidden:{forbidden}", f"{canonical_answer(task)} {forbidden.capitalize()}."))
    if expect.choice is not None:
        right = dict(expect.choice.options)[expect.choice.answer]
        for name, phrasings in expect.choice.options:
            if name == expect.choice.answer:
                continue
            other = _first(phrasings)
            out.append((f"swapped:{name}", _replace(canonical_answer(task), right, other)))
            # The chosen option named in passing but denied as the state, in the ways
            # readers deny it: each must read as choosing the other option.
            for form, template in NEGATED_CHOICE:
                out.append((f"negated-{form}:{name}",
                            template.format(right=_first(right), other=other)))
    if expect.obligations is not None:
        spec_o = expect.obligations
        required = list(spec_o.open) + (list(spec_o.closed) if spec_o.require == "all" else [])
        if len(required) >= 2:
            first = required[0]
            opened = [first] if first in spec_o.open else []
            closed = [] if opened else [first]
            out.append(("truncated", _obligation_text(task, opened, closed)
                        or f"Already done: {_items(closed)}."))
    return out


def _replace(text: str, phrasings: Sequence[str], replacement: str) -> str:
    import re

    for phrase in sorted(phrasings, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(phrase)}(?![A-Za-z0-9])", replacement, text,
                      flags=re.IGNORECASE)
    return text


# --- judging ----------------------------------------------------------------------------------


def _passages(task: Task, root: Path | None) -> list[Passage]:
    passages: list[Passage] = []
    for source in task.expected_sources:
        path = root / source if root is not None else None
        if path is not None and path.is_file():
            text = path.read_text(encoding="utf-8")
        else:  # the evidence quotes stand in for a source the corpus does not hold
            text = "\n".join(s.quote for s in task.answer.evidence if s.source == source)
        passages.append(Passage(source, f"{source}#0", text))
    return passages


def _judge(task: Task, answer: str, passages: Sequence[Passage]) -> _Verdict:
    if task.question_type == "downstream":  # the work product is the harness's to judge
        reading = read_answer(task, answer)
        return _Verdict(reading.passes, _why(reading.unmatched, reading.hits, reading.typed))
    output = SystemOutput(task.id, "lint", answer, False,
                          stages={"admitted": [p.source_id for p in passages]},
                          admitted_passages=list(passages))
    score = score_task(task, output)
    return _Verdict(score.passed, score.outcome + ": " + _why(
        score.unmatched_groups, score.must_not_include_hits, score.typed_checks))


def _why(unmatched: Sequence[Sequence[str]], hits: Sequence[str], typed: Sequence[object]) -> str:
    parts = [f"unmatched {[list(g) for g in unmatched]}"] if unmatched else []
    if hits:
        parts.append(f"forbidden {list(hits)}")
    parts += [f"{c.check.get('expect')}: {c.reason}" for c in typed  # type: ignore[attr-defined]
              if not c.passed]  # type: ignore[attr-defined]
    return "; ".join(parts) or "all checks pass"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_instrument.lint",
                                     description="Check that every task passes its own answer "
                                                 "and fails the wrong answers nearest to it.")
    parser.add_argument("tasks", help="a task file")
    parser.add_argument("--corpus", help="the corpus folder its sources are read from")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    task_set = load_tasks(args.tasks)
    findings = lint_tasks(task_set, args.corpus)
    for finding in findings:
        print(finding)
    print(f"{len(task_set)} tasks, {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
