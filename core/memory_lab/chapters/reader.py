"""The reader's ceiling: each reading style given perfect evidence, by question type, with cost.

Retrieval cannot fix a reader that misreads the right sources, so this study
takes retrieval out: every case runs under an oracle condition
(``oracle-source``: the expected files whole; ``oracle-span``: the evidence
quotes with a sentence of context). Each (corpus, reading style, condition)
is an ordinary evaluation run (`evaluation.run_evaluation`), scored by the
instrument; the study's manifest lists them, in the order they ran, so an
interrupted study resumes where it stopped and answers already read come
from the answer cache.

`ceiling_rows` turns the runs back into the chapter's table: pass rate per
style, condition, split and question type, and what an answer cost (prompt
and completion tokens, model calls, model seconds as measured when the model
ran; a cache hit keeps its original figure).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from memory_baseline.config import Config
from memory_baseline.ingest import Discovery
from memory_baseline.reading import STYLES
from memory_lab.ladders.evaluation import run_evaluation
from memory_lab.ladders.reports import load_run
from memory_lab.studies.display import pivot, show_figure, show_table, table_frame  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import (  # noqa: F401 - called by the chapter
    StudyRun,
    display_path,
    prepare_world,
    repo_path,
    run_caption,
    start_study,
    write_task_subset,
)

ORACLE_CONDITIONS = ("oracle-source", "oracle-span")


class ReaderStudyError(ValueError):
    """The study cannot run as asked (unknown style, condition or corpus)."""


def run_reader_study(
    conn: psycopg.Connection, base_config: Config,
    corpora: Mapping[str, tuple[str | Path, str | Path, int | None]],
    styles: Sequence[str], *, conditions: Sequence[str] = ORACLE_CONDITIONS,
    runs_root: str | Path = "runs", resume: str | Path | None = None, progress: bool = True,
    split: str | None = None, observations: Mapping[str, Discovery] | None = None,
) -> StudyRun:
    """Evaluate every style under every oracle condition on every corpus.

    `corpora` maps a name to (history folder, task file, task limit or None); a limit
    takes a subset spread over question types and splits. Runs go condition by
    condition, then corpus, then style, so the first (usually the fixture under
    ``oracle-source``) is complete for every style before the next begins.
    `observations` gives a corpus a connector's observation instead of its folder
    (the PEPs with the versions their temporal tasks name, `memory_lab.corpora.peps`).
    """
    for style in styles:
        if style not in STYLES:
            raise ReaderStudyError(f"unknown reading style {style!r}; choose from {sorted(STYLES)}")
    for condition in conditions:
        if condition not in ORACLE_CONDITIONS:
            raise ReaderStudyError(f"the reader study uses oracle conditions only, not {condition!r}")
    if resume is not None:
        run_dir = repo_path(resume)
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        study = StudyRun("reader-ceiling", run_dir, manifest)
    else:
        study = start_study(runs_root, "reader-ceiling", {
            "styles": list(styles), "conditions": list(conditions), "reader": base_config.reader.name,
            "split": split,
            "corpora": {name: {"history": display_path(h), "tasks": display_path(t), "task_limit": lim,
                               **({"observation": (observations or {})[name].summary}
                                  if name in (observations or {}) else {})}
                        for name, (h, t, lim) in corpora.items()},
        }, corpora={name: h for name, (h, _, _) in corpora.items()})
    runs: list[dict[str, Any]] = study.manifest.setdefault("runs", [])
    task_files = {name: write_task_subset(tasks, study.run_dir / "tasks" / name, limit=limit)
                  if limit is not None else repo_path(tasks)
                  for name, (_, tasks, limit) in corpora.items()}
    for condition in conditions:
        for corpus_name, (history, _, _) in corpora.items():
            task_file = task_files[corpus_name]
            for style in styles:
                key = {"corpus": corpus_name, "style": style, "condition": condition}
                if any(all(r[k] == v for k, v in key.items()) for r in runs):
                    continue  # finished before this study was resumed
                # One folder per (corpus, condition, style): an interrupted run there is resumed.
                slot = study.run_dir / "runs" / f"{corpus_name}.{condition}.{style}"
                started = sorted(path.parent for path in slot.glob("*/manifest.json"))
                # One index per corpus: syncing another corpus into it would re-embed each time.
                config = base_config.with_overrides(index=f"{base_config.index}_{corpus_name}",
                                                    reader={"style": style})
                run_dir = run_evaluation(conn, config, task_file, repo_path(history), [condition],
                                         runs_root=slot, progress=progress, split=split,
                                         resume=started[-1] if started else None,
                                         discovery=(observations or {}).get(corpus_name))
                runs.append({**key, "run_dir": display_path(run_dir), "status": "complete"})
                study.record("runs", runs)
    study.finish()
    return study


def _cases(study_dir: str | Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    manifest = json.loads((repo_path(study_dir) / "manifest.json").read_text(encoding="utf-8"))
    found = []
    for entry in manifest.get("runs", []):
        _, cases = load_run(repo_path(entry["run_dir"]))
        found.extend((entry, case) for case in cases)
    return found


def _latest_cases(study_dirs: Sequence[str | Path], condition: str,
                  split: str) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[dict[str, Any]]]:
    """The `split` cases under `condition` of several studies, where a later study's reading of a
    task of a corpus in a style replaces what an earlier one read there, and the list of
    replacements (per corpus, style and pair of studies, with how many tasks).

    A corpus's tasks are read again when what it hands the reader is corrected (the PEPs'
    temporal tasks with the past versions they turn on, `memory_lab.corpora.peps`): pooling
    both readings would count those tasks twice, once against evidence that could not answer.
    Replacing per task lets the second study read only the tasks whose evidence changed.
    """
    latest: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    replaced: dict[tuple[str, str, str, str], int] = {}
    for study in study_dirs:
        name = display_path(repo_path(study))
        for entry, case in _cases(study):
            if entry["condition"] != condition or case.get("split") != split:
                continue
            key = (entry["corpus"], entry["style"], case["task_id"])
            if key in latest and latest[key][0]["study"] != name:
                pair = (key[0], key[1], latest[key][0]["study"], name)
                replaced[pair] = replaced.get(pair, 0) + 1
            latest[key] = ({**entry, "study": name}, case)
    return list(latest.values()), [{"corpus": c, "style": s, "study": old, "replaced_by": new,
                                    "tasks": n} for (c, s, old, new), n in replaced.items()]


def _cost(members: Sequence[dict[str, Any]]) -> dict[str, Any]:
    read = [c for c in members if c.get("answer_calls", c["usage"].get("calls", 0))]
    return {
        "prompt_tokens": round(statistics.fmean(c["tokens"]["prompt"] for c in members), 1),
        "completion_tokens": round(statistics.fmean(c["tokens"]["completion"] for c in members), 1),
        "calls_per_answer": round(statistics.fmean(c.get("answer_calls", 0) for c in members), 2),
        "seconds_per_answer": round(statistics.fmean(c.get("answer_seconds", 0.0) for c in read), 2)
        if read else 0.0,
        # The median as well: a study that shared the machine with another job for part of its run has
        # a few answers many times slower than the rest, and the mean then measures the neighbour.
        "median_seconds_per_answer": round(statistics.median(c.get("answer_seconds", 0.0) for c in read), 2)
        if read else 0.0,
    }


def ceiling_rows(study_dir: str | Path, *, by: Sequence[str] = ("question_type",)) -> list[dict[str, Any]]:
    """Pass rate and cost per corpus, style and condition, broken down by `by` (plus an 'all' row)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for entry, case in _cases(study_dir):
        head = (entry["corpus"], entry["style"], entry["condition"])
        groups.setdefault((*head, *("all" for _ in by)), []).append(case)
        groups.setdefault((*head, *(str(case.get(field) or "-") for field in by)), []).append(case)
    rows = []
    for key, members in groups.items():
        corpus, style, condition, *parts = key
        passed = sum(bool(c["score"]["passed"]) for c in members)
        rows.append({
            "corpus": corpus, "style": style, "condition": condition, **dict(zip(by, parts, strict=True)),
            "cases": len(members), "passed": passed, "pass_rate": round(passed / len(members), 3),
            # The instrument's own check of the returned text (enforced to be zero) ...
            "cited_outside_context": sum(len(c["score"]["unknown_citations"]) for c in members),
            # ... and what the model wrote that the reader removed before returning.
            "citations_removed": sum(len(c.get("reader_trace", {}).get("removed_citations", []))
                                     for c in members),
            **_cost(members),
        })
    order = {s: i for i, s in enumerate(STYLES)}
    return sorted(rows, key=lambda r: (r["corpus"], r["condition"], order.get(r["style"], 99),
                                       *(r[f] != "all" for f in by), *(r[f] for f in by)))


