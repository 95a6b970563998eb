"""The public entry points: generate a world, its downstream harnesses, its digest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..tasks import TASK_FILE_VERSION
from .ledger import _ledger
from .params import WorldManifest, WorldParams, WorldParamsError
from .plan import _Builder, _Obligation, _resolve_counts
from .questions import _TaskMaker
from .render import _assign_paths, _Renderer
from .vocabulary import _slug, _tech_pattern


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
