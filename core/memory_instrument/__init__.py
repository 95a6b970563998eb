"""The measurement instrument: task files, the system-output contract, scoring, scorecards.

It decides what counts as success and never imports the system it measures;
downstream work is judged by executed harnesses (`harness`, `fixtures/harnesses/`);
a system's adapter builds `SystemOutput` and calls `score_task`.

Names are loaded on first use (PEP 562), so a system that imports only the
output contract's citation grammar (`memory_instrument.citations`, as the
baseline's readers do) loads nothing of the scorer.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "StageMetrics": "metrics", "stage_metrics": "metrics",
    "STAGES": "outputs", "OutputError": "outputs", "Passage": "outputs",
    "SystemOutput": "outputs",
    "Cell": "scorecard", "Scorecard": "scorecard", "ScorecardError": "scorecard",
    "build_scorecard": "scorecard",
    "ABSTENTION_PHRASES": "scoring", "CORRECT_OUTCOMES": "scoring", "OUTCOMES": "scoring",
    "SUPPORT_THRESHOLD": "scoring", "CheckResult": "scoring", "ClaimCheck": "scoring",
    "ClaimJudge": "scoring", "Score": "scoring", "ScoringError": "scoring",
    "check_claim": "scoring", "detect_abstention": "scoring", "downstream_gain": "scoring",
    "extract_artifact": "scoring", "parse_citations": "scoring",
    "run_artifact_check": "scoring", "score_task": "scoring",
    "GRADER_VERSION": "grader_version",
    "QUESTION_TYPES": "tasks", "OUTCOME_STATUSES": "tasks", "TASK_FILE_VERSION": "tasks",
    "AnswerSpec": "tasks", "ArtifactCheck": "tasks", "ChoiceExpectation": "tasks",
    "EvidenceSpan": "tasks", "Expectations": "tasks", "ObligationExpectation": "tasks",
    "Task": "tasks", "TaskFileError": "tasks", "TaskSet": "tasks",
    "find_evidence_mismatches": "tasks", "load_tasks": "tasks", "parse_task": "tasks",
    "parse_task_file": "tasks", "write_task_file": "tasks",
    "Harness": "harness", "HarnessError": "harness", "HarnessResult": "harness",
    "load_harness": "harness", "run_harness": "harness",
    "CallableClaimJudge": "judges", "OllamaClaimJudge": "judges", "admit_judge": "judges",
    "measure_claim_checks": "judges",
    "Probe": "validation", "load_probes": "validation", "validate_grader": "validation",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memory_instrument' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
