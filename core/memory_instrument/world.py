"""Generate a controlled project history ("world") whose ground truth is known, from a seed.

A world is a folder with four parts: `history/` (the corpus a system may read),
`LEDGER.md` plus `ledger.json` (what really happened), `tasks.json` (questions of
all six types, valid under the task-file contract), and `harnesses/` (one executed
check per downstream task, `memory_instrument.harness`; never part of the corpus).
Everything is derived from one `random.Random(seed)`, so the same parameters always
give the same bytes; that is what lets a run manifest name a world by its digest.

The story elements mirror the canonical fixture: decisions whose rationale lives in a
separate report (and often far away inside a long session), proposals that are later
judged unnecessary and rejected, decisions superseded by later ones, cutovers where new
work and production disagree for a while, and promises that are sometimes kept.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from .tasks import TASK_FILE_VERSION

MIN_DOCS = 20
MAX_DOCS = 100_000
FILE_TYPES: tuple[str, ...] = ("md", "txt", "log", "yaml", "json", "toml", "py")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)


class WorldParamsError(ValueError):
    """The world parameters are inconsistent or out of range."""


@dataclass(frozen=True)
class WorldParams:
    """What to generate. Entity counts left as None scale with `docs` and always fit.

    `distractor_share` is the target share of documents unrelated to any decision; the
    story's minimum size takes precedence when both cannot hold. `file_type_mix` weights
    the file types of filler documents (story documents have fixed types). The tasks
    cover all six question types unless a count is explicitly set to zero.
    """

    seed: int = 0
    docs: int = 200
    topics: int | None = None
    decisions: int | None = None
    rejected_proposals: int | None = None
    supersessions: int | None = None
    cutovers: int | None = None
    obligations: int | None = None
    distractor_share: float = 0.5
    file_type_mix: tuple[tuple[str, float], ...] = (
        ("md", 0.5), ("txt", 0.15), ("log", 0.12), ("yaml", 0.08),
        ("json", 0.07), ("toml", 0.04), ("py", 0.04),
    )
    long_session_share: float = 0.3
    start_date: date = date(2022, 1, 10)
    max_tasks: int = 300


@dataclass(frozen=True)
class WorldManifest:
    """Where a generated world was written and what it contains."""

    root: Path
    history_dir: Path
    ledger_path: Path
    ledger_json_path: Path
    tasks_path: Path
    documents: int
    tasks: int
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LedgerDate:
    """One ledger claim that a date appears in a file of the history."""

    iso: str
    source: str
    fact: str


# --- vocabulary --------------------------------------------------------------------------------
# None of these words may overlap with ABSENT_SUBJECTS: abstention tasks depend on it.


@dataclass(frozen=True)
class _Aspect:
    name: str
    key: str
    techs: tuple[str, ...]


_ASPECTS: tuple[_Aspect, ...] = (
    _Aspect("storage backend", "storage", ("PostgreSQL", "SQLite", "MySQL", "MariaDB", "CockroachDB")),
    _Aspect("message queue", "queue", ("RabbitMQ", "NATS", "Amazon SQS", "Beanstalkd")),
    _Aspect("cache", "cache", ("Redis", "Memcached", "Varnish", "Hazelcast")),
    _Aspect("search engine", "search", ("OpenSearch", "Meilisearch", "Typesense", "Solr")),
    _Aspect("serialization format", "serialization", ("Protocol Buffers", "Avro", "MessagePack")),
    _Aspect("job scheduler", "scheduler", ("cron", "Celery beat", "Nomad periodic jobs")),
    _Aspect("object storage", "object_storage", ("MinIO", "Ceph", "Amazon S3")),
    _Aspect("metrics backend", "metrics", ("Prometheus", "InfluxDB", "Graphite", "VictoriaMetrics")),
)
_DOMAINS = (
    "orders", "billing", "inventory", "shipping", "catalog", "accounts", "notifications",
    "reporting", "pricing", "returns", "payments", "reviews", "loyalty", "warehouse",
    "invoicing", "support", "analytics", "identity", "scheduling", "recommendations",
    "subscriptions", "fulfilment", "procurement", "ledger", "media", "messaging", "onboarding",
    "partners", "tax", "routing",
)
_QUALIFIERS = (
    "", "north", "river", "amber", "cedar", "delta", "ember", "harbor", "juniper", "kite",
    "lumen", "maple", "nimbus", "orchid", "pine", "quartz", "raven", "sierra", "tundra",
    "umber", "violet", "willow", "yarrow", "zephyr", "birch",
)
_PEOPLE = (
    "Priya", "Tomás", "Mei", "Jonas", "Aisha", "Dmitri", "Lena", "Omar", "Sofia", "Kwame",
    "Ines", "Ravi", "Hana", "Mateo", "Yusuf", "Elif",
)
# (keyword a reader must connect to the decision, measured detail that only the report
# holds, and the shape of the number in that detail)
_REASONS = (
    ("write timeouts", "{n}% of writes timed out at peak load", "percent"),
    ("tail latency", "latency at the 99th percentile reached {n} ms in the nightly batch", "ms"),
    ("operational toil", "{n} hours per month went into manual maintenance", "small"),
    ("memory pressure", "the nodes ran out of memory {n} times in one month", "small"),
    ("hosting cost", "hosting came to {n} euros per month for a small workload", "money"),
    ("failover gaps", "{n} messages were lost during the failover drill", "count"),
)
_ACTIONS = (
    "write the failover runbook for the {topic} {aspect}",
    "add an alert on {aspect} errors in the {topic}",
    "document the {aspect} settings of the {topic}",
    "add a load test for the {topic} {aspect}",
    "remove the old {aspect} client from the {topic}",
    "schedule a restore drill for the {topic} {aspect}",
)
ABSENT_SUBJECTS: tuple[tuple[str, str], ...] = (
    ("Kubernetes autoscaling", "kubernetes"),
    ("GraphQL federation", "graphql"),
    ("the Terraform state backend", "terraform"),
    ("the Android build pipeline", "android"),
    ("Snowflake warehouse costs", "snowflake"),
    ("the Salesforce integration", "salesforce"),
    ("blockchain receipts", "blockchain"),
    ("the Kotlin rewrite", "kotlin"),
    ("the Figma design tokens", "figma"),
    ("WebAssembly plugins", "webassembly"),
)
_FILLER_SENTENCES = (
    "The flaky pipeline test turned out to depend on the runner's clock.",
    "We agreed to keep pull requests under four hundred changed lines where possible.",
    "The on-call rota moves to weekly shifts starting next month.",
    "Someone should tidy the onboarding checklist; half the links point to old pages.",
    "The date picker now refuses ranges that end before they start.",
    "Lint warnings are errors in CI from now on, after a two-week grace period.",
    "The retro board had more green than red this time.",
    "Two new starters join next quarter and need laptops ordered early.",
    "The colour tokens in the style guide were renamed; the old names still work for now.",
    "Dependency updates go out in one batch on the first Tuesday of the month.",
    "The coffee machine on the third floor is fixed, for the record.",
    "Release notes are written in the pull request, not on release day.",
    "Screenshots in the handbook are out of date after the navigation redesign.",
    "A11y review found three buttons without labels; all fixed the same day.",
    "The team lunch moves to Thursdays because of the planning meeting.",
    "Build times dropped by a minute after caching the wheel downloads.",
    "The wiki search is bad; most people grep the docs folder instead.",
    "Pairing rotation continues; nobody wants to go back to solo tickets.",
    "The print stylesheet for invoices lost its margins in the last refactor.",
    "A customer asked for dark reports; design will mock something up.",
    "Code owners file updated so reviews stop landing on people who left.",
    "We spent too long on estimates again; next time we timebox it to ten minutes.",
    "The staging data refresh now runs on Sunday night instead of Monday morning.",
    "Error messages in the admin screens should say what to do next.",
    "The hackathon projects will be demoed at the end of the month.",
)
_FILLER_TITLES = (
    "CI notes", "Frontend sync", "Team retro", "Onboarding", "Dependency sweep",
    "Release train", "Accessibility review", "Docs cleanup", "Planning notes", "Hiring sync",
    "Offsite logistics", "Style guide", "Build times", "Support rotation",
)
_LOG_EVENTS = ("build ok", "tests passed", "lint clean", "cache hit", "retry 1/3", "job done")
_CHATTER_LINES = (
    "Refactored the {topic} test fixtures; nothing functional changed.",
    "The {topic} dashboard got a new panel for request counts.",
    "Renamed a few modules in the {topic} for consistency.",
    "Reviewed open pull requests for the {topic}; two merged, one waiting on tests.",
    "The {topic} README now explains how to run it locally.",
    "Paired on a bug in the {topic} where a form lost its state on reload.",
    "Looked at error budgets for the {topic}; well within target this month.",
    "Wrote more unit tests around input validation in the {topic}.",
)


# --- small helpers -----------------------------------------------------------------------------


def _measure(rng: random.Random, reason: tuple[str, str, str]) -> tuple[str, str]:
    """Fill a reason's detail with a seeded number; return (detail, the number as written)."""
    shape = reason[2]
    if shape == "percent":
        number = f"{rng.randint(2, 9)}.{rng.randint(1, 9)}"
    elif shape == "ms":
        number = str(rng.randint(12, 95) * 10)
    elif shape == "small":
        # Two digits at least, so the number is specific enough to count as evidence.
        number = str(rng.randint(11, 48))
    elif shape == "money":
        number = f"{rng.randint(2, 9)},{rng.randint(1, 9)}00"
    else:
        number = str(rng.randint(120, 9800))
    return reason[1].format(n=number), number


