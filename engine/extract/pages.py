"""EPUB, XPS, FB2, MOBI, CBZ -> ``ExtractedText`` with page and ``Bbox``, like a PDF.

Owns: the suffix -> PyMuPDF filetype table (``PAGE_FORMATS``) and
``extract_pages``. The reading is ``engine.extract.pdf.extract_pdf`` opened
with the right filetype, so word order, separators, boxes (displayed page,
top-left origin) and OCR are exactly the PDF ones. Pages of reflowable
formats (EPUB, FB2, MOBI) are MuPDF's layout at its default page size
(the page numbers and boxes are of that layout, the same one
``engine.render`` draws); CBZ pages are images, read by OCR (``ocr`` auto).
Imports ``engine.extract.pdf`` and ``engine.extract.ocr``.
"""

from __future__ import annotations

from pathlib import Path

from engine.extract.ocr import OcrSettings
from engine.extract.pdf import PAGE_FILETYPES, extract_pdf
from engine.values import ExtractedText

__all__ = ["PAGE_FORMATS", "extract_pages"]

#: Lower-case suffix -> PyMuPDF filetype (declared beside ``open_pdf``, which renders them too).
PAGE_FORMATS: dict[str, str] = PAGE_FILETYPES


def extract_pages(path: Path, suffix: str, ocr: OcrSettings | None = None) -> ExtractedText:
    """Read an EPUB / XPS / FB2 / MOBI / CBZ file page by page.

    Args:
        path: the file.
        suffix: its lower-case suffix, a key of ``PAGE_FORMATS``.
        ocr: OCR settings for pages without words (CBZ: every page); None = off.

    Returns:
        As ``extract`` for a PDF; ``file_type`` is the suffix without the dot
        (``"epub"``...), ``pages`` one ``PageInfo`` per laid-out page.

    Raises:
        ExtractError: ``"corrupt: ..."`` when PyMuPDF cannot open it.
    """
    x = extract_pdf(path, None, ocr, PAGE_FORMATS[suffix])
    if x.file_type != suffix[1:]:
        x = ExtractedText(x.text, x.words, x.pages, suffix[1:], x.notes, x.metadata)
    return x
