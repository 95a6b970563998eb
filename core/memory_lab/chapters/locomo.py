"""Chapter 12: the baseline on LoCoMo, beside the figures published for it.

Reads only committed results files: `benchmarks/results/locomo-retrieval.json` (the
retrieval-level study, `memory_lab.ladders.locomo_retrieval`), `locomo-published.json`
(the LoCoMo and Mem0 papers' figures with their units and sources) and, once the
answer-level study has been read, `locomo-answers.json`. The data itself (CC BY-NC) is
never in the repository, so the chapter executes without it and without an index.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_lab.corpora.locomo import CATEGORIES
from memory_lab.studies.display import pivot, show_figure, show_table, table_frame  # noqa: F401 - called by the chapter
from memory_lab.studies.setup import display_path, repo_path  # noqa: F401 - called by the chapter

CONDITION_ORDER = ("lexical", "dense", "hybrid", "best")
CATEGORY_ORDER = ("all", "1-4", "1", "2", "3", "4", "5")


def load(path: str | Path) -> dict[str, Any] | None:
    """A results file as a dict, or None when it has not been written yet."""
    target = repo_path(path)
    return json.loads(target.read_text(encoding="utf-8")) if target.is_file() else None


def category_label(category: str) -> str:
    if category.isdigit():
        return f"{category} {CATEGORIES[int(category)]}"
    return {"all": "all", "1-4": "1-4 answerable"}.get(category, category)


def cell(value: Mapping[str, Any] | None) -> str | None:
    """"0.91 [0.89, 0.93]" from a bootstrap mean, or None."""
    if not value or value.get("mean") is None:
        return None
    if value.get("low") is None:
        return f"{value['mean']:.2f}"
    return f"{value['mean']:.2f} [{value['low']:.2f}, {value['high']:.2f}]"


def source_caption(text: str, path: str) -> str:
    """A caption naming the results file (the study's rows name LoCoMo's questions and stay out
    of the repository, so no run directory is cited)."""
    return f"{text.rstrip('.')}. Source: `{path}`."


def status_line(document: Mapping[str, Any]) -> str:
    data = document.get("data", {})
    state = ("complete" if document.get("complete")
             else "unfinished (the rows hold the questions searched so far)")
    excluded = len(data.get("excluded", []))
    best = document.get("setup", {}).get("best", {}).get("choice")
    return (f"Study `{document['study']}`: {state}; {document['questions']} questions searched of "
            f"{data.get('questions', '?')} in the release ({excluded} cite no turn of their conversation "
            f"and are left out). `best` chose {json.dumps(best) if best else '(not tuned yet)'} on the "
            "dev conversations.")


def recall_rows(document: Mapping[str, Any], scope: str = "all") -> list[dict[str, Any]]:
    """Long rows: condition, category, and the four recalls as "mean [low, high]"."""
    rows = []
    for row in document["table"]:
        if row["scope"] != scope:
            continue
        rows.append({"condition": row["condition"], "category": category_label(row["category"]),
                     "questions": row["questions"],
                     "sessions, candidates": cell(row["session_recall_at_candidates"]),
                     "sessions, admitted": cell(row["session_recall_at_admitted"]),
                     "turns, candidates": cell(row["turn_recall_at_candidates"]),
                     "turns, admitted": cell(row["turn_recall_at_admitted"])})
    return rows


TUNED = "best"
TUNED_LABEL = "best (test conversations)"


def scoped(document: Mapping[str, Any], scope: str) -> list[dict[str, Any]]:
    """The table's rows of `scope`; with "all", `best` comes from the test conversations (the only
    ones it is reported on) under its own label."""
    rows = [dict(r) for r in document["table"] if r["scope"] == scope]
    if scope == "all":
        rows += [{**r, "condition": TUNED_LABEL} for r in document["table"]
                 if r["scope"] == "test" and r["condition"] == TUNED]
    return rows


def _order(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    names = [*CONDITION_ORDER, TUNED_LABEL]
    return [c for c in names if any(r["condition"] == c for r in rows)]


def recall_table(document: Mapping[str, Any], measure: str, scope: str = "all") -> Any:
    """One measure (e.g. "turn_recall_at_admitted") as condition x category."""
    rows = [{"condition": r["condition"], "category": category_label(r["category"]),
             "value": cell(r[measure])} for r in scoped(document, scope)]
    return pivot(rows, "condition", "category", "value", row_order=_order(rows),
                 column_order=[category_label(c) for c in CATEGORY_ORDER])


def recall_figure(document: Mapping[str, Any], measure: str = "turn_recall_at_admitted",
                  scope: str = "all") -> Any:
    """Bars per category and condition with their 95% intervals."""
    import matplotlib.pyplot as plt

    rows = [r for r in scoped(document, scope) if r["category"] != "1-4"]
    conditions = _order(rows)
    categories = [c for c in CATEGORY_ORDER if any(r["category"] == c for r in rows)]
    fig, ax = plt.subplots(figsize=(8.5, 3.4))
    width = 0.8 / max(len(conditions), 1)
    for i, condition in enumerate(conditions):
        part = {r["category"]: r[measure] for r in rows if r["condition"] == condition}
        xs = [j + i * width for j, c in enumerate(categories) if c in part]
        means = [part[c]["mean"] for c in categories if c in part]
        errors = [[part[c]["mean"] - part[c]["low"] for c in categories if c in part],
                  [part[c]["high"] - part[c]["mean"] for c in categories if c in part]]
        ax.bar(xs, means, width, yerr=errors, capsize=2, label=condition)
    ax.set_xticks([j + width * (len(conditions) - 1) / 2 for j in range(len(categories))],
                  [category_label(c) for c in categories], fontsize=8)
    ax.set_ylabel(measure.replace("_", " "))
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def paired_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"comparison": f"{p['upper']} - {p['lower']}", "measure": p["measure"].replace("_", " "),
             "scope": p["scope"], "questions": p["questions"],
             "difference": f"{p['difference']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]",
             "separated": p["separated"]} for p in document["paired"]]


def _ours_at(document: Mapping[str, Any], condition: str, measure: str, scope: str = "all") -> dict[str, Any]:
    """category -> mean of one measure for one condition (overall under "overall")."""
    names = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial",
             "all": "overall"}
    return {names[r["category"]]: r[measure]["mean"] for r in document["table"]
            if r["condition"] == condition and r["scope"] == scope and r["category"] in names}


def beside_published(document: Mapping[str, Any], published: Mapping[str, Any],
                     condition: str = "hybrid") -> list[dict[str, Any]]:
    """LoCoMo's published recall@k rows and ours for `condition`, per category, with their units."""
    columns = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial", "overall")
    rows = []
    for entry in published["retrieval"]:
        rows.append({"system": entry["system"], "retrieved unit": entry["retrieved_unit"], "k": entry["k"],
                     "recalls": "evidence sessions" if entry["retrieved_unit"] == "session summary"
                     else "evidence turns",
                     **{c: entry["figures"].get(c) / 100 for c in columns},
                     "reader": entry["reader"], "source": f"LoCoMo (ACL 2024) {entry['source']['table']}"})
    conversations = document.get("data", {}).get("conversations", {}).values()
    chunks = sum(c.get("chunks") or 0 for c in conversations)
    retrieved = (f"chunk (about {sum(c['turns'] for c in conversations) / chunks:.0f} turns)" if chunks
                 else "chunk")
    ours = [("turn", "turn_recall_at_top{k}_chunks", retrieved),
            ("session", "session_recall_at_top{k}_chunks", retrieved)]
    for unit, template, retrieved in ours:
        for k in (1, 5, 10, 25):
            values = _ours_at(document, condition, template.format(k=k))
            rows.append({"system": f"this baseline, {condition}", "retrieved unit": retrieved, "k": k,
                         "recalls": f"evidence {unit}s", **{c: values.get(c) for c in columns},
                         "reader": "none (retrieval only)", "source": "this study"})
        for stage in ("admitted", "candidates"):
            values = _ours_at(document, condition, f"{unit}_recall_at_{stage}")
            k = document.get("context", {}).get(condition, {})
            depth = k.get("mean_admitted_passages") if stage == "admitted" else k.get("mean_candidate_chunks")
            rows.append({"system": f"this baseline, {condition} ({stage})", "retrieved unit": retrieved,
                         "k": depth, "recalls": f"evidence {unit}s", **{c: values.get(c) for c in columns},
                         "reader": "none (retrieval only)", "source": "this study"})
    return rows


