"""Citations: parsed from the answer, checked against the admitted passages, unknown ids removed."""

from __future__ import annotations

import json

from memory_baseline.context import Passage
from memory_baseline.reading import check_citations, render

ADR7 = Passage("decisions/adr-007.md#0", "decisions/adr-007.md",
               "# ADR-007\nNew services store their events in PostgreSQL.", None, "decision",
               "2024-07-10", 1)


def passage(source_id: str, text: str, rank: int = 1, date: str | None = None) -> Passage:
    return Passage(f"{source_id}#0", source_id, text, None, "markdown", date, rank)


ADR = passage(
    "decisions/adr-007.md",
    "# ADR-007: New event-store work targets PostgreSQL\n\nStatus: accepted. New services "
    "store their events in PostgreSQL. SQLite stays in production until the cut-over. "
    "This supersedes decisions/adr-003.md.",
    rank=1, date="2024-07-10",
)
LUNCH = passage("notes/lunch.md", "The team lunch moved to Thursdays at noon.", rank=2)


def test_unknown_citation_is_flagged_and_removed():
    text = ("New services use PostgreSQL [decisions/adr-007.md, decisions/adr-099.md]. "
            "Lunch is on Thursdays [notes/lunch.md]. Redis was adopted [sessions/session-999.md]. "
            "See also [adr-007.md] and [a plain remark].\n```yaml\nlist: [x/y.md]\n```")
    checked = check_citations(text, [ADR, LUNCH], enforce=True)
    assert checked.citations == ("decisions/adr-007.md", "notes/lunch.md")
    assert checked.unknown == ("decisions/adr-099.md", "sessions/session-999.md")
    assert checked.resolved == {"adr-007.md": "decisions/adr-007.md"}
    assert "adr-099" not in checked.text and "session-999" not in checked.text
    assert "Redis was adopted." in checked.text
    assert "[decisions/adr-007.md]" in checked.text and "[a plain remark]" in checked.text
    assert "list: [x/y.md]" in checked.text  # code is work product, left as written
    flagged = check_citations(text, [ADR, LUNCH], enforce=False)
    assert flagged.text == text and flagged.unknown == checked.unknown


def test_chunk_id_citation_counts_as_its_source():
    checked = check_citations("PostgreSQL [decisions/adr-007.md#0].", [ADR], enforce=True)
    assert checked.citations == ("decisions/adr-007.md",) and checked.unknown == ()


def test_work_request_prose_is_one_line_and_table_headers_are_not_citations():
    work = (json.dumps({"evidence": [{"source": ADR7.source_id, "quote": "PostgreSQL"}],
                        "answer": "The entry is:\n[services.shipments]\nevent_store = \"postgresql\""})
            + '\n```toml\n[services.shipments]\nevent_store = "postgresql"\n```')
    assert render("structured", work, [ADR7]).text.startswith(f"The entry is [{ADR7.source_id}]\n\n```toml")
    # Plain free text with a table header outside a fence: enforcement removes it, since the
    # instrument would read it as a citation of a source the reader never saw.
    text = 'Add [services.shipments] with event_store "postgresql" [decisions/adr-007.md].'
    checked = check_citations(text, [ADR7], enforce=True)
    assert checked.unknown == ("services.shipments",) and "[services.shipments]" not in checked.text
