"""Cut extracted text into fixed character windows and attach provenance.

Owns: the window arithmetic (DESIGN.md "Chunking"), the page/bbox/regions
of each window (one loop over the windows, ``_located``, gives both the
``Window`` values of ``chunk_text`` and the plain tuples of ``chunk_plain``)
and ``chunk_id``. Offsets are recorded while cutting, never found again by
searching the text. Imports only ``engine.values`` (and numpy); no face, no PyMuPDF.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.values import RECT_GRID, Bbox, ExtractedText, Rects, Region, Window

__all__ = ["windows", "chunk_text", "chunk_plain", "chunk_id", "window_count", "PlainWindow", "PlainRegion"]


def _check(size: int, overlap: int) -> None:
    if size <= 0:
        raise ValueError(f"window size must be > 0 characters, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be in 0..size-1 characters, got {overlap} (size {size})")


def window_count(length: int, size: int, overlap: int) -> int:
    """Number of windows for a text of ``length`` characters (0 for empty text).

    1000 -> 1, 1001 -> 2, 1850 -> 2, 1851 -> 3 at size 1000, overlap 150.
    """
    _check(size, overlap)
    if length <= 0:
        return 0
    if length <= size:
        return 1
    step = size - overlap
    return 1 + -(-(length - size) // step)  # ceil((length - size) / step)


def windows(text: str, size: int, overlap: int) -> list[Window]:
    """Cut one document's extracted text into fixed character windows.

    Args:
        text: extracted text; every offset below indexes into it.
        size: window length in characters, > 0.
        overlap: characters shared by neighbours, 0 <= overlap < size.

    Returns:
        Windows in order, chunk_index 0..n-1, each exactly text[start:end] (no
        stripping); window i starts at i * (size - overlap). Every character
        lies in >= 1 window; the last may be shorter; "" -> []. No provenance
        (page/bbox None): see ``chunk_text``.

    Raises:
        ValueError: size/overlap out of range (config.py rejects this at load).
    """
    n = window_count(len(text), size, overlap)
    step = size - overlap
    length = len(text)
    return [_window(i, i * step, min(i * step + size, length), None, None, ()) for i in range(n)]


def _plan(extracted: ExtractedText, size: int, overlap: int) -> tuple[list[Window], tuple | None]:
    """``chunk_text``'s vectorised part: the plain windows and, when some hold located
    words, ``(hit, first_page, g_min, g_max, g_page, g_bounds, r_box, r_code, r_page,
    r_bounds)`` (lists and arrays, see the comments), else None."""
    spans = windows(extracted.text, size, overlap)
    words = extracted.words
    located = (words.pages > 0) & ~np.isnan(words.boxes[:, 0])
    if not spans or not located.any():
        return spans, None
    if located.all():
        starts, ends, pages, boxes = words.starts, words.ends, words.pages, words.boxes
    else:
        starts, ends = words.starts[located], words.ends[located]
        pages, boxes = words.pages[located], words.boxes[located]
    n = len(starts)

    # Words [lo, hi) overlap window i; first_in: the first word starting inside it.
    step = size - overlap
    win_start = np.arange(len(spans), dtype=np.int64) * step
    win_end = np.minimum(win_start + size, len(extracted.text))
    lo = np.searchsorted(ends, win_start, side="right")
    hi = np.searchsorted(starts, win_end, side="left")
    first_in = np.searchsorted(starts, win_start, side="left")
    hit = np.flatnonzero(lo < hi)  # windows holding at least one word
    if not len(hit):
        return spans, None
    lo, hi, first_in = lo[hit], hi[hit], first_in[hit]
    first_page = np.where(first_in < hi, pages[np.minimum(first_in, n - 1)], pages[lo])

    # Elementary segments: words cut at every window edge and page change, so a
    # window is a run of whole segments and a segment lies on one page.
    page_change = np.flatnonzero(pages[1:] != pages[:-1]) + 1
    line_change = _line_breaks(extracted.text, starts, ends, boxes)
    cuts = np.sort(np.concatenate((lo, hi, page_change, line_change, [0])))
    cuts = cuts[np.concatenate(([True], cuts[1:] != cuts[:-1])) & (cuts < n)]  # unique, ascending
    # Corner unions per segment: x0, y0 (min) and x1 = x + w, y1 = y + h (max),
    # fractions of the displayed page.
    seg_min = np.minimum.reduceat(boxes[:, :2], cuts, axis=0)
    seg_max = np.maximum.reduceat(boxes[:, :2] + boxes[:, 2:], cuts, axis=0)
    seg_page = pages[cuts]
    seg_lo = np.searchsorted(cuts, lo)
    count = np.searchsorted(cuts, hi) - seg_lo  # segments per window, >= 1
    # (window, segment) pairs in text order; consecutive pairs on one page of
    # one window form a group, whose union is that page's part of the window.
    win_of = np.repeat(np.arange(len(hit)), count)
    seg = np.arange(len(win_of)) - np.repeat(np.cumsum(count) - count, count) + np.repeat(seg_lo, count)
    pair_page = seg_page[seg]
    new_group = np.ones(len(seg), bool)
    new_group[1:] = (win_of[1:] != win_of[:-1]) | (pair_page[1:] != pair_page[:-1])
    group_at = np.flatnonzero(new_group)
    g_min = np.minimum.reduceat(seg_min[seg], group_at, axis=0).tolist()
    g_max = np.maximum.reduceat(seg_max[seg], group_at, axis=0).tolist()
    g_page = pair_page[group_at].tolist()
    g_bounds = np.searchsorted(win_of[group_at], np.arange(len(hit) + 1)).tolist()
    # Line rectangles: consecutive pairs of one window on one line (segments
    # never straddle a line), corners rounded outwards to the RECT_GRID grid.
    seg_line = np.zeros(len(cuts), np.int64)
    seg_line[np.searchsorted(cuts, line_change[line_change < n])] = 1
    seg_line = np.cumsum(seg_line)
    pair_line = seg_line[seg]
    new_rect = np.ones(len(seg), bool)
    new_rect[1:] = (win_of[1:] != win_of[:-1]) | (pair_line[1:] != pair_line[:-1])
    rect_at = np.flatnonzero(new_rect)
    r_lo = np.floor(np.minimum.reduceat(seg_min[seg], rect_at, axis=0) * RECT_GRID + 1e-6)
    r_hi = np.ceil(np.maximum.reduceat(seg_max[seg], rect_at, axis=0) * RECT_GRID - 1e-6)
    r_hi = np.maximum(r_hi, r_lo)
    r_units = np.column_stack((r_lo, r_hi - r_lo))  # whole grid units, 0..RECT_GRID
    r_box = (r_units / RECT_GRID).T.tolist()  # x, y, w, h columns
    # rects_code of each window's rectangles, made here from the grid units at once
    r_code = np.clip(r_units, 0, RECT_GRID).astype("<u2")
    r_page = pair_page[rect_at].tolist()
    r_bounds = np.searchsorted(win_of[rect_at], np.arange(len(hit) + 1)).tolist()

    return spans, (hit, first_page, g_min, g_max, g_page, g_bounds, r_box, r_code, r_page, r_bounds)


def chunk_text(extracted: ExtractedText, size: int, overlap: int) -> list[Window]:
    """Windows of ``extracted.text`` with their provenance.

    Args:
        extracted: text plus word spans (``start`` ascending, non-overlapping),
            read as the ``WordArray`` columns; words without a page or box are
            ignored here.
        size, overlap: characters, as in ``windows``.

    Returns:
        ``windows(...)`` where each window with PDF words also carries:
        ``page`` = page of the first word that starts inside the window (else
        of the first word reaching into it); ``bbox`` = union of the boxes of
        all words overlapping the window on that page (overlap included);
        ``regions`` = ``(page, bbox)`` first, then one ``Region`` per further
        page the window reaches, in text order. Windows over text without
        pages (txt, md, docx) keep page/bbox None and regions ().

    Raises:
        ValueError: size/overlap out of range.
    """
    spans, plan = _plan(extracted, size, overlap)
    if plan is None:
        return spans
    out = list(spans)
    r_box, r_code = plan[6], plan[7]
    boxes_of = list(map(_bbox, *r_box))
    for i, page, located in _located(plan):
        win = spans[i]
        regions = tuple(_region(p, _bbox(*box), _rects(boxes_of, r_code, rows)) for p, box, rows in located)
        out[i] = _window(win.chunk_index, win.start, win.end, page, regions[0].bbox, regions)
    return out


#: ``chunk_plain``'s window: ``(chunk_index, start, end, page, bbox, regions)``, ``bbox`` an
#: ``(x, y, w, h)`` tuple, ``regions`` ``(page, (x, y, w, h), rects_code)`` tuples.
PlainRegion = tuple[int, tuple[float, float, float, float], str]
PlainWindow = tuple[int, int, int, "int | None", "tuple[float, float, float, float] | None", tuple[PlainRegion, ...]]


def chunk_plain(extracted: ExtractedText, size: int, overlap: int) -> list[PlainWindow]:
    """``chunk_text`` as plain tuples, with no ``Bbox`` / ``Region`` / ``Window`` object (the
    SQLite row builder, ``engine.index.rows``, needs only their numbers and codes).

    Returns:
        One ``(chunk_index, start, end, page, bbox, regions)`` per window, in
        order, with the values of ``chunk_text``'s window: ``bbox`` an
        ``(x, y, w, h)`` float tuple or None, ``regions`` a tuple of
        ``(page, (x, y, w, h), rects_code)`` (``rects_code`` "" for no
        rectangle), () for a window without located words.

    Raises:
        ValueError: size/overlap out of range.
    """
    spans, plan = _plan(extracted, size, overlap)
    out: list[PlainWindow] = [(w.chunk_index, w.start, w.end, None, None, ()) for w in spans]
    if plan is None:
        return out
    b64 = base64.b64encode
    r_code = plan[7]
    for i, page, located in _located(plan):
        win = spans[i]
        regions = tuple((p, box, b64(r_code[rows].tobytes()).decode("ascii")) for p, box, rows in located)
        out[i] = (win.chunk_index, win.start, win.end, page, regions[0][1], regions)
    return out


#: A window's part on one page while cutting: (page, (x, y, w, h) of the page, the rows of
#: its line rectangles in the plan: a slice, or indices when the window spans pages).
_Located = tuple[int, tuple[float, float, float, float], "slice | list[int]"]


def _located(plan: tuple[Any, ...]) -> Iterator[tuple[int, int, tuple[_Located, ...]]]:
    """The one loop over the windows that hold located words (``chunk_text`` and
    ``chunk_plain`` make their values from it).

    Yields:
        ``(window index, page, parts)`` in window order: ``page`` the window's page
        (``chunk_text`` documents it), ``parts`` that page's part first, then one per
        further page the window reaches, in order of appearance.
    """
    hit, first_page, g_min, g_max, g_page, g_bounds, _r_box, _r_code, r_page, r_bounds = plan
    for k, (i, page) in enumerate(zip(hit.tolist(), first_page.tolist())):
        a, b = g_bounds[k], g_bounds[k + 1]
        ra, rb = r_bounds[k], r_bounds[k + 1]
        if b - a == 1:  # one page: the usual case
            (x0, y0), (x1, y1) = g_min[a], g_max[a]
            yield i, page, ((page, (x0, y0, x1 - x0, y1 - y0), slice(ra, rb)),)
            continue
        by_page: dict[int, list[int]] = {}  # page -> its rectangles, in text order
        for r in range(ra, rb):
            by_page.setdefault(r_page[r], []).append(r)
        acc: dict[int, list[float]] = {}  # page -> [x0, y0, x1, y1], pages in order of appearance
        for g in range(a, b):
            (x0, y0), (x1, y1) = g_min[g], g_max[g]
            prev = acc.get(g_page[g])
            if prev is None:
                acc[g_page[g]] = [x0, y0, x1, y1]
            else:  # the window comes back to a page (words not in page order)
                acc[g_page[g]] = [min(prev[0], x0), min(prev[1], y0), max(prev[2], x1), max(prev[3], y1)]
        order = [page] + [p for p in acc if p != page]
        yield (
            i,
            page,
            tuple(
                (p, (acc[p][0], acc[p][1], acc[p][2] - acc[p][0], acc[p][3] - acc[p][1]), by_page.get(p, []))
                for p in order
            ),
        )


def _code(codes: np.ndarray, rows: slice | list[int]) -> str:
    """``rects_code`` of the rectangles ``rows`` (rows of ``codes``, uint16 grid units)."""
    return base64.b64encode(codes[rows].tobytes()).decode("ascii")


_new = object.__new__
_set_x, _set_y, _set_w, _set_h = (Bbox.__dict__[k].__set__ for k in ("x", "y", "w", "h"))
_set_rpage, _set_rbox, _set_rects = (Region.__dict__[k].__set__ for k in ("page", "bbox", "rects"))
_set_index, _set_start, _set_end, _set_page, _set_bbox, _set_regions = (
    Window.__dict__[k].__set__ for k in ("chunk_index", "start", "end", "page", "bbox", "regions")
)


def _bbox(x: float, y: float, w: float, h: float) -> Bbox:
    """``Bbox(x, y, w, h)`` without the frozen dataclass ``__init__`` (half its cost; the
    same object: slots set directly). The chunker makes tens of thousands."""
    b = _new(Bbox)
    _set_x(b, x)
    _set_y(b, y)
    _set_w(b, w)
    _set_h(b, h)
    return b


def _region(page: int, bbox: Bbox, rects: tuple[Bbox, ...]) -> Region:
    """``Region(page, bbox, rects)``, made as ``_bbox`` makes boxes."""
    r = _new(Region)
    _set_rpage(r, page)
    _set_rbox(r, bbox)
    _set_rects(r, rects)
    return r


def _window(
    chunk_index: int, start: int, end: int, page: int | None, bbox: Bbox | None, regions: tuple[Region, ...]
) -> Window:
    """``Window(...)`` with every field, made as ``_bbox`` makes boxes."""
    w = _new(Window)
    _set_index(w, chunk_index)
    _set_start(w, start)
    _set_end(w, end)
    _set_page(w, page)
    _set_bbox(w, bbox)
    _set_regions(w, regions)
    return w


def _rects(boxes_of: list[Bbox], codes: np.ndarray, rows: slice | list[int]) -> Rects:
    """Rectangles ``rows`` (of ``boxes_of`` and ``codes``, uint16 grid units) as ``Rects``
    carrying their ``rects_code``."""
    rects = Rects(boxes_of[rows] if isinstance(rows, slice) else [boxes_of[r] for r in rows])
    rects.code = _code(codes, rows)
    return rects


def _line_breaks(text: str, starts: np.ndarray, ends: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Word indices (ascending, in 1..n-1) where a new line starts.

    A line is a run of words in text order with no line or page break
    between them in the text (the PDF extractor writes "\\n" / "\\n\\n" / "\\f"
    when PyMuPDF's block or line number changes, so this is "same block and
    line"), and whose boxes overlap the previous word's box vertically
    (horizontal text) or horizontally (text running down the displayed page).
    Extractors without line numbers get the geometric rule alone.

    Args:
        text: the extracted text the offsets index into.
        starts, ends: int64, shape (n,), the located words' spans, ascending.
        boxes: float64, shape (n, 4), x, y, w, h, 0..1 of the displayed page.
    """
    n = len(starts)
    if n < 2:
        return np.empty(0, np.int64)
    if text.isascii():  # one byte a character (isascii is O(1) for str)
        code_points = np.frombuffer(text.encode("ascii"), np.uint8)
    else:
        code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    gap = starts[1:] - ends[:-1]  # characters between two words
    if gap.min() >= 1 and gap.max() <= 2:  # usual (PDF layout): its first and last character say it
        first, last = code_points[ends[:-1]], code_points[starts[1:] - 1]
        text_break = (first == 10) | (first == 12) | (last == 10) | (last == 12)
    else:  # breaks_before[k]: line/page breaks in text[:k]
        breaks_before = np.zeros(len(code_points) + 1, np.int64)
        np.cumsum((code_points == 10) | (code_points == 12), out=breaks_before[1:])
        text_break = breaks_before[starts[1:]] != breaks_before[ends[:-1]]
    x0, y0 = boxes[:, 0], boxes[:, 1]
    x1, y1 = x0 + boxes[:, 2], y0 + boxes[:, 3]
    y_overlap = (y0[1:] < y1[:-1]) & (y0[:-1] < y1[1:])
    x_overlap = (x0[1:] < x1[:-1]) & (x0[:-1] < x1[1:])
    return np.flatnonzero(text_break | ~(y_overlap | x_overlap)) + 1


def chunk_id(content_hash: str, window_text: str) -> str:
    """Content address of a chunk: hex sha256 of ``content_hash + NUL + window_text``.

    An unchanged file keeps its ids, so its vectors are reused (DESIGN.md).
    """
    h = hashlib.sha256(content_hash.encode("ascii"))
    h.update(b"\0")
    h.update(window_text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()
