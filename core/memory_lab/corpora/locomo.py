"""LoCoMo, a public long-term conversational memory benchmark, as corpora and task files.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024) holds ten conversations between two people over 19-32 dated
sessions, and 1,986 questions about them, each citing the dialog turns (`D3:5`)
that answer it. It is the yardstick most published memory systems report on, so
measuring the baseline on it places the project's own figures beside theirs.

The importer turns each conversation into a history the library ingests like any
other: one Markdown file per session (`sessions/session-NN.md`) that states its
date and speakers, then one line per turn, `**Speaker** (D1:3): text`, with a
shared photo's caption as text. Only what the two people said goes in: the
generator's event summaries, observations and session summaries, and the
questions, stay out. Beside each corpus (never inside it) it writes the task file
in the instrument's contract and `dia_map.json`, where each turn's line lies
(file and character span), so retrieval can be scored per turn as well as per
session.

The data is CC BY-NC 4.0 and is never committed: `import` unzips into
`benchmarks/locomo/`, which git ignores.

LoCoMo's own answer metric (`locomo_metric`) is reimplemented from the authors'
`task_eval/evaluation.py` at commit 9228632 of snap-research/locomo, so answers
can be scored the way published figures were.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_instrument import find_evidence_mismatches, load_tasks

DEFAULT_ZIP = "../shared/data/locomo/locomo10.zip"
DEFAULT_OUT = "benchmarks/locomo"
ZIP_SHA256 = "5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5"
SOURCE = {"repository": "snap-research/locomo", "commit": "e76cdff", "file": "data/locomo10.zip",
          "licence": "CC BY-NC 4.0"}
# The order of locomo10.json (conv-26 ... conv-50); the first five are the dev split.
CONVERSATIONS = ("26", "30", "41", "42", "43", "44", "47", "48", "49", "50")
DEV_CONVERSATIONS = CONVERSATIONS[:5]

# The data's category numbers, checked against the paper's definitions and the questions
# themselves: category 1 questions need 3.1 evidence turns on average (multi-hop), 2 ask
# "when" (temporal), 3 ask for inference beyond what was said ("Would Caroline ...?",
# open-domain), 4 cite one turn (single-hop), 5 ask about the wrong person (adversarial).
# Every non-temporal question asks what the conversation says happened, the instrument's
# `outcome`; an adversarial question is an abstention task of that type.
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                              5: "adversarial"}
QUESTION_TYPES: dict[int, str] = {1: "outcome", 2: "temporal", 3: "outcome", 4: "outcome",
                                  5: "outcome"}

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")


class LocomoError(ValueError):
    """The archive is not the LoCoMo release the importer knows."""


# -- corpus ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One dialog turn and where its line lies in the corpus (`text[start:end]` is the line)."""

    dia_id: str
    speaker: str
    text: str  # as written in the corpus: one line, a shared photo's caption included
    source: str
    start: int
    end: int


@dataclass(frozen=True)
class Session:
    number: int
    source: str  # path relative to the corpus root
    date: datetime
    date_text: str  # as the data writes it: "1:56 pm on 8 May, 2023"
    text: str


@dataclass(frozen=True)
class Conversation:
    id: str  # "26"
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    turns: dict[str, Turn]
    qa: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return f"conv-{self.id}"

    @property
    def split(self) -> str:
        return "dev" if self.id in DEV_CONVERSATIONS else "test"

    @property
    def last_date(self) -> datetime:
        return max(session.date for session in self.sessions)


def parse_session_date(text: str) -> datetime:
    """"1:56 pm on 8 May, 2023" -> 2023-05-08 13:56."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")


def turn_text(turn: Mapping[str, Any]) -> str:
    """A turn's words on one line, with a shared photo's caption as text."""
    words = " ".join(str(turn.get("text") or "").split())
    caption = " ".join(str(turn.get("blip_caption") or "").split())
    if caption:
        words = f"{words} [shares a photo: {caption}]".strip()
    return words


def session_source(number: int) -> str:
    return f"sessions/session-{number:02d}.md"


def build_conversation(conversation_id: str, raw: Mapping[str, Any]) -> Conversation:
    """The sessions of one conversation as Markdown, and each turn's span in them."""
    speakers = (raw["speaker_a"], raw["speaker_b"])
    numbers = sorted(int(m.group(1)) for key in raw if (m := _SESSION_KEY.fullmatch(key)))
    sessions, turns = [], {}
    for number in numbers:
        source = session_source(number)
        date_text = raw[f"session_{number}_date_time"]
        when = parse_session_date(date_text)
        text = (f"# Session {number} — {speakers[0]} and {speakers[1]}\n\n"
                f"Date: {when:%Y-%m-%d %H:%M} ({' '.join(date_text.split())})\n"
                f"Speakers: {speakers[0]}, {speakers[1]}\n\n")
        for turn in raw[f"session_{number}"]:
            line_text = turn_text(turn)
            line = f"**{turn['speaker']}** ({turn['dia_id']}): {line_text}"
            turns[turn["dia_id"]] = Turn(turn["dia_id"], turn["speaker"], line_text, source,
                                         len(text), len(text) + len(line))
            text += line + "\n"
        sessions.append(Session(number, source, when, date_text, text))
    return Conversation(conversation_id, speakers, tuple(sessions), turns, tuple(raw["qa"]))


