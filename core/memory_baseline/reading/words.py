"""Content words for the extractive reader: a stop list and a suffix stripper, hand-written.

Why not a library: no dependency of this project does the same job identically.
This stemmer only strips -ing, -ed, -es or -s from a word long enough to keep four
letters ("running" -> "runn", "uses" stays), where Porter or Snowball would give "run"
and "use"; the stop lists shipped with NLP packages differ from this one (which drops
"use", "used", "using" and "yes", common in questions about a project and useless for
matching); and the instrument's own light stemmer
(`memory_instrument.metrics`) has other rules and is not a module the library may import.
The extractive reader is the CI smoke book's reader, so its answers, and with them these
rules, are fixed: changing a word here changes the answers it picks.
"""

from __future__ import annotations

import re

_STOP = frozenset(
    "a an the and or of to in on for at by with from is are was were be been being it its this that "
    "these those what which who whom whose when where why how did do does done we our us you your "
    "they them their there here as about into over under than then so not no yes should would could "
    "can will shall may might must has have had use used using any all some".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-.]*[a-z0-9]|[a-z0-9]")
# Sentence breaks: after terminal punctuation, at a blank line, and before a list item,
# heading or table row (which are separate statements even without a full stop).
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n+|\n(?=\s*(?:[-*+] |\d+\. |#|\|))")


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
