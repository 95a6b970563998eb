"""Rendering the plan into the files of `history/`."""

from __future__ import annotations

import json
import random
from datetime import timedelta

from .plan import _Builder, _Decision, _Doc, _Obligation, _Proposal
from .vocabulary import (
    _CHATTER_LINES,
    _FILLER_SENTENCES,
    _FILLER_TITLES,
    _LOG_EVENTS,
    _PEOPLE,
    _long_date,
    _slug,
)


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
