"""``explorer.table``: rows as a Markdown table (no pandas/pyarrow), shown on the Status page."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from explorer.table import markdown_table

APP = str(Path(__file__).resolve().parents[2] / "explorer" / "app.py")


def test_markdown_table_columns_labels_and_escaping():
    rows = [
        {"filePath": "a_b|c*.pdf", "chunks": 1200, "reason": "line one\nline two"},
        {"filePath": "x.txt", "ok": True},
    ]
    text = markdown_table(rows, columns=["filePath", "chunks", "reason"], labels={"chunks": "chunk count"})
    head, rule, first, second = text.splitlines()
    assert head == "| filePath | chunk count | reason |" and rule == "|---|---|---|"
    assert first == r"| a\_b\|c\*\.pdf | 1,200 | line one line two |"
    assert second == r"| x\.txt |  |  |"  # missing keys are empty cells
    assert markdown_table([]) == ""
    assert markdown_table([{"a": 1, "b": None}, {"c": 2.5}]).splitlines()[0] == "| a | b | c |"


def test_status_page_shows_collections_as_a_table(sample_index, monkeypatch):
    monkeypatch.setenv("CHUNKNAV_DB", sample_index.db)
    monkeypatch.setenv("EMBED_PROVIDER", sample_index.embed_provider)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    tables = [m.value for m in at.markdown if m.value.startswith("| collectionPath |")]
    assert tables and "| Samples |" in tables[0], [m.value[:80] for m in at.markdown]
