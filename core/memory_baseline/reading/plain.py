"""The plain prompt: the control every other reading style is measured against.

One system message with the rules (answer only from the sources, cite ids in
brackets, keep proposals apart from decisions, answer for the question's date,
abstain with the exact phrase) and one user message with the sources, the
question, and the rules' reminder. The extractive reader renders it too, so
that its prompt count is comparable.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Passage
from .answers import INSUFFICIENT

SYSTEM_PROMPT = (
    "You answer questions about a software project's history. Use only the sources "
    "provided; do not rely on outside knowledge.\n"
    "Rules:\n"
    # The example id is deliberately no corpus's id, so it cannot nudge the model
    # towards a real source.
    "1. After each claim, cite the source id it comes from in square brackets, e.g. "
    "[path/to/file.md]. Cite only ids listed in the sources.\n"
    "2. Keep proposals apart from decisions: if something was only proposed, say so; if it "
    "was rejected or superseded, say that, with the date.\n"
    "3. When the question gives a date, answer for that date.\n"
    f"4. If the sources do not answer the question, reply exactly: {INSUFFICIENT}.\n"
    "Be brief."
)
# Repeated after the question: small models follow the instruction nearest the end best.
ANSWER_REMINDER = (
    "Cite the source id in square brackets after each claim. If the sources do not answer "
    f"the question, reply exactly: {INSUFFICIENT}."
)


def render_passage(passage: Passage) -> str:
    details = [passage.kind]
    if passage.artifact_date:
        details.append(f"dated {passage.artifact_date}")
    if passage.section:
        details.append(f"section: {passage.section}")
    return f"### Source [{passage.source_id}] ({', '.join(details)})\n{passage.text.strip()}"


# With no history at all (the no-memory condition, or an empty index) the reader is
# not told to refuse: "no memory" means no retrieved project history, not empty model
# weights, so it answers from general knowledge and says that it did.
SYSTEM_PROMPT_NO_HISTORY = (
    "You help with a software project, but no project history is available for this "
    "question. Answer from general knowledge, say briefly that no project records were "
    "consulted, and when a configuration or code is asked for, write it in a fenced code "
    "block. Be brief."
)


def build_messages(query: str, passages: Sequence[Passage], as_of: str | None, *,
                   history: bool = True) -> list[dict]:
    """The one plain prompt template: a system message and a user message with the sources.

    `history=False` (the no-memory condition) asks without any project history. With
    history consulted and no passage found, LLM readers abstain without a call
    (`LocalLLMReader.answer`); the template still renders, for counting.
    """
    parts = []
    if as_of:
        parts.append(f"The question is asked as of {as_of}.")
    if not history:
        parts.append(f"Question: {query.strip()}")
        return [{"role": "system", "content": SYSTEM_PROMPT_NO_HISTORY},
                {"role": "user", "content": "\n\n".join(parts)}]
    sources = "\n\n".join(render_passage(p) for p in passages) or "(none found in the project history)"
    parts.append("Sources:\n\n" + sources)
    parts.append(f"Question: {query.strip()}")
    parts.append(ANSWER_REMINDER)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]