def outcome_rows(study_dir: str | Path) -> list[dict[str, Any]]:
    """Per case: the style's answer and the instrument's verdict, for reading the failures."""
    return [{"corpus": e["corpus"], "style": e["style"], "condition": e["condition"],
             "task_id": c["task_id"], "question_type": c["question_type"], "split": c.get("split"),
             "outcome": c["score"]["outcome"], "passed": c["score"]["passed"],
             "answer": c["answer"][:300]}
            for e, c in _cases(study_dir)]


def choose_style(study_dir: str | Path, *, corpus: str = "fixture", condition: str = "oracle-source",
                 split: str = "dev") -> dict[str, Any]:
    """The style with the highest pass rate on `split` tasks (fewer seconds breaks a tie).

    The default reader is chosen on development tasks only; the test split is reported, never
    looked at for the choice.
    """
    rows = [r for r in ceiling_rows(study_dir, by=("split",))
            if r["corpus"] == corpus and r["condition"] == condition and r["split"] == split]
    if not rows:
        raise ReaderStudyError(f"no {split} cases for {corpus} under {condition} in {study_dir}")
    best = max(rows, key=lambda r: (r["pass_rate"], -r["seconds_per_answer"]))
    return {"style": best["style"], "pass_rate": best["pass_rate"], "split": split,
            "corpus": corpus, "condition": condition,
            "candidates": {r["style"]: r["pass_rate"] for r in rows}}


