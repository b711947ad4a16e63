""".docx -> ``ExtractedText`` with python-docx (no pages, no boxes).

Owns: reading a Word document's body paragraphs and tables in document
order. Imports ``engine.model``, ``engine.errors`` and ``engine.extract.common``;
``docx`` (python-docx) lazily.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

from engine.errors import ExtractError
from engine.extract.common import BLOCK_SEPARATOR, LINE_SEPARATOR, words_of
from engine.model import ExtractedText

__all__ = ["extract_docx"]




def extract_docx(path: Path) -> ExtractedText:
    """Read a .docx body (``engine.extract.extract`` documents the result).

    Raises:
        ExtractError: ``"corrupt: <type>: <reason>"`` (not a zip, no document part, bad XML).
    """
    try:
        import docx
        from docx.table import Table

        document = docx.Document(str(path))
        blocks: list[str] = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                rows = _table_rows(item)
                if rows:
                    blocks.append(LINE_SEPARATOR.join(rows))
            else:
                line = item.text.strip()
                if line:
                    blocks.append(line)
        props = document.core_properties
        title, author = (props.title or "").strip(), (props.author or "").strip()
    except Exception as e:  # not a zip, no word/document.xml, bad XML...
        raise ExtractError(f"corrupt: {type(e).__name__}: {e}") from None
    text = unicodedata.normalize("NFKC", BLOCK_SEPARATOR.join(blocks))
    metadata: dict[str, Any] = {"encrypted": False}
    if title:
        metadata["title"] = title
    if author:
        metadata["author"] = author
    notes = () if text.strip() else ("no text in document body",)
    return ExtractedText(text, words_of(text), (), "docx", notes, metadata)


def _table_rows(table: Any) -> list[str]:
    """One string per row: cell texts joined by " | "; a cell spanning several
    grid columns is written once; nested line breaks become spaces."""
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        prev = None
        for cell in row.cells:
            if cell._tc is prev:  # horizontal span: same cell repeated
                continue
            prev = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return rows

