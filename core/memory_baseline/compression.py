"""Context compression: the admitted passages cut to the sentences that bear on the question.

Reading is the cost of an answer on a laptop CPU (prompt tokens are read at a
few dozen a second), and most sentences of an admitted chunk do not bear on the
question. Compression runs after assembly, so the admitted sources are the same
as without it (recall at admitted cannot change); it only shortens their text:

- each passage is split into sentences by the chunker's own rule;
- every sentence is ranked twice, by the cosine of its embedding with the
  question's (the index's encoder, batched over all passages of the question)
  and by how many of the question's words it holds; the two ranks are fused by
  reciprocal rank (k = 10), as retrieval fuses its two paths;
- a passage keeps its first sentence (a title, a date line: what a temporal
  question turns on), every sentence holding an identifier the question names,
  and its best-scoring sentences up to `keep` of its sentences (at least one);
- kept sentences stay in document order, a gap marked by " … ".

No model call, no label: the rule sees the question and the passages only. Its
effect on answers is measured as the named conditions ``hybrid-compressed`` and
``oracle-source-compressed`` against their uncompressed twins.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .chunking import sentence_boundaries
from .embedders import Embedder
from .identifiers import extract_identifiers
from .passages import Passage

GAP = " … "


@dataclass(frozen=True)
class Compressed:
    passages: tuple[Passage, ...]
    sentences_before: int
    sentences_kept: int
    chars_before: int
    chars_after: int

    def to_dict(self) -> dict:
        return {"sentences_before": self.sentences_before, "sentences_kept": self.sentences_kept,
                "chars_before": self.chars_before, "chars_after": self.chars_after}


def sentences(text: str) -> list[str]:
    starts = sentence_boundaries(text)
    ends = [*starts[1:], len(text)]
    return [text[a:b].strip() for a, b in zip(starts, ends, strict=True) if text[a:b].strip()]


_WORD = re.compile(r"[a-z0-9][a-z0-9_-]+")
# Words too common to say what a sentence is about (English function words and question words).
_STOP = frozenset("""a an and are as at be been but by can could did do does for from had has have how i
if in into is it its of on or our so that the their them then there these they this those to was we
were what when where which who why will with would you your about after before not no any all also
more most than up out over under still yet again""".split())
FUSION_K = 10


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _fused(cosine: np.ndarray, overlap: np.ndarray) -> np.ndarray:
    """Reciprocal-rank fusion of the two rankings (higher is better), ties by position."""
    fused = np.zeros(len(cosine))
    for values in (cosine, overlap):
        order = np.argsort(-values, kind="stable")
        ranks = np.empty(len(values))
        ranks[order] = np.arange(1, len(values) + 1)
        fused += 1.0 / (FUSION_K + ranks)
    return fused


def compress(query: str, passages: Sequence[Passage], embedder: Embedder, keep: float) -> Compressed:
    """`passages` with each text cut to its first, named and best sentences (see the module doc)."""
    if not 0 < keep <= 1:
        raise ValueError(f"compression keep must be in (0, 1], got {keep}")
    split = [sentences(p.text) for p in passages]
    flat = [s for group in split for s in group]
    if not flat:
        return Compressed(tuple(passages), 0, 0, 0, 0)
    vectors = np.asarray(embedder.embed_documents(flat), dtype=np.float32)
    question = np.asarray(embedder.embed_query(query), dtype=np.float32)
    scores = vectors @ question / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(question) + 1e-12)
    named = {i.lower() for i in extract_identifiers(query)}
    wanted = _words(query)
    overlap = np.array([len(wanted & _words(s)) for s in flat], dtype=np.float64)
    out, position, kept_total = [], 0, 0
    for passage, group in zip(passages, split, strict=True):
        mine = _fused(scores[position:position + len(group)], overlap[position:position + len(group)])
        position += len(group)
        if len(group) <= 2:
            out.append(passage)
            kept_total += len(group)
            continue
        chosen = {0} | {i for i, s in enumerate(group) if named & {x.lower() for x in extract_identifiers(s)}}
        budget = max(1, math.ceil(keep * len(group)))
        for index in np.argsort(-mine, kind="stable"):
            if len(chosen) >= budget:
                break
            chosen.add(int(index))
        pieces, previous = [], -1
        for index in sorted(chosen):
            if previous >= 0 and index != previous + 1:
                pieces.append(GAP.strip())
            pieces.append(group[index])
            previous = index
        if previous != len(group) - 1:
            pieces.append(GAP.strip())
        out.append(replace(passage, text=" ".join(pieces)))
        kept_total += len(chosen)
    return Compressed(tuple(out), len(flat), kept_total, sum(len(p.text) for p in passages),
                      sum(len(p.text) for p in out))
