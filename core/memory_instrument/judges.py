"""Model judges of claim support, and the measurement that decides whether one may decide.

The instrument cannot import the library's model runtime, so a judge here is
built from a plain callable (prompt text in, reply text out) that the lab wires
to whatever model it has: the local reader GGUF, or an Ollama server
(`OllamaClaimJudge` talks to one over HTTP with the standard library). A judge
starts outside the pass rule: its verdicts are recorded beside the lexical
check's and decide nothing. `admit_judge` measures it and the lexical check on
the labelled claims (`fixtures/grader/claims.json`) and returns it inside the
pass rule only if it is more accurate than the lexical check there.

The answer grader has the same seam, unbuilt. What the lexical reader of answers
(`reading`, `matching`) still passes is the false side detail: the right core with
a wrong acceptance date, a false description of a superseding PEP, a contradictory
list of deciders (`benchmarks/results/grader-tuning.json`, misjudged). An
`AnswerJudge` (a model reading the answer beside its admitted passages) would be
measured against the labelled answers with `measure_answer_judge`, like a claim
judge against the labelled claims, and would only take part in the pass rule if it
agreed with the labels more often than the lexical grader. None is built: a model
reading every labelled answer costs more reading time than this machine has.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .outputs import Passage
from .scoring import ClaimJudge, check_claim, score_task
from .tasks import Task

JUDGE_PROMPT_VERSION = "claim-support-1"
MAX_PASSAGE_CHARS = 6000
JUDGE_PROMPT = (
    "You check citations. Read the passage, then the claim. Answer with one word: "
    "'yes' if the passage states what the claim says (same facts, same polarity, same "
    "numbers and dates), 'no' otherwise, including when the passage says the opposite or "
    "says nothing about it.\n\nPassage ({source}):\n{passage}\n\nClaim: {claim}\n\nAnswer:"
)


class JudgeError(RuntimeError):
    """A judge could not give a verdict (no server, a reply that is neither yes nor no)."""


def judge_prompt(claim: str, passages: Sequence[Passage]) -> str:
    source = ", ".join(dict.fromkeys(p.source_id for p in passages))
    text = "\n\n".join(p.text for p in passages)[:MAX_PASSAGE_CHARS]
    return JUDGE_PROMPT.format(source=source, passage=text, claim=claim)


def parse_verdict(reply: str) -> bool:
    first = reply.strip().lower().lstrip("'\"*").split()
    if first and first[0].startswith("yes"):
        return True
    if first and first[0].startswith("no"):
        return False
    raise JudgeError(f"judge reply is neither yes nor no: {reply[:80]!r}")


@dataclass(frozen=True)
class CallableClaimJudge:
    """A judge from any `generate(prompt) -> reply` callable (the lab wires the model)."""

    generate: Callable[[str], str]
    identity: dict[str, str]
    in_pass_rule: bool = False

    def supports(self, claim: str, passages: Sequence[Passage]) -> bool:
        return parse_verdict(self.generate(judge_prompt(claim, passages)))


@dataclass(frozen=True)
class OllamaClaimJudge:
    """A judge on an Ollama server (`OLLAMA_HOST`), temperature 0."""

    model: str
    host: str = field(default_factory=lambda: os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434"))
    timeout_s: float = 120.0
    in_pass_rule: bool = False

    @property
    def identity(self) -> dict[str, str]:
        return {"kind": "ollama", "model": self.model, "prompt": JUDGE_PROMPT_VERSION}

    def supports(self, claim: str, passages: Sequence[Passage]) -> bool:
        host = self.host if "://" in self.host else f"http://{self.host}"
        body = json.dumps({"model": self.model, "prompt": judge_prompt(claim, passages),
                           "stream": False, "options": {"temperature": 0, "seed": 0}}).encode()
        request = urllib.request.Request(f"{host.rstrip('/')}/api/generate", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                reply = json.loads(response.read())["response"]
        except (urllib.error.URLError, OSError) as exc:
            raise JudgeError(f"no Ollama server at {host} ({exc})") from exc
        return parse_verdict(reply)


# --- measurement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelledClaim:
    id: str
    claim: str
    source: str
    supported: bool
    reason: str


def load_claims(path: str | Path) -> list[LabelledClaim]:
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    return [LabelledClaim(c["id"], c["claim"], c["source"], c["label"] == "supported",
                          c["reason"]) for c in document["claims"]]


def _passage(corpus_root: Path, source: str) -> Passage:
    return Passage(source, f"{source}#0", (corpus_root / source).read_text(encoding="utf-8"))


def measure_claim_checks(
    claims: Sequence[LabelledClaim], corpus_root: str | Path,
    judge: ClaimJudge | None = None,
) -> dict[str, Any]:
    """Accuracy of the lexical check (and of `judge`, if given) on labelled claims."""
    root = Path(corpus_root)
    rows: list[dict[str, Any]] = []
    for claim in claims:
        passages = [_passage(root, claim.source)]
        lexical = check_claim(claim.claim, [claim.source], passages).supported
        row: dict[str, Any] = {"id": claim.id, "label": claim.supported, "lexical": lexical}
        if judge is not None:
            row["judge"] = judge.supports(claim.claim, passages)
        rows.append(row)

    def accuracy(key: str) -> float | None:
        scored = [r for r in rows if key in r]
        return sum(r[key] == r["label"] for r in scored) / len(scored) if scored else None

    def false_support(key: str) -> int:
        return sum(1 for r in rows if key in r and r[key] and not r["label"])

    return {
        "claims": len(rows),
        "lexical_accuracy": accuracy("lexical"),
        "lexical_false_support": false_support("lexical"),
        "judge": dict(judge.identity) if judge is not None else None,
        "judge_accuracy": accuracy("judge"),
        "judge_false_support": false_support("judge") if judge is not None else None,
        "judge_calls": len(rows) if judge is not None else 0,
        "rows": rows,
    }


def admit_judge(
    judge: CallableClaimJudge | OllamaClaimJudge, claims: Sequence[LabelledClaim],
    corpus_root: str | Path,
) -> tuple[CallableClaimJudge | OllamaClaimJudge, dict[str, Any]]:
    """Measure `judge`; return it inside the pass rule only if it beats the lexical check."""
    measured = measure_claim_checks(claims, corpus_root, judge)
    beats = (measured["judge_accuracy"] or 0.0) > (measured["lexical_accuracy"] or 0.0)
    measured["admitted_to_pass_rule"] = beats
    return replace(judge, in_pass_rule=beats), measured


# --- the answer judge's seam -----------------------------------------------------------------


@runtime_checkable
class AnswerJudge(Protocol):
    """A second opinion on a whole answer (is it right, as of the task's date?)."""

    identity: dict[str, str]

    def judge(self, task: Task, answer: str, passages: Sequence[Passage]) -> bool: ...


def measure_answer_judge(
    judge: AnswerJudge, answers: Sequence[Any], tasks: Any, corpus_root: Any,
) -> dict[str, Any]:
    """Agreement with the labels of `judge` and of the lexical grader, on the same answers.

    `answers`, `tasks` and `corpus_root` are what `validation.validate_grader` takes.
    """
    from .validation import _for_file, probe_output

    rows: list[dict[str, Any]] = []
    for item in answers:
        task_set = _for_file(tasks, item, "task set")
        output = probe_output(item, task_set, _for_file(corpus_root, item, "corpus"))
        task = task_set.get(item.task_id)
        rows.append({"id": item.id, "label": item.label == "pass",
                     "lexical": score_task(task, output).passed,
                     "judge": judge.judge(task, item.answer, output.admitted_passages)})

    def agreement(key: str) -> float | None:
        return sum(r[key] == r["label"] for r in rows) / len(rows) if rows else None

    return {"answers": len(rows), "judge": dict(judge.identity),
            "lexical_agreement": agreement("lexical"), "judge_agreement": agreement("judge"),
            "rows": rows}
