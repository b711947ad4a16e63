"""PDF -> ``ExtractedText`` with PyMuPDF: words with page and displayed-page ``Bbox``.

Owns: opening and decrypting PDFs (``open_pdf``, shared with ``engine.render``),
the word layout (block / line / word order, two interleaved columns read one after
the other by ``engine.extract.columns``, separators from
``engine.extract.common``), rotation and CropBox handling (``rotation_affine``:
PyMuPDF unrotated points in, ``Bbox`` of the displayed page out), page labels
and "no text layer" notes. Imports ``engine.values``, ``engine.errors`` and
``engine.extract.common``; ``pymupdf`` lazily. Never a face, a store or HTTP.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.errors import EncryptedError, ExtractError
from engine.extract.common import (
    BLOCK_SEPARATOR,
    LINE_SEPARATOR,
    PAGE_FORMATS,
    PAGE_SEPARATOR,
    WORD_SEPARATOR,
    checkpoint,
    gc_paused,
    place_headings,
)
from engine.extract.columns import reading_order
from engine.extract.mupdf_log import collect, damage_note, mupdf, opening, said
from engine.extract.saslprep import saslprep
from engine.extract.ocr import (
    OCR_OFF,
    OcrSettings,
    needs_ocr,
    ocr_page,
    resolve_languages,
    tesseract_output,
    tesseract_version,
)
from engine.extract.pdfwords import (
    CompiledWords,
    PageWords,
    box_filler,
    join_pages,
    read_page,
    text_filler,
    tuple_words,
)
from engine.values import ExtractedText, PageInfo, WordArray

__all__ = [
    "open_pdf",
    "rotation_affine",
    "extract_pdf",
    "extract_pdf_part",
    "merge_pdf_parts",
    "PdfPart",
    "no_text_note",
    "page_ranges",
    "read",
]

log = logging.getLogger(__name__)

# Separator codes used while laying out a PDF: 0 page start (form feeds), 1-3 below.
_SEPARATOR_TEXTS = ("", WORD_SEPARATOR, LINE_SEPARATOR, BLOCK_SEPARATOR)


def no_text_note(pages: list[int]) -> str:
    """Note for 1-based ``pages`` without words, ranges compressed.

    ``[2]`` -> ``"no text layer on page 2"``; ``[1, 2, 3, 5]`` ->
    ``"no text layer on pages 1-3, 5"``. ``pages`` ascending, non-empty.
    """
    return f"no text layer on {page_ranges(pages)}"


def page_ranges(pages: list[int]) -> str:
    """``[2]`` -> ``"page 2"``; ``[1, 2, 3, 5]`` -> ``"pages 1-3, 5"`` (ascending, non-empty)."""
    runs: list[str] = []
    i = 0
    while i < len(pages):
        j = i
        while j + 1 < len(pages) and pages[j + 1] == pages[j] + 1:
            j += 1
        runs.append(str(pages[i]) if i == j else f"{pages[i]}-{pages[j]}")
        i = j + 1
    noun = "page" if len(pages) == 1 else "pages"
    return f"{noun} {', '.join(runs)}"


#: Note of a PDF MuPDF had to repair (its messages follow): the text of lost objects is missing.
REPAIRED_NOTE = "damaged PDF repaired by MuPDF, some text may be missing"
#: Note of a PDF MuPDF reported errors on without repairing it (its errors follow).
ERRORS_NOTE = "MuPDF reported errors reading this file, some text may be missing"


def open_pdf(
    path: str | os.PathLike[str], password: str | None = None, filetype: str | None = None, *, max_pages: int = 0
) -> tuple[Any, bool]:
    """Open a PDF with PyMuPDF and, if needed, decrypt it (extraction and rendering share this).

    Args:
        path: the PDF file.
        password: tried after the empty password, first as given, then
            SASLprep-normalised (RFC 4013; what AES-256 / revision 6 files
            are encrypted with); None = none configured.
        filetype: PyMuPDF filetype (``"pdf"``; ``"epub"``, ``"xps"``... for
            the other page formats, which have no passwords); None: from the
            suffix (``engine.extract.common.PAGE_FORMATS``, else ``"pdf"``), so ``engine.render``
            draws EPUB / XPS / FB2 / MOBI / CBZ pages too.
        max_pages: refuse more pages (0 = unchecked) before decrypting, with
            ``engine.extract.limits.check_pdf_pages``'s outcome: read on this
            document when it is not encrypted (one open instead of two), by
            that function's own open when it is (its page count is read before
            any password, and reading it here would reset decryption).

    Returns:
        ``(document, was_password_protected)``; the caller closes the document.

    Raises:
        ExtractError: ``"corrupt: <library reason>"`` (empty, truncated, not a PDF).
        EncryptedError: ``"encrypted: password required"`` / ``"encrypted: wrong password"``.
        TooLargeError: over ``max_pages``.
    """
    pymupdf = mupdf()  # MuPDF's messages off stdout, collected (engine.extract.mupdf_log)

    try:
        if filetype is None:
            filetype = PAGE_FORMATS.get(Path(path).suffix.lower(), "pdf")
        with opening(pymupdf):  # the errors MuPDF met while opening (hidden by PyMuPDF) are kept
            doc = pymupdf.open(Path(path), filetype=filetype)
    except Exception as e:  # EmptyFileError, FileDataError, RuntimeError...
        errors = said()[0]
        raise ExtractError("corrupt", f"corrupt: {e}" + (f" (MuPDF: {errors[-1]})" if errors else "")) from None
    # Read needs_pass ONCE, before authenticating: reading it after a
    # successful authenticate() makes MuPDF retry the empty password, which
    # resets decryption and every later get_text() returns 0 words
    # (tests/corpus/EXPECTED.md, trap 7).
    needs_pass = bool(doc.needs_pass)
    if max_pages:
        from engine.extract.limits import check_page_count, check_pdf_pages

        try:
            if needs_pass:
                check_pdf_pages(path, max_pages)
            else:
                check_page_count(doc.page_count, max_pages)
        except BaseException:
            doc.close()
            raise
    if needs_pass:
        if doc.authenticate(""):
            return doc, True
        if not password:
            doc.close()
            raise EncryptedError("password-required", "encrypted: password required")
        if doc.authenticate(password):
            return doc, True
        try:
            prepared = saslprep(password)
        except ValueError:
            prepared = password
        if prepared == password or not doc.authenticate(prepared):
            doc.close()
            raise EncryptedError("wrong-password", "encrypted: wrong password")
    return doc, needs_pass


def _pdf_metadata(doc: Any, needs_pass: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"encrypted": needs_pass, "repaired": False}
    try:
        info = doc.metadata or {}
    except Exception:  # broken Info dictionary: metadata is optional
        info = {}
    if info.get("encryption"):
        meta["encrypted"] = True  # owner-password-only files open without asking
    for key in ("title", "author"):
        value = (info.get(key) or "").strip()
        if value:
            meta[key] = value
    try:
        meta["repaired"] = bool(doc.is_repaired)
    except Exception:
        pass
    try:  # the outline (bookmarks): [level, title, 1-based page], placed by _outline_headings
        toc = [[int(lvl), str(title), int(page)] for lvl, title, page, *_ in doc.get_toc(simple=True)]
    except Exception:  # a broken outline is optional too
        toc = []
    if toc:
        meta["outline"] = toc[:OUTLINE_MOST]
    return meta


#: Outline entries kept per document (a generated outline can hold one per paragraph).
OUTLINE_MOST = 5000


def _outline_headings(text: str, words: Any, outline: list[list[Any]]) -> list[list[Any]]:
    """The PDF outline as heading rows (``engine.search.headings``): each entry's title found
    on its page in ``text``, else the start of its page; entries without a page are left out."""
    pages = np.asarray(words.pages) if len(words) else np.zeros(0, dtype=np.int32)
    starts = np.asarray(words.starts) if len(words) else np.zeros(0, dtype=np.int64)
    rows, at = [], []
    for level, title, page in outline:
        if page < 1:
            continue
        i = int(np.searchsorted(pages, page, side="left"))
        rows.append((level, title))
        at.append(int(starts[i]) if i < len(starts) else len(text))
    return place_headings(text, rows, at)


def read(path: Path, password: str | None, ocr: OcrSettings | None, max_pages: int) -> ExtractedText:
    """The reader's entry in ``engine.extract.READERS``: ``extract`` calls it with every
    option (``extract_pdf``); ``engine.extract.extract`` documents the result and what it raises."""
    return extract_pdf(path, password, ocr, max_pages=max_pages)


def extract_pdf(
    path: Path, password: str | None = None, ocr: OcrSettings | None = None, filetype: str = "pdf", max_pages: int = 0
) -> ExtractedText:
    """Read one PDF's words with page and box (``engine.extract.extract`` documents the result).

    Args:
        path: the file.
        password: user password (PDF only), tried as given and SASLprep-normalised.
        ocr: OCR settings; None = off. Pages ``needs_ocr`` picks are OCR'd
            (``engine.extract.ocr``); their words are in the same displayed-page
            frame as native words.
        filetype: PyMuPDF's filetype (``"pdf"``, ``"epub"``, ``"xps"``, ``"fb2"``,
            ``"mobi"``, ``"cbz"``); ``ExtractedText.file_type`` is set to it.
        max_pages: refuse a PDF with more pages (0 = unchecked), exactly as
            ``engine.extract.limits.check_pdf_pages`` would before extraction,
            on the document opened here instead of a second open.

    Raises:
        ExtractError / EncryptedError: as ``open_pdf``.
        TooLargeError: over ``max_pages``.
    """
    ocr = ocr or OCR_OFF
    with gc_paused():
        opened = _read_pdf(path, password, ocr, filetype, None, max_pages)
        if isinstance(opened, ExtractedText):
            return opened
        return _finish([opened], filetype, ocr)


def extract_pdf_part(
    path: Path, password: str | None, ocr: OcrSettings | None, part: int, parts: int, max_pages: int = 0
) -> PdfPart | ExtractedText:
    """Read the pages of part ``part`` of ``parts`` of one PDF (``engine.index.pool`` splits a
    large PDF across its workers this way; ``merge_pdf_parts`` joins them).

    Part k holds pages ``[k * n // parts, (k + 1) * n // parts)`` of the n pages.
    Every part opens the file itself (same password rules as ``extract_pdf``).

    Returns:
        A ``PdfPart`` (pickles compactly: numpy columns, one list of word
        strings), or the whole ``ExtractedText`` when the PDF has no pages.

    Raises:
        ExtractError / EncryptedError: as ``open_pdf``.
    """
    with gc_paused():
        return _read_pdf(path, password, ocr or OCR_OFF, "pdf", (part, parts), max_pages)


def merge_pdf_parts(parts: list[PdfPart], ocr: OcrSettings | None = None) -> ExtractedText:
    """The ``ExtractedText`` of a PDF read in parts (all parts, in order): exactly what
    ``extract_pdf`` gives for the whole file (tests/index/test_extract_pool.py checks it)."""
    with gc_paused():
        return _finish(parts, "pdf", ocr or OCR_OFF)


class PdfPart:
    """Pages ``first .. first + len(counts) - 1`` (0-based) of one PDF, read but not laid out.

    Columns of the part's PyMuPDF words in page order (``corners``: float64 (n, 4),
    x0, y0, x1, y1; ``codes``: uint32, the words' code points concatenated;
    ``lengths``, ``block``, ``line``: int64 (n,); ``engine.extract.pdfwords``), words per page
    (``counts``), each page's affine box map (``affine``, float64 (pages, 6)),
    ``sizes`` (label, width_pt, height_pt) per page, notes in page order and the
    OCR bookkeeping; ``page_count`` and ``metadata`` are the document's.
    """

    __slots__ = (
        "page_count",
        "metadata",
        "first",
        "corners",
        "codes",
        "lengths",
        "block",
        "line",
        "counts",
        "affine",
        "sizes",
        "notes",
        "unreadable",
        "ocr_confidence",
        "ocr_turned",
        "ocr_wanted",
        "ocr_missing",
        "ocr_partial",
        "mupdf_said",
    )

    page_count: int
    metadata: dict[str, Any]
    first: int
    corners: Any  # float64 (n, 4)
    codes: Any  # uint32
    lengths: Any  # int64 (n,)
    block: Any
    line: Any
    counts: list[int]
    affine: Any  # float64 (pages, 6)
    sizes: list[tuple[str, float, float]]
    notes: list[str]
    unreadable: list[int]
    ocr_confidence: dict[int, float | None]
    ocr_turned: dict[int, int]
    ocr_wanted: list[int]
    ocr_missing: str | None
    ocr_partial: tuple[str, str] | None
    mupdf_said: tuple[list[str], list[str]]

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)


def _read_pdf(
    path: Path, password: str | None, ocr: OcrSettings, filetype: str, part: tuple[int, int] | None, max_pages: int = 0
) -> PdfPart | ExtractedText:
    """Open the file and read its pages (all, or one part's): a ``PdfPart``, or the
    ``ExtractedText`` of a PDF without pages. ``max_pages``: see ``extract_pdf``."""
    pymupdf = mupdf()

    flags = pymupdf.TEXTFLAGS_WORDS
    collect()  # what MuPDF says about this file (this thread) becomes a note in _finish
    doc, needs_pass = open_pdf(path, password, filetype, max_pages=max_pages if filetype == "pdf" else 0)
    try:
        metadata = _pdf_metadata(doc, needs_pass)
        try:
            page_count = doc.page_count
        except Exception as err:  # broken page tree
            raise ExtractError("corrupt", f"corrupt: {err}") from None
        if page_count == 0:
            metadata["reasonCode"] = "no-pages"
            return ExtractedText("", WordArray.empty(), (), filetype, ("no pages",), metadata)
        labels = _label_rules(doc)
        if part is None:
            first, stop = 0, page_count
        else:
            first, stop = part[0] * page_count // part[1], (part[0] + 1) * page_count // part[1]

        # Pass 1, per page: the page's word columns (engine.extract.pdfwords), kept
        # for the vectorised pass 2; one row of the page's affine box map each.
        pieces: list[PageWords | CompiledWords] = []
        raw_counts = [0] * (stop - first)  # words PyMuPDF gave per page
        affine = np.zeros((stop - first, 6))  # per page: ma, mb, mc, md, me, mf
        sizes: list[tuple[str, float, float]] = []  # per page: label, width_pt, height_pt
        notes: list[str] = []
        unreadable: list[int] = []
        ocr_confidence: dict[int, float | None] = {}  # OCR'd page -> mean word confidence
        ocr_turned: dict[int, int] = {}  # OCR'd page read turned upright -> degrees
        ocr_wanted: list[int] = []  # pages OCR would read, when it is unavailable
        ocr_missing: str | None = None
        ocr_use: OcrSettings = ocr  # narrowed to the languages with data on the first OCR'd page
        ocr_note: str | None = None
        ocr_checked = False
        for pno in range(first, stop):
            checkpoint()  # a cancelled run stops here, between pages
            number = pno + 1
            try:
                page = doc[pno]
                raw = read_page(page, flags)
                rect = page.rect
                a, b, c, d, e, f = rotation_affine(page.rotation, rect.width, rect.height)
                label = _page_label(page, labels) if labels else ""
            except Exception as exc:  # a damaged page: note it, keep the rest
                log.debug("%s: page %d unreadable: %s", path, number, exc)
                notes.append(f"text of page {number} could not be read: {exc}")
                sizes.append(("", 0.0, 0.0))
                unreadable.append(number)
                continue
            width_pt = rect.width
            height_pt = rect.height
            sizes.append((label, width_pt, height_pt))
            ocr_done = False
            if ocr.mode != "off" and needs_ocr(page, len(raw), ocr):
                if not ocr_checked:  # the languages with data (some missing: noted, read without them)
                    resolved, ocr_note = resolve_languages(ocr)
                    ocr_missing, ocr_checked = (ocr_note if resolved is None else None), True
                    ocr_use = resolved or ocr  # None: OCR unavailable, ocr_missing says why
                if ocr_missing:
                    ocr_wanted.append(number)
                else:
                    try:
                        ocr_raw, ocr_confidence[number], turn = ocr_page(page, ocr_use, flags)
                        notes.extend(f"Tesseract on page {number}: {line}" for line in tesseract_output())
                        raw = tuple_words(ocr_raw)
                        ocr_done = True
                        if turn:
                            ocr_turned[number] = turn
                    except Exception as exc:  # MuPDF/Tesseract failed on this page: note it
                        log.debug("%s: OCR of page %d failed: %s", path, number, exc)
                        notes.append(f"OCR of page {number} failed: {exc}")
            if not len(raw):
                continue
            pieces.append(raw)
            raw_counts[pno - first] = len(raw)
            if ocr_done:
                # OCR words are already in displayed points (engine.extract.ocr).
                affine[pno - first] = (
                    1.0 / width_pt if width_pt > 0 else 0.0,
                    0.0,
                    0.0,
                    1.0 / height_pt if height_pt > 0 else 0.0,
                    0.0,
                    0.0,
                )
                continue
            # PyMuPDF unrotated points -> displayed points (rotation_matrix) ->
            # relative to the displayed page.rect -> fractions of its width /
            # height. Rotations are multiples of 90 degrees: x maps to x and y
            # to y (b = c = 0), or x to y and y to x (a = d = 0).
            sx = 1.0 / width_pt if width_pt > 0 else 0.0
            sy = 1.0 / height_pt if height_pt > 0 else 0.0
            if b == 0 and c == 0:
                affine[pno - first] = (a * sx, 0.0, 0.0, d * sy, (e - rect.x0) * sx, (f - rect.y0) * sy)
            else:
                affine[pno - first] = (0.0, b * sy, c * sx, 0.0, (e - rect.x0) * sx, (f - rect.y0) * sy)
    finally:
        doc.close()

    out = PdfPart()
    out.page_count, out.metadata, out.first = page_count, metadata, first
    out.corners, out.codes, out.lengths, out.block, out.line = _join(pieces)
    out.counts, out.affine, out.sizes, out.notes, out.unreadable = raw_counts, affine, sizes, notes, unreadable
    out.ocr_confidence, out.ocr_turned, out.ocr_wanted, out.ocr_missing = (
        ocr_confidence,
        ocr_turned,
        ocr_wanted,
        ocr_missing,
    )
    out.ocr_partial = (ocr_use.languages, ocr_note) if ocr_confidence and ocr_note else None
    out.mupdf_said = said()
    return out


def _join(pieces: list[PageWords | CompiledWords]) -> tuple[Any, Any, Any, Any, Any]:
    """Pages' words -> (corners (n, 4), codes, lengths, block, line) of all of them."""
    p = join_pages(pieces)
    return p.corners, p.codes, p.lengths, p.block, p.line


def _finish(parts: list[PdfPart], filetype: str, ocr: OcrSettings) -> ExtractedText:
    """Parts (in page order, covering every page) -> the document's ``ExtractedText``."""
    head = parts[0]
    page_count, metadata = head.page_count, head.metadata
    if len(parts) == 1:
        p = head
        corners, codes, lengths, block, line = p.corners, p.codes, p.lengths, p.block, p.line
        raw_counts, affine, sizes, notes = p.counts, p.affine, p.sizes, list(p.notes)
        unreadable, ocr_wanted = p.unreadable, p.ocr_wanted
        ocr_confidence, ocr_turned, ocr_missing = p.ocr_confidence, p.ocr_turned, p.ocr_missing
        ocr_partial = p.ocr_partial
        errors, warnings = p.mupdf_said
    else:
        corners = np.concatenate([p.corners for p in parts])
        codes = np.concatenate([p.codes for p in parts])
        lengths = np.concatenate([p.lengths for p in parts])
        block = np.concatenate([p.block for p in parts])
        line = np.concatenate([p.line for p in parts])
        raw_counts = [k for p in parts for k in p.counts]
        affine = np.concatenate([p.affine for p in parts])
        sizes = [x for p in parts for x in p.sizes]
        notes = [x for p in parts for x in p.notes]
        unreadable = [x for p in parts for x in p.unreadable]
        ocr_wanted = [x for p in parts for x in p.ocr_wanted]
        ocr_confidence = {k: v for p in parts for k, v in p.ocr_confidence.items()}
        ocr_turned = {k: v for p in parts for k, v in p.ocr_turned.items()}
        ocr_missing = next((p.ocr_missing for p in parts if p.ocr_missing), None)
        ocr_partial = next((p.ocr_partial for p in parts if p.ocr_partial), None)
        errors = [m for p in parts for m in p.mupdf_said[0]]
        warnings = [m for p in parts for m in p.mupdf_said[1]]
    metadata = dict(metadata)
    if len(raw_counts) != page_count:
        raise ValueError(f"PDF parts cover {len(raw_counts)} of {page_count} pages")

    corners, codes, lengths, block, line = reading_order(corners, codes, lengths, block, line, raw_counts, affine)
    words, text, kept = _place_words(corners, codes, lengths, block, line, raw_counts, affine, page_count)
    outline = metadata.pop("outline", None)
    if outline and text:
        placed = _outline_headings(text, words, outline)
        if placed:
            metadata["headings"] = placed  # engine.search.headings
    empty_pages = sorted({i + 1 for i, k in enumerate(kept) if not k} | set(unreadable))
    pages = tuple(PageInfo(i + 1, label, int(kept[i]), w_pt, h_pt) for i, (label, w_pt, h_pt) in enumerate(sizes))
    if metadata.get("repaired"):  # a repaired file may lack the text of what was lost
        notes.insert(0, damage_note(REPAIRED_NOTE, errors + warnings))
    elif errors:
        notes.insert(0, damage_note(ERRORS_NOTE, errors))
    if empty_pages:
        notes.append(no_text_note(empty_pages))
    if not text:
        metadata["reasonCode"] = "no-text-layer"
    if ocr_wanted and ocr_missing:
        notes.append(f"{ocr_missing}; not OCR'd: {page_ranges(ocr_wanted)}")
        # what OCR would have read is not in the text: the indexer keeps OCR text it stored before
        metadata["ocrUnavailable"] = {"pages": sorted(ocr_wanted), "reason": notes[-1]}
    if ocr_partial:  # read with the languages that have data; the note names the missing ones
        ocr = OcrSettings(ocr.mode, ocr_partial[0], ocr.dpi)
        notes.append(ocr_partial[1])
    if ocr_confidence:
        notes.append(_ocr_note(ocr, ocr_confidence))
        if ocr_turned:
            notes.append(
                "text not upright as displayed, read turned: "
                + ", ".join(f"page {k} by {v} degrees" for k, v in sorted(ocr_turned.items()))
            )
            metadata["ocrTurned"] = {str(k): v for k, v in sorted(ocr_turned.items())}
        metadata["ocrPages"] = {str(k): v for k, v in sorted(ocr_confidence.items())}
        metadata["ocr"] = {"engine": tesseract_version(), "languages": ocr.languages, "dpi": ocr.dpi}
    return ExtractedText(text, words, pages, filetype, tuple(notes), metadata)


def _ocr_note(ocr: OcrSettings, confidence: dict[int, float | None]) -> str:
    """``"OCR (tesseract 5.3.0, eng, 300 dpi) on pages 1-5; mean word confidence 87.3"``."""
    known = [c for c in confidence.values() if c is not None]
    mean = f"; mean word confidence {sum(known) / len(known):.1f}" if known else ""
    return f"OCR ({tesseract_version()}, {ocr.languages}, {ocr.dpi} dpi) on {page_ranges(sorted(confidence))}{mean}"


def rotation_affine(rotation: int, width_pt: float, height_pt: float) -> tuple[float, ...]:
    """``page.rotation_matrix`` computed from the page's /Rotate and displayed size.

    PyMuPDF's own formula (``JM_rotate_page_matrix``), without its ~50 µs per
    page of object lookups: the unrotated CropBox is ``w x h``; displayed
    width/height are swapped for 90 and 270. ``tests/extract/test_extract.py`` checks
    it equals ``page.rotation_matrix`` on every corpus and built page.

    Args:
        rotation: ``page.rotation`` (0, 90, 180 or 270).
        width_pt, height_pt: ``page.rect`` width and height (displayed, PDF points).

    Returns:
        ``(a, b, c, d, e, f)`` mapping unrotated points to displayed points.
    """
    if rotation == 90:
        return (0.0, 1.0, -1.0, 0.0, width_pt, 0.0)
    if rotation == 180:
        return (-1.0, 0.0, 0.0, -1.0, width_pt, height_pt)
    if rotation == 270:
        return (0.0, -1.0, 1.0, 0.0, 0.0, height_pt)
    return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _place_words(
    corners: Any, codes: Any, lengths: Any, block: Any, line: Any, raw_counts: list[int], affine: Any, page_count: int
) -> tuple[WordArray, str, list[int]]:
    """Lay one PDF's words out as text (module docstring) with their columns.

    Args:
        corners, codes, lengths, block, line: the columns (``engine.extract.pdfwords``,
            ``_join``) of PyMuPDF's words ``(x0, y0, x1, y1, word, block, line)`` of
            every page in page order; corners float64 (n, 4) in points of the
            unrotated page frame; codes uint32, the words' code points concatenated;
            lengths int64, code points per word.
        raw_counts: words per page, length ``page_count`` (pages in order).
        affine: float64, shape (page_count, 6), per page ``(ma, mb, mc, md,
            me, mf)``: displayed-page fraction ``u = ma*x + mc*y + me``,
            ``v = mb*x + md*y + mf`` of an unrotated point (x, y).
        page_count: pages of the document (for the form feeds after the last word).

    Returns:
        ``(words, text, page_words)``: the ``WordArray`` (boxes clamped to
        0..1), the text ("" when no word survives NFKC) and the words kept per
        page (list of int, length ``page_count``). Words whose NFKC form is
        empty are dropped before separators are chosen.
    """
    n = len(lengths)
    if not n:
        return WordArray.empty(), "", [0] * page_count
    pages = np.repeat(np.arange(1, page_count + 1, dtype=np.int32), raw_counts)
    per_page = raw_counts  # words per page, while none is dropped
    odd = np.flatnonzero((codes > 127) | (codes == ord(PAGE_SEPARATOR)))
    if len(odd):
        # Rare: NFKC the words holding a non-ASCII character or a form feed;
        # drop those that become empty.
        code_end = np.cumsum(lengths)
        odd_words = np.searchsorted(code_end, odd, side="right")  # ascending, with repeats
        odd_words = odd_words[np.concatenate(([True], odd_words[1:] != odd_words[:-1]))]
        odd_end = code_end[odd_words].tolist()
        odd_start = (code_end[odd_words] - lengths[odd_words]).tolist()
        odd_words = odd_words.tolist()
        blob = codes.tobytes().decode("utf-32-le", "surrogatepass")
        originals = [blob[a:b] for a, b in zip(odd_start, odd_end)]
        # One NFKC call for all of them: NUL (a starter nothing composes with, never
        # inside a word) between words keeps normalisation from crossing them.
        normal = unicodedata.normalize("NFKC", "\0".join(originals)).split("\0")
        if len(normal) != len(originals):  # cannot happen; normalise one by one
            normal = [unicodedata.normalize("NFKC", w) for w in originals]
        changed: dict[int, tuple[str, int, int]] = {}  # word -> (its NFKC form, code span)
        for i, w, s, a, b in zip(odd_words, originals, normal, odd_start, odd_end):
            s = _clean_word(s)
            if s != w:
                changed[i] = (s, a, b)
        if changed:
            segments, at = [], 0
            lengths = lengths.copy()
            for i, (s, a, b) in changed.items():  # ascending
                segments.append(codes[at:a])
                segments.append(np.frombuffer(s.encode("utf-32-le", "surrogatepass"), np.uint32))
                at = b
                lengths[i] = len(s)
            segments.append(codes[at:])
            codes = np.concatenate(segments)
            keep = lengths > 0
            if not keep.all():
                if not keep.any():
                    return WordArray.empty(), "", [0] * page_count
                pages, block, line, lengths, corners = (
                    pages[keep],
                    block[keep],
                    line[keep],
                    lengths[keep],
                    corners[keep],
                )
                per_page = np.bincount(pages, minlength=page_count + 1)[1:]
                n = len(lengths)

    # Separator before each word: "\f" per page boundary crossed (page 1's
    # first word: none), else "\n\n" on a new block, "\n" on a new line, " ".
    code = np.ones(n, np.int8)  # index into _SEPARATOR_TEXTS
    new_line = line[1:] != line[:-1]
    code[1:][new_line] = 2
    code[1:][block[1:] != block[:-1]] = 3
    page_gap = np.empty(n, np.int32)
    page_gap[0] = pages[0] - 1
    np.subtract(pages[1:], pages[:-1], out=page_gap[1:])
    code[0] = 0
    if len(odd):  # vertical CJK: a glyph per line, read down the column as one line
        code[1:][new_line & (block[1:] == block[:-1]) & _column_steps(codes, lengths, corners)] = 0
    crossing = np.flatnonzero(page_gap)
    code[crossing] = 0
    sep_len = np.array([len(x) for x in _SEPARATOR_TEXTS], dtype=np.int64)[code]
    sep_len[crossing] = page_gap[crossing]

    # The text as code points: words at their offsets, separators around them
    # (space by default; "\n" / "\n\n" / form feeds where the code says).
    ends = np.cumsum(sep_len + lengths)
    starts = ends - lengths
    total = int(ends[-1]) + int(page_count - pages[-1])
    fill = text_filler()
    if fill is not None:  # the same code points, written in one C pass (engine.extract._pdfwords)
        out = np.empty(total, np.uint32)
        fill(
            out,
            np.ascontiguousarray(codes, np.uint32),
            np.ascontiguousarray(lengths, np.int64),
            code,
            np.ascontiguousarray(sep_len, np.int64),
        )
    else:
        out = np.full(total, ord(WORD_SEPARATOR), np.uint32)
        # inside a word: +1 at its start, -1 at its end (0 where one word ends as the
        # next starts: a vertical CJK column), summed along the text
        mark = np.zeros(total + 1, np.int8)
        mark[starts] = 1
        mark[ends] -= 1
        out[np.cumsum(mark[:total], dtype=np.int8).view(bool)] = codes
        newline = ord(LINE_SEPARATOR)
        out[starts[code >= 2] - 1] = newline
        out[starts[code == 3] - 2] = newline
        if len(crossing):
            gaps = page_gap[crossing].astype(np.int64)
            first = np.repeat(starts[crossing] - gaps, gaps)
            out[first + np.arange(len(first)) - np.repeat(np.cumsum(gaps) - gaps, gaps)] = ord(PAGE_SEPARATOR)
        out[int(ends[-1]) :] = ord(PAGE_SEPARATOR)
    text = out.tobytes().decode("utf-32-le", "surrogatepass")

    # Boxes: the page's affine map, then sorted corners, clamped to 0..1.
    fill_boxes = box_filler()
    if fill_boxes is not None:  # the same numbers in one C pass (engine.extract._pdfwords)
        boxes = np.empty((n, 4))
        fill_boxes(
            boxes,
            np.ascontiguousarray(corners, np.float64),
            np.ascontiguousarray(affine, np.float64),
            np.ascontiguousarray(per_page, np.int64),
        )
        return WordArray(starts, ends, pages, boxes), text, [int(k) for k in per_page]
    px0, py0, px1, py1 = corners.T
    ma, mb, mc, md, me, mf = (np.repeat(col, per_page) for col in affine.T)  # each word's page's row
    u0 = ma * px0 + mc * py0 + me
    u1 = ma * px1 + mc * py1 + me
    v0 = mb * px0 + md * py0 + mf
    v1 = mb * px1 + md * py1 + mf
    boxes = np.empty((n, 4))
    lo_u, lo_v, w, h = boxes.T
    np.clip(np.minimum(u0, u1, out=lo_u), 0.0, 1.0, out=lo_u)
    np.clip(np.minimum(v0, v1, out=lo_v), 0.0, 1.0, out=lo_v)
    np.subtract(np.clip(np.maximum(u0, u1, out=u0), 0.0, 1.0, out=u0), lo_u, out=w)
    np.subtract(np.clip(np.maximum(v0, v1, out=v0), 0.0, 1.0, out=v0), lo_v, out=h)
    page_words = [int(k) for k in per_page]
    return WordArray(starts, ends, pages, boxes), text, page_words


#: Code points of vertically set scripts: CJK punctuation, kana, CJK ideographs (+ extension A,
#: compatibility), Hangul syllables, full-width forms (``_column_steps``).
_VERTICAL_RANGES = (
    (0x3000, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
)


def _column_steps(codes: Any, lengths: Any, corners: Any) -> Any:
    """bool, shape (n - 1,): True where word i + 1 continues a vertical CJK column from word i.

    A vertically set page (top to bottom, columns right to left) comes out of PyMuPDF
    as one line per glyph or short run; two consecutive words are one column when
    both are only CJK characters (``_VERTICAL_RANGES``), both boxes are upright (at
    least 0.9 x as tall as wide: a horizontal line of text is not), they overlap
    horizontally by at least half the narrower one, and the second starts below the
    first's top and less than half a glyph below its foot (unrotated page points).
    Wrapped horizontal lines keep their line ends. Such a step gets no separator, so a phrase
    set down a column (``交流電燈``) is contiguous in the text; each glyph keeps its
    own box, so highlights stay exact. The step from a column's foot to the next
    column's head moves up the page and keeps its line end.
    """
    n = len(lengths)
    if n < 2:
        return np.zeros(max(n - 1, 0), bool)
    cjk = np.zeros(len(codes), bool)
    for lo, hi in _VERTICAL_RANGES:
        cjk |= (codes >= lo) & (codes <= hi)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    all_cjk = np.add.reduceat(cjk.astype(np.int64), starts) == lengths
    x0, y0, x1, y1 = corners.T
    upright = (y1 - y0) >= 0.9 * (x1 - x0)  # a glyph or a run set downwards, not a horizontal line
    overlap = np.minimum(x1[1:], x1[:-1]) - np.maximum(x0[1:], x0[:-1])
    narrower = np.minimum(x1[1:] - x0[1:], x1[:-1] - x0[:-1])
    near = y0[1:] - y1[:-1] < 0.5 * (y1[:-1] - y0[:-1])  # the next glyph down, not a paragraph below
    return (
        all_cjk[1:]
        & all_cjk[:-1]
        & upright[1:]
        & upright[:-1]
        & (overlap >= 0.5 * narrower)
        & (y0[1:] > y0[:-1])
        & near
    )


def _clean_word(nfkc: str) -> str:
    """A word after NFKC (``"ﬂag"`` -> ``"flag"``): outer whitespace stripped, a form feed
    inside made a space (it is the page separator); may return ""."""
    return nfkc.strip().replace("\f", " ")


def _label_rules(doc: Any) -> list[Any]:
    """The document's /PageLabels rules, read once (``page.get_label()``
    re-reads and re-sorts them for every page); [] when none or unreadable."""
    try:
        if not doc.get_page_labels():
            return []
        rules = doc._get_page_labels()  # sorted (first page, rule) pairs
        rules.sort()
        return rules
    except Exception:
        return []


_HEX_STRING = re.compile(r"<([0-9A-Fa-f]+)>")


def _page_label(page: Any, rules: list[Any]) -> str:
    """Printed label of ``page`` ('' when none). PyMuPDF 1.26 leaves a hex
    string prefix such as ``/P <FEFF0043>`` undecoded (``'<FEFF0043>1'``);
    it is decoded here (``'C1'``)."""
    from pymupdf import utils

    try:
        label = utils.get_label_pno(page.number, rules)
    except Exception:
        label = page.get_label()
    if "<" in label:
        label = _HEX_STRING.sub(_decode_hex, label)
    return label


def _decode_hex(m: re.Match[str]) -> str:
    raw = bytes.fromhex(m.group(1) + ("0" if len(m.group(1)) % 2 else ""))
    if raw.startswith((b"\xfe\xff", b"\xff\xfe")):
        return raw.decode("utf-16", "replace")
    return raw.decode("latin-1")
