"""The tasks of a world, of all six question types, derived from its plan."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from .plan import _Builder, _Decision, _Obligation, _Proposal
from .vocabulary import ABSENT_SUBJECTS, _slug, _tech_pattern


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
