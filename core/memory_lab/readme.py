"""The README's result sections, rendered from the committed artifacts they cite.

A figure typed by hand into a README drifts from the run it came from. Each
results section of README.md sits between markers,

    <!-- results:NAME -->
    ...rendered text...
    <!-- /results:NAME -->

and is rendered here from one committed artifact, whose path the section
names. `python -m memory_lab.readme` rewrites the sections in place;
tests/test_readme.py fails when the committed README differs from what the
artifacts render, so a changed result cannot be published with a stale README.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

SCIFACT = Path("benchmarks/results/scifact.json")
READER_CEILING = Path("benchmarks/results/reader-ceiling.json")
DOWNSTREAM = Path("benchmarks/results/downstream-ladder.json")
PUBLISHED_RUNS = Path("book/published/runs")

_SECTION = re.compile(r"(<!-- results:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=name) -->)",
                      re.DOTALL)


class ReadmeError(ValueError):
    """A results section names an artifact that is missing or a renderer that does not exist."""


def _load(root: Path, path: Path) -> dict[str, Any]:
    target = root / path
    if not target.is_file():
        raise ReadmeError(f"README cites {path}, which is not committed")
    return json.loads(target.read_text(encoding="utf-8"))


def _markdown(frame: pd.DataFrame) -> str:
    """A GitHub table (pandas' `to_markdown` needs `tabulate`, which this project does not use)."""
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def scifact(root: Path) -> str:
    document = _load(root, SCIFACT)
    beir = document["beir"]
    rows = []
    for name, result in beir["conditions"].items():
        metrics, latency = result["metrics"], result.get("latency") or {}
        timing = (f"{latency['p50_ms']:,.0f} / {latency['p95_ms']:,.0f}"
                  if latency.get("p50_ms") is not None else "")
        rows.append({"condition": f"`{name}`", "nDCG@10": f"{metrics['nDCG@10']:.3f}",
                     "R@100": f"{metrics['R@100']:.3f}", "RR@10": f"{metrics['RR@10']:.3f}",
                     "p50 / p95 ms": timing})
    best_name, best = max(beir["conditions"].items(), key=lambda item: item[1]["metrics"]["nDCG@10"])
    published = document.get("published") or beir.get("published") or {}
    beaten = [n for n, p in published.items() if p["nDCG@10"] < best["metrics"]["nDCG@10"]]
    not_beaten = [f"{n} ({p['nDCG@10']:.3f})" for n, p in published.items()
                  if p["nDCG@10"] >= best["metrics"]["nDCG@10"]]
    verdict = (f"The best condition here, `{best_name}` at {best['metrics']['nDCG@10']:.3f}, is above "
               f"{len(beaten)} of the {len(published)} published figures")
    verdict += f" and not above {', '.join(not_beaten)}." if not_beaten else "."
    lines = [
        f"BEIR SciFact, {beir['split']} split, {beir['queries']} queries, embedder "
        f"`{beir['embedder']['name']}`, metrics by {beir['metric_tool']}; from `{SCIFACT}` "
        f"(run `{beir['run_dir']}`, finished {document['finished'][:10]}; the machine's load "
        "is in that file, so compare latencies within the table only).",
        "",
        _markdown(pd.DataFrame(rows)),
        "",
        "Published for comparison: " + "; ".join(f"{n} {p['nDCG@10']:.3f}" for n, p in published.items())
        + ". " + verdict,
    ]
    return "\n".join(lines) + "\n"


def reader_ceiling(root: Path) -> str:
    document = _load(root, READER_CEILING)
    rows = pd.DataFrame(document["by_split"])
    rows = rows[(rows["corpus"] == "fixture") & (rows["condition"] == "oracle-source")]
    passed = rows.pivot(index="style", columns="split", values="passed")
    cases = rows.pivot(index="style", columns="split", values="cases")
    cost = rows[rows["split"] == "all"].set_index("style")
    chosen = document["dev_choice"]["style"]
    table = []
    for style in passed.index:
        label = f"`{style}`" + (" (default, chosen on dev)" if style == chosen else "")
        table.append({"style": label,
                      **{f"{split} (of {int(cases.loc[style, split])})": int(passed.loc[style, split])
                         for split in ("dev", "test", "all")},
                      "model s / answer": f"{cost.loc[style, 'seconds_per_answer']:.1f}",
                      "calls / answer": f"{cost.loc[style, 'calls_per_answer']:.2f}"})
    return (f"Oracle-source passes on the fixture's tasks per split, from `{READER_CEILING}` "
            f"(study `{document['study']}`):\n\n" + _markdown(pd.DataFrame(table)) + "\n")


def published_ladder(root: Path) -> str:
    runs = sorted((root / PUBLISHED_RUNS).glob("*/*/scorecard.json"))
    if not runs:
        raise ReadmeError(f"no published ladder run under {PUBLISHED_RUNS}")
    path = runs[-1]
    document = json.loads(path.read_text(encoding="utf-8"))
    cells = pd.DataFrame(document["scorecard"]["cells"])
    totals = cells[cells["question_type"] == "all"].set_index("condition")[["passed", "cases"]]
    table = [{"condition": f"`{name}`", "passed": int(row.passed), "of": int(row.cases)}
             for name, row in totals.iterrows()]
    relative = path.relative_to(root).as_posix()
    return (f"The published ladder, from `{relative}` (grader `{document['grader_version']}`):\n\n"
            + _markdown(pd.DataFrame(table)) + "\n")


def downstream_ladder(root: Path) -> str:
    document = _load(root, DOWNSTREAM)
    rows = []
    for row in document["downstream_by_condition"]:
        interval = ("" if row["condition"] == row["control"]
                    else f"{row['gain']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]")
        rows.append({"condition": f"`{row['condition']}`", "passed": f"{row['passed']} of {row['tasks']}",
                     "paired difference vs control [95%]": interval,
                     "prompt tokens": f"{row['mean_prompt_tokens']:,.0f}",
                     "s / answer": f"{row['mean_answer_seconds']:.0f}"})
    return (f"Downstream work products executed by their harnesses, {len(document['tasks'])} tasks, "
            f"reader `{document['reader']}` ({document['style']}), grader `{document['grader_version']}`, "
            f"from `{DOWNSTREAM}` (run `{document['run']}`); the control `no-memory` is asked in the "
            "same style and format, without history:\n\n" + _markdown(pd.DataFrame(rows)) + "\n")


RENDERERS: dict[str, Callable[[Path], str]] = {
    "scifact": scifact, "reader-ceiling": reader_ceiling, "ladder": published_ladder,
    "downstream": downstream_ladder,
}


def render(text: str, root: Path) -> str:
    """`text` with every results section re-rendered from its artifact."""
    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in RENDERERS:
            raise ReadmeError(f"README has a results section {name!r} with no renderer; "
                              f"known: {', '.join(RENDERERS)}")
        return match.group(1) + RENDERERS[name](root) + match.group(4)

    return _SECTION.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0] if argv else ".").resolve()
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    rendered = render(text, root)
    if rendered != text:
        readme.write_text(rendered, encoding="utf-8")
        print(f"rewrote the results sections of {readme}")
    else:
        print(f"{readme} is up to date with its artifacts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
