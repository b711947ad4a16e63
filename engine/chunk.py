"""Cut extracted text into fixed character windows and attach provenance.

Owns: the window arithmetic (DESIGN.md "Chunking") and the page/bbox/regions
of each window. Offsets are recorded while cutting, never found again by
searching the text. Imports only ``engine.model``; no face, no PyMuPDF.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right

from engine.model import Bbox, ExtractedText, Region, Window, Word

__all__ = ["windows", "chunk_text", "chunk_id", "window_count"]


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
    return [Window(i, i * step, min(i * step + size, len(text))) for i in range(n)]


def chunk_text(extracted: ExtractedText, size: int, overlap: int) -> list[Window]:
    """Windows of ``extracted.text`` with their provenance.

    Args:
        extracted: text plus word spans (``start`` ascending, non-overlapping).
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
    spans = windows(extracted.text, size, overlap)
    words = [w for w in extracted.words if w.page is not None and w.bbox is not None]
    if not words:
        return spans
    starts = [w.start for w in words]
    ends = [w.end for w in words]
    out: list[Window] = []
    for win in spans:
        lo = bisect_right(ends, win.start)  # first word ending after the window start
        hi = bisect_left(starts, win.end)  # words [lo, hi) overlap the window
        if lo >= hi:
            out.append(win)
            continue
        out.append(_with_provenance(win, words, lo, hi))
    return out


def _with_provenance(win: Window, words: list[Word], lo: int, hi: int) -> Window:
    boxes: dict[int, list[float]] = {}  # page -> [x0, y0, x1, y1]
    first_page: int | None = None
    for i in range(lo, hi):
        w = words[i]
        b = w.bbox
        page = w.page
        if first_page is None and w.start >= win.start:
            first_page = page
        acc = boxes.get(page)
        if acc is None:
            boxes[page] = [b.x, b.y, b.x + b.w, b.y + b.h]
        else:
            if b.x < acc[0]:
                acc[0] = b.x
            if b.y < acc[1]:
                acc[1] = b.y
            if b.x + b.w > acc[2]:
                acc[2] = b.x + b.w
            if b.y + b.h > acc[3]:
                acc[3] = b.y + b.h
    if first_page is None:
        first_page = words[lo].page
    order = [first_page] + [p for p in boxes if p != first_page]
    regions = tuple(
        Region(p, Bbox(boxes[p][0], boxes[p][1], boxes[p][2] - boxes[p][0], boxes[p][3] - boxes[p][1]))
        for p in order
    )
    return Window(win.chunk_index, win.start, win.end, first_page, regions[0].bbox, regions)


def chunk_id(content_hash: str, window_text: str) -> str:
    """Content address of a chunk: hex sha256 of ``content_hash + NUL + window_text``.

    An unchanged file keeps its ids, so its vectors are reused (DESIGN.md).
    """
    h = hashlib.sha256(content_hash.encode("ascii"))
    h.update(b"\0")
    h.update(window_text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()
