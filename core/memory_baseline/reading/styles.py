"""Reading styles: how an LLM reader is asked, one named configuration each (`ReaderConfig.style`).

The plain prompt (`plain.build_messages`) is the control. The other styles are reader
engineering for a small local model, measured with oracle context in the reader chapter:

- ``dated``: a free-text answer, but the prompt states the question's as-of
  date first, gives every passage a header with its id, kind and the date the
  artifact states, orders passages oldest first when the question has a date,
  and names the outcomes to tell apart (proposed, decided, rejected, ...).
- ``structured``: the dated prompt, decoded under a JSON schema: the evidence
  first (each a source from an enum of the admitted ids, with a verbatim
  quote), then the answer, then an outcome status; a work request ("write the
  configuration ...") also gets the artifact and its language. Evidence comes
  before the answer so the model reads before it concludes.
- ``two-step``: a first constrained call extracts the claims that bear on the
  question (source, verbatim quote, claim); a second answers from those
  claims, listed oldest first with their dates, under the structured schema.
  A work request also keeps the sources in the second call, since a
  configuration has to follow the files' layout. Costs two calls.
- ``focused``: the dated prompt and the structured schema, shaped by what the
  question asks, as the system reads it from the question alone
  (`question_kind`): an outcome status only when it asks about an outcome; for
  a where-question one evidence item from every admitted source that bears on
  it, all of them cited; for a why-question the reasons the record gives; and
  always an answer composed from the quotes that keeps their dates, numbers
  and names, and does not restate the question.
- ``itemised``: structured, except for two kinds of request it reads from the
  question alone (`itemised_kind`). A which/what question about promises,
  follow-ups or deferred work is asked for every action item, to-do or
  deferral the sources state, each named with its state as of the date (and
  the date it was done), without an outcome status. A work request is
  answered outside JSON, under a grammar: ``Follows [id], [id].`` (ids from the
  admitted ones), then the fenced block in a language the request names
  (``bash`` for shell commands). After a JSON head, structured's artifacts came
  back with escaped newlines and missing imports. Every
  other question gets the structured prompt, byte for byte, under the
  structured reader's identity, so its answers are structured's, cached ones
  included.

How a style's reply is run and rendered: `runner` and `rendering`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Passage
from .answers import ReaderError
from .kinds import is_work_request, itemised_kind, routed_style
from .plain import build_messages
from .prompts import ASK_CLAIMS, ASK_DATED, ASK_ITEMS, ASK_WORK, answer_ask, dated_messages, focused_ask

STYLES: dict[str, str] = {
    "plain": "the one plain prompt, free-text answer (the control)",
    "dated": "as-of date first, dated passage headers, date order, outcome vocabulary; free text",
    "structured": "dated prompt, JSON-schema decoding: quoted evidence from admitted ids, answer, status",
    "two-step": "extract quoted claims (constrained), then answer from them (structured); two calls",
    "focused": "structured, shaped by the question's kind: status only for outcomes, every source for "
               "where-questions, reasons for why, specifics kept",
    "itemised": "structured, but which-promises questions ask for every action item with its state, "
                "and work requests are answered outside JSON: cited ids, then one fenced block",
}


def check_style(style: str, reader: str) -> str:
    """`style` if it is one of `STYLES`, else a one-line `ReaderError` naming `reader`."""
    if style not in STYLES:
        raise ReaderError(f"reader {reader}: unknown style {style!r}; choose one of "
                          f"{sorted(STYLES)}")
    return style


def messages_for(style: str, query: str, passages: Sequence[Passage], as_of: str | None, *,
                 history: bool = True) -> list[dict]:
    """The first (for two-step: the extraction) prompt of a non-plain style (`style_messages` takes all).

    Without history (the matched no-memory control) each style keeps its layout, ask and
    output format; two-step has no sources to extract claims from, so it asks its
    answer step directly, which is the structured prompt. A routing style (itemised) asks the
    questions it does not read its own way in structured's words.
    """
    style = routed_style(style, query)
    if style == "dated":
        return dated_messages(query, passages, as_of, ASK_DATED, history=history)
    if style == "structured" or (style == "two-step" and not history):
        return dated_messages(query, passages, as_of, answer_ask(query), history=history)
    if style == "two-step":
        return dated_messages(query, passages, as_of, ASK_CLAIMS)
    if style == "focused":
        return dated_messages(query, passages, as_of, focused_ask(query), history=history)
    if style == "itemised":
        ask = ASK_WORK if itemised_kind(query) == "work" else ASK_ITEMS
        return dated_messages(query, passages, as_of, ask, history=history)
    raise ValueError(f"unknown reading style {style!r}; choose one of {sorted(STYLES)}")


def style_messages(style: str, query: str, passages: Sequence[Passage], as_of: str | None, *,
                   history: bool = True) -> list[dict]:
    """A reading style's first prompt; without history, the same style with no records."""
    if style == "plain":
        return build_messages(query, passages, as_of, history=history)
    return messages_for(style, query, passages, as_of, history=history)


def answer_allowance(style: str, query: str, max_answer_tokens: int) -> int:
    """Tokens a reply may use: a structured work request carries evidence and an artifact, so twice."""
    style = routed_style(style, query)
    work = itemised_kind(query) == "work" if style == "itemised" else is_work_request(query)
    structured = style in ("structured", "two-step", "focused", "itemised")
    return max_answer_tokens * 2 if structured and work else max_answer_tokens
