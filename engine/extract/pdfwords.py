"""A PDF page's words as numpy columns, without a Python tuple per word.

Owns: ``page_words`` (PyMuPDF ``TextPage`` -> ``PageWords``) and ``tuple_words`` (PyMuPDF
word tuples, e.g. of an OCR'd page -> ``PageWords``), the one shape the PDF reader
(``engine.extract.pdf``) collects per page. ``page_words`` uses the compiled walker
``engine.extract._pdfwords`` (built by setup.py against the MuPDF PyMuPDF ships; it
reads the text page exactly as ``TextPage.extractWORDS`` does, checked word for word
on every corpus page by tests/extract/test_pdfwords.py) when it is built for the MuPDF
PyMuPDF has loaded, else PyMuPDF's ``extractWORDS`` (same words). ``PDFWORDS``: which
one runs. Imports ``pymupdf`` and numpy lazily; no engine module.
"""

from __future__ import annotations

import threading
from operator import itemgetter
from typing import Any, NamedTuple

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = [
    "PageWords",
    "CompiledWords",
    "read_page",
    "page_words",
    "tuple_words",
    "join_pages",
    "walker",
    "text_filler",
    "box_filler",
    "PDFWORDS",
]

_FIELD = [itemgetter(i) for i in range(8)]  # fields of a PyMuPDF word tuple


class PageWords(NamedTuple):
    """One page's words, PyMuPDF's word order (block, line, word).

    Attributes:
        corners: float64, shape (n, 4): x0, y0, x1, y1 in unrotated page points.
        block, line: int64, shape (n,): PyMuPDF's block and line numbers.
        lengths: int64, shape (n,): characters per word (>= 1).
        codes: uint32, shape (lengths.sum(),): the words' code points, concatenated.
    """

    corners: Any
    block: Any
    line: Any
    lengths: Any
    codes: Any

    def __len__(self) -> int:
        return len(self.block)


class CompiledWords(NamedTuple):
    """One page's words as the compiled walker returns them (``engine/extract/_pdfwords.c``):
    ``records``, n packed records of x0, y0, x1, y1 (float32) and block, line, nchars
    (int32); ``codes``, the code points (uint32). Turned into columns by ``join_pages``,
    once per document instead of once per page."""

    records: bytes
    codes: bytes

    def __len__(self) -> int:
        return len(self.records) // _RECORD_BYTES


_RECORD_BYTES = 28  # 4 float32 + 3 int32


def _columns(records: bytes, codes: bytes) -> PageWords:
    r = np.frombuffer(records, np.float32).reshape(-1, 7)
    ints = r.view(np.int32)
    return PageWords(
        r[:, :4].astype(np.float64),
        ints[:, 4].astype(np.int64),
        ints[:, 5].astype(np.int64),
        ints[:, 6].astype(np.int64),
        np.frombuffer(codes, np.uint32),
    )


def join_pages(pieces: list[PageWords | CompiledWords]) -> PageWords:
    """Pages' words (in page order) -> one ``PageWords`` of all of them."""
    compiled = [p for p in pieces if isinstance(p, CompiledWords)]
    if pieces and len(compiled) == len(pieces):
        return _columns(b"".join(p.records for p in compiled), b"".join(p.codes for p in compiled))
    cols = [_columns(*p) if isinstance(p, CompiledWords) else p for p in pieces]
    if not cols:
        return PageWords(
            np.empty((0, 4)),
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty(0, np.uint32),
        )
    if len(cols) == 1:
        return cols[0]
    return PageWords(*(np.concatenate([c[i] for c in cols]) for i in range(5)))


#: Which reader ``page_words`` uses: "compiled" (engine.extract._pdfwords) or "pymupdf" (extractWORDS);
#: set on the first call.
PDFWORDS: str | None = None
_walk: Any = None  # (page_words C function, context getter) or False
_context = threading.local()  # .address: this thread's MuPDF context (PyMuPDF keeps one per thread)


