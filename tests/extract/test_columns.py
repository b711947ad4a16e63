"""Two-column pages read as people read them (engine/extract/columns.py).

Each PDF is built here with PyMuPDF; its content stream draws the lines in the
order given, so a page can interleave the rows of two columns the way some
producers write them.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from engine.extract import extract

LEFT = [
    "The council met in the",
    "annual session and after",
    "long debate it finally",
    "approved the budget for the",
    "coming fiscal year with",
    "a clear majority vote.",
]
RIGHT = [
    "The library will open",
    "on Sundays from March",
    "and the new reading room",
    "will host the local",
    "history society twice",
    "a month in the evening.",
]
TITLE = "Annual Report of the Village Council"
FOOTER = "Page footer spanning the whole width of the page for testing"


def _pdf(path: Path, rows: list[tuple[float, float, str]]) -> Path:
    """One A4 page with each ``(x, y, text)`` drawn in list order."""
    doc = pymupdf.open()
    page = doc.new_page()
    for x, y, text in rows:
        page.insert_text((x, y), text, fontsize=11)
    doc.save(path)
    return path


def _interleaved(left: list[str], right: list[str]) -> list[tuple[float, float, str]]:
    rows = [(72.0, 60.0, TITLE)]
    for i, (a, b) in enumerate(zip(left, right)):
        rows += [(72.0, 100.0 + 14 * i, a), (320.0, 100.0 + 14 * i, b)]
    return rows + [(72.0, 220.0, FOOTER)]


def _words_are_exact(result) -> None:
    """Every word's offsets hold its own text, and the words follow the text's order."""
    w = result.words
    starts = list(w.starts)
    assert starts == sorted(starts)
    for a, b in zip(w.starts, w.ends):
        piece = result.text[a:b]
        assert piece and not any(c.isspace() for c in piece)


def test_interleaved_columns_are_read_left_then_right(tmp_path):
    result = extract(_pdf(tmp_path / "two.pdf", _interleaved(LEFT, RIGHT)))
    text = result.text
    assert "approved the budget for the\ncoming fiscal year with" in text
    assert "and the new reading room\nwill host the local" in text
    # title, the left column, the right column, the footer, each its own block
    assert text.index(TITLE) < text.index(LEFT[0]) < text.index(LEFT[-1]) < text.index(RIGHT[0])
    assert text.index(RIGHT[-1]) < text.index(FOOTER)
    assert f"{LEFT[-1]}\n\n{RIGHT[0]}" in text
    _words_are_exact(result)
    # each word's box is still where the word is printed: left column words on the left half
    w = result.words
    for a, b, box in zip(w.starts, w.ends, w.boxes):
        word = text[a:b]
        if word in ("approved", "majority"):
            assert box[0] < 0.45
        if word in ("library", "evening."):
            assert box[0] > 0.45


def test_a_table_of_short_cells_keeps_its_rows(tmp_path):
    cells = [("Name", "Age"), ("Alice", "34"), ("Bob", "27"), ("Carol", "41"), ("Dan", "19")]
    rows = []
    for i, (a, b) in enumerate(cells):
        rows += [(72.0, 100.0 + 14 * i, a), (320.0, 100.0 + 14 * i, b)]
    text = extract(_pdf(tmp_path / "table.pdf", rows)).text
    assert text.index("Alice") < text.index("34") < text.index("Bob")


def test_columns_drawn_one_after_the_other_keep_the_stream_order(tmp_path):
    rows = [(72.0, 100.0 + 14 * i, a) for i, a in enumerate(LEFT)]
    rows += [(320.0, 100.0 + 14 * i, b) for i, b in enumerate(RIGHT)]
    direct = extract(_pdf(tmp_path / "direct.pdf", rows))
    assert direct.text.index(LEFT[-1]) < direct.text.index(RIGHT[0])
    _words_are_exact(direct)
    # and the interleaved file reads the same words in the same order
    interleaved = extract(_pdf(tmp_path / "mixed.pdf", _interleaved(LEFT, RIGHT)))
    assert " ".join(direct.text.split()) in " ".join(interleaved.text.split())
