"""Reading order of two-column PDF pages whose content stream interleaves the columns.

Owns: ``reading_order``, which reorders a PDF's words (the columns the PDF reader
collects, ``engine.extract.pdfwords``) so that a page set in two columns reads the
left column, then the right one, when its content stream draws the rows of both
columns in turn ("annual" / "approved the budget for the" / "report and" / ...).
Words keep their boxes; only their order and their block numbers change, so the
text, the offsets and the highlights stay one and the same thing.

A page is reordered only when all of this holds, else its stream order is kept:

* its lines step sideways onto the same row at least ``MIN_ROW_JUMPS`` times (the
  cheap sign of interleaving that selects candidate pages);
* a vertical gutter (a band of x no narrow line crosses) splits its lines into a
  left and a right column, each with at least ``MIN_COLUMN_LINES`` lines of a median
  ``MIN_LINE_WORDS`` words or more (prose, not the cells of a table), each at least
  ``MIN_COLUMN_SHARE`` of the text's width;
* the stream steps from a left-column line to a right-column line on the same
  row at least ``MIN_ROW_JUMPS`` times.

Lines crossing the gutter (a title, a footer) split the page into bands read top
to bottom: each band's left column, its right column, then the crossing line.
Pages turned by ``/Rotate`` keep their order. Imports numpy only.
"""

from __future__ import annotations

from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = ["reading_order", "MIN_ROW_JUMPS", "MIN_COLUMN_LINES", "MIN_LINE_WORDS", "MIN_COLUMN_SHARE"]

#: Sideways steps onto the same row that make a page a candidate.
MIN_ROW_JUMPS = 3
#: Lines each column needs.
MIN_COLUMN_LINES = 3
#: Median words per line of each column (fewer: table cells, kept in stream order).
MIN_LINE_WORDS = 3
#: Each column's width as a share of the text's width on the page.
MIN_COLUMN_SHARE = 0.25
#: Lines at least this share of the text's width cannot hold a gutter.
_WIDE_LINE_SHARE = 0.6


def reading_order(
    corners: Any, codes: Any, lengths: Any, block: Any, line: Any, raw_counts: list[int], affine: Any
) -> tuple[Any, Any, Any, Any, Any]:
    """The words of a PDF with interleaved two-column pages put in reading order.

    Args:
        corners, codes, lengths, block, line: the document's word columns in stream
            order (``engine.extract.pdf._join``).
        raw_counts: words per page, in page order.
        affine: float64 (pages, 6), per page the map to the displayed page; a page
            with a rotation keeps its order.

    Returns:
        ``(corners, codes, lengths, block, line)``, the same arrays when no page is
        reordered, else new ones with the same words (each column's lines keep their
        stream order; block numbers change so that the columns are separate blocks).
    """
    n = len(lengths)
    if n < 2 * MIN_COLUMN_LINES * MIN_LINE_WORDS:
        return corners, codes, lengths, block, line
    counts = np.asarray(raw_counts, np.int64)
    page_end = np.cumsum(counts)
    page_start = page_end - counts
    starts_line = np.ones(n, bool)
    starts_line[1:] = (block[1:] != block[:-1]) | (line[1:] != line[:-1])
    starts_line[page_start[counts > 0]] = True
    first = np.flatnonzero(starts_line)  # each line's first word
    words = np.diff(np.append(first, n))
    x0 = np.minimum.reduceat(corners[:, 0], first)
    y0 = np.minimum.reduceat(corners[:, 1], first)
    x1 = np.maximum.reduceat(corners[:, 2], first)
    y1 = np.maximum.reduceat(corners[:, 3], first)
    page = np.searchsorted(page_end, first, side="right")
    height = np.maximum(y1 - y0, 1e-6)
    jump = (
        (page[1:] == page[:-1])
        & (np.abs(y0[1:] - y0[:-1]) < 0.5 * np.maximum(height[1:], height[:-1]))
        & (x0[1:] > x1[:-1])
    )
    jumps = np.bincount(page[1:][jump], minlength=len(counts))
    candidates = np.flatnonzero(jumps >= MIN_ROW_JUMPS)
    if not len(candidates):
        return corners, codes, lengths, block, line
    order = np.arange(n)
    new_block = block.copy()
    changed = False
    for p in candidates.tolist():
        if affine[p, 1] != 0 or affine[p, 2] != 0:  # turned by /Rotate
            continue
        lines = np.flatnonzero(page == p)
        plan = _page_plan(x0[lines], y0[lines], x1[lines], height[lines], words[lines])
        if plan is None:
            continue
        line_order, side = plan
        picked = lines[line_order]
        spans = [np.arange(first[i], first[i] + words[i]) for i in picked.tolist()]
        order[page_start[p] : page_end[p]] = np.concatenate(spans)
        word_side = np.repeat(side, words[lines])
        seg = slice(page_start[p], page_end[p])
        new_block[seg] = block[seg] * 3 + word_side
        changed = True
    if not changed:
        return corners, codes, lengths, block, line
    code_start = np.cumsum(lengths) - lengths
    new_lengths = lengths[order]
    total = int(new_lengths.sum())
    shift = np.repeat(code_start[order] - (np.cumsum(new_lengths) - new_lengths), new_lengths)
    new_codes = codes[shift + np.arange(total)]
    return corners[order], new_codes, new_lengths, new_block[order], line[order]