def _long_date(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _tech_pattern(tech: str) -> str:
    """A regex finding a technology by name or slug, used by downstream not_matches checks."""
    names = sorted({re.escape(tech.lower()), re.escape(_slug(tech))})
    return r"\b(" + "|".join(names) + r")\b"


def date_variants(iso: str) -> tuple[str, ...]:
    """The spellings under which a ledger date counts as present in a file."""
    day = date.fromisoformat(iso)
    return (iso, _long_date(day))


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


# --- the plan: entities with dates, before any text is written ----------------------------------


@dataclass
class _Doc:
    kind: str
    day: date
    order: int
    path: str = ""
    number: int = 0
    text: str = ""


@dataclass
class _Decision:
    ident: int
    topic: str
    aspect: _Aspect
    old_tech: str
    tech: str
    reason: tuple[str, str, str]
    detail: str
    detail_number: str
    day: date
    long_session: bool
    adr: _Doc
    report: _Doc
    session: _Doc
    cutover: date | None = None
    deploy_log: _Doc | None = None
    superseded_by: _Decision | None = None
    supersedes: _Decision | None = None


@dataclass
class _Proposal:
    ident: int
    topic: str
    aspect: _Aspect
    current_tech: str
    tech: str
    reason: str
    proposal_session: _Doc
    judgement_session: _Doc
    adr: _Doc
    misleading_heading: bool


@dataclass
class _Obligation:
    ident: int
    decision: _Decision
    owner: str
    action: str
    opened: date
    closed: date | None
    closure: _Doc | None


@dataclass(frozen=True)
class _Counts:
    topics: int
    decisions: int
    rejected_proposals: int
    supersessions: int
    cutovers: int
    obligations: int
    closed_obligations: int
    distractors: int
    chatter: int


def _story_docs(decisions: int, rejected: int, supersessions: int, cutovers: int,
                closed: int) -> int:
    # README + (ADR, report, session) per decision + (ADR, report) per supersession
    # + deploy log per cutover + three documents per rejected proposal + one closure note.
    return 1 + 3 * decisions + 2 * supersessions + cutovers + 3 * rejected + closed


def _resolve_counts(params: WorldParams) -> _Counts:
    if not isinstance(params.docs, int) or not MIN_DOCS <= params.docs <= MAX_DOCS:
        raise WorldParamsError(f"docs must be an integer from {MIN_DOCS} to {MAX_DOCS}; "
                               f"got {params.docs!r}")
    if not 0.0 <= params.distractor_share < 1.0:
        raise WorldParamsError(f"distractor_share must be in [0, 1); got {params.distractor_share}")
    if not 0.0 <= params.long_session_share <= 1.0:
        raise WorldParamsError(
            f"long_session_share must be in [0, 1]; got {params.long_session_share}")
    if params.max_tasks < 20:
        raise WorldParamsError(f"max_tasks must be at least 20; got {params.max_tasks}")
    weights = dict(params.file_type_mix)
    unknown = sorted(set(weights) - set(FILE_TYPES))
    if unknown or not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise WorldParamsError(
            f"file_type_mix must give non-negative weights to {', '.join(FILE_TYPES)} "
            f"with a positive total; got {params.file_type_mix!r}")
    for name in ("topics", "decisions", "rejected_proposals", "supersessions", "cutovers",
                 "obligations"):
        value = getattr(params, name)
        if value is not None and (not isinstance(value, int) or value < 0):
            raise WorldParamsError(f"{name} must be a non-negative integer or None; got {value!r}")

    budget = params.docs - round(params.docs * params.distractor_share)
    decisions = params.decisions
    if decisions is None:
        decisions = max(1, min(2000, budget // 14))
    if decisions < 1:
        raise WorldParamsError("decisions must be at least 1 (every question type needs one)")

    def pick(explicit: int | None, wanted: int, upper: int) -> int:
        return explicit if explicit is not None else max(0, min(wanted, upper))

    rejected = pick(params.rejected_proposals, max(1, decisions // 3), 1000)
    supersessions = pick(params.supersessions, max(1, decisions // 4), decisions)
    cutovers = pick(params.cutovers, max(1, decisions // 4), decisions)
    obligations = pick(params.obligations, max(2, decisions), 3 * decisions)
    if supersessions > decisions:
        raise WorldParamsError("supersessions cannot exceed decisions (each supersedes one)")
    if cutovers > decisions:
        raise WorldParamsError("cutovers cannot exceed decisions (each belongs to one)")
    if obligations > 3 * decisions:
        raise WorldParamsError("obligations cannot exceed three per decision")
    closed = obligations // 2

    explicit_counts = [params.decisions, params.rejected_proposals, params.supersessions, params.cutovers,
            params.obligations]
    # Shrink automatically chosen counts until the story fits; explicit ones never shrink.
    while _story_docs(decisions, rejected, supersessions, cutovers, closed) > params.docs:
        if params.obligations is None and obligations > 1:
            obligations -= 1
        elif params.rejected_proposals is None and rejected > 1:
            rejected -= 1
        elif params.supersessions is None and supersessions > 1:
            supersessions -= 1
        elif params.cutovers is None and cutovers > 1:
            cutovers -= 1
        elif params.decisions is None and decisions > 1:
            decisions -= 1
            supersessions, cutovers = min(supersessions, decisions), min(cutovers, decisions)
        else:
            story = _story_docs(decisions, rejected, supersessions, cutovers, closed)
            which = ("explicit counts" if any(v is not None for v in explicit_counts)
                     else "the story")
            raise WorldParamsError(
                f"{which} need {story} documents but docs={params.docs}; raise docs or lower counts")
        closed = obligations // 2

    subjects_needed = decisions + rejected
    topics = params.topics
    if topics is None:
        topics = max(1, math.ceil(subjects_needed / 4))
    max_topics = len(_DOMAINS) * len(_QUALIFIERS)
    if not 1 <= topics <= max_topics:
        raise WorldParamsError(f"topics must be from 1 to {max_topics}; got {topics}")
    if topics * len(_ASPECTS) < subjects_needed:
        raise WorldParamsError(
            f"{topics} topics hold at most {topics * len(_ASPECTS)} decision subjects; "
            f"{subjects_needed} are needed (decisions + rejected proposals)")

    story = _story_docs(decisions, rejected, supersessions, cutovers, closed)
    distractors = min(round(params.docs * params.distractor_share), params.docs - story)
    return _Counts(topics, decisions, rejected, supersessions, cutovers, obligations, closed,
                   distractors, params.docs - story - distractors)


def _topic_names(count: int, rng: random.Random) -> list[str]:
    names = [f"{q}-{d} service" if q else f"{d} service" for q in _QUALIFIERS for d in _DOMAINS]
    # Plain names first so small worlds read naturally, then a seeded shuffle of the rest.
    plain, rest = names[: len(_DOMAINS)], names[len(_DOMAINS):]
    rng.shuffle(plain)
    rng.shuffle(rest)
    return (plain + rest)[:count]


class _Builder:
    """Holds the seeded RNG and the growing plan; one instance per generated world."""

    def __init__(self, params: WorldParams, counts: _Counts) -> None:
        self.params = params
        self.counts = counts
        self.rng = random.Random(params.seed)
        self.docs: list[_Doc] = []
        self.topics: list[str] = []
        self.span_days = max(120, min(3650, params.docs // 8))
        self.start = params.start_date
        self.end = self.start + timedelta(days=self.span_days + 90)

    def doc(self, kind: str, day: date) -> _Doc:
        made = _Doc(kind=kind, day=day, order=len(self.docs))
        self.docs.append(made)
        return made

    def day_at(self, offset: int) -> date:
        return self.start + timedelta(days=offset)

    def people(self, k: int) -> list[str]:
        return self.rng.sample(_PEOPLE, k)

    # -- planning --

    def plan(self) -> tuple[list[_Decision], list[_Proposal], list[_Obligation]]:
        rng, counts = self.rng, self.counts
        topics = self.topics = _topic_names(counts.topics, rng)
        subjects = [(t, a) for t in topics for a in _ASPECTS]
        rng.shuffle(subjects)
        needed = counts.decisions + counts.rejected_proposals
        chosen = _spread_subjects(subjects, topics, needed)
        decision_subjects, proposal_subjects = chosen[: counts.decisions], chosen[counts.decisions:]

        late = int(self.span_days * 0.55)
        decisions: list[_Decision] = []
        for ident, (topic, aspect) in enumerate(decision_subjects, start=1):
            old_tech, tech = rng.sample(aspect.techs, 2)
            reason = rng.choice(_REASONS)
            detail, number = _measure(rng, reason)
            offset = rng.randint(20, late)
            day = self.day_at(offset)
            decisions.append(_Decision(
                ident=ident, topic=topic, aspect=aspect, old_tech=old_tech, tech=tech,
                reason=reason, detail=detail, detail_number=number, day=day,
                long_session=rng.random() < self.params.long_session_share,
                adr=self.doc("adr", day),
                report=self.doc("report", day - timedelta(days=rng.randint(3, 9))),
                session=self.doc("session", day - timedelta(days=1)),
            ))
        for decision in rng.sample(decisions, counts.cutovers):
            decision.cutover = decision.day + timedelta(days=rng.randint(6, 24))
            decision.deploy_log = self.doc("deploy", decision.cutover)
        next_ident = len(decisions) + 1
        for base in rng.sample(decisions, counts.supersessions):
            settled = base.cutover or base.day
            newer_tech = rng.choice([t for t in base.aspect.techs if t != base.tech])
            day = settled + timedelta(days=rng.randint(40, max(41, self.span_days // 3)))
            reason = rng.choice([r for r in _REASONS if r != base.reason])
            detail, number = _measure(rng, reason)
            newer = _Decision(
                ident=next_ident, topic=base.topic, aspect=base.aspect, old_tech=base.tech,
                tech=newer_tech, reason=reason, detail=detail, detail_number=number, day=day,
                long_session=False,
                adr=self.doc("adr", day),
                report=self.doc("report", day - timedelta(days=rng.randint(3, 9))),
                session=base.session,  # the superseding ADR cites its own report only
                supersedes=base,
            )
            next_ident += 1
            base.superseded_by = newer
            decisions.append(newer)

        proposals: list[_Proposal] = []
        for ident, (topic, aspect) in enumerate(proposal_subjects, start=1):
            current, proposed = rng.sample(aspect.techs, 2)
            day = self.day_at(rng.randint(20, late))
            judged = day + timedelta(days=rng.randint(2, 4))
            proposals.append(_Proposal(
                ident=ident, topic=topic, aspect=aspect, current_tech=current, tech=proposed,
                reason=rng.choice(_REASONS)[0],
                proposal_session=self.doc("session", day),
                judgement_session=self.doc("session", judged),
                adr=self.doc("adr", judged + timedelta(days=rng.randint(3, 6))),
                misleading_heading=rng.random() < 0.5,
            ))

        obligations: list[_Obligation] = []
        bases = [d for d in decisions if d.supersedes is None]
        used: dict[int, list[int]] = {}
        for ident in range(1, counts.obligations + 1):
            decision = bases[(ident - 1) % len(bases)]
            taken = used.setdefault(decision.ident, [])
            template = rng.choice([i for i in range(len(_ACTIONS)) if i not in taken])
            taken.append(template)
            action = _ACTIONS[template].format(topic=decision.topic, aspect=decision.aspect.name)
            obligations.append(_Obligation(
                ident=ident, decision=decision, owner=rng.choice(_PEOPLE), action=action,
                opened=decision.session.day, closed=None, closure=None))
        for obligation in rng.sample(obligations, counts.closed_obligations):
            closed = obligation.opened + timedelta(days=rng.randint(10, 80))
            obligation.closed = closed
            obligation.closure = self.doc("session", closed)
        return decisions, proposals, obligations

    def filler_docs(self) -> list[tuple[_Doc, str, str | None]]:
        """Distractors (no topic) and chatter (a topic, but no decisions), with file types."""
        rng = self.rng
        types = [t for t, _ in self.params.file_type_mix]
        weights = [w for _, w in self.params.file_type_mix]
        topics = self.topics
        made: list[tuple[_Doc, str, str | None]] = []
        total = self.counts.distractors + self.counts.chatter
        kinds = rng.choices(types, weights=weights, k=total)
        for index in range(total):
            day = self.day_at(rng.randint(0, self.span_days + 60))
            topic = rng.choice(topics) if index >= self.counts.distractors else None
            made.append((self.doc("filler", day), kinds[index], topic))
        return made


def _spread_subjects(subjects: list[tuple[str, _Aspect]], topics: list[str],
                     needed: int) -> list[tuple[str, _Aspect]]:
    by_topic: dict[str, list[tuple[str, _Aspect]]] = {t: [] for t in topics}
    for subject in subjects:
        by_topic[subject[0]].append(subject)
    chosen: list[tuple[str, _Aspect]] = []
    round_index = 0
    while len(chosen) < needed:
        for topic in topics:
            if round_index < len(by_topic[topic]) and len(chosen) < needed:
                chosen.append(by_topic[topic][round_index])
        round_index += 1
    return chosen


# --- rendering ---------------------------------------------------------------------------------


def _assign_paths(docs: list[_Doc]) -> None:
    """Number ADRs and sessions in date order, then give every document its path."""
    for kind, fmt in (("adr", "decisions/adr-{n:04d}.md"),):
        ordered = sorted((d for d in docs if d.kind == kind), key=lambda d: (d.day, d.order))
        for number, doc in enumerate(ordered, start=1):
            doc.number, doc.path = number, fmt.format(n=number)
    sessions = sorted((d for d in docs if d.kind == "session"), key=lambda d: (d.day, d.order))
    for number, doc in enumerate(sessions, start=1):
        doc.number = number
        doc.path = f"sessions/{doc.day.year}/session-{number:05d}.md"


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choice(_FILLER_SENTENCES) for _ in range(sentences))


class _Renderer:
    def __init__(self, builder: _Builder) -> None:
        self.b = builder
        self.rng = builder.rng

    def v(self, *options: str) -> str:
        return self.rng.choice(options)

    def adr(self, d: _Decision) -> str:
        a, rng = d.aspect, self.rng
        deciders = ", ".join(self.b.people(rng.randint(2, 4)))
        title = self.v(f"{d.tech} as the {a.name} for the {d.topic}",
                       f"Move the {d.topic} {a.name} to {d.tech}",
                       f"{a.name.capitalize()} of the {d.topic}: {d.tech}")
        lines = [f"# ADR-{d.adr.number:04d}: {title}", "", f"Date: {d.day.isoformat()}",
                 "Status: Accepted", f"Deciders: {deciders}"]
        if d.supersedes:
            lines.append(f"Supersedes: ADR-{d.supersedes.adr.number:04d}")
        lines += ["", "## Context", "",
                  self.v(f"The {d.topic} has used {d.old_tech} as its {a.name}.",
                         f"Until now the {d.topic} relied on {d.old_tech} for its {a.name}.",
                         f"{d.old_tech} has been the {a.name} of the {d.topic} so far."),
                  self.v(f"It has caused {d.reason[0]}; the measurements are in `{d.report.path}`.",
                         f"The problem is {d.reason[0]}, measured in `{d.report.path}`.",
                         f"We keep running into {d.reason[0]} (details: `{d.report.path}`)."),
                  "", "## Decision", ""]
        lines.append(self.v(f"The {d.topic} uses {d.tech} as its {a.name}.",
                            f"We adopt {d.tech} as the {a.name} of the {d.topic}.",
                            f"Decided: {d.tech} becomes the {d.topic}'s {a.name}."))
        if d.cutover:
            when = self.v(d.cutover.isoformat(), _long_date(d.cutover))
            lines += ["", f"New work targets {d.tech} from today. Production keeps running "
                          f"{d.old_tech} until the cutover on {when}."]
        lines += ["", "Configuration:", "", "```yaml", f"{a.key}:", f"  backend: {_slug(d.tech)}",
                  "```", "", "## Consequences", "",
                  self.v("Someone has to own the migration and the runbooks.",
                         "Operations need a short training session.",
                         "The old client code goes away once nothing uses it.")]
        if d.superseded_by:
            newer = d.superseded_by
            lines += ["", f"_Update {newer.day.isoformat()}: superseded by "
                          f"ADR-{newer.adr.number:04d}._"]
        return "\n".join(lines) + "\n"

    def report(self, d: _Decision) -> str:
        a = d.aspect
        author = self.rng.choice(_PEOPLE)
        return "\n".join([
            f"# {d.reason[0].capitalize()} in the {d.topic} {a.name}", "",
            f"Date: {d.report.day.isoformat()}", f"Author: {author}", "",
            "## Findings", "",
            self.v(f"With {d.old_tech} as the {a.name}, {d.detail}.",
                   f"Measured on the {d.topic}: {d.detail} while running {d.old_tech}.",
                   f"Our numbers for {d.old_tech}: {d.detail}."),
            self.v(f"A trial with {d.tech} on the same workload showed none of this.",
                   f"{d.tech} handled the same load without the problem.",
                   f"Repeating the test against {d.tech} removed the issue."),
            "", "## Method", "", _paragraph(self.rng, 2), "",
        ])

    def decision_session(self, d: _Decision, promised: list[_Obligation]) -> str:
        a, rng = d.aspect, self.rng
        attendees = self.b.people(rng.randint(3, 5))
        head = ["---", f"session: {d.session.number}", f"date: {d.session.day.isoformat()}",
                f"attendees: [{', '.join(attendees)}]", "---", "",
                f"# Session {d.session.number:05d} — {self.v('planning', 'working session', 'sync')}",
                "", "## The " + a.name + " of the " + d.topic, "",
                f"{attendees[0]} presented `{d.report.path}`: {d.detail}. "
                f"That is the {d.reason[0]} we keep seeing with {d.old_tech}.", ""]
        middle: list[str] = []
        if d.long_session:
            size = 0
            while size < 3600:
                title = rng.choice(_FILLER_TITLES)
                para = _paragraph(rng, rng.randint(5, 9))
                middle += [f"## {title}", "", para, ""]
                size += len(para) + len(title) + 6
        else:
            middle += ["## Other business", "", _paragraph(rng, 2), ""]
        tail = ["## Conclusion", "",
                self.v(f"Decision: the {d.topic} moves to {d.tech} for its {a.name}.",
                       f"Agreed: {d.tech} replaces {d.old_tech} as the {d.topic}'s {a.name}.",
                       f"We go with {d.tech} as the {a.name} of the {d.topic}."),
                f"ADR-{d.adr.number:04d} records it.", ""]
        if promised:
            tail += ["## Open action items", ""]
            tail += [f"- [ ] {o.owner}: {o.action}" for o in promised]
            tail.append("")
        return "\n".join(head + middle + tail)

    def deploy_log(self, d: _Decision) -> str:
        assert d.cutover is not None
        lines = []
        service = _slug(d.topic)
        for back in (5, 2):
            day = d.cutover - timedelta(days=back)
            lines.append(f"{day.isoformat()}T07:30:00Z deploy {service} env=prod "
                         f"{d.aspect.key}_backend={_slug(d.old_tech)} status=ok")
        lines.append(f"{d.cutover.isoformat()}T06:00:00Z maintenance start env=prod")
        lines.append(f"{d.cutover.isoformat()}T06:20:00Z deploy {service} env=prod "
                     f"{d.aspect.key}_backend={_slug(d.tech)} status=ok cutover=true")
        lines.append(f"{d.cutover.isoformat()}T06:40:00Z maintenance end env=prod smoke=green")
        return "\n".join(lines) + "\n"

    def proposal_session(self, p: _Proposal) -> str:
        doc, people = p.proposal_session, self.b.people(3)
        return "\n".join([
            "---", f"session: {doc.number}", f"date: {doc.day.isoformat()}",
            f"attendees: [{', '.join(people)}]", "---", "",
            f"# Session {doc.number:05d} — {p.tech} for the {p.topic}?", "",
            self.v(f"{people[0]} proposed using {p.tech} as the {p.aspect.name} for the {p.topic}, "
                   f"replacing {p.current_tech}.",
                   f"Proposal from {people[0]}: the {p.topic} should switch its {p.aspect.name} "
                   f"from {p.current_tech} to {p.tech}."),
            f"The argument is {p.reason}.",
            f"{people[1]} wants measurements before anyone builds it.", "",
            "Not decided today; we meet again after the measurements.", "",
        ])

    def judgement_session(self, p: _Proposal) -> str:
        doc, people = p.judgement_session, self.b.people(3)
        # Half the verdicts sit under a heading that suggests the opposite of what they say.
        heading = f"## {p.tech} rollout" if p.misleading_heading else f"## {p.tech}: verdict"
        opener = "Despite the heading, there is no rollout. " if p.misleading_heading else ""
        return "\n".join([
            "---", f"session: {doc.number}", f"date: {doc.day.isoformat()}",
            f"attendees: [{', '.join(people)}]", "---", "",
            f"# Session {doc.number:05d} — follow-up on the {p.topic} {p.aspect.name}", "",
            f"Follow-up to session {p.proposal_session.number:05d}.", "", heading, "",
            f"{opener}After measuring, the team judged {p.tech} unnecessary for the {p.topic}: "
            f"{p.current_tech} covers the {p.reason} once tuned.",
            f"The formal record is not yet written; {people[0]} will write the ADR.", "",
        ])

    def rejection_adr(self, p: _Proposal) -> str:
        return "\n".join([
            f"# ADR-{p.adr.number:04d}: {p.tech} rejected for the {p.topic} {p.aspect.name}", "",
            f"Date: {p.adr.day.isoformat()}", "Status: Rejected", "",
            "## Context", "",
            f"Session {p.proposal_session.number:05d} ({p.proposal_session.day.isoformat()}) "
            f"proposed {p.tech}; session {p.judgement_session.number:05d} judged it unnecessary.",
            "", "## Decision", "",
            f"We do not adopt {p.tech}. The proposal is rejected; the {p.topic} keeps "
            f"{p.current_tech} as its {p.aspect.name}.", "",
        ])

    def closure(self, o: _Obligation) -> str:
        assert o.closure is not None and o.closed is not None
        doc = o.closure
        return "\n".join([
            "---", f"session: {doc.number}", f"date: {doc.day.isoformat()}", "---", "",
            f"# Session {doc.number:05d} — housekeeping", "",
            f"- [x] {o.owner}: {o.action} — done on {o.closed.isoformat()} "
            f"(promised in session {o.decision.session.number:05d}).",
            _paragraph(self.rng, 1), "",
        ])

    def filler(self, doc: _Doc, file_type: str, topic: str | None) -> tuple[str, str]:
        rng, day = self.rng, doc.day
        stamp = f"{day.year}/{day.month:02d}"
        n = doc.order
        def body(count: int) -> str:
            if topic:
                return " ".join(rng.choice(_CHATTER_LINES).format(topic=topic) for _ in range(count))
            return _paragraph(rng, count)
        if file_type == "md":
            title = f"Weekly update: {topic}" if topic else rng.choice(_FILLER_TITLES)
            text = f"# {title}\n\nDate: {day.isoformat()}\n\n{body(rng.randint(3, 7))}\n\n" \
                   f"{body(rng.randint(2, 5))}\n"
            return f"notes/{stamp}/note-{n:06d}.md", text
        if file_type == "txt":
            people = self.b.people(2)
            lines = [f"chat export {day.isoformat()}"]
            for minute in range(rng.randint(3, 7)):
                lines.append(f"[10:{minute * 7:02d}] {people[minute % 2].lower()}: {body(1)}")
            return f"chat/{stamp}/chat-{n:06d}.txt", "\n".join(lines) + "\n"
        if file_type == "log":
            source = _slug(topic) if topic else "ci"
            lines = [f"{day.isoformat()}T{h:02d}:{rng.randint(0, 59):02d}:00Z INFO "
                     f"{source} {rng.choice(_LOG_EVENTS)}"
                     for h in sorted(rng.sample(range(24), rng.randint(3, 8)))]
            return f"logs/app/{stamp}/app-{n:06d}.log", "\n".join(lines) + "\n"
        if file_type == "yaml":
            text = (f"# lint settings, {day.isoformat()}\nlint:\n  max_line_length: "
                    f"{rng.choice((88, 100, 120))}\n  fail_on_warning: {rng.choice(('true', 'false'))}\n"
                    f"  owner: {rng.choice(_PEOPLE).lower()}\n")
            return f"config/archive/{day.year}/lint-{n:06d}.yaml", text
        if file_type == "json":
            record = {"date": day.isoformat(), "team": topic or "platform",
                      "tickets_closed": rng.randint(0, 40), "note": body(1)}
            return f"data/{stamp}/export-{n:06d}.json", json.dumps(record, ensure_ascii=False) + "\n"
        if file_type == "toml":
            text = (f"# formatter settings, {day.isoformat()}\n[format]\nindent = "
                    f"{rng.choice((2, 4))}\nquote_style = \"{rng.choice(('double', 'single'))}\"\n")
            return f"config/tools/{day.year}/format-{n:06d}.toml", text
        text = (f'"""Helper script written {day.isoformat()}."""\n\n\n'
                f"def count_lines(path):\n    # {body(1)}\n"
                f"    with open(path) as handle:\n        return sum(1 for _ in handle)\n")
        return f"scripts/{day.year}/script_{n:06d}.py", text


# --- tasks -------------------------------------------------------------------------------------


def _task(ident: str, qtype: str, query: str, as_of: date | None, sources: list[str],
          must: list[list[str]], *, must_not: Iterable[str] = (), abstain: bool = False,
          negative: bool = False, evidence: Iterable[tuple[str, str]] = (),
          checks: list[dict[str, Any]] | None = None,
          metadata: dict[str, Any] | None = None, harness: str | None = None,
          expect: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"must_include": must, "must_not_include": list(must_not),
                              "abstain": abstain, "evidenced_negative": negative}
    if expect:
        answer["expect"] = expect
    if checks:
        answer["artifact_checks"] = checks
    if harness:
        answer["harness"] = harness
    spans = [{"source": s, "quote": q} for s, q in evidence]
    if spans:
        answer["evidence"] = spans
    return {"id": ident, "question_type": qtype, "query": query,
            "as_of": as_of.isoformat() if as_of else None, "expected_sources": sources,
            "answer": answer, "metadata": dict(metadata or {})}


# A kept promise may be labelled done, or decided (adopted and in force); open, proposed or
# rejected would contradict it.
DELIVERED_STATUSES = ["done", "decided"]


def _choice(answer: str, *alternatives: str) -> dict[str, Any]:
    """A typed `choice` between technologies (by name or slug); `answer` is the right one."""
    names = list(dict.fromkeys([answer, *alternatives]))
    return {"choice": {"options": {_slug(t): sorted({t.lower(), _slug(t)}) for t in names},
                       "answer": _slug(answer)}}


def _first_line_with(text: str, needle: str) -> str:
    for line in text.splitlines():
        if needle in line:
            return line.strip()
    raise AssertionError(f"generator bug: {needle!r} not in rendered text")


class _TaskMaker:
    def __init__(self, builder: _Builder, decisions: list[_Decision], proposals: list[_Proposal],
                 obligations: list[_Obligation]) -> None:
        self.b, self.rng = builder, builder.rng
        self.decisions, self.proposals, self.obligations = decisions, proposals, obligations
        self.harnesses: dict[str, dict[str, Any]] = {}  # harness name -> config_harness_files args

    def v(self, *options: str) -> str:
        return self.rng.choice(options)

    def candidates(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {t: [] for t in (
            "locate", "outcome", "provenance", "temporal", "obligations", "downstream",
            "abstain")}
        end = self.b.end
        for d in self.decisions:
            a, tag = d.aspect, f"d{d.ident:04d}"
            final = d
            while final.superseded_by:
                final = final.superseded_by
            if d.supersedes is None:
                out["locate"].append(_task(
                    f"locate-{tag}", "locate",
                    self.v(f"Where did we discuss the {a.name} for the {d.topic}?",
                           f"Which documents cover the choice of {a.name} in the {d.topic}?",
                           f"Where was the {d.topic}'s {a.name} decided?"),
                    None, [d.session.path, d.adr.path],
                    [[f"adr-{d.adr.number:04d}"], [f"session-{d.session.number:05d}"]],
                    evidence=[(d.adr.path, f"# ADR-{d.adr.number:04d}: ")]))
                out["outcome"].append(_task(
                    f"outcome-{tag}", "outcome",
                    self.v(f"Which {a.name} does the {d.topic} use?",
                           f"What did we settle on as the {a.name} of the {d.topic}?",
                           f"What is the {d.topic}'s {a.name}?"),
                    end, [final.adr.path], [[final.tech]],
                    evidence=[(final.adr.path, f"backend: {_slug(final.tech)}")],
                    expect=_choice(final.tech, *sorted(
                        {x.tech for x in self._chain(d)} | {d.old_tech}))))
                stale = sorted(({x.tech for x in self._chain(d)} | {d.old_tech}) - {final.tech})
                checks: list[dict[str, Any]] = [
                    {"check": "parses", "format": "yaml"},
                    {"check": "key_equals", "format": "yaml", "key": f"{a.key}.backend",
                     "any_of": [_slug(final.tech), final.tech.lower()]}]
                checks += [{"check": "not_matches", "pattern": _tech_pattern(t)} for t in stale]
                self.harnesses[f"downstream-{tag}"] = {
                    "key": f"{a.key}.backend", "accepted": [_slug(final.tech), final.tech.lower()],
                    "stale": stale, "source": final.adr.path}
                out["downstream"].append(_task(
                    f"downstream-{tag}", "downstream",
                    self.v(f"Write the YAML configuration block for the {a.name} of a new "
                           f"deployment of the {d.topic}, following the decision in force. "
                           "Reply with one fenced yaml block.",
                           f"Produce the `{a.key}` section (YAML) that a new instance of the "
                           f"{d.topic} should ship with. Reply with one fenced yaml block."),
                    end, [final.adr.path], [[_slug(final.tech)]], checks=checks,
                    evidence=[(final.adr.path, f"  backend: {_slug(final.tech)}")],
                    harness=f"downstream-{tag}"))
            out["provenance"].append(_task(
                f"provenance-{tag}", "provenance",
                self.v(f"Why did the {d.topic} move its {a.name} to {d.tech}?",
                       f"What evidence led the {d.topic} to adopt {d.tech}?",
                       f"What was the reason for choosing {d.tech} as the {d.topic}'s {a.name}?"),
                None, [d.adr.path, d.report.path],
                [[d.reason[0]], [d.detail_number]],
                evidence=[(d.report.path, d.detail)]))
            if d.cutover:
                between = d.day + timedelta(days=max(1, (d.cutover - d.day).days // 2))
                question = self.v(f"Which {a.name} did the {d.topic} run in production?",
                                  f"What was production using as the {d.topic}'s {a.name}?")
                adr_text = d.adr.text
                out["temporal"].append(_task(
                    f"temporal-{tag}-before-cutover", "temporal", question, between,
                    [d.adr.path], [[d.old_tech]],
                    evidence=[(d.adr.path, _first_line_with(adr_text, "Production keeps running"))],
                    expect=_choice(d.old_tech, d.tech)))
                assert d.deploy_log is not None
                after = d.cutover + timedelta(days=1)
                if not d.superseded_by or d.superseded_by.day > after:
                    out["temporal"].append(_task(
                        f"temporal-{tag}-after-cutover", "temporal", question, after,
                        [d.deploy_log.path], [[_slug(d.tech)]],
                        evidence=[(d.deploy_log.path, "cutover=true")],
                        expect=_choice(d.tech, d.old_tech)))
            if d.supersedes:
                base = d.supersedes
                settled = base.cutover or base.day
                before = settled + timedelta(days=max(1, (d.day - settled).days // 2))
                question = self.v(f"Which {a.name} was in force for the {d.topic}?",
                                  f"What had the {d.topic} decided for its {a.name}?")
                out["temporal"].append(_task(
                    f"temporal-{tag}-before-supersession", "temporal", question, before,
                    [base.adr.path], [[base.tech]],
                    evidence=[(base.adr.path, f"backend: {_slug(base.tech)}")],
                    expect=_choice(base.tech, d.tech)))
                out["temporal"].append(_task(
                    f"temporal-{tag}-after-supersession", "temporal", question,
                    d.day + timedelta(days=1), [d.adr.path], [[d.tech]],
                    evidence=[(d.adr.path, f"Supersedes: ADR-{base.adr.number:04d}")],
                    expect=_choice(d.tech, base.tech)))
        for p in self.proposals:
            a, tag = p.aspect, f"p{p.ident:04d}"
            out["outcome"].append(_task(
                f"outcome-{tag}-rejected", "outcome",
                self.v(f"Did the {p.topic} adopt {p.tech} as its {a.name}?",
                       f"Is {p.tech} in use as the {a.name} of the {p.topic}?",
                       f"Did we go ahead with {p.tech} for the {p.topic}?"),
                self.b.end, [p.adr.path],
                [["rejected", "not adopted", "do not adopt", "did not adopt", "not in use", "no"]],
                must_not=["yes"], negative=True,
                evidence=[(p.adr.path, f"We do not adopt {p.tech}.")],
                expect={"status": ["rejected"]}))
            out["locate"].append(_task(
                f"locate-{tag}-proposal", "locate",
                self.v(f"Where was {p.tech} first proposed for the {p.topic}?",
                       f"In which session did someone suggest {p.tech} for the {p.topic}?"),
                None, [p.proposal_session.path],
                [[f"session-{p.proposal_session.number:05d}"]]))
            out["provenance"].append(_task(
                f"provenance-{tag}-rejection", "provenance",
                self.v(f"Why was {p.tech} judged unnecessary for the {p.topic}?",
                       f"What reason was given for not adopting {p.tech} in the {p.topic}?"),
                None, [p.judgement_session.path], [["unnecessary"], [p.current_tech]]))
            question = self.v(f"What was the status of the proposal to use {p.tech} for the "
                              f"{p.topic}?",
                              f"Had the {p.topic} decided on {p.tech} for its {a.name}?")
            out["temporal"].append(_task(
                f"temporal-{tag}-pending", "temporal", question,
                p.proposal_session.day + timedelta(days=1), [p.proposal_session.path],
                [["not decided", "proposed", "undecided"]], must_not=["rejected", "adopted"],
                expect={"status": ["proposed", "open"]}))
            out["temporal"].append(_task(
                f"temporal-{tag}-judged", "temporal", question, p.judgement_session.day,
                [p.judgement_session.path], [["unnecessary"], ["not yet", "not formally"]]))
        by_topic: dict[str, list[_Obligation]] = {}
        for o in self.obligations:
            by_topic.setdefault(o.decision.topic, []).append(o)
            tag = f"o{o.ident:04d}"
            question = self.v(f"Had {o.owner} done what was promised: {o.action}?",
                              f"Was the promise to {o.action} kept?",
                              f"Is the follow-up '{o.action}' finished?")
            open_day = o.opened + timedelta(days=3)
            if o.closed is None or open_day < o.closed:
                out["obligations"].append(_task(
                    f"obligations-{tag}-open", "obligations", question, open_day,
                    [o.decision.session.path], [["not yet", "still open", "open"]],
                    must_not=["yes"],
                    evidence=[(o.decision.session.path, f"- [ ] {o.owner}: {o.action}")],
                    expect={"status": ["open"]}))
            if o.closed and o.closure:
                out["obligations"].append(_task(
                    f"obligations-{tag}-closed", "obligations", question,
                    o.closed + timedelta(days=2), [o.closure.path],
                    [["done", "closed", "yes"]],
                    evidence=[(o.closure.path, f"- [x] {o.owner}: {o.action}")],
                    expect={"date": [o.closed.isoformat()], "status": DELIVERED_STATUSES}))
        for topic, items in by_topic.items():
            as_of = max(o.opened for o in items) + timedelta(days=5)
            still_open = [o for o in items if o.closed is None or o.closed > as_of]
            closed = [o for o in items if o.closed is not None and o.closed <= as_of]
            if not still_open:
                continue
            out["obligations"].append(_task(
                f"obligations-{_slug(topic)}-open-list", "obligations",
                self.v(f"Which promises made for the {topic} were still open?",
                       f"What follow-ups for the {topic} remained unfinished?"),
                as_of, sorted({o.decision.session.path for o in still_open}), [],
                expect={"obligations": {"open": [[o.action] for o in still_open],
                                        "closed": [[o.action] for o in closed],
                                        "require": "open", "unmarked": "open"}}))
        for index, (subject, term) in enumerate(ABSENT_SUBJECTS):
            qtype, query, as_of = [
                ("outcome", f"What did we decide about {subject}?", None),
                ("provenance", f"Why did we choose {subject}?", None),
                ("locate", f"Where did we discuss {subject}?", None),
                ("temporal", f"What was the state of {subject}?", self.b.end),
                ("obligations", f"Which promises about {subject} were still open?", self.b.end),
            ][index % 5]
            out["abstain"].append(_task(f"abstain-{_slug(term)}", qtype, query, as_of, [], [],
                                        abstain=True, metadata={"absent_terms": [term]}))
        return out

    def _chain(self, d: _Decision) -> list[_Decision]:
        chain = [d]
        while chain[-1].superseded_by:
            chain.append(chain[-1].superseded_by)
        return chain

    def select(self, max_tasks: int) -> list[dict[str, Any]]:
        pools = self.candidates()
        per_type = max(2, (max_tasks * 9 // 10) // 6)
        chosen: list[dict[str, Any]] = []
        for qtype in ("locate", "outcome", "provenance", "temporal", "obligations",
                      "downstream"):
            pool = pools[qtype]
            chosen += self.rng.sample(pool, min(per_type, len(pool)))
        # About one task in ten is a true abstention, never fewer than three.
        abstain_quota = max(3, min(max_tasks - len(chosen), len(chosen) // 9))
        chosen += self.rng.sample(pools["abstain"], min(abstain_quota, len(pools["abstain"])))
        chosen = chosen[:max_tasks]
        for task in chosen:
            task["metadata"]["split"] = "dev" if self.rng.random() < 0.4 else "test"
        # Tuning needs a dev set and evaluation a test set, however small the world.
        chosen[0]["metadata"]["split"], chosen[-1]["metadata"]["split"] = "dev", "test"
        return chosen


# --- ledger ------------------------------------------------------------------------------------


def _ledger(decisions: list[_Decision], proposals: list[_Proposal],
            obligations: list[_Obligation], params: WorldParams, counts: _Counts) -> tuple[str, dict]:
    rows_decisions, rows_cutovers, rows_proposals = [], [], []
    data: dict[str, Any] = {"params": _params_json(params), "counts": asdict(counts),
                            "decisions": [], "proposals": [], "obligations": []}
    for d in sorted(decisions, key=lambda x: (x.day, x.ident)):
        fact = f"ADR-{d.adr.number:04d}: the {d.topic} adopts {d.tech} as its {d.aspect.name}"
        if d.supersedes:
            fact += f" (supersedes ADR-{d.supersedes.adr.number:04d}, {d.supersedes.tech})"
        rows_decisions.append((d.day.isoformat(), d.adr.path, fact))
        rows_decisions.append((d.report.day.isoformat(), d.report.path,
                               f"rationale for ADR-{d.adr.number:04d}: {d.reason[0]}"))
        if d.supersedes is None:
            rows_decisions.append((d.session.day.isoformat(), d.session.path,
                                   f"session deciding ADR-{d.adr.number:04d}"
                                   + (" (long; rationale far from decision)" if d.long_session
                                      else "")))
        if d.cutover and d.deploy_log:
            rows_cutovers.append((d.cutover.isoformat(), d.deploy_log.path,
                                  f"production of the {d.topic} switches from {d.old_tech} to "
                                  f"{d.tech}"))
            rows_cutovers.append((d.cutover.isoformat(), d.adr.path, "cutover announced"))
        data["decisions"].append({
            "adr": d.adr.path, "date": d.day.isoformat(), "topic": d.topic,
            "aspect": d.aspect.name, "from": d.old_tech, "to": d.tech, "report": d.report.path,
            "session": None if d.supersedes else d.session.path,
            "cutover": d.cutover.isoformat() if d.cutover else None,
            "superseded_by": d.superseded_by.adr.path if d.superseded_by else None})
    for p in proposals:
        rows_proposals += [
            (p.proposal_session.day.isoformat(), p.proposal_session.path,
             f"{p.tech} proposed for the {p.topic} {p.aspect.name}"),
            (p.judgement_session.day.isoformat(), p.judgement_session.path,
             f"{p.tech} judged unnecessary"
             + (" (misleading heading)" if p.misleading_heading else "")),
            (p.adr.day.isoformat(), p.adr.path, f"{p.tech} rejected")]
        data["proposals"].append({
            "topic": p.topic, "aspect": p.aspect.name, "tech": p.tech, "kept": p.current_tech,
            "proposed": [p.proposal_session.day.isoformat(), p.proposal_session.path],
            "judged": [p.judgement_session.day.isoformat(), p.judgement_session.path],
            "rejected": [p.adr.day.isoformat(), p.adr.path]})
    lines = ["# Ledger", "",
             "Ground truth for this generated world. Dates are ISO; each date appears in its "
             "file in ISO or long form (`22 July 2024`).", ""]

    def table(title: str, rows: list[tuple[str, str, str]]) -> None:
        lines.extend([f"## {title}", "", "| date | file | fact |", "|------|------|------|"])
        lines.extend(f"| {a} | {b} | {c} |" for a, b, c in rows)
        lines.append("")

    table("Decisions", rows_decisions)
    table("Cutovers", rows_cutovers)
    table("Rejected proposals", rows_proposals)
    lines += ["## Obligations", "",
              "| id | obligation | owner | opened | opened in | closed | closed in |",
              "|----|------------|-------|--------|-----------|--------|-----------|"]
    for o in obligations:
        closed = o.closed.isoformat() if o.closed else "—"
        closed_in = o.closure.path if o.closure else "—"
        lines.append(f"| OB-{o.ident} | {o.action} | {o.owner} | {o.opened.isoformat()} | "
                     f"{o.decision.session.path} | {closed} | {closed_in} |")
        data["obligations"].append({
            "id": f"OB-{o.ident}", "action": o.action, "owner": o.owner,
            "opened": [o.opened.isoformat(), o.decision.session.path],
            "closed": [closed, closed_in] if o.closed else None})
    return "\n".join(lines) + "\n", data


def _params_json(params: WorldParams) -> dict[str, Any]:
    out = asdict(params)
    out["start_date"] = params.start_date.isoformat()
    out["file_type_mix"] = [list(pair) for pair in params.file_type_mix]
    return out


# --- public API --------------------------------------------------------------------------------


def generate_world(params: WorldParams, out_dir: str | Path) -> WorldManifest:
    """Write history/, LEDGER.md, ledger.json and tasks.json under out_dir (which must be empty)."""
    counts = _resolve_counts(params)
    root = Path(out_dir)
    if root.exists() and any(root.iterdir()):
        raise WorldParamsError(f"{root} is not empty; a world is written into a fresh folder")
    builder = _Builder(params, counts)
    decisions, proposals, obligations = builder.plan()
    fillers = builder.filler_docs()
    readme = builder.doc("readme", builder.start)
    readme.path = "README.md"
    _assign_paths(builder.docs)

    render = _Renderer(builder)
    promised: dict[int, list[_Obligation]] = {}
    for o in obligations:
        promised.setdefault(o.decision.ident, []).append(o)
    for d in decisions:
        d.report.path = (f"reports/{d.report.day.year}/"
                         f"{d.report.day.isoformat()}-{_slug(d.topic)}-{d.aspect.key}.md")
        if d.deploy_log is not None and d.cutover is not None:
            d.deploy_log.path = (f"logs/deploy/{d.cutover.year}/"
                                 f"{_slug(d.topic)}-{d.aspect.key}-{d.cutover.isoformat()}.log")
    for d in decisions:
        d.adr.text = render.adr(d)
        d.report.text = render.report(d)
        if d.supersedes is None:
            d.session.text = render.decision_session(d, promised.get(d.ident, []))
        if d.deploy_log is not None:
            d.deploy_log.text = render.deploy_log(d)
    for p in proposals:
        p.proposal_session.text = render.proposal_session(p)
        p.judgement_session.text = render.judgement_session(p)
        p.adr.text = render.rejection_adr(p)
    for o in obligations:
        if o.closure is not None:
            o.closure.text = render.closure(o)
    for doc, file_type, topic in fillers:
        doc.path, doc.text = render.filler(doc, file_type, topic)
    readme.text = ("# Project history\n\nDecision records live in `decisions/`, working sessions "
                   "in `sessions/`, measurements in `reports/`. Older records may have been "
                   "superseded; check the status line.\n")

    history = root / "history"
    made_dirs: dict[Path, None] = {}
    for doc in builder.docs:
        target = history / doc.path
        if target.parent not in made_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
            made_dirs[target.parent] = None
        target.write_bytes(doc.text.encode("utf-8"))

    maker = _TaskMaker(builder, decisions, proposals, obligations)
    tasks = maker.select(params.max_tasks)
    harness_args = maker.harnesses
    for task in tasks:
        if "harness" in task["answer"]:
            _write_files(root / "harnesses" / task["answer"]["harness"],
                         config_harness_files(**harness_args[task["answer"]["harness"]]))
    ledger_md, ledger_data = _ledger(decisions, proposals, obligations, params, counts)
    ledger_path, ledger_json_path = root / "LEDGER.md", root / "ledger.json"
    tasks_path = root / "tasks.json"
    ledger_path.write_bytes(ledger_md.encode("utf-8"))
    ledger_json_path.write_bytes(
        (json.dumps(ledger_data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    tasks_path.write_bytes((json.dumps({"version": TASK_FILE_VERSION, "tasks": tasks}, indent=1,
                                       ensure_ascii=False) + "\n").encode("utf-8"))
    return WorldManifest(
        root=root, history_dir=history, ledger_path=ledger_path,
        ledger_json_path=ledger_json_path, tasks_path=tasks_path,
        documents=len(builder.docs), tasks=len(tasks), counts=asdict(counts))


def config_harness_files(key: str, accepted: list[str], stale: list[str], source: str) -> dict[str, str]:
    """The harness folder of a generated downstream task: schema, decided values, reference work.

    Made without a random draw, so adding harnesses left every world's history and tasks
    as they were: the section must be a mapping with a `backend` string (schema.json);
    the backend must be the technology in force and no value may name a technology the
    history replaced (semantic rules, which read values, not comments). examples/ holds
    the configuration in force and a stale one.
    """
    section, field_name = key.split(".", 1)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "required": [section],
        "properties": {section: {"type": "object", "required": [field_name],
                                 "properties": {field_name: {"type": "string"}}}},
    }
    semantic: list[dict[str, Any]] = [{"key": key, "any_of": accepted,
                                       "why": f"the decision in force ({source})"}]
    semantic += [{"key": "*", "not_matches": _tech_pattern(tech),
                  "why": f"{tech} was replaced"} for tech in stale]
    harness = {"version": 1, "kind": "config",
               "description": f"Validates the YAML '{section}' section (schema.json), then the "
                              "decided backend and that no replaced technology is named.",
               "artifact": {"language": "yaml"}, "schema": "schema.json", "semantic": semantic}
    return {
        "harness.json": json.dumps(harness, indent=1) + "\n",
        "schema.json": json.dumps(schema, indent=1) + "\n",
        "examples/good.yaml": f"{section}:\n  {field_name}: {accepted[0]}\n",
        "examples/bad.yaml": f"{section}:\n  {field_name}: {_slug(stale[0])}\n",
    }


def _write_files(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


def world_digest(out_dir: str | Path) -> str:
    """sha256 over every file's relative path and bytes, in sorted path order."""
    root = Path(out_dir)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


# --- consistency checks shared by the fixture and generated worlds -----------------------------


_TABLE_ROW = re.compile(r"^\|(.+)\|\s*$")
_ISO_IN_CELL = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def read_ledger_dates(ledger_path: str | Path) -> list[LedgerDate]:
    """Date/file claims from a ledger's Markdown tables.

    A table contributes pairs of columns: `date` with `file`, `opened` with `opened in`,
    `closed` with `closed in`. Cells that are not ISO dates (e.g. `—`) are skipped.
    """
    claims: list[LedgerDate] = []
    header: list[str] | None = None
    for line in Path(ledger_path).read_text(encoding="utf-8").splitlines():
        match = _TABLE_ROW.match(line.strip())
        if not match:
            header = None
            continue
        cells = [cell.strip() for cell in match.group(1).split("|")]
        if header is None:
            header = [cell.lower() for cell in cells]
            continue
        if all(set(cell) <= set("-: ") for cell in cells):
            continue
        row = dict(zip(header, cells, strict=False))
        fact = row.get("fact") or row.get("obligation") or ""
        for date_col, file_col in (("date", "file"), ("opened", "opened in"),
                                   ("closed", "closed in")):
            iso, source = row.get(date_col, ""), row.get(file_col, "")
            if _ISO_IN_CELL.match(iso) and source:
                claims.append(LedgerDate(iso=iso, source=source, fact=fact))
    return claims


def find_ledger_date_mismatches(ledger_path: str | Path, corpus_root: str | Path) -> list[str]:
    """Ledger dates whose file is missing or does not contain the date in an accepted form."""
    root = Path(corpus_root)
    problems: list[str] = []
    cache: dict[str, str] = {}
    for claim in read_ledger_dates(ledger_path):
        path = root / claim.source
        if claim.source not in cache:
            cache[claim.source] = path.read_text(encoding="utf-8") if path.is_file() else ""
        if not path.is_file():
            problems.append(f"ledger names {claim.source!r}, which is not in {root}")
        elif not any(form in cache[claim.source] for form in date_variants(claim.iso)):
            problems.append(f"ledger date {claim.iso} not found in {claim.source!r} "
                            f"({claim.fact})")
    return problems


def _absence_core(phrase: str) -> str:
    """'lock errors' for 'no lock errors'; a phrase that states no absence gives itself."""
    head, _, rest = _normalise(phrase).partition(" ")
    return rest if head in ("no", "zero", "0", "without") and rest else _normalise(phrase)


def find_unsupported_phrasings(tasks: Iterable[Any], corpus_root: str | Path) -> list[str]:
    """must_include groups with no phrasing present in the task's expected sources.

    A group is supported when at least one of its phrasings occurs (case-insensitive,
    whitespace-normalised) in the concatenation of the expected sources' ids and texts;
    a phrasing that states an absence ("no lock errors") is supported by what it says is
    absent ("lock errors", e.g. a table column that reads 0).
    Abstentions have no sources and are skipped. Accepts loaded `Task` objects or dicts.
    """
    root = Path(corpus_root)
    problems: list[str] = []
    for task in tasks:
        if isinstance(task, dict):
            ident, sources = task["id"], task["expected_sources"]
            groups, abstain = task["answer"]["must_include"], task["answer"]["abstain"]
        else:
            ident, sources = task.id, task.expected_sources
            groups, abstain = task.answer.must_include, task.answer.abstain
        if abstain:
            continue
        parts = []
        for source in sources:
            path = root / source
            parts.append(source)
            parts.append(path.read_text(encoding="utf-8") if path.is_file() else "")
        haystack = _normalise("\n".join(parts))
        for position, group in enumerate(groups):
            if not any(_normalise(phrase) in haystack or _absence_core(phrase) in haystack
                       for phrase in group):
                problems.append(f"task '{ident}': must_include[{position}] {list(group)!r} "
                                "is not supported by its expected sources")
    return problems
