"""``bench compression``: what sentence compression saves and what evidence it keeps, without reading.

For every answerable task of each corpus the whole expected files are admitted
as `oracle-source` admits them, then compressed at each `keep` share
(`memory_baseline.compression`). Measured per task: the exact prompt tokens
before and after (the reader's own tokenizer, no weights loaded) and whether
each evidence quote of the task is still in the compressed text. A compression
that loses evidence cannot keep the oracle pass rate, so this is the cheap
screen before the reading runs (`oracle-source-compressed` in the ladder).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_baseline.baseline import Baseline
from memory_baseline.config import Config
from memory_baseline.context_sources import given
from memory_baseline.ingest import discover
from memory_instrument import load_tasks
from memory_lab.bench.common import machine_description
from memory_lab.ladders.oracles import oracle_source_passages

KEEPS = (0.25, 0.4, 0.6)


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def bench_compression(conn: Any, corpora: Mapping[str, tuple[str | Path, str | Path]], *,
                      keeps: Sequence[float] = KEEPS, reader: str = "qwen-1.5b",
                      split: str | None = "dev") -> dict[str, Any]:
    """Per corpus and keep share: prompt tokens before/after and the share of evidence quotes kept."""
    base = Config().with_overrides(reader={"name": reader})
    rows: list[dict[str, Any]] = []
    for name, (history, tasks_path) in corpora.items():
        corpus = {r.source_id: r for r in discover(Path(history), max_bytes=base.max_file_bytes).sources}
        tasks = [t for t in load_tasks(tasks_path) if t.expected_sources and t.answer.evidence
                 and (split is None or t.metadata.get("split") == split)]
        plain = Baseline(conn, base)
        for task in tasks:
            source = given("oracle-source", oracle_source_passages(task, corpus))
            before = plain.search(task.query, task.as_of, source=source)
            for keep in keeps:
                squeezed = Baseline(conn, base.with_overrides(
                    context={"compression": "sentences", "compression_keep": keep}), reader=plain.reader)
                after = squeezed.search(task.query, task.as_of, source=source)
                admitted_before = _normal(" ".join(p.text for p in before.context.admitted))
                admitted_after = _normal(" ".join(p.text for p in after.context.admitted))
                quotes = [_normal(e.quote) for e in task.answer.evidence]
                present = [q for q in quotes if q in admitted_before]  # quotes the budget left in
                rows.append({"corpus": name, "task_id": task.id, "question_type": task.question_type,
                             "keep": keep, "tokens_before": before.context.prompt_tokens,
                             "tokens_after": after.context.prompt_tokens,
                             "quotes": len(present),
                             "quotes_kept": sum(q in admitted_after for q in present)})
    summary = []
    for name in corpora:
        for keep in keeps:
            mine = [r for r in rows if r["corpus"] == name and r["keep"] == keep]
            if not mine:
                continue
            quotes = sum(r["quotes"] for r in mine)
            summary.append({
                "corpus": name, "keep": keep, "tasks": len(mine),
                "mean_tokens_before": round(statistics.fmean(r["tokens_before"] for r in mine), 1),
                "mean_tokens_after": round(statistics.fmean(r["tokens_after"] for r in mine), 1),
                "token_ratio": round(sum(r["tokens_after"] for r in mine)
                                     / sum(r["tokens_before"] for r in mine), 3),
                "evidence_quotes": quotes,
                "evidence_kept": round(sum(r["quotes_kept"] for r in mine) / quotes, 3) if quotes else None,
                "tasks_with_all_evidence": sum(r["quotes_kept"] == r["quotes"] for r in mine),
            })
    return {"benchmark": "compression", "machine": machine_description(conn),
            "parameters": {"keeps": list(keeps), "reader": reader, "split": split,
                           "corpora": {n: [str(h), str(t)] for n, (h, t) in corpora.items()},
                           "context": "oracle-source (the whole expected files under the token budget)"},
            "summary": summary, "rows": rows,
            "finished": datetime.now(UTC).isoformat(timespec="seconds")}
