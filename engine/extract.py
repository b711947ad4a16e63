"""File -> ``ExtractedText``: the document's text plus its words (``WordArray`` columns).

Owns: reading PDF (PyMuPDF), plain text / Markdown and ``.docx`` (python-docx)
files, NFKC normalisation, and the conversion of PyMuPDF word boxes to
``Bbox`` of the displayed page. Imports ``engine.model`` and ``engine.errors``
from the engine (``pymupdf`` and ``docx`` lazily, when a file needs them);
never a face (streamlit, mcp, argparse, click), a store or HTTP. Page images
are not made here (``engine/render.py``).

Text layout of a PDF (the word offsets index into it):

    * words on one line are joined by ``" "`` (WORD_SEPARATOR);
    * lines of one block by ``"\\n"`` (LINE_SEPARATOR);
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

Plain text / Markdown: decoded (UTF-8, BOM stripped; else cp1252, else
latin-1, noted), line ends made ``"\\n"``, NFKC-normalised; words are the
whitespace-separated spans, page/bbox None. ``.docx``: body paragraphs and
tables in document order, blocks joined by ``"\\n\\n"``, one table row per
line with cells joined by ``" | "``; headers/footers are not read; page/bbox None.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import EncryptedError, ExtractError, UnsupportedFileError
from engine.model import ExtractedText, PageInfo, WordArray

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
]

log = logging.getLogger(__name__)

#: Lower-case file suffixes ``extract`` reads; anything else raises UnsupportedFileError.
SUPPORTED_SUFFIXES: tuple[str, ...] = (".pdf", ".txt", ".md", ".docx")

PAGE_SEPARATOR = "\f"
BLOCK_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
WORD_SEPARATOR = " "

_WORD_RE = re.compile(r"\S+")

# Separator codes used while laying out a PDF: 0 page start (form feeds), 1-3 below.
_SEPARATORS = np.array(["", WORD_SEPARATOR, LINE_SEPARATOR, BLOCK_SEPARATOR], dtype=object)
_SEPARATOR_LENGTHS = np.array([len(x) for x in _SEPARATORS], dtype=np.int64)
_FIELD = [itemgetter(i) for i in range(8)]  # fields of a PyMuPDF word tuple


def extract(path: Path, password: str | None = None) -> ExtractedText:
    """Read one file into text plus word provenance.

    Args:
        path: the file; its lower-cased suffix picks the reader (``SUPPORTED_SUFFIXES``).
        password: PDF user password, tried after the empty password; ignored
            for other types and for PDFs that open without one.

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
        text ``encoding``.

    Raises:
        UnsupportedFileError: suffix not in ``SUPPORTED_SUFFIXES``
            (reason ``"unsupported file type: .xyz"``).
        EncryptedError: PDF needs a password: reason ``"encrypted: password
            required"`` (none given) or ``"encrypted: wrong password"``.
        ExtractError: missing, unreadable, zero-byte, corrupt or mislabelled
            file; ``reason`` carries the library's message (``"corrupt: ..."``).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedFileError(f"unsupported file type: {suffix or '(no suffix)'}")
    if not path.is_file():
        raise ExtractError(f"not a readable file: {path}")
    if suffix == ".pdf":
        with _gc_paused():
            return _extract_pdf(path, password)
    if suffix == ".docx":
        return _extract_docx(path)
    return _extract_plain(path, suffix[1:])


def no_text_note(pages: list[int]) -> str:
    """Note for 1-based ``pages`` without words, ranges compressed.

    ``[2]`` -> ``"no text layer on page 2"``; ``[1, 2, 3, 5]`` ->
    ``"no text layer on pages 1-3, 5"``. ``pages`` ascending, non-empty.
    """
    runs: list[str] = []
    i = 0
    while i < len(pages):
        j = i
        while j + 1 < len(pages) and pages[j + 1] == pages[j] + 1:
            j += 1
        runs.append(str(pages[i]) if i == j else f"{pages[i]}-{pages[j]}")
        i = j + 1
    noun = "page" if len(pages) == 1 else "pages"
    return f"no text layer on {noun} {', '.join(runs)}"


# --------------------------------------------------------------------- PDF


def open_pdf(path: str | os.PathLike[str], password: str | None = None) -> tuple[Any, bool]:
    """Open a PDF with PyMuPDF and, if needed, decrypt it (extraction and rendering share this).

    Args:
        path: the PDF file.
        password: tried after the empty password; None = none configured.

    Returns:
        ``(document, was_password_protected)``; the caller closes the document.

    Raises:
        ExtractError: ``"corrupt: <library reason>"`` (empty, truncated, not a PDF).
        EncryptedError: ``"encrypted: password required"`` / ``"encrypted: wrong password"``.
    """
    import pymupdf

    try:
        doc = pymupdf.open(Path(path), filetype="pdf")
    except Exception as e:  # EmptyFileError, FileDataError, RuntimeError...
        raise ExtractError(f"corrupt: {e}") from None
    # Read needs_pass ONCE, before authenticating: reading it after a
    # successful authenticate() makes MuPDF retry the empty password, which
    # resets decryption and every later get_text() returns 0 words
    # (EXPECTED.md trap 7).
    needs_pass = bool(doc.needs_pass)
    if needs_pass:
        if doc.authenticate(""):
            return doc, True
        if not password:
            doc.close()
            raise EncryptedError("encrypted: password required")
        if not doc.authenticate(password):
            doc.close()
            raise EncryptedError("encrypted: wrong password")
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
    return meta


