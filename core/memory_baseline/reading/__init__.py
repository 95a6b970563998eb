"""The reader: turn admitted passages into an answer that names its evidence.

Every reader renders its prompt through one of the reading styles and counts it with
its own tokenizer; context assembly uses that same count, so the budget in the trace
is the prompt the reader really received. The plain prompt asks the model to answer
only from the supplied history, cite source ids as ``[path]``, keep what was proposed
apart from what was decided, and say "insufficient evidence" when the sources do not
answer; the other styles are the reader engineering measured in the reader chapter.

One module per job, in the order an answer passes through them:

- `answers`: `Answer`, `Usage`, the `Reader` protocol, `ReaderError`.
- `kinds`: what a question asks for, read from its words (`question_kind`,
  `itemised_kind`, `is_work_request`), and which style reads it (`routed_style`).
- `plain`, `prompts`, `styles`: the control prompt, the dated prompt and each style's
  ask, and the table of styles (`STYLES`, `style_messages`).
- `schemas`, `grammars`: the JSON shape of a structured reply and the llguidance
  grammar it is decoded under.
- `runner`: the calls a style makes (two-step makes two); `rendering`: the reply as answer
  text, quotes checked against their sources.
- `citations`: cited ids parsed, checked against the admitted passages, and enforced.
- `templates`: the template hashes recorded in a reader's identity.
- `generation`: what both LLM backends share: routing, settings, the answer cache.
- `backends`: the readers by name (`get_reader`): llama.cpp, Ollama, extractive; `words`
  holds the extractive reader's stop list and stemmer.

Without history (no-memory) every style keeps its own layout, ask and output format
and only says that no records are available, so the control differs from the history
conditions by the history alone; with history consulted and nothing admitted, an LLM
reader abstains without a model call. LLM answers are cached by reader identity and
exact prompt (`memory_baseline.answer_cache`).
"""

from .answers import INSUFFICIENT, Answer, Reader, ReaderError, Usage, is_abstention, no_evidence_answer
from .backends import READERS, ExtractiveReader, LocalLLMReader, OllamaReader, get_reader
from .citations import CitationCheck, check_citations, parse_citations, split_citations
from .grammars import reply_grammar, split_reply, work_grammar
from .kinds import (
    ARTIFACT_LANGUAGES,
    is_work_request,
    itemised_kind,
    question_kind,
    requested_languages,
    routed_style,
    work_languages,
)
from .plain import build_messages
from .prompts import NO_SOURCES, QUESTION_KINDS, SYSTEM_DATED, SYSTEM_DATED_NO_HISTORY, ordered_for_reading
from .rendering import quote_verified, render
from .runner import Completion, StyleRun, run_style
from .schemas import STATUSES, answer_schema, claims_schema, items_schema
from .styles import STYLES, answer_allowance, messages_for, style_messages
from .templates import PROMPT_TEMPLATE_SHA256, template_sha256

__all__ = [
    "ARTIFACT_LANGUAGES", "INSUFFICIENT", "NO_SOURCES", "PROMPT_TEMPLATE_SHA256", "QUESTION_KINDS", "READERS",
    "STATUSES", "STYLES", "SYSTEM_DATED", "SYSTEM_DATED_NO_HISTORY",
    "Answer", "CitationCheck", "Completion", "ExtractiveReader", "LocalLLMReader", "OllamaReader", "Reader",
    "ReaderError", "StyleRun", "Usage",
    "answer_allowance", "answer_schema", "build_messages", "check_citations", "claims_schema",
    "get_reader", "is_abstention", "is_work_request", "itemised_kind", "items_schema", "messages_for",
    "no_evidence_answer", "ordered_for_reading", "parse_citations", "question_kind", "quote_verified",
    "render", "reply_grammar", "requested_languages", "routed_style", "run_style", "split_citations",
    "split_reply", "style_messages", "template_sha256", "work_grammar", "work_languages",
]
