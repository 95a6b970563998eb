"""Context assembly: where retrieval becomes a decision about what the reader sees.

Walk the ranked candidates; drop exact duplicates (text equal after
whitespace and case normalisation); respect an optional per-source quota;
admit at most `max_passages` passages while the *complete rendered prompt*
(instructions, source labels, separators, question) stays within
`token_budget` tokens as counted by the reader's own tokenizer — not
characters divided by four. The caller supplies that count as a function of
the admitted passages, so the number in the trace is the number the reader
will be charged.

The top-ranked passage is never dropped for budget while lower-ranked ones
are admitted: if it alone exceeds the budget, the configured policy decides —
``truncate`` keeps its longest prefix that fits (found by bisection on
characters, counted exactly; the trace records the chunk and both lengths),
``drop`` admits nothing at all rather than letting a lower-ranked passage take
its place (the trace records `top_dropped`). Later passages that do not fit are
skipped and recorded as budget drops; smaller ones further down may still fit.

The order of candidates is retrieval's, with one correction
(`candidates_in_order`): a question that names a document (`PEP 8`, `adr-031`)
gets that document's best chunk first, one per named document, so a reranker
cannot push the named file behind others. Which chunks a question names is
decided once, by retrieval's identifier priority (`RetrievalResult.priority`);
assembly only reads it. Finally the admitted passages are ordered for the reader
(`rank`, `best-at-edges` for position experiments, or `date`), and the
prompt is counted once more in that final order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from .config import ContextConfig
from .passages import Passage
from .retrieval import NAMES_SOURCE, RetrievalResult

ORDERS = ("rank", "best-at-edges", "date")
# What a trace records of each admitted passage (its span and terms are retrieval's).
TRACE_FIELDS = ("chunk_id", "source_id", "text", "section", "kind", "artifact_date", "rank", "truncated")


@dataclass(frozen=True)
class ContextTrace:
    admitted: tuple[Passage, ...]
    duplicate_drops: tuple[str, ...]
    budget_drops: tuple[str, ...]
    quota_drops: tuple[str, ...]
    not_considered: tuple[str, ...]  # left after the passage limit was reached
    truncated: str | None
    prompt_tokens: int
    token_budget: int
    max_passages: int
    order: str
    oversize_policy: str
    tokenizer: str
    truncated_chars: tuple[int, int] | None = None  # (kept, original) of the truncated passage
    top_dropped: str | None = None  # the top-ranked chunk, when policy `drop` left the context empty

    @property
    def admitted_sources(self) -> list[str]:
        return list(dict.fromkeys(p.source_id for p in self.admitted))

    @property
    def source_coverage(self) -> dict[str, int]:
        coverage: dict[str, int] = {}
        for passage in self.admitted:
            coverage[passage.source_id] = coverage.get(passage.source_id, 0) + 1
        return coverage

    def to_dict(self) -> dict:
        data = asdict(self)
        data["admitted"] = [{name: getattr(p, name) for name in TRACE_FIELDS} for p in self.admitted]
        data["admitted_sources"] = self.admitted_sources
        data["source_coverage"] = self.source_coverage
        return data


PromptCounter = Callable[[Sequence[Passage]], int]


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def order_passages(passages: Sequence[Passage], order: str) -> list[Passage]:
    if order == "rank":
        return sorted(passages, key=lambda p: p.rank)
    if order == "date":
        return sorted(passages, key=lambda p: (p.artifact_date or "9999", p.rank))
    if order == "best-at-edges":
        # 1st first, 2nd last, 3rd second, 4th second-to-last... (the middle gets the weakest)
        ranked = sorted(passages, key=lambda p: p.rank)
        front, back = [], []
        for i, passage in enumerate(ranked):
            (front if i % 2 == 0 else back).append(passage)
        return front + back[::-1]
    raise ValueError(f"unknown context order {order!r}; choose one of {ORDERS}")


def assemble(
    candidates: Sequence[Passage],
    config: ContextConfig,
    count_prompt_tokens: PromptCounter,
    *,
    tokenizer: str,
) -> ContextTrace:
    """Admit passages from `candidates` (in rank order) under `config`."""
    if config.oversize_policy not in ("truncate", "drop"):
        raise ValueError(f"unknown oversize policy {config.oversize_policy!r}: truncate or drop")
    if config.order not in ORDERS:
        raise ValueError(f"unknown context order {config.order!r}; choose one of {ORDERS}")
    base_tokens = count_prompt_tokens([])
    if base_tokens > config.token_budget:
        raise ValueError(
            f"the prompt without any passage needs {base_tokens} tokens, over the budget of "
            f"{config.token_budget}"
        )
    admitted: list[Passage] = []
    seen_texts: set[str] = set()
    per_source: dict[str, int] = {}
    duplicates, budget_drops, quota_drops, not_considered = [], [], [], []
    truncated: str | None = None
    truncated_chars: tuple[int, int] | None = None
    top_dropped: str | None = None
    current_tokens = base_tokens

    for position, candidate in enumerate(candidates, 1):
        if len(admitted) >= config.max_passages:
            not_considered.extend(c.chunk_id for c in candidates[position - 1:])
            break
        key = normalise(candidate.text)
        if key in seen_texts:
            duplicates.append(candidate.chunk_id)
            continue
        quota = config.per_source_quota
        if quota is not None and per_source.get(candidate.source_id, 0) >= quota:
            quota_drops.append(candidate.chunk_id)
            continue
        passage = replace(candidate, rank=position, truncated=False)
        tokens = count_prompt_tokens([*admitted, passage])
        if tokens > config.token_budget:
            if admitted:
                budget_drops.append(candidate.chunk_id)
                continue
            fitted = (None if config.oversize_policy == "drop" else
                      _truncate_to_fit(passage, admitted, config.token_budget, count_prompt_tokens))
            if fitted is None:
                # The top-ranked passage cannot be shown: admit nothing rather than let a
                # lower-ranked passage stand in for it.
                budget_drops.append(candidate.chunk_id)
                top_dropped = candidate.chunk_id
                not_considered.extend(c.chunk_id for c in candidates[position:])
                break
            truncated, truncated_chars = fitted.chunk_id, (len(fitted.text), len(passage.text))
            passage = fitted
            tokens = count_prompt_tokens([passage])
        seen_texts.add(key)
        per_source[candidate.source_id] = per_source.get(candidate.source_id, 0) + 1
        admitted.append(passage)
        current_tokens = tokens

    ordered = order_passages(admitted, config.order)
    # The same passages in the same order were counted when the last one was admitted.
    unchanged = [p.chunk_id for p in ordered] == [p.chunk_id for p in admitted]
    final_tokens = current_tokens if unchanged or not ordered else count_prompt_tokens(ordered)
    # Reordering can move a token boundary; never hand the reader more than the budget.
    while ordered and final_tokens > config.token_budget:
        weakest = max(ordered, key=lambda p: p.rank)
        ordered.remove(weakest)
        budget_drops.append(weakest.chunk_id)
        final_tokens = count_prompt_tokens(ordered)
    return ContextTrace(
        admitted=tuple(ordered), duplicate_drops=tuple(duplicates), budget_drops=tuple(budget_drops),
        quota_drops=tuple(quota_drops), not_considered=tuple(not_considered), truncated=truncated,
        prompt_tokens=final_tokens, token_budget=config.token_budget,
        max_passages=config.max_passages, order=config.order,
        oversize_policy=config.oversize_policy, tokenizer=tokenizer,
        truncated_chars=truncated_chars, top_dropped=top_dropped,
    )


def _truncate_to_fit(
    passage: Passage, admitted: list[Passage], budget: int, count: PromptCounter
) -> Passage | None:
    """Longest prefix of the passage whose prompt fits, or None if not even a line fits."""
    low, high = 0, len(passage.text)
    best = 0
    while low <= high:
        middle = (low + high) // 2
        trial = replace(passage, text=passage.text[:middle], truncated=True)
        if count([*admitted, trial]) <= budget:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    if best == 0 or not passage.text[:best].strip():
        return None
    return replace(passage, text=passage.text[:best], truncated=True)


def candidates_in_order(result: RetrievalResult) -> list[Passage]:
    """The final ranked list of a retrieval as passages, named documents first.

    The best-ranked chunk of each document the question names (by file name or folder,
    as retrieval's identifier priority recorded it in `result.priority`) comes first, one
    per document, then the other named chunks (a named file's before a named folder's),
    then every other candidate, each in the final order. With identifier priority on and
    no reranker this changes nothing but the interleaving of several named documents.
    """
    final = [c for c in result.final.candidates if c.chunk_id in result.passages]
    named = {cid: level for cid, level in result.priority.items() if level >= NAMES_SOURCE}
    ranked = sorted(final, key=lambda c: -named.get(c.chunk_id, 0))  # stable: final order within a level
    leaders: dict[str, str] = {}
    for candidate in ranked:
        if candidate.chunk_id in named:
            leaders.setdefault(candidate.source_id, candidate.chunk_id)
    first = set(leaders.values())
    rest = [c.chunk_id for c in ranked if c.chunk_id not in first]
    return [result.passages[cid] for cid in [*leaders.values(), *rest]]