def pooled_choice(study_dirs: Sequence[str | Path], *, condition: str = "oracle-source",
                  split: str = "dev") -> dict[str, Any]:
    """The default style chosen on the `split` tasks of every corpus of `study_dirs`, pooled.

    The rule: never one corpus, never test tasks. Only styles read on every corpus
    compete; the pooled pass rate decides, then the mean of the per-corpus rates, then
    fewer seconds an answer. Beside the choice: each style's per-corpus rates and cost,
    and paired differences (bootstrap interval, McNemar) of the chosen style against
    every other on the same pooled tasks, so a choice the tasks do not separate says so.
    """
    from memory_lab.intervals import paired_difference

    cases, replaced = _latest_cases(study_dirs, condition, split)
    if not cases:
        raise ReaderStudyError(f"no {split} cases under {condition} in {', '.join(map(str, study_dirs))}")
    corpora = sorted({e["corpus"] for e, _ in cases})
    styles = sorted({e["style"] for e, _ in cases})
    complete = [s for s in styles
                if all(any(e["style"] == s and e["corpus"] == c for e, _ in cases) for c in corpora)]
    rows = []
    for style in complete:
        mine = [(e, c) for e, c in cases if e["style"] == style]
        per_corpus = {}
        for corpus in corpora:
            members = [c for e, c in mine if e["corpus"] == corpus]
            passed = sum(bool(c["score"]["passed"]) for c in members)
            per_corpus[corpus] = {"cases": len(members), "passed": passed,
                                  "pass_rate": round(passed / len(members), 3), **_cost(members)}
        passed = sum(bool(c["score"]["passed"]) for _, c in mine)
        corpus_mean = statistics.fmean(r["pass_rate"] for r in per_corpus.values())
        rows.append({"style": style, "cases": len(mine), "passed": passed,
                     "pass_rate": round(passed / len(mine), 3), "mean_corpus_rate": round(corpus_mean, 3),
                     **_cost([c for _, c in mine]), "per_corpus": per_corpus})
    if not rows:
        raise ReaderStudyError(f"no style was read on every corpus ({', '.join(corpora)})")
    best = max(rows, key=lambda r: (r["pass_rate"], r["mean_corpus_rate"], -r["seconds_per_answer"]))
    # Task ids are unique within a corpus only: key the pooled verdicts by both.
    table: dict[str, dict[str, tuple[str, bool]]] = {}
    for entry, case in cases:
        table.setdefault(entry["style"], {})[f"{entry['corpus']}/{case['task_id']}"] = (
            case["question_type"], bool(case["score"]["passed"]))
    paired = [paired_difference(table, best["style"], r["style"]).to_dict()
              for r in rows if r["style"] != best["style"]]
    return {"condition": condition, "split": split, "corpora": corpora,
            "studies": [display_path(repo_path(d)) for d in study_dirs], "replaced": replaced,
            "style": best["style"], "styles": rows, "chosen_against_others": paired}


