"""The ledger: what really happened in a world, as Markdown and JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .params import WorldParams
from .plan import _Counts, _Decision, _Obligation, _Proposal


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
