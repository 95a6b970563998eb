"""The measurement instrument: task files, the system-output contract, scoring, scorecards.

It decides what counts as success and never imports the system it measures;
downstream work is judged by executed harnesses (`harness`, `fixtures/harnesses/`);
a system's adapter builds `SystemOutput` and calls `score_task`.
"""

from .harness import Harness, HarnessError, HarnessResult, load_harness, run_harness
from .metrics import StageMetrics, stage_metrics
from .outputs import STAGES, OutputError, Passage, SystemOutput
from .scorecard import Cell, Scorecard, ScorecardError, build_scorecard
from .scoring import (
    ABSTENTION_PHRASES,
    CORRECT_OUTCOMES,
    GRADER_VERSION,
    OUTCOMES,
    SUPPORT_THRESHOLD,
    CheckResult,
    ClaimCheck,
    ClaimJudge,
    Score,
    ScoringError,
    check_claim,
    detect_abstention,
    downstream_gain,
    extract_artifact,
    parse_citations,
    run_artifact_check,
    score_task,
)
from .tasks import (
    QUESTION_TYPES,
    AnswerSpec,
    ArtifactCheck,
    EvidenceSpan,
    Task,
    TaskFileError,
    TaskSet,
    find_evidence_mismatches,
    load_tasks,
    parse_task,
    parse_task_file,
    write_task_file,
)

__all__ = [
    "ABSTENTION_PHRASES",
    "CORRECT_OUTCOMES",
    "GRADER_VERSION",
    "OUTCOMES",
    "QUESTION_TYPES",
    "STAGES",
    "SUPPORT_THRESHOLD",
    "AnswerSpec",
    "ArtifactCheck",
    "Cell",
    "Harness",
    "HarnessError",
    "HarnessResult",
    "CheckResult",
    "ClaimCheck",
    "ClaimJudge",
    "EvidenceSpan",
    "OutputError",
    "Passage",
    "Score",
    "Scorecard",
    "ScorecardError",
    "ScoringError",
    "StageMetrics",
    "SystemOutput",
    "Task",
    "TaskFileError",
    "TaskSet",
    "build_scorecard",
    "check_claim",
    "detect_abstention",
    "downstream_gain",
    "extract_artifact",
    "find_evidence_mismatches",
    "load_harness",
    "load_tasks",
    "parse_citations",
    "parse_task",
    "parse_task_file",
    "run_artifact_check",
    "run_harness",
    "score_task",
    "stage_metrics",
    "write_task_file",
]