def published_answer_rows(published: Mapping[str, Any], unit_contains: str) -> list[dict[str, Any]]:
    """The published answer-level figures of one unit (e.g. "token F1" or "Judge")."""
    rows = []
    for entry in published["answers"]:
        if unit_contains not in entry["unit"]:
            continue
        rows.append({"system": entry["system"], "k": entry["k"], "reader": entry["reader"],
                     **entry["figures"], "unit": entry["unit"],
                     "source": f"{entry['source']['paper'].split(',')[0]} {entry['source']['table']}"})
    return rows


def answer_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer study's table: condition x category, instrument pass and LoCoMo's metric."""
    rows = []
    for row in document["table"]:
        rows.append({"condition": row["condition"],
                     "category": category_label(row["category"]) if row["category"] != "weighted"
                     else "all, weighted to LoCoMo's mix", "questions": row["questions"],
                     "instrument pass": cell(row["instrument_pass"]), "LoCoMo F1": cell(row["locomo_f1"]),
                     "LoCoMo F1, abstention = not mentioned":
                         cell(row["locomo_f1_abstention_as_not_mentioned"])})
    return rows


def summary_sentences(document: Mapping[str, Any], scope: str = "all") -> list[str]:
    """What the table says, computed: overall recalls per condition and the weakest category."""
    lines = []
    rows = scoped(document, scope)
    overall = {r["condition"]: r for r in rows if r["category"] == "all"}
    for condition in _order(rows):
        r = overall[condition]
        lines.append(f"`{condition}` over {r['questions']} questions: evidence turns at admitted "
                     f"{cell(r['turn_recall_at_admitted'])}, at candidates "
                     f"{cell(r['turn_recall_at_candidates'])}; "
                     f"evidence sessions at admitted {cell(r['session_recall_at_admitted'])}.")
    chunks = [c.get("chunks") for c in document.get("data", {}).get("conversations", {}).values()]
    if chunks and all(chunks):
        depth = {c: v["mean_candidate_chunks"] for c, v in document.get("context", {}).items()}
        lines.append(f"A conversation is cut into {min(chunks)} to {max(chunks)} chunks, and the fused "
                     "candidate list holds on average "
                     + ", ".join(f"{n:.0f} (`{c}`)" for c, n in depth.items())
                     + ", so recall at candidates is close to the whole conversation's; what the reader "
                       "is admitted is the measure that discriminates.")
    same = sorted((r for r in document["table"] if r["scope"] == "test" and r["category"] == "all"),
                  key=lambda r: -r["turn_recall_at_admitted"]["mean"])
    if same:
        lines.append("On the test conversations, where every condition searched the same "
                     f"{same[0]['questions']} questions, evidence turns at admitted rank "
                     + ", ".join(f"`{r['condition']}` {cell(r['turn_recall_at_admitted'])}"
                                 for r in same) + ".")
    per_category = [r for r in rows if r["category"].isdigit() and r["condition"] == "hybrid"]
    if per_category:
        weakest = min(per_category, key=lambda r: r["turn_recall_at_admitted"]["mean"])
        lines.append("For `hybrid` the weakest category at admitted is "
                     f"{category_label(weakest['category'])} "
                     f"({cell(weakest['turn_recall_at_admitted'])} of its evidence turns).")
    return lines


def answer_status(document: Mapping[str, Any] | None, path: str) -> str:
    if document is None:
        return (f"The answer level is being read: `{path}` is not written yet. The study "
                "(`memory-lab study locomo answers run`) reads a seeded sample of 200 questions, 40 per "
                "category over all ten conversations, under no-memory, hybrid and oracle-source with the "
                "default reader, and scores each answer with the instrument and with LoCoMo's own metric.")
    state = "complete" if document.get("complete") else "unfinished (the rows hold the answers read so far)"
    readers = ", ".join(str(r.get("name", r)) if isinstance(r, Mapping) else str(r)
                        for r in document.get("readers", [])) or "?"
    return (f"Study `{document['study']}`: {state}; {document['questions']} questions, {document['cases']} "
            f"answers, read by {readers}.")


def sequence(values: Sequence[Any]) -> str:
    return ", ".join(str(v) for v in values)
