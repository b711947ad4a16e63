"""Cut extracted text into fixed character windows and attach provenance.

Owns: the window arithmetic (DESIGN.md "Chunking") and the page/bbox/regions
of each window. Offsets are recorded while cutting, never found again by
searching the text. Imports only ``engine.model`` (and numpy); no face, no PyMuPDF.
"""

from __future__ import annotations

import hashlib

import numpy as np

from engine.model import Bbox, ExtractedText, Region, Window

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
    spans = windows(extracted.text, size, overlap)
    words = extracted.words
    located = (words.pages > 0) & ~np.isnan(words.boxes[:, 0])
    if not spans or not located.any():
        return spans
    if located.all():
        starts, ends, pages, boxes = words.starts, words.ends, words.pages, words.boxes
    else:
        starts, ends = words.starts[located], words.ends[located]
        pages, boxes = words.pages[located], words.boxes[located]
    # Corners x0, y0, x1, y1 (fractions of the displayed page), one row per word.
    corners = np.empty((len(starts), 4))
    corners[:, :2] = boxes[:, :2]
    np.add(boxes[:, :2], boxes[:, 2:], out=corners[:, 2:])
    # Runs of consecutive words on one page: run r covers words [run_at[r], run_at[r + 1]).
    run_at = np.flatnonzero(np.concatenate(([True], pages[1:] != pages[:-1])))
    run_of = np.cumsum(np.concatenate(([False], pages[1:] != pages[:-1])))

    win_start = np.fromiter((w.start for w in spans), np.int64, len(spans))
    win_end = np.fromiter((w.end for w in spans), np.int64, len(spans))
    lo_all = np.searchsorted(ends, win_start, side="right").tolist()  # first word ending after the start
    hi_all = np.searchsorted(starts, win_end, side="left").tolist()  # words [lo, hi) overlap the window
    in_all = np.searchsorted(starts, win_start, side="left").tolist()  # first word starting inside
    page_list = pages.tolist()
    out: list[Window] = []
    for win, lo, hi, first_in in zip(spans, lo_all, hi_all, in_all):
        if lo >= hi:
            out.append(win)
            continue
        first_page = page_list[first_in] if first_in < hi else page_list[lo]
        r0, r1 = int(run_of[lo]), int(run_of[hi - 1])
        if r0 == r1:  # one page: the usual case
            union = _union(corners[lo:hi])
            bbox = Bbox(*union)
            out.append(Window(win.chunk_index, win.start, win.end, first_page, bbox,
                              (Region(first_page, bbox),)))
            continue
        cuts = [lo] + run_at[r0 + 1:r1 + 1].tolist() + [hi]
        acc: dict[int, list[float]] = {}  # page -> [x0, y0, x1, y1], pages in order of appearance
        for a, b in zip(cuts, cuts[1:]):
            x0, y0, x1, y1 = _corners(corners[a:b])
            prev = acc.get(page_list[a])
            if prev is None:
                acc[page_list[a]] = [x0, y0, x1, y1]
            else:
                prev[:] = [min(prev[0], x0), min(prev[1], y0), max(prev[2], x1), max(prev[3], y1)]
        order = [first_page] + [p for p in acc if p != first_page]
        regions = tuple(Region(p, Bbox(acc[p][0], acc[p][1], acc[p][2] - acc[p][0], acc[p][3] - acc[p][1]))
                        for p in order)
        out.append(Window(win.chunk_index, win.start, win.end, first_page, regions[0].bbox, regions))
    return out


def _corners(rows: np.ndarray) -> list[float]:
    """Union ``[x0, y0, x1, y1]`` of corner rows (float64, shape (k, 4), k >= 1)."""
    return [*rows[:, :2].min(axis=0).tolist(), *rows[:, 2:].max(axis=0).tolist()]


def _union(rows: np.ndarray) -> tuple[float, float, float, float]:
    """``(x, y, w, h)`` of the union of corner rows (float64, shape (k, 4), k >= 1)."""
    x0, y0, x1, y1 = _corners(rows)
    return x0, y0, x1 - x0, y1 - y0


def chunk_id(content_hash: str, window_text: str) -> str:
    """Content address of a chunk: hex sha256 of ``content_hash + NUL + window_text``.

    An unchanged file keeps its ids, so its vectors are reused (DESIGN.md).
    """
    h = hashlib.sha256(content_hash.encode("ascii"))
    h.update(b"\0")
    h.update(window_text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()