def _page_plan(x0: Any, y0: Any, x1: Any, height: Any, words: Any) -> tuple[Any, Any] | None:
    """One page's lines (stream order) -> ``(new line order, side per line)`` with side
    0 left column, 1 right column, 2 crossing the gutter; None to keep stream order."""
    left_edge, right_edge = float(x0.min()), float(x1.max())
    width = right_edge - left_edge
    if width <= 0:
        return None
    narrow = ((x1 - x0) < _WIDE_LINE_SHARE * width) & (words >= 2)  # a page number cannot fill a gutter
    gutter = _widest_gap(x0[narrow], x1[narrow])
    if gutter is None:
        return None
    a, b = gutter
    side = np.full(len(x0), 2, np.int64)
    side[x1 <= a] = 0
    side[x0 >= b] = 1
    for s in (0, 1):
        mine = side == s
        if mine.sum() < MIN_COLUMN_LINES or np.median(words[mine]) < MIN_LINE_WORDS:
            return None
        if (x1[mine].max() - x0[mine].min()) < MIN_COLUMN_SHARE * width:
            return None
    crossing = np.flatnonzero(side == 2)
    crossing = crossing[np.argsort(y0[crossing], kind="stable")]
    band = np.searchsorted(y0[crossing], y0, side="right")  # crossing lines above each line
    columns = np.flatnonzero(side < 2)
    # the stream steps from the left column to the right one on the same row, again and again
    across = (side[:-1] == 0) & (side[1:] == 1) & (np.abs(y0[1:] - y0[:-1]) < 0.5 * np.maximum(height[1:], height[:-1]))
    if int(np.count_nonzero(across)) < MIN_ROW_JUMPS:
        return None
    out: list[int] = []
    for k in range(len(crossing) + 1):
        in_band = columns[band[columns] == k]
        out.extend(in_band[side[in_band] == 0].tolist())
        out.extend(in_band[side[in_band] == 1].tolist())
        if k < len(crossing):
            out.append(int(crossing[k]))
    return np.asarray(out, np.int64), side


def _widest_gap(x0: Any, x1: Any) -> tuple[float, float] | None:
    """The widest x interval inside the lines' extent that none of them covers."""
    if len(x0) < 2 * MIN_COLUMN_LINES:
        return None
    order = np.argsort(x0, kind="stable")
    reach = np.maximum.accumulate(x1[order])  # rightmost end so far
    gaps = x0[order][1:] - reach[:-1]
    if not len(gaps) or gaps.max() <= 0:
        return None
    i = int(np.argmax(gaps))
    return float(reach[i]), float(x0[order][i + 1])
