"""Headings recorded at extraction (metadata["headings"]: [start, level, title]) for
Markdown, HTML and the PDF outline; the heading path and the modified: window rules."""

from __future__ import annotations

import pymupdf
import pytest

from engine.extract import extract
from engine.search.headings import chunk_heading_path, heading_matches, heading_path
from engine.search.query import parse_modified, parse_query

DAY = 86400.0
JAN1 = 1767225600.0  # 2026-01-01T00:00:00Z


def test_markdown_atx_and_setext_headings_outside_code(tmp_path):
    text = "# Guide\n\nintro\n\n## Terms of use\n\nno resale\n\n```\n# not a heading\n```\n\nSetext\n======\n\nbody\n"
    (tmp_path / "a.md").write_text(text)
    x = extract(tmp_path / "a.md")
    rows = x.metadata["headings"]
    assert [(lvl, t) for _, lvl, t in rows] == [(1, "Guide"), (2, "Terms of use"), (1, "Setext")]
    assert all(x.text[s:].lstrip("# ").startswith(t) for s, _, t in rows)


def test_html_headings(tmp_path):
    (tmp_path / "b.html").write_text("<title>T</title><h1>Top  one</h1><p>x</p><h2 hidden>No</h2><h2>Sub</h2><p>y</p>")
    x = extract(tmp_path / "b.html")
    assert x.metadata["headings"] == [[0, 1, "Top one"], [x.text.index("Sub"), 2, "Sub"]]


def test_pdf_outline_placed_on_its_pages(tmp_path):
    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"Chapter {i + 1}\nSome words on page {i + 1}")
    doc.set_toc([[1, "Chapter 1", 1], [2, "Chapter 2", 2], [1, "Appendix", 3]])
    doc.save(tmp_path / "c.pdf")
    x = extract(tmp_path / "c.pdf")
    rows = x.metadata["headings"]
    assert [(lvl, t) for _, lvl, t in rows] == [(1, "Chapter 1"), (2, "Chapter 2"), (1, "Appendix")]
    assert x.text[rows[1][0] :].startswith("Chapter 2")
    assert "outline" not in x.metadata


def test_heading_paths():
    rows = [[0, 1, "A"], [10, 2, "B"], [20, 3, "C"], [30, 2, "D"], [40, 1, "E"]]
    assert heading_path(rows, 25) == ["A", "B", "C"]
    assert heading_path(rows, 35) == ["A", "D"]
    assert heading_path(rows, 45) == ["E"] and heading_path([], 5) == []
    assert chunk_heading_path(rows, 28, 39) == ["A", "D"]  # most of it lies under D
    assert chunk_heading_path(rows, 25, 32) == ["A", "B", "C"]
    assert heading_matches(["Lease", "Terms  of Use"], ["terms of use"]) and not heading_matches(["A"], ["b"])


@pytest.mark.parametrize(
    "value, inside, outside",
    [
        (">2026-01-01", [JAN1 + DAY], [JAN1 + DAY - 1]),
        (">=2026-01-01", [JAN1], [JAN1 - 1]),
        ("<2026-01-01", [JAN1 - 1], [JAN1]),
        ("<=2026-01-01", [JAN1 + DAY - 1], [JAN1 + DAY]),
        ("2026-01-01", [JAN1, JAN1 + DAY - 1], [JAN1 + DAY, JAN1 - 1]),
        ("2026-01-01..2026-01-31", [JAN1, JAN1 + 31 * DAY - 1], [JAN1 + 31 * DAY]),
        ("..2026-01-01", [0.0], [JAN1 + DAY]),
        ("2026-01-01T12:00:00Z..", [JAN1 + DAY / 2], [JAN1]),
    ],
)
def test_modified_windows(value, inside, outside):
    window = parse_modified(value)
    assert window is not None
    assert all(window.holds(t) for t in inside) and not any(window.holds(t) for t in outside)


def test_modified_and_heading_tokens_in_the_query():
    s = parse_query('rent modified:>2026-01-01 modified:<2026-02-01 heading:"Terms of use" heading:fees x:y')
    assert s.text == "rent" and s.headings == ("Terms of use", "fees") and s.ignored == ("x:y",)
    assert s.modified is not None and s.modified.holds(JAN1 + DAY) and not s.modified.holds(JAN1 + 40 * DAY)
    assert parse_query("modified:yesterday").ignored == ("modified:yesterday",)
    assert parse_modified("last week") is None and parse_modified("..") is None
