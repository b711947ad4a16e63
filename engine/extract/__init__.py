"""File -> ``ExtractedText``: the document's text plus its words (``WordArray`` columns).

The package's public face: ``extract`` picks the reader by suffix in ``READERS``
(suffix -> reader module, each with the same ``read(path, password, ocr,
max_pages)``), so adding a format is one reader module and one row; one module
per format does the work (``pdf``, ``text``, ``docx``, ``html``, ``pages``;
``common`` holds the separators and the paged formats). Callers import from
here only.

Owns: reading PDF and the other PyMuPDF page formats, plain text / Markdown,
``.docx`` (its XML) and HTML files, NFKC normalisation, and the conversion of PyMuPDF word boxes to
``Bbox`` of the displayed page. Imports ``engine.values`` and ``engine.errors``
from the engine (``pymupdf`` and ``docx`` lazily, when a file needs them);
never a face (streamlit, mcp, argparse, click), a store or HTTP. Page images
are not made here (``engine/render.py``).

Text layout of a PDF (the word offsets index into it):

    * words on one line are joined by ``" "`` (WORD_SEPARATOR);
    * lines of one block by ``"\\n"`` (LINE_SEPARATOR), except down a vertical CJK
      column (a glyph per line, each below the last: ``engine.extract.pdf._column_steps``),
      whose glyphs follow each other with no separator, so ``交流電燈`` set down a
      column reads as one phrase;
    * blocks of one page by ``"\\n\\n"`` (BLOCK_SEPARATOR);
    * pages by one form feed ``"\\f"`` (PAGE_SEPARATOR), one between every pair
      of consecutive pages, also around pages without words. So for a PDF with
      any text ``text.split("\\f")[n - 1]`` is exactly the text of page ``n``
      (a form feed inside a word is replaced by a space to keep this true).
    * A PDF without a single word gives ``text == ""`` (not a run of form feeds).

Words keep PyMuPDF's block / line / word order (the content-stream order,
``sort=False``); each word is NFKC-normalised (``"ﬂag"`` -> ``"flag"``) before
it is placed, so offsets, search and display agree. Word boxes: PyMuPDF
unrotated points in, ``Bbox`` of the displayed page out (rotation matrix
applied, relative to the displayed ``page.rect``, clamped to 0..1), computed
for all words of a document at once with numpy: no Python object per word.

Plain text / Markdown (and a file without a suffix whose bytes are text:
``engine.extract.text.sniff_text``; bytes that are not text raise code
``binary-content``): decoded (``engine.extract.text.decode``: BOM, strict
UTF-8, UTF-8 with a few stray bytes replaced, else a detected encoding with
its confidence, noted), line ends made ``"\\n"``, NFKC-normalised; words are
the whitespace-separated spans, page/bbox None. ``.docx``: everything in
document order, then notes, comments, headers and footers as labelled blocks
(``engine.extract.docx``); page/bbox None. HTML: the visible text
(``engine.extract.html``). EPUB / XPS / FB2 / MOBI / CBZ: as PDF
(``engine.extract.pages``). Scanned pages: OCR (``engine.extract.ocr``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Protocol

from engine.errors import ExtractError, UnsupportedFileError
from engine.extract.common import BLOCK_SEPARATOR, LINE_SEPARATOR, PAGE_FORMATS, PAGE_SEPARATOR, WORD_SEPARATOR
from engine.extract.ocr import OcrSettings
from engine.values import ExtractedText

#: Names read from the reader modules on first use (PEP 562): importing the package
#: (for ``SUPPORTED_SUFFIXES``) does not import every reader (~15 ms).
_LAZY = {
    "extract_docx": "docx",
    "extract_html": "html",
    "extract_pages": "pages",
    "extract_pdf": "pdf",
    "no_text_note": "pdf",
    "open_pdf": "pdf",
    "rotation_affine": "pdf",
    "extract_plain": "text",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.extract' has no attribute {name!r}")
    return getattr(importlib.import_module(f"engine.extract.{module}"), name)


__all__ = [
    "open_pdf",
    "rotation_affine",
    "SUPPORTED_SUFFIXES",
    "PAGE_SEPARATOR",
    "BLOCK_SEPARATOR",
    "LINE_SEPARATOR",
    "WORD_SEPARATOR",
    "extract",
    "no_text_note",
    "OcrSettings",
    "PAGE_FORMATS",
    "READERS",
    "Reader",
    "reader",
]


class Reader(Protocol):
    """What every reader module's ``read`` is: one file -> ``ExtractedText``
    (``extract`` documents the result, the options and what it raises)."""

    def __call__(self, path: Path, password: str | None, ocr: OcrSettings | None, max_pages: int) -> ExtractedText:
        """Read ``path``; options a format does not use are ignored."""
        ...


#: Lower-case suffix -> the module of ``engine.extract`` whose ``read`` reads it (imported
#: on first use). Adding a format: one reader module with ``read``, one row here.
READERS: dict[str, str] = {
    ".pdf": "pdf",
    ".txt": "text",
    ".md": "text",
    "": "text",  # no suffix (LICENSE, README): the walk reads it only when its bytes are text
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    **{suffix: "pages" for suffix in PAGE_FORMATS},
}

#: Lower-case file suffixes ``extract`` reads; anything else raises UnsupportedFileError.
SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(READERS)


def reader(suffix: str) -> Reader:
    """The ``read`` function for a lower-case ``suffix`` (a key of ``READERS``).

    Raises:
        KeyError: no reader for ``suffix``.
    """
    read: Reader = importlib.import_module(f"engine.extract.{READERS[suffix]}").read
    return read


def extract(
    path: Path, password: str | None = None, ocr: OcrSettings | None = None, max_pages: int = 0
) -> ExtractedText:
    """Read one file into text plus word provenance.

    Args:
        path: the file; its lower-cased suffix picks the reader (``READERS``).
        password: PDF user password, tried after the empty password (as
            given, then SASLprep-normalised); ignored for other types and for
            PDFs that open without one.
        ocr: OCR of pages without a text layer (PDF and the PyMuPDF page
            formats); None = off (the indexer passes the configured settings).
        max_pages: refuse a PDF with more pages (``TooLargeError``, as
            ``engine.extract.limits.check_limits``; 0 = unchecked), on the
            document opened for reading (the indexer passes ``pdf_pages=False``
            to ``check_limits`` and the limit here: one open per file).

    Returns:
        ``ExtractedText`` with ``text`` NFKC-normalised (layout rules in the
        module docstring) and ``words`` (a ``WordArray``: numpy columns,
        read as a sequence of ``Word``) in text order, ``start`` ascending,
        ``text[start:end]`` == the normalised word. PDF words carry ``page``
        (1-based) and ``bbox`` (0..1 of the displayed page, top-left origin);
        other types carry None (page 0 and a NaN box row in the columns). ``pages`` has one ``PageInfo`` per PDF page
        (displayed size in PDF points), empty for other types. As data, not
        exceptions: a PDF with no pages -> text "" and note ``"no pages"``;
        pages without words -> note ``"no text layer on pages 3-5"`` (text ""
        when no page has a word); a page whose text cannot be read -> note;
        a non-UTF-8 text file -> note ``"decoded as cp1252, not UTF-8"``.
        ``metadata``: ``encrypted`` (bool), ``title``/``author`` where the
        file has them, PDF ``repaired`` (True when MuPDF rebuilt the xref),
        text ``encoding``; ``reasonCode`` (an ``engine.errors.ExtractReason``:
        ``no-pages``, ``no-text-layer``, ``only-whitespace``, ``empty-file``)
        when the reader knows why the text is empty.

    Raises:
        UnsupportedFileError: suffix not in ``SUPPORTED_SUFFIXES``
            (reason ``"unsupported file type: .xyz"``); no suffix reads as text.
        EncryptedError: PDF needs a password: reason ``"encrypted: password
            required"`` (none given) or ``"encrypted: wrong password"``.
        ExtractError: missing, unreadable, zero-byte, corrupt or mislabelled
            file; ``reason`` carries the library's message (``"corrupt: ..."``);
            code ``binary-content`` for a text suffix (or none) on bytes that are not text.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in READERS:
        raise UnsupportedFileError("unsupported", f"unsupported file type: {suffix or '(no suffix)'}")
    if not path.is_file():
        raise ExtractError("unreadable", f"not a readable file: {path}")
    return reader(suffix)(path, password, ocr, max_pages)