def _extract_pdf(path: Path, password: str | None) -> ExtractedText:
    import pymupdf

    flags = pymupdf.TEXTFLAGS_WORDS
    doc, needs_pass = open_pdf(path, password)
    try:
        metadata = _pdf_metadata(doc, needs_pass)
        try:
            page_count = doc.page_count
        except Exception as e:  # broken page tree
            raise ExtractError(f"corrupt: {e}") from None
        if page_count == 0:
            return ExtractedText("", WordArray.empty(), (), "pdf", ("no pages",), metadata)
        labels = _label_rules(doc)

        # Pass 1, per page: PyMuPDF's word tuples, kept whole for the vectorised
        # pass 2; one row of the page's affine box map each.
        raw_words: list[tuple[Any, ...]] = []
        extend = raw_words.extend
        raw_counts = [0] * page_count  # words PyMuPDF gave per page
        affine = np.zeros((page_count, 6))  # per page: ma, mb, mc, md, me, mf
        sizes: list[tuple[str, float, float]] = []  # per page: label, width_pt, height_pt
        notes: list[str] = []
        unreadable: list[int] = []
        for pno in range(page_count):
            number = pno + 1
            try:
                page = doc[pno]
                raw = page.get_text("words", flags=flags)
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
            if not raw:
                continue
            extend(raw)
            raw_counts[pno] = len(raw)
            # PyMuPDF unrotated points -> displayed points (rotation_matrix) ->
            # relative to the displayed page.rect -> fractions of its width /
            # height. Rotations are multiples of 90 degrees: x maps to x and y
            # to y (b = c = 0), or x to y and y to x (a = d = 0).
            sx = 1.0 / width_pt if width_pt > 0 else 0.0
            sy = 1.0 / height_pt if height_pt > 0 else 0.0
            if b == 0 and c == 0:
                affine[pno] = (a * sx, 0.0, 0.0, d * sy, (e - rect.x0) * sx, (f - rect.y0) * sy)
            else:
                affine[pno] = (0.0, b * sy, c * sx, 0.0, (e - rect.x0) * sx, (f - rect.y0) * sy)
    finally:
        doc.close()

    words, text, page_words = _place_words(raw_words, raw_counts, affine, page_count)
    empty_pages = sorted({i + 1 for i, k in enumerate(page_words) if not k} | set(unreadable))
    pages = tuple(PageInfo(i + 1, label, int(page_words[i]), w_pt, h_pt)
                  for i, (label, w_pt, h_pt) in enumerate(sizes))
    if empty_pages:
        notes.append(no_text_note(empty_pages))
    return ExtractedText(text, words, pages, "pdf", tuple(notes), metadata)


