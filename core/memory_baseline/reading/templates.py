"""Template hashes: what an LLM reader's identity records about how it asks.

The answer cache keys an answer by the reader's identity and the exact prompt. A prompt
text is covered by the key already; these hashes cover what shapes a reply outside it
(schemas, grammars, the patterns that pick them, the shared system text), so that a
changed template is a different reader and its old cached answers are not served.
The published book rebuilds from cached answers keyed by these values: any change to
what they hash is a new reader.
"""

from __future__ import annotations

import hashlib
import json

from .grammars import GRAMMAR_VERSION
from .kinds import ARTIFACT_LANGUAGES, FOCUSED_PATTERNS, ITEMISED_PATTERNS, SHELL
from .plain import ANSWER_REMINDER, SYSTEM_PROMPT, SYSTEM_PROMPT_NO_HISTORY
from .prompts import (
    ASK_ARTIFACT,
    ASK_CLAIMS,
    ASK_DATED,
    ASK_FOCUSED,
    ASK_FOCUSED_KIND,
    ASK_STRUCTURED,
    STATUS_GUIDE,
    SYSTEM_DATED,
)
from .schemas import MAX_ANSWER_CHARS, MAX_CLAIMS, MAX_EVIDENCE, MAX_QUOTE_CHARS, STATUSES

# Recorded in every LLM reader's identity: a changed template is a different reader.
PROMPT_TEMPLATE_SHA256 = hashlib.sha256(
    (SYSTEM_PROMPT + SYSTEM_PROMPT_NO_HISTORY + ANSWER_REMINDER).encode("utf-8")
).hexdigest()[:16]

_SHARED_TEMPLATE = (SYSTEM_DATED, STATUS_GUIDE, ASK_ARTIFACT, STATUSES, ARTIFACT_LANGUAGES, MAX_EVIDENCE,
                    MAX_CLAIMS, MAX_QUOTE_CHARS, MAX_ANSWER_CHARS, GRAMMAR_VERSION)


def template_sha256(style: str, kind: str | None = None) -> str:
    """Recorded in the reader identity: a changed template or grammar is a different reader.

    Per style, so that adding or changing one style leaves the others' cached answers valid;
    for itemised also per `kind` it reads (`itemised_kind`), so that changing how it reads
    promises leaves its work answers valid. (The asks themselves are in the prompt, which the
    answer cache keys on; this hash covers what shapes the reply outside it.)
    """
    if style == "itemised" and kind is not None:
        # What picks the grammar of a question is part of it: the cache keys on the prompt only.
        shaped = {"work": ("Follows ", "bash", SHELL.pattern, ARTIFACT_LANGUAGES),
                  "items": ("evidence and answer, no status",)}[kind]
        material = json.dumps([_SHARED_TEMPLATE, "itemised", kind, shaped], ensure_ascii=False)
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]
    own: dict[str, tuple] = {
        "dated": (ASK_DATED,),
        "structured": (ASK_STRUCTURED,),
        "two-step": (ASK_CLAIMS, ASK_STRUCTURED),
        "focused": (ASK_FOCUSED, ASK_FOCUSED_KIND, [r.pattern for r in FOCUSED_PATTERNS]),
        "itemised": ([r.pattern for r in ITEMISED_PATTERNS],),
    }
    material = json.dumps([_SHARED_TEMPLATE, own.get(style, ())], ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]
