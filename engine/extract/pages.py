"""EPUB, XPS, FB2, MOBI, CBZ -> ``ExtractedText`` with page and ``Bbox``, like a PDF.

Owns: ``extract_pages`` (the suffixes and their PyMuPDF filetypes are
``engine.extract.common.PAGE_FORMATS``). The reading is ``engine.extract.pdf.extract_pdf`` opened
with the right filetype, so word order, separators, boxes (displayed page,
top-left origin) and OCR are exactly the PDF ones. Pages of reflowable
formats (EPUB, FB2, MOBI) are MuPDF's layout at its default page size
(the page numbers and boxes are of that layout, the same one
``engine.render`` draws); CBZ pages are images, read by OCR (``ocr`` auto).
Imports ``engine.extract.pdf`` and ``engine.extract.ocr``.
"""

from __future__ import annotations

from pathlib import Path

from engine.extract.common import PAGE_FORMATS
from engine.extract.ocr import OcrSettings
from engine.extract.pdf import extract_pdf
from engine.values import ExtractedText

__all__ = ["read", "extract_pages"]


def read(path: Path, password: str | None, ocr: OcrSettings | None, max_pages: int) -> ExtractedText:
    """The reader's entry in ``engine.extract.READERS``: ``extract`` calls it with every
    option; these formats take no password and no page limit. ``engine.extract.extract`` documents the result and what it raises."""
    return extract_pages(path, path.suffix.lower(), ocr)


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