def ceiling_figure(rows: Sequence[Mapping[str, Any]], styles: Sequence[str], plt: Any) -> Any:
    """Heat maps of pass rate, style x question type, one panel per corpus and condition."""
    import numpy as np

    by_type = [r for r in rows if r["question_type"] != "all" and r["style"] in styles]
    types = sorted({r["question_type"] for r in by_type})
    panels = sorted({(r["corpus"], r["condition"]) for r in by_type})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 0.5 * len(styles) + 2.2),
                             squeeze=False)
    for ax, (corpus, condition) in zip(axes[0], panels, strict=True):
        grid = np.full((len(styles), len(types)), np.nan)
        for r in by_type:
            if (r["corpus"], r["condition"]) == (corpus, condition):
                grid[list(styles).index(r["style"]), types.index(r["question_type"])] = r["pass_rate"]
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(types)), types, rotation=35, fontsize=7)
        ax.set_yticks(range(len(styles)), styles, fontsize=8)
        ax.set_title(f"{corpus}, {condition}", fontsize=8)
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if value < 0.6 else "black")
    fig.tight_layout()
    return fig


def export_results(study_dir: str | Path, out_dir: str | Path) -> Path:
    """Write `reader-ceiling.json` (every row, the study's manifest) and its figure to `out_dir`."""
    import matplotlib

    matplotlib.use("Agg")  # a file, not a notebook: no display needed
    import matplotlib.pyplot as plt

    study_dir, out = repo_path(study_dir), repo_path(out_dir)
    manifest = json.loads((study_dir / "manifest.json").read_text(encoding="utf-8"))
    styles = manifest["parameters"]["styles"]
    by_type = ceiling_rows(study_dir)
    document = {
        "study": display_path(study_dir), "manifest": manifest,
        "dev_choice": choose_style(study_dir) if any(r["corpus"] == "fixture" for r in by_type) else None,
        "by_question_type": by_type, "by_split": ceiling_rows(study_dir, by=("split",)),
    }
    out.mkdir(parents=True, exist_ok=True)
    target = out / "reader-ceiling.json"
    target.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    figure = ceiling_figure(by_type, styles, plt)
    figure.savefig(out / "reader-ceiling.png", dpi=120, bbox_inches="tight")
    plt.close(figure)
    return target


def held_out_figures(study_dirs: str | Path | Sequence[str | Path], style: str, *,
                     condition: str = "oracle-source", split: str = "test") -> dict[str, Any]:
    """The chosen style on each corpus's `split` tasks: pass rate with interval, per type, cost.

    The check: at least 50% on each corpus, and at most 15 points between the best
    and the worst corpus (`gap`). With several studies, a later reading of a corpus
    replaces an earlier one (`_latest_cases`); both are named in the document.
    """
    from memory_lab.intervals import pass_rates

    studies = [study_dirs] if isinstance(study_dirs, (str, Path)) else list(study_dirs)
    everything, replaced = _latest_cases(studies, condition, split)
    cases = [(e, c) for e, c in everything if e["style"] == style]
    if not cases:
        raise ReaderStudyError(f"no {split} cases of {style} under {condition} in "
                               f"{', '.join(map(str, studies))}")
    rows = []
    for corpus in sorted({e["corpus"] for e, _ in cases}):
        members = [c for e, c in cases if e["corpus"] == corpus]
        rates = pass_rates([{**c, "condition": corpus} for c in members])
        overall = next(r for r in rates if r.question_type == "all")
        rows.append({"corpus": corpus, "cases": overall.cases, "passed": overall.passed,
                     "pass_rate": round(overall.rate, 3), "low": round(overall.low, 3),
                     "high": round(overall.high, 3),
                     "per_question_type": {r.question_type: {"cases": r.cases, "passed": r.passed}
                                           for r in rates if r.question_type != "all"},
                     **_cost(members)})
    rates = [r["pass_rate"] for r in rows]
    read = {e["study"] for e, _ in cases}  # the studies that read this style
    studies = [s for s in studies if display_path(repo_path(s)) in read]
    return {"study": display_path(repo_path(studies[0])),
            "studies": [display_path(repo_path(s)) for s in studies],
            "replaced": [r for r in replaced if r["style"] == style],
            "by_corpus": {corpus: sorted({e["study"] for e, _ in cases if e["corpus"] == corpus})
                          for corpus in sorted({e["corpus"] for e, _ in cases})},
            "style": style, "condition": condition,
            "split": split, "corpora": rows, "gap": round(max(rates) - min(rates), 3),
            "lowest": min(rates)}