def walker() -> Any:
    """The compiled walker and PyMuPDF's MuPDF context address, or None when the extension
    is not built, or built for another MuPDF version than PyMuPDF's, or PyMuPDF's globals
    that change word boxes (``TOOLS.unset_quad_corrections`` / ``set_small_glyph_heights``)
    are not read as expected."""
    global _walk, PDFWORDS
    if _walk is None:
        _walk = False
        try:
            import pymupdf  # loads the libmupdf the extension links by soname
            from pymupdf import mupdf

            from engine.extract import _pdfwords

            if _pdfwords.mupdf_version() == pymupdf.mupdf_version:
                _walk = (_pdfwords.page_words, mupdf.internal_context_get)
        except Exception:  # not built, other MuPDF, other PyMuPDF internals
            _walk = False
        PDFWORDS = "compiled" if _walk else "pymupdf"
    return _walk or None


def text_filler() -> Any:
    """The compiled ``fill_text(out, codes, lengths, kinds, seplen)`` (``_pdfwords.c``: the PDF
    layout's text code points in one pass) when the walker is in use, else None (the
    numpy path of ``engine.extract.pdf._place_words`` gives the same code points)."""
    walk = walker()
    if walk is None:
        return None
    from engine.extract import _pdfwords

    return getattr(_pdfwords, "fill_text", None)  # None: a module built before it existed


def box_filler() -> Any:
    """The compiled ``fill_boxes(out, corners, affine, per_page)`` (``_pdfwords.c``: the PDF
    layout's word boxes in one pass, numpy's operation order) when the walker is in use,
    else None (``engine.extract.pdf._place_words`` computes them with numpy)."""
    walk = walker()
    if walk is None:
        return None
    from engine.extract import _pdfwords

    return getattr(_pdfwords, "fill_boxes", None)


def page_words(page: Any, flags: int) -> PageWords:
    """The words of ``page`` (a PyMuPDF page) on a text page made with ``flags``, as columns.

    Same words, boxes, block and line numbers as ``page.get_text("words", flags=flags)``.
    Raises as ``read_page``.
    """
    return join_pages([read_page(page, flags)])


def read_page(page: Any, flags: int) -> PageWords | CompiledWords:
    """``page_words`` without the conversion to columns (``join_pages`` does it for a
    whole document): ``CompiledWords`` from the compiled walker, else ``PageWords``.

    Raises:
        Whatever PyMuPDF raises for a damaged page (the text page is made by PyMuPDF;
        if the compiled walk hits a MuPDF error, PyMuPDF's own ``get_text`` is asked,
        so the error text is PyMuPDF's).
    """
    import pymupdf

    walk = walker()
    if walk is None:
        return tuple_words(page.get_text("words", flags=flags))
    tp = page.get_textpage(flags=flags)
    try:
        fn, context = walk
        address = getattr(_context, "address", None)
        if address is None:  # asking PyMuPDF costs ~20 us: once per thread
            address = _context.address = int(context().this)
        records, codes = fn(
            tp.this.m_internal_value(),
            address,
            int(bool(pymupdf.TOOLS.unset_quad_corrections())),
            int(bool(pymupdf.TOOLS.set_small_glyph_heights())),
        )
    except RuntimeError:
        return tuple_words(page.get_text("words", flags=flags))
    finally:
        del tp
    return CompiledWords(records, codes)


def tuple_words(raw: list[tuple[Any, ...]]) -> PageWords:
    """PyMuPDF word tuples ``(x0, y0, x1, y1, word, block, line, word_no)`` -> ``PageWords``."""
    n = len(raw)
    corners = np.empty((n, 4))
    for i in range(4):  # one column at a time (cheaper than transposing with zip(*raw))
        corners[:, i] = np.fromiter(map(_FIELD[i], raw), np.float64, n)
    strings = list(map(_FIELD[4], raw))
    return PageWords(
        corners,
        np.fromiter(map(_FIELD[5], raw), np.int64, n),
        np.fromiter(map(_FIELD[6], raw), np.int64, n),
        np.fromiter(map(len, strings), np.int64, n),
        np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), np.uint32),
    )