def rotation_affine(rotation: int, width_pt: float, height_pt: float) -> tuple[float, ...]:
    """``page.rotation_matrix`` computed from the page's /Rotate and displayed size.

    PyMuPDF's own formula (``JM_rotate_page_matrix``), without its ~50 µs per
    page of object lookups: the unrotated CropBox is ``w x h``; displayed
    width/height are swapped for 90 and 270. ``tests/test_extract.py`` checks
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


def _place_words(raw: list[tuple[Any, ...]], raw_counts: list[int], affine: np.ndarray,
                 page_count: int) -> tuple[WordArray, str, list[int]]:
    """Lay one PDF's words out as text (module docstring) with their columns.

    Args:
        raw: PyMuPDF ``get_text("words")`` tuples ``(x0, y0, x1, y1, word,
            block, line, word_no)`` of every page in page order; points in the
            unrotated page frame.
        raw_counts: tuples per page, length ``page_count`` (pages in order).
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
    if not raw:
        return WordArray.empty(), "", [0] * page_count
    n = len(raw)
    # One column at a time (cheaper than transposing with zip(*raw)).
    corners = [np.fromiter(map(_FIELD[i], raw), np.float64, n) for i in range(4)]  # x0, y0, x1, y1
    strings = list(map(_FIELD[4], raw))
    block = np.fromiter(map(_FIELD[5], raw), np.int64, n)
    line = np.fromiter(map(_FIELD[6], raw), np.int64, n)
    pages = np.repeat(np.arange(1, page_count + 1, dtype=np.int32), raw_counts)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    blob = "".join(strings)
    if not blob.isascii() or PAGE_SEPARATOR in blob:
        # Rare: NFKC the words holding a non-ASCII character or a form feed
        # (found on the code points of the joined words); drop those that
        # become empty.
        code_points = np.frombuffer(blob.encode("utf-32-le", "surrogatepass"), np.uint32)
        odd = np.flatnonzero((code_points > 127) | (code_points == ord(PAGE_SEPARATOR)))
        keep = np.ones(n, bool)
        for i in np.unique(np.searchsorted(np.cumsum(lengths), odd, side="right")).tolist():
            s = _normal_word(strings[i])
            strings[i] = s
            lengths[i] = len(s)
            keep[i] = bool(s)
        if not keep.all():
            strings = [s for s in strings if s]
            if not strings:
                return WordArray.empty(), "", [0] * page_count
            n = len(strings)
            pages, block, line, lengths = pages[keep], block[keep], line[keep], lengths[keep]
            corners = [col[keep] for col in corners]

    # Separator before each word: "\f" per page boundary crossed (page 1's
    # first word: none), else "\n\n" on a new block, "\n" on a new line, " ".
    code = np.ones(n, np.int8)  # index into _SEPARATORS
    new_line = line[1:] != line[:-1]
    code[1:][new_line] = 2
    code[1:][block[1:] != block[:-1]] = 3
    page_gap = np.empty(n, np.int32)
    page_gap[0] = pages[0] - 1
    np.subtract(pages[1:], pages[:-1], out=page_gap[1:])
    code[0] = 0
    crossing = np.flatnonzero(page_gap)
    code[crossing] = 0
    sep_len = _SEPARATOR_LENGTHS[code]
    sep_len[crossing] = page_gap[crossing]
    separators = _SEPARATORS[code]
    for i in crossing.tolist():
        separators[i] = PAGE_SEPARATOR * int(page_gap[i])

    ends = np.cumsum(sep_len + lengths)
    starts = ends - lengths
    parts = [PAGE_SEPARATOR * int(page_count - pages[-1])] * (2 * n + 1)  # last: trailing form feeds
    parts[0:-1:2] = separators.tolist()
    parts[1::2] = strings
    text = "".join(parts)

    # Boxes: the page's affine map, then sorted corners, clamped to 0..1.
    px0, py0, px1, py1 = corners
    ma, mb, mc, md, me, mf = affine[pages - 1].T
    u0 = ma * px0 + mc * py0 + me
    u1 = ma * px1 + mc * py1 + me
    v0 = mb * px0 + md * py0 + mf
    v1 = mb * px1 + md * py1 + mf
    lo_u = np.clip(np.minimum(u0, u1), 0.0, 1.0)
    hi_u = np.clip(np.maximum(u0, u1), 0.0, 1.0)
    lo_v = np.clip(np.minimum(v0, v1), 0.0, 1.0)
    hi_v = np.clip(np.maximum(v0, v1), 0.0, 1.0)
    boxes = np.column_stack((lo_u, lo_v, hi_u - lo_u, hi_v - lo_v))
    page_words = np.bincount(pages, minlength=page_count + 1)[1:].tolist()
    return WordArray(starts, ends, pages, boxes), text, page_words


def _normal_word(word: str) -> str:
    """NFKC (``"ﬂag"`` -> ``"flag"``), outer whitespace stripped, a form feed
    inside made a space (it is the page separator); may return ""."""
    return unicodedata.normalize("NFKC", word).strip().replace("\f", " ")


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


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while reading one PDF's words.

    PyMuPDF's word tuples of every page are kept until the columns are built
    in one pass; the collector's passes over that growing list cost ~3% of
    the bare ``get_text`` time (measured on the shared corpus). Nothing built
    here forms a cycle, so nothing is left for it. The collector is
    re-enabled only if it was enabled on entry.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -------------------------------------------------------------- text / md


def _decode(data: bytes) -> tuple[str, str, str | None]:
    """bytes -> (text, encoding, note or None). Never raises."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), "utf-16", None
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig"), "utf-8", None
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252", "decoded as cp1252, not UTF-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1", "decoded as latin-1, not UTF-8"


def _words_of(text: str) -> WordArray:
    """Whitespace-separated spans of ``text`` as a ``WordArray`` without pages
    (pages 0, boxes NaN)."""
    spans = [m.span() for m in _WORD_RE.finditer(text)]
    if not spans:
        return WordArray.empty()
    n = len(spans)
    cols = np.array(spans, dtype=np.int64)
    return WordArray(cols[:, 0], cols[:, 1], np.zeros(n, np.int32), np.full((n, 4), np.nan))


def _extract_plain(path: Path, file_type: str) -> ExtractedText:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExtractError(f"cannot read: {e}") from None
    text, encoding, note = _decode(data)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFKC", text)
    notes = (note,) if note else ()
    if not text.strip():
        notes += ("no text",)
    return ExtractedText(text, _words_of(text), (), file_type, notes,
                         {"encrypted": False, "encoding": encoding})


# -------------------------------------------------------------------- docx


def _extract_docx(path: Path) -> ExtractedText:
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
    return ExtractedText(text, _words_of(text), (), "docx", notes, metadata)


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