def choice_document(dev_studies: Sequence[str | Path],
                    test_studies: Sequence[str | Path] | str | Path | None) -> dict[str, Any]:
    """The reader study's results file: the pooled dev choice and, once read, its test figures."""
    if isinstance(test_studies, (str, Path)):
        test_studies = [test_studies]
    test_studies = list(test_studies or [])
    studies = [*dev_studies, *test_studies]
    readers = {json.loads((repo_path(s) / "manifest.json").read_text(encoding="utf-8"))
               ["parameters"]["reader"] for s in studies}
    if len(readers) != 1:
        raise ReaderStudyError(f"the studies were read by different readers: {sorted(readers)}")
    choice = pooled_choice(dev_studies)
    document = {"reader": readers.pop(), "dev": choice,
                "test": held_out_figures(test_studies, choice["style"]) if test_studies else None}
    # A style read on the test tasks before this choice (an earlier default) is reported beside
    # it, with the paired difference on the same tasks: it was measured, so it stays on record.
    earlier = sorted({e["style"] for e, _ in _latest_cases(test_studies, "oracle-source", "test")[0]}
                     - {choice["style"]}) if test_studies else []
    document["test_earlier"] = [test_comparison(test_studies, choice["style"], style) for style in earlier]
    return document


def test_comparison(studies: Sequence[str | Path], chosen: str, other: str) -> dict[str, Any]:
    """`other`'s test figures and the chosen style paired against it on the tasks both read."""
    from memory_lab.intervals import paired_difference

    cases, _ = _latest_cases(studies, "oracle-source", "test")
    table: dict[str, dict[str, tuple[str, bool]]] = {}
    for entry, case in cases:
        table.setdefault(entry["style"], {})[f"{entry['corpus']}/{case['task_id']}"] = (
            case["question_type"], bool(case["score"]["passed"]))
    return {"style": other, "figures": held_out_figures(studies, other),
            "paired": paired_difference(table, chosen, other).to_dict()}


def earlier_defaults(document: Mapping[str, Any]) -> list[str]:
    """One sentence per earlier default read on the same test tasks (README and chapter 9)."""
    lines = []
    for earlier in document.get("test_earlier", []):
        figures, paired = earlier["figures"], earlier["paired"]
        rates = "; ".join(f"{r['corpus']} {r['passed']} of {r['cases']} ({r['pass_rate']:.2f})"
                          for r in figures["corpora"])
        lines.append(
            f"The earlier default `{earlier['style']}` on the same test tasks (studies "
            f"{', '.join(f'`{s}`' for s in figures['studies'])}): {rates}; lowest {figures['lowest']:.2f}, "
            f"gap {figures['gap']:.2f}. Paired on the {paired['tasks']} tasks both read, "
            f"`{paired['upper']}` − `{paired['lower']}` is {paired['difference']:+.3f} "
            f"[{paired['low']:+.3f}, {paired['high']:+.3f}] (McNemar p {paired['mcnemar_p']:.3f}; "
            f"{paired['only_upper']} tasks passed by `{paired['upper']}` only, "
            f"{paired['only_lower']} by `{paired['lower']}` only).")
    return lines


def _types(per_type: Mapping[str, Mapping[str, int]]) -> str:
    return ", ".join(f"{name} {row['passed']}/{row['cases']}" for name, row in sorted(per_type.items()))


