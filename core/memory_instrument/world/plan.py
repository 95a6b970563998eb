"""The plan of a world: entities with their dates (decisions, proposals, obligations), before any text."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import date, timedelta

from .params import FILE_TYPES, MAX_DOCS, MIN_DOCS, WorldParams, WorldParamsError
from .vocabulary import _ACTIONS, _ASPECTS, _DOMAINS, _PEOPLE, _QUALIFIERS, _REASONS, _Aspect, _measure


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