def read_archive(zip_path: str | Path) -> tuple[list[Conversation], str]:
    """The ten conversations of the zip in `CONVERSATIONS` order, and the zip's SHA-256."""
    data = Path(zip_path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    conversations = []
    with zipfile.ZipFile(zip_path) as archive:
        names = {Path(n).stem: n for n in archive.namelist() if n.endswith(".json")}
        missing = [c for c in CONVERSATIONS if c not in names]
        if missing:
            raise LocomoError(f"{zip_path} has no conversation {', '.join(missing)}: not locomo10.zip")
        for conversation_id in CONVERSATIONS:
            raw = json.loads(archive.read(names[conversation_id]))
            conversations.append(build_conversation(conversation_id, raw))
    return conversations, digest


# -- evidence --------------------------------------------------------------------------------


def resolve_evidence(raw: Sequence[str], turns: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(dialog ids found in the conversation, written ids that name no turn).

    The annotations hold a few typing slips, repaired only where the intent is
    unambiguous: several ids in one string (`"D8:6; D9:17"`), a stray colon
    (`"D:11:26"`), a leading zero (`"D30:05"`). An id that still names no turn
    (`"D10:19"` in a session of 18 turns) is reported, never guessed.
    """
    found: list[str] = []
    unresolved: list[str] = []
    for written in raw:
        for piece in re.split(r"[;,\s]+", written.strip()):
            if not piece:
                continue
            match = _DIA_ID.fullmatch(piece.replace("D:", "D"))
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}" if match else piece
            if dia_id in turns:
                if dia_id not in found:
                    found.append(dia_id)
            else:
                unresolved.append(piece)
    return found, unresolved


# -- expected answers ------------------------------------------------------------------------

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
_NUMBER_WORDS = {w: i for i, w in enumerate(
    ("zero one two three four five six seven eight nine ten eleven twelve").split())}
_MONTHWORD = r"([a-z]{3,10})"
_DAY_MONTH_YEAR = re.compile(rf"(\d{{1,2}})(?:st|nd|rd|th)?\s*{_MONTHWORD}\.?,?\s*(\d{{4}})")
_MONTH_DAY_YEAR = re.compile(rf"{_MONTHWORD}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s*(\d{{4}})")
_MONTH_YEAR = re.compile(rf"^(.*?){_MONTHWORD}[.,]?\s*(\d{{4}})$")
# What may stand before a full date: a hedge (dropped) or a relation kept as a phrase group.
_HEDGE = re.compile(r"^(?:on|in|around|approximately|about)?\s*(?:the|a)?\s*$")
_RELATION = re.compile(r"^(?:on |in )?(?:the |a )?((?:(?:a )?few days|(?:two |last )?weeks?"
                       r"|(?:two )?weekends?|night|[a-z]+day) (?:before|after|of))$")
_YEAR = re.compile(r"^(?:in|since|around)?\s*(\d{4})$")
_SEASON_YEAR = re.compile(r"^(?:approximately |around |in )?(?:the )?(summer|winter|spring|autumn|fall)"
                          r"(?: of)?,? (\d{4})$")
_COUNT = re.compile(r"^(?:nearly |about |around |approximately |over )?(\d+|[a-z]+)"
                    r"(?: (days?|weeks?|weekends?|months?|years?|times?|hours?|minutes?))?(?: ago)?$")
_POLAR = re.compile(r"^(?:likely |probably |most likely )?(yes|no)\b")
_ARTICLES = re.compile(r"^(?:and |or |but )?(?:a |an |the )?")
_MONTH_LEAD = re.compile(r"(?:(?:first|last|second|third) (?:week|weekend) of|early|late|mid|(?:the )?end of"
                         r"|(?:the )?beginning of)?")


def _month(word: str) -> int | None:
    """A month from its name, forgiving the data's misspellings ("Janury", "Januarty")."""
    return next((i for i, name in enumerate(_MONTH_NAMES, 1) if word[:3] == name[:3]), None)


def _clean(text: str) -> str:
    """Lowercase, one space, no quotes or trailing stop; glued dates split ("3June" -> "3 june")."""
    text = text.replace("`", "").replace("’", "'")
    text = re.sub(r"(\d)([A-Za-z]{3,})", r"\1 \2", text)
    text = re.sub(r"([A-Za-z])\.(\d)", r"\1 \2", text)
    text = " ".join(text.lower().split())
    return text.strip(" .!\"'")


# Words whose "+s" is no plural: adjectives, participles, adverbs, names (checked before lowering).
_NOT_PLURALISED = re.compile(r"(?:s|ed|ing|ly|ful|ous|ive|ic|al|ish|ble|less|y)$")


def _variants(phrase: str, original: str) -> list[str]:
    """The phrase and the other grammatical number of its last word (bowls/bowl, cup/cups).

    A plural loses its -s (-ies, -es); a singular gains one only when it is written in
    lower case in the gold answer and does not end like an adjective, participle or
    adverb (so "Ireland", "relaxed", "music" stay as they are).
    """
    head, _, last = phrase.rpartition(" ")
    prefix = f"{head} " if head else ""
    if not last.isalpha() or len(last) < 3:
        return [phrase]
    if last.endswith("ies") and len(last) > 4:
        other = last[:-3] + "y"
    elif last.endswith(("ches", "shes", "sses", "xes")):
        other = last[:-2]
    elif last.endswith("s") and not last.endswith(("ss", "us", "is")):
        other = last[:-1]
    elif re.search(rf"\b{re.escape(last)}\b", original) and not _NOT_PLURALISED.search(last):
        other = last + ("es" if last.endswith(("ch", "sh", "x")) else "s")
    else:
        return [phrase]
    return [phrase, prefix + other]


def _full_date(text: str) -> tuple[str, str, str] | None:
    """(before, ISO date, after) when `text` holds exactly one date with day, month and year."""
    found = []
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for m in pattern.finditer(text):
            day, word = (m.group(1), m.group(2)) if order == "dmy" else (m.group(2), m.group(1))
            month = _month(word)
            if month is None:
                continue
            try:
                iso = datetime(int(m.group(3)), month, int(day)).date().isoformat()
            except ValueError:
                continue
            found.append((m.start(), m.end(), iso))
    if len(found) != 1:
        return None
    start, end, iso = found[0]
    return text[:start].strip(" ,"), iso, text[end:].strip(" ,.")


def _unit_group(unit: str) -> list[str]:
    singular = unit[:-1] if unit.endswith("s") else unit
    return [singular, singular + "s"]


def _month_year(text: str) -> list[list[str]] | None:
    """Groups for "June 2023", "last week of July 2023" (a month named in full), else None."""
    found = _MONTH_YEAR.fullmatch(text)
    if found is None:
        return None
    lead, word, year = found.groups()
    month = _month(word)
    if month is None or word not in (_MONTH_NAMES[month - 1], _MONTH_NAMES[month - 1][:3]):
        return None
    name = _MONTH_NAMES[month - 1]
    lead = re.sub(r"^(?:in|around|approximately|on)\b\s*", "", lead.strip())
    lead = re.sub(r"^(?:the|a)\s+", "", lead).strip()
    if not _MONTH_LEAD.fullmatch(lead):
        return None
    return ([[lead]] if lead else []) + [[f"{name} {year}", f"{name}, {year}"]]


def answer_expectations(answer: str, category: int) -> tuple[list[list[str]], dict[str, Any], str]:
    """(must_include groups, typed expectations, the rule that made them) from a gold answer.

    Faithful to the gold text: every phrasing is taken from it, with only the other
    grammatical number of a last word, the other spelling of a small number ("four
    months" / "4 months") and the comma of "June, 2023" as variants. A full date
    becomes a typed date (with any relation before it, "the week before", as a phrase
    group); a year or a count written in digits becomes a typed number; any other
    answer is cut at commas and semicolons into groups, one per listed item. For
    category 3 only the part before the first ";" counts (the rest is the annotator's
    reasoning), as in LoCoMo's own scorer; a hedged yes/no keeps the polar word only.
    """
    text = _clean(answer.split(";")[0] if category == 3 else answer)
    if not text:
        raise LocomoError(f"empty gold answer {answer!r}")
    polar = _POLAR.match(text)
    if polar and (len(text.split()) <= 3 or text[polar.end():polar.end() + 1] in (",", ";", ".")):
        return [[polar.group(1)]], {}, "yes/no"
    dated = _full_date(text)
    if dated is not None:
        before, iso, after = dated
        if not after:
            if _HEDGE.fullmatch(before):
                return [], {"date": [iso]}, "date"
            relation = _RELATION.fullmatch(before)
            if relation:
                return [[relation.group(1)]], {"date": [iso]}, "date with relation"
    year = _YEAR.fullmatch(text)
    if year:
        return [], {"number": [int(year.group(1))]}, "year"
    season = _SEASON_YEAR.fullmatch(text)
    if season:
        return [[season.group(1)]], {"number": [int(season.group(2))]}, "season and year"
    month_year = _month_year(text)
    if month_year is not None:
        return month_year, {}, "month and year"
    count = _COUNT.fullmatch(text)
    if count and (count.group(1).isdigit() or count.group(1) in _NUMBER_WORDS):
        value, unit = count.group(1), count.group(2)
        if value.isdigit():
            return ([_unit_group(unit)] if unit else []), {"number": [int(value)]}, "number"
        digits = str(_NUMBER_WORDS[value])
        phrasing = [f"{value} {unit}", f"{digits} {unit}"] if unit else [value, digits]
        return [phrasing], {}, "number in words"
    groups = []
    original = answer
    for item in re.split(r",\s+|;\s*|\.\s+", text):
        item = _ARTICLES.sub("", item.strip(" .!\"'")).strip(" .!\"'")
        if item and _variants(item, original) not in groups:
            groups.append(_variants(item, original))
    return groups, {}, "phrases" if len(groups) == 1 else "listed phrases"


# -- tasks -----------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What the import wrote and what it left out (with the reason), for the manifest."""

    conversations: dict[str, dict[str, Any]] = field(default_factory=dict)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    repaired: list[dict[str, Any]] = field(default_factory=list)
    rules: Counter = field(default_factory=Counter)


def conversation_tasks(conversation: Conversation, report: ImportReport) -> list[dict[str, Any]]:
    """One task per question with evidence, in the instrument's v2 contract."""
    tasks = []
    as_of = conversation.last_date.date().isoformat()
    for position, qa in enumerate(conversation.qa, 1):
        task_id = f"{conversation.name}-q{position:03d}"
        category = int(qa["category"])
        evidence, unresolved = resolve_evidence(qa.get("evidence", []), conversation.turns)
        if unresolved or list(qa.get("evidence", [])) != evidence:
            report.repaired.append({"task": task_id, "written": qa.get("evidence", []),
                                    "resolved": evidence, "unresolved": unresolved})
        if not evidence:
            report.excluded.append({"task": task_id, "category": category,
                                    "question": qa["question"],
                                    "reason": "no evidence turn names a turn of the conversation"
                                    if qa.get("evidence") else "the annotation cites no evidence"})
            continue
        sources = list(dict.fromkeys(conversation.turns[d].source for d in evidence))
        quotes = [{"source": conversation.turns[d].source, "quote": conversation.turns[d].text}
                  for d in evidence]
        metadata: dict[str, Any] = {"split": conversation.split, "locomo_category": category,
                                    "conversation": conversation.name, "evidence": evidence,
                                    "locomo_question_index": position - 1}
        if category == 5:
            answer = {"must_include": [], "must_not_include": [], "abstain": True,
                      "evidenced_negative": False, "evidence": quotes}
            metadata["locomo_adversarial_answer"] = str(qa.get("adversarial_answer", qa.get("answer", "")))
            report.rules["abstain"] += 1
        else:
            gold = str(qa["answer"])
            groups, expect, rule = answer_expectations(gold, category)
            answer = {"must_include": groups, "must_not_include": [], "abstain": False,
                      "evidenced_negative": False, "evidence": quotes}
            if expect:
                answer["expect"] = expect
            metadata["locomo_answer"] = gold
            metadata["answer_rule"] = rule
            report.rules[rule] += 1
        if unresolved:
            metadata["evidence_unresolved"] = unresolved
        tasks.append({
            "id": task_id, "question_type": QUESTION_TYPES[category], "query": qa["question"],
            "as_of": as_of, "expected_sources": sources, "answer": answer,
            "notes": f"LoCoMo {conversation.name}, question {position}, category {category} "
                     f"({CATEGORIES[category]})",
            "metadata": metadata,
        })
    return tasks


def dia_map(conversation: Conversation) -> dict[str, dict[str, Any]]:
    """dia_id -> where its line lies: {"source", "start", "end", "speaker"}."""
    return {t.dia_id: {"source": t.source, "start": t.start, "end": t.end, "speaker": t.speaker}
            for t in conversation.turns.values()}


@dataclass(frozen=True)
class Imported:
    """Paths of one imported conversation."""

    name: str
    history: Path
    tasks: Path
    dia_map: Path
    split: str


def layout(out_dir: str | Path, conversation: str) -> Imported:
    """Where `import` puts conversation `conversation` ("26" or "conv-26") under `out_dir`."""
    name = conversation if conversation.startswith("conv-") else f"conv-{conversation}"
    root = Path(out_dir) / name
    split = "dev" if name.removeprefix("conv-") in DEV_CONVERSATIONS else "test"
    return Imported(name, root / "history", root / "tasks.json", root / "dia_map.json", split)


def write_conversation(conversation: Conversation, out_dir: str | Path,
                       report: ImportReport) -> Imported:
    """Write one conversation's corpus, task file and dialog-id map; check what was written."""
    paths = layout(out_dir, conversation.id)
    sessions_dir = paths.history / "sessions"
    sessions_dir.mkdir(parents=True, exist_ok=True)
    wanted = {Path(s.source).name for s in conversation.sessions}
    for stale in sessions_dir.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for session in conversation.sessions:
        (paths.history / session.source).write_bytes(session.text.encode("utf-8"))
    tasks = conversation_tasks(conversation, report)
    paths.tasks.write_text(json.dumps({"version": 2, "tasks": tasks}, indent=1, ensure_ascii=False)
                           + "\n", encoding="utf-8")
    paths.dia_map.write_text(json.dumps(dia_map(conversation), indent=1) + "\n", encoding="utf-8")
    loaded = load_tasks(paths.tasks)  # the instrument's contract, checked on what was written
    problems = find_evidence_mismatches(loaded, paths.history)
    if problems:
        raise LocomoError(f"{conversation.name}: {problems[0]} (and {len(problems) - 1} more)")
    for dia_id, turn in conversation.turns.items():
        line = (paths.history / turn.source).read_text(encoding="utf-8")[turn.start:turn.end]
        if not line.startswith(f"**{turn.speaker}** ({dia_id}): "):
            raise LocomoError(f"{conversation.name}: the span of {dia_id} is not its line")
    counts = Counter(t["metadata"]["locomo_category"] for t in tasks)
    report.conversations[conversation.name] = {
        "split": conversation.split, "speakers": list(conversation.speakers),
        "sessions": len(conversation.sessions), "turns": len(conversation.turns),
        "questions": len(conversation.qa), "tasks": len(tasks),
        "tasks_per_category": {str(k): counts[k] for k in sorted(counts)},
        "first_session": conversation.sessions[0].date.date().isoformat(),
        "as_of": conversation.last_date.date().isoformat(),
        "corpus_chars": sum(len(s.text) for s in conversation.sessions),
    }
    return paths


def import_locomo(zip_path: str | Path = DEFAULT_ZIP, out_dir: str | Path = DEFAULT_OUT,
                  conversations: Sequence[str] | None = None) -> dict[str, Any]:
    """Write every conversation (or those named), a pooled task file and `import.json`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    found, digest = read_archive(zip_path)
    wanted = [c for c in found if conversations is None or c.id in conversations
              or c.name in conversations]
    report = ImportReport()
    pooled = []
    for conversation in wanted:
        paths = write_conversation(conversation, out, report)
        pooled += json.loads(paths.tasks.read_text(encoding="utf-8"))["tasks"]
    pooled_path = out / "tasks.json"
    pooled_path.write_text(json.dumps({"version": 2, "tasks": pooled}, indent=1, ensure_ascii=False)
                           + "\n", encoding="utf-8")
    load_tasks(pooled_path)
    summary = {
        "source": {**SOURCE, "zip": Path(zip_path).name, "sha256": digest,
                   "sha256_matches_release": digest == ZIP_SHA256},
        "layout": {"history": "conv-NN/history/sessions/session-NN.md", "tasks": "conv-NN/tasks.json",
                   "dia_map": "conv-NN/dia_map.json", "pooled_tasks": "tasks.json"},
        "splits": {"dev": [f"conv-{c}" for c in DEV_CONVERSATIONS],
                   "test": [f"conv-{c}" for c in CONVERSATIONS[5:]]},
        "categories": {str(k): {"name": v, "question_type": QUESTION_TYPES[k]}
                       for k, v in CATEGORIES.items()},
        "questions": sum(len(c.qa) for c in wanted),
        "tasks": len(pooled),
        "conversations": report.conversations,
        "answer_rules": dict(report.rules.most_common()),
        "excluded": report.excluded,
        "evidence_repaired": report.repaired,
    }
    (out / "import.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    return summary


# -- LoCoMo's answer metric ------------------------------------------------------------------
#
# Reimplemented from `task_eval/evaluation.py` at commit 9228632 of snap-research/locomo
# (`normalize_answer`, `f1_score`, `f1` and the per-category rules of
# `eval_question_answering`): token F1 over Porter-stemmed, normalised tokens (NLTK's
# PorterStemmer, as theirs); category 1 splits prediction and gold at commas and averages,
# over the gold parts, the best F1 against any predicted part; category 3 keeps the gold
# before the first ";"; category 5 scores 1 when the prediction says "no information
# available" or "not mentioned", else 0.

_ARTICLE_WORDS = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = set(string.punctuation)
_stemmer = None


def _stem(word: str) -> str:
    global _stemmer
    if _stemmer is None:
        from nltk.stem import PorterStemmer

        _stemmer = PorterStemmer()
    return _stemmer.stem(word)


def locomo_normalise(text: str) -> str:
    """Their `normalize_answer`: drop commas, lowercase, drop punctuation, articles and "and"."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_ARTICLE_WORDS.sub(" ", text).split())


def locomo_token_f1(prediction: str, gold: str) -> float:
    """Their `f1_score`: F1 of the stemmed token multisets (0 when nothing is shared)."""
    predicted = [_stem(w) for w in locomo_normalise(prediction).split()]
    expected = [_stem(w) for w in locomo_normalise(gold).split()]
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def locomo_multi_f1(prediction: str, gold: str) -> float:
    """Their `f1`: mean over comma-separated gold parts of the best F1 against a predicted part."""
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(locomo_token_f1(p, g) for p in predictions) for g in golds) / len(golds)


def locomo_metric(prediction: str, gold: str | int | None, category: int) -> float:
    """LoCoMo's score of one answer, by the authors' per-category rules (see above)."""
    if category == 5:
        said = prediction.lower()
        return 1.0 if "no information available" in said or "not mentioned" in said else 0.0
    gold = str(gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return float(locomo_multi_f1(prediction, gold))
    if category in (2, 3, 4):
        return locomo_token_f1(prediction, gold)
    raise ValueError(f"LoCoMo has no category {category}")


# -- command line ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """`memory-lab study locomo import|retrieval|summarise|answers ...` (see --help)."""
    import argparse
    import sys

    from memory_lab.studies.setup import repo_path

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["retrieval"], ["summarise"]):
        from memory_lab.ladders import locomo_retrieval

        return locomo_retrieval.main(args)
    if args[:1] == ["answers"]:
        from memory_lab.ladders import locomo_answers

        return locomo_answers.main(args[1:])
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="retrieval [STUDY_DIR]: the retrieval-level study; summarise STUDY_DIR: its results "
               "file; answers run|summarise: the answer-level study (see `answers --help`)")
    sub = parser.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="unzip the conversations into corpora and task files")
    imp.add_argument("--zip", default=DEFAULT_ZIP)
    imp.add_argument("--out", default=DEFAULT_OUT, help="a folder git ignores (the data is CC BY-NC)")
    imp.add_argument("--conversation", action="append", help="only these (26, conv-30, ...)")
    sub.add_parser("retrieval", help="run or resume the retrieval-level study")
    sub.add_parser("summarise", help="write benchmarks/results/locomo-retrieval.json")
    sub.add_parser("answers", help="the answer-level study: run | summarise")
    parsed = parser.parse_args(args)
    try:
        summary = import_locomo(repo_path(parsed.zip), repo_path(parsed.out), parsed.conversation)
    except (LocomoError, OSError, zipfile.BadZipFile) as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 2
    print(f"{summary['tasks']} tasks from {summary['questions']} questions "
          f"({len(summary['excluded'])} without usable evidence) -> {parsed.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
