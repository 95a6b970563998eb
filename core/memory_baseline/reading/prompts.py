"""The dated prompt every style but plain shares, and each style's ask at its end.

The layout (`dated_messages`): the question's as-of date first, every passage under a
header with its id, kind and the date the artifact states, oldest first when the
question has a date, then the question, then the style's ask. The system message
names the outcomes to tell apart (proposed, decided, rejected, ...). Without history
the layout stays and says that no records are available, so the no-memory control
differs from the history conditions by the history alone.

The asks are the prompt text the answer cache keys on; which ask a question gets is
read from its words (`kinds`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Passage
from .answers import INSUFFICIENT
from .kinds import is_work_request, question_kind
from .schemas import MAX_CLAIMS, MAX_EVIDENCE

SYSTEM_DATED = (
    "You answer questions about a software project's history from the sources given, and only "
    "from them.\n"
    "- Each source header gives its id and the date the source states. When the question has a "
    "date, answer for that date: sources dated later did not exist yet.\n"
    "- Tell apart what was proposed, decided, rejected, superseded by a later decision, promised "
    "but still open, and done. A proposal is not a decision; if the sources say something was "
    "rejected or not adopted, the answer is no.\n"
    "- Cite source ids exactly as written in the headers, in square brackets.\n"
    "- When the question asks for a configuration or code, write it so that it follows the "
    "decisions and the existing files in the sources.\n"
    f"- If the sources do not answer the question, answer exactly: {INSUFFICIENT}."
)
# The no-memory control in the same style: the same rules, layout, ask and output format,
# only no records, so it answers from general knowledge (as the plain control does).
SYSTEM_DATED_NO_HISTORY = (
    "You answer questions about a software project, but none of its records are available for "
    "this question: answer from general knowledge and say that no project records were "
    "consulted.\n"
    "- When the question has a date, answer for that date.\n"
    "- Tell apart what was proposed, decided, rejected, superseded by a later decision, promised "
    "but still open, and done.\n"
    "- When the question asks for a configuration or code, write it as such a project would most "
    "likely need it.\n"
    f"- If you cannot answer the question at all, answer exactly: {INSUFFICIENT}."
)
NO_SOURCES = "(none: no project records are available for this question)"
STATUS_GUIDE = (
    "status: what the sources say happened to the thing asked about: decided (adopted and in "
    "force), proposed (suggested, never decided), rejected, superseded (decided, later replaced), "
    "open (promised, not done yet), done (promised and finished), not-applicable (the question is "
    "not about an outcome)."
)
ASK_DATED = (
    "Answer briefly, citing the source id in square brackets after each claim. If the sources do "
    f"not answer the question, reply exactly: {INSUFFICIENT}."
)
ASK_STRUCTURED = (
    f"Reply in JSON. evidence: up to {MAX_EVIDENCE} items, one from each source that bears on the "
    "question: its source id and a short verbatim quote. answer: one or two sentences that answer "
    "the question from that evidence, in its words; when the question asks why, give the reasons "
    f"the sources state (or answer exactly: {INSUFFICIENT}). " + STATUS_GUIDE
)
ASK_ARTIFACT = (
    " This is a work request: the answer is one sentence naming the decisions the work follows. "
    "After the JSON, write the complete content asked for in one fenced code block, following the "
    "decisions and the existing files in the sources, changed where the request differs."
)
ASK_CLAIMS = (
    f"Reply in JSON. claims: up to {MAX_CLAIMS} statements from the sources that bear on the "
    "question, each with its source id, a short verbatim quote, and the claim in a few words. "
    "Include statements that something was proposed, decided, rejected, replaced, promised or done, "
    "and the reasons given."
)

ASK_FOCUSED = (
    "Reply in JSON. evidence: first quote the sentences that answer the question, each with its "
    "source id and the words exactly as written. answer: then answer from those quotes only, in one "
    "or two sentences that start with the answer itself (do not restate the question) and keep the "
    "dates, numbers, names and versions the quotes give. If the sources do not answer the question, "
    f"answer exactly: {INSUFFICIENT}."
)
ASK_FOCUSED_KIND = {
    "outcome": " " + STATUS_GUIDE,
    "where": (f" This asks where something was discussed or recorded: give one evidence item from "
              f"every source that bears on it (up to {MAX_EVIDENCE + 2}), and name each of them in "
              "the answer."),
    "why": (" This asks why: the answer gives the reasons the sources state for it (the measured "
            "problem, the evidence, the trade-off), not praise of the choice."),
    "list": (" This asks for a list: the answer names every item the sources give, each with its "
             "state (still open or done) as of the question's date."),
    "other": "",
}
QUESTION_KINDS = tuple(ASK_FOCUSED_KIND) + ("work",)

ASK_ITEMS = (
    "Reply in JSON. evidence: from each source that states any, a short verbatim quote of the "
    "promises the question is about: action items, to-dos (a \"- [ ]\" line is one), follow-ups, "
    "work deferred or left for later. answer: then name every such item, each with its state as of "
    "the question's date (still open; done, with the date a source gives; or deferred), keeping "
    "names, dates and versions. A later source may finish what an earlier one promised. If the "
    f"sources do not answer the question, answer exactly: {INSUFFICIENT}."
)
ASK_WORK = (
    "This is a work request. First name the sources the work follows, as their ids in square "
    "brackets. Then write the complete content asked for in one fenced code block with real line "
    "breaks, following the decisions and the existing files in the sources (their names, keys and "
    "layout), changed only where the request differs; code imports everything it uses."
)


def answer_ask(query: str) -> str:
    return ASK_STRUCTURED + (ASK_ARTIFACT if is_work_request(query) else "")


def focused_ask(query: str) -> str:
    kind = question_kind(query)
    return ASK_FOCUSED + (ASK_ARTIFACT if kind == "work" else ASK_FOCUSED_KIND[kind])


def ordered_for_reading(passages: Sequence[Passage], as_of: str | None) -> list[Passage]:
    """Oldest first when the question has a date (undated last), else as ranked."""
    if not as_of:
        return list(passages)
    return sorted(passages, key=lambda p: (p.artifact_date is None, p.artifact_date or "", p.rank))


def render_dated_passage(passage: Passage) -> str:
    details = [f"kind: {passage.kind}", f"dated: {passage.artifact_date or 'undated'}"]
    if passage.section:
        details.append(f"section: {passage.section}")
    return f"### [{passage.source_id}] ({'; '.join(details)})\n{passage.text.strip()}"


def dated_messages(query: str, passages: Sequence[Passage], as_of: str | None, ask: str, *,
                   history: bool = True) -> list[dict]:
    """The dated layout; `history=False` keeps it and says that there are no records."""
    parts = []
    if as_of:
        parts.append(f"Today is {as_of}. Answer as of {as_of}.")
    parts.append("Sources (oldest first):" if as_of else "Sources:")
    if history:
        parts.append("\n\n".join(render_dated_passage(p) for p in ordered_for_reading(passages, as_of)))
    else:
        parts.append(NO_SOURCES)
    parts.append(f"Question{f' (as of {as_of})' if as_of else ''}: {query.strip()}")
    parts.append(ask)
    system = SYSTEM_DATED if history else SYSTEM_DATED_NO_HISTORY
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