def choice_tables(document: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The rows of `choice_document`'s three tables, for the README and chapter 9 alike (each
    labels `style`/`chosen` and `upper`/`lower` its own way): each
    style on the pooled dev tasks (per corpus, with its cost), the chosen style paired against
    the others, and the chosen style on each corpus's test tasks (empty until read)."""
    dev, test = document["dev"], document["test"]
    styles = []
    for row in sorted(dev["styles"], key=lambda r: -r["passed"]):
        styles.append({"style": row["style"], "chosen": row["style"] == dev["style"],
                       f"dev passed (of {row['cases']})": row["passed"],
                       **{name: f"{row['per_corpus'][name]['passed']}/{row['per_corpus'][name]['cases']}"
                          for name in dev["corpora"] if name in row["per_corpus"]},
                       "median s / answer": f"{row['median_seconds_per_answer']:.0f}",
                       "prompt / completion tokens":
                           f"{row['prompt_tokens']:,.0f} / {row['completion_tokens']:,.0f}"})
    paired = [{"upper": p["upper"], "lower": p["lower"], "tasks": p["tasks"],
               "difference [95%]": f"{p['difference']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]",
               "McNemar p": f"{p['mcnemar_p']:.3f}", "separated": "yes" if p["separated"] else "no"}
              for p in dev["chosen_against_others"]]
    tested = [{"corpus": r["corpus"], "passed": f"{r['passed']} of {r['cases']}",
               "pass rate [95%]": f"{r['pass_rate']:.2f} [{r['low']:.2f}, {r['high']:.2f}]",
               "by question type": _types(r["per_question_type"]),
               "median s / answer": f"{r['median_seconds_per_answer']:.0f}",
               "prompt / completion tokens": f"{r['prompt_tokens']:,.0f} / {r['completion_tokens']:,.0f}"}
              for r in (test or {}).get("corpora", [])]
    return {"styles": styles, "paired": paired, "test": tested}


def read(split: str, styles: Sequence[str], corpora: Sequence[str], resume: str | None) -> Path:
    """Read `styles` with oracle-source context on the fixture and the worlds (`split` tasks).

    The PEPs are read by `memory-lab study pep-history read` (their temporal tasks need the
    versions they name). Answers come from the committed caches first.
    """
    import os

    from memory_baseline.answer_cache import READ_FIRST_ENV
    from memory_baseline.server import connect

    os.environ.setdefault(READ_FIRST_ENV, os.pathsep.join(["benchmarks/answer-cache",
                                                           "book/published/answer-cache"]))
    worlds = {s: prepare_world("benchmarks/worlds", seed=s, docs=60) for s in (7, 11)}
    every = {"fixture": ("fixtures/history", "fixtures/tasks.json", None),
             "world_s7": (worlds[7].history, worlds[7].tasks_path, None),
             "world_s11": (worlds[11].history, worlds[11].tasks_path, None)}
    base = Config(index=f"reader_{split}").with_overrides(reader={"name": "qwen-1.5b"})
    with connect() as conn:
        study = run_reader_study(conn, base, {name: every[name] for name in corpora}, list(styles),
                                 conditions=["oracle-source"], runs_root="benchmarks/runs", resume=resume,
                                 split=split)
    return study.run_dir


def main(argv: list[str] | None = None) -> int:
    """`memory-lab study reader read --split dev|test --styles S...` or `... choice DEV_STUDY...`."""
    import argparse

    from memory_lab.ladders.study_cli import summarise_to

    parser = argparse.ArgumentParser(prog="memory-lab study reader",
                                     description="chapter 9: read reading styles with oracle context, "
                                                 "and choose one from the dev studies")
    sub = parser.add_subparsers(dest="command", required=True)
    reading = sub.add_parser("read", help="read styles on the fixture and the worlds (resumable)")
    reading.add_argument("--split", choices=["dev", "test"], required=True)
    reading.add_argument("--styles", nargs="+", required=True)
    reading.add_argument("--corpora", nargs="+", default=["fixture", "world_s7", "world_s11"],
                         choices=["fixture", "world_s7", "world_s11"])
    reading.add_argument("--resume")
    choice = sub.add_parser("choice", help="write the pooled dev choice of style and its test figures")
    choice.add_argument("dev_studies", nargs="+")
    choice.add_argument("--test", dest="test_studies", nargs="+", default=[],
                        help="test studies; a later one's reading of a task replaces an earlier one's")
    choice.add_argument("--out", default="benchmarks/results/reader-choice.json")
    args = parser.parse_args(argv)
    if args.command == "read":
        print(read(args.split, args.styles, args.corpora, args.resume))
        return 0
    return summarise_to(lambda: choice_document(args.dev_studies, args.test_studies), args.out,
                        failure="cannot summarise the reader studies",
                        done=lambda document: f"chose {document['dev']['style']} -> {args.out}")


if __name__ == "__main__":
    raise SystemExit(main())
