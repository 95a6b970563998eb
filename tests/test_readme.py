"""The README's result sections are what their committed artifacts render."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_lab.book.readme import DOCUMENTS, RENDERERS, ReadmeError, render

ROOT = Path(__file__).resolve().parents[1]


def test_every_results_section_equals_its_artifact():
    texts = {path: (ROOT / path).read_text(encoding="utf-8") for path in DOCUMENTS}
    for name in RENDERERS:
        assert any(f"<!-- results:{name} -->" in t for t in texts.values()), f"no document shows {name}"
    for path, text in texts.items():
        assert render(text, ROOT) == text, (
            f"{path} differs from its artifacts: python -m memory_lab.book.readme")


def test_a_changed_figure_is_caught(tmp_path):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tampered = text.replace("| `lexical-bm25` | 0.", "| `lexical-bm25` | 9.", 1)
    assert tampered != text
    assert render(tampered, ROOT) != tampered


def test_an_unknown_section_or_missing_artifact_is_one_line(tmp_path):
    with pytest.raises(ReadmeError, match="no renderer"):
        render("<!-- results:nope -->\n<!-- /results:nope -->", ROOT)
    with pytest.raises(ReadmeError, match="not committed"):
        render("<!-- results:scifact -->\n<!-- /results:scifact -->", tmp_path)
