"""Page images for the explorer: a PDF page as displayed, with highlights drawn.

Owns: rendering one PDF page to PNG bytes (``render_page``) in the *display
frame* (CropBox and /Rotate applied, exactly what ``page.get_pixmap`` shows),
drawing translucent highlight rectangles for chunk regions (``Bbox`` 0..1 of
the displayed page, origin top-left) and, when a chunk has no bbox, for its
text found on the page (``page.search_for`` rectangles, which come in the
unrotated frame and are mapped with ``page.rotation_matrix``); and
``page_count``. The GUI never imports PyMuPDF itself: page PNGs come from here.

The query's words (``mark_terms``) are drawn apart from the chunk: a violet fill and
underline on every word of the page that holds one of them in the keyword index's
form (``engine.store.fts.mark_view`` / ``term_pattern``: ``cafe`` marks ``café``).

Line rectangles (``regions[].rects``) are drawn filled with an outline, the
region's union ``bbox`` as a faint outline around them; a ``clip`` (a ``Bbox``
of the displayed page) renders only that part, pixel-aligned, so zoom 4x of a
tall page costs the pixels shown, not the whole page. Two rasterisers:
``pymupdf`` (default, the extraction library) and ``poppler`` (``pdftoppm``
through pdf2image, CropBox and /Rotate applied as a viewer shows them), chosen
by the ``renderer`` argument (the ``CHUNKNAV_RENDERER`` setting in the GUI).

Imports PyMuPDF, Pillow and pdf2image lazily; imports no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import io
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from engine.extract import open_pdf
from engine.extract.common import PAGE_FORMATS
from engine.values import Bbox

__all__ = [
    "HIGHLIGHT_FILL",
    "HIGHLIGHT_OUTLINE",
    "RenderedPage",
    "render_page",
    "render_page_info",
    "page_count",
    "find_text_boxes",
    "ZOOM_MIN",
    "ZOOM_MAX",
    "RENDERERS",
    "page_size_pt",
    "page_label",
    "clip_around",
    "highlight_runs",
    "renders_pages",
    "query_word_boxes",
    "QUERY_WORD_FILL",
]

#: RGBA fill of a highlight (translucent yellow).
HIGHLIGHT_FILL = (255, 213, 0, 96)
#: RGBA outline of a highlight (opaque orange), ``HIGHLIGHT_OUTLINE_PX`` wide.
HIGHLIGHT_OUTLINE = (230, 92, 0, 255)
HIGHLIGHT_OUTLINE_PX = 2
#: RGBA fill and underline of a query word on the page (violet: apart from the chunk's yellow).
QUERY_WORD_FILL = (124, 58, 237, 64)
QUERY_WORD_LINE = (109, 40, 217, 255)
QUERY_WORD_LINE_PX = 3
#: Faint outline of a region's union bbox around its line rectangles (RGBA), 1 px.
UNION_OUTLINE = (230, 92, 0, 110)
#: Rasterisers ``render_page_info`` accepts.
RENDERERS = ("pymupdf", "poppler")
#: Zoom bounds (1.0 = 72 dpi, one pixel per PDF point).
ZOOM_MIN = 0.25
ZOOM_MAX = 6.0
#: Shortest line of chunk text searched for in the no-bbox fallback (characters);
#: shorter lines match too many places to mean anything.
MIN_SEARCH_CHARS = 4


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """One rendered page.

    Attributes:
        png: PNG bytes of the displayed page with highlights drawn.
        width_px, height_px: image size in pixels (displayed page points x zoom).
        page: 1-based page number rendered.
        page_count: pages in the document.
        boxes: the highlight boxes drawn, ``Bbox`` of the displayed page (line
            rectangles when the regions carry them).
        source: ``"rects"`` (line rectangles of regions), ``"bbox"`` (region
            bboxes without rects), ``"text"`` (found by text search),
            ``"none"`` (nothing to draw on this page).
        renderer: the rasteriser used (``RENDERERS``).
        clip: the part of the displayed page shown, ``Bbox`` (0..1); the whole page
            is ``Bbox(0, 0, 1, 1)``.
        page_width_px, page_height_px: the whole page's size at this zoom (pixels);
            a box ``b`` lies at ``(b.x * page_width_px - clip_x_px, ...)`` in the PNG.
        clip_x_px, clip_y_px: top-left pixel of the clip in the whole page's raster.
        unions: the union bboxes outlined faintly (one per region on the page).
        word_boxes: the query's words found on the page (``query_word_boxes``), drawn in violet.
    """

    png: bytes
    width_px: int
    height_px: int
    page: int
    page_count: int
    boxes: tuple[Bbox, ...]
    source: str
    renderer: str = "pymupdf"
    clip: Bbox = Bbox(0.0, 0.0, 1.0, 1.0)
    page_width_px: int = 0
    page_height_px: int = 0
    clip_x_px: int = 0
    clip_y_px: int = 0
    unions: tuple[Bbox, ...] = ()
    word_boxes: tuple[Bbox, ...] = ()


def renders_pages(file_path: str | os.PathLike[str]) -> bool:
    """True when ``file_path`` is drawn page by page: a PDF, or a format PyMuPDF
    lays out in pages (``engine.extract.common.PAGE_FORMATS``: EPUB, XPS, OXPS,
    FB2, MOBI, CBZ), whose chunks carry page numbers and ``Bbox`` regions of
    that same layout. Decided by the lower-case suffix; opens nothing."""
    suffix = Path(os.fspath(file_path)).suffix.lower()
    return suffix == ".pdf" or suffix in PAGE_FORMATS


def _open(pdf_path: str | os.PathLike[str], password: str | None):
    """Open and decrypt a PDF, or open another paged format with the filetype
    extraction used (``engine.extract.open_pdf``: the same rules and the same
    EXPECTED.md trap 7 care, so pages and boxes match the stored ones).
    Raises ExtractError / EncryptedError."""
    filetype = PAGE_FORMATS.get(Path(os.fspath(pdf_path)).suffix.lower())
    return open_pdf(pdf_path, password, filetype=filetype)[0]


def _page(doc, page: int):
    """The 1-based ``page`` of an open document. Raises ValueError outside ``1..page_count``."""
    n = doc.page_count
    if not 1 <= page <= n:
        raise ValueError(f"page {page} is out of range: valid 1..{n}")
    return doc[page - 1]


def page_count(pdf_path: str | os.PathLike[str], password: str | None = None) -> int:
    """Number of pages of a PDF.

    Args:
        pdf_path: the PDF file.
        password: user password for encrypted files (tried after the empty one).

    Returns:
        Page count, >= 0 (a zero-page file gives 0).

    Raises:
        ExtractError: the file cannot be opened (missing, empty, corrupt).
        EncryptedError: a password is needed or the given one is wrong.
    """
    doc = _open(pdf_path, password)
    try:
        return doc.page_count
    finally:
        doc.close()


def _as_bbox(value: Any) -> Bbox | None:
    if value is None:
        return None
    if isinstance(value, Bbox):
        return value
    if isinstance(value, dict):
        return Bbox(float(value["x"]), float(value["y"]), float(value["w"]), float(value["h"]))
    x, y, w, h = value  # a 4-sequence
    return Bbox(float(x), float(y), float(w), float(h))


def _boxes_for_page(regions: Iterable[Any] | None, page: int) -> list[Bbox]:
    """Regions that lie on ``page`` (1-based). Accepted items: ``(page, Bbox)``
    tuples, ``{"page", "bbox"}`` dicts, ``Region`` objects, or a bare bbox
    (dict / ``Bbox`` / 4-sequence: taken to be on the rendered page)."""
    out: list[Bbox] = []
    for r in regions or ():
        p: int | None = None
        b: Any = r
        if isinstance(r, dict) and "bbox" in r:
            p, b = r.get("page"), r["bbox"]
        elif hasattr(r, "page") and hasattr(r, "bbox"):
            p, b = r.page, r.bbox
        elif isinstance(r, (tuple, list)) and len(r) == 2:
            p, b = r
        box = _as_bbox(b)
        if box is not None and (p is None or int(p) == page):
            out.append(box)
    return out


def _rects_for_page(regions: Iterable[Any] | None, page: int) -> tuple[list[Bbox], list[Bbox]]:
    """``(rects, unions)`` of the regions on ``page`` that carry line rectangles
    (``{"page", "bbox", "rects"}`` dicts or ``Region`` objects)."""
    rects: list[Bbox] = []
    unions: list[Bbox] = []
    for r in regions or ():
        if isinstance(r, dict):
            p, b, rs = r.get("page"), r.get("bbox"), r.get("rects")
        else:
            p, b, rs = getattr(r, "page", None), getattr(r, "bbox", None), getattr(r, "rects", None)
        if not rs or (p is not None and int(p) != page):
            continue
        rects.extend(box for box in map(_as_bbox, rs) if box is not None)
        union = _as_bbox(b)
        if union is not None:
            unions.append(union)
    return rects, unions


def page_size_pt(pdf_path: str | os.PathLike[str], page: int, password: str | None = None) -> tuple[float, float]:
    """``(width_pt, height_pt)`` of one page as displayed (CropBox, /Rotate applied), PDF points.

    Raises:
        ValueError: ``page`` outside ``1..page_count``.
        ExtractError / EncryptedError: as ``page_count``.
    """
    doc = _open(pdf_path, password)
    try:
        rect = _page(doc, page).rect
        return float(rect.width), float(rect.height)
    finally:
        doc.close()


def page_label(pdf_path: str | os.PathLike[str], page: int, password: str | None = None) -> str:
    """The printed label of a 1-based page ('' when the PDF defines none, and
    for the other paged formats, which have no page labels).

    Raises:
        ValueError: ``page`` outside ``1..page_count``.
        ExtractError / EncryptedError: as ``page_count``.
    """
    doc = _open(pdf_path, password)
    try:
        pg = _page(doc, page)
        return (pg.get_label() or "") if doc.is_pdf else ""
    finally:
        doc.close()


def highlight_runs(boxes: Iterable[Bbox], gap_lines: float = 2.0) -> list[list[Bbox]]:
    """Split a page's highlight boxes (text order) into runs that can be shown as one crop.

    A box joins the current run when it touches the run's union grown by
    ``gap_lines`` line thicknesses (``min(w, h)`` of the box: its height for
    text across the page, its width for text running down it); otherwise it
    starts a new run (the text moved to another column or far down the page).

    Returns:
        Runs in text order, each a non-empty list of ``Bbox``; [] for no boxes.
    """
    runs: list[list[Bbox]] = []
    union: Bbox | None = None
    for b in boxes:
        if union is not None:
            g = gap_lines * min(b.w, b.h)
            if (
                b.x <= union.x + union.w + g
                and b.x + b.w >= union.x - g
                and b.y <= union.y + union.h + g
                and b.y + b.h >= union.y - g
            ):
                runs[-1].append(b)
                union = union.union(b)
                continue
        runs.append([b])
        union = b
    return runs


def clip_around(
    boxes: Iterable[Bbox],
    zoom: float,
    page_w_pt: float,
    page_h_pt: float,
    view_w_px: int,
    view_h_px: int,
    margin_px: int = 24,
) -> Bbox:
    """The part of a page to render so the highlight is in view: a ``Bbox`` (0..1).

    The clip is at most ``view_w_px`` x ``view_h_px`` pixels at ``zoom``
    (1.0 = 72 dpi) and holds the boxes' union when it fits (centred on it),
    else starts as near the union's top / left edge as keeps the first box
    (plus ``margin_px``) inside, so the first line is always shown. A page smaller than the view is shown whole on that axis.

    Args:
        boxes: the highlight boxes on this page, display frame, in text order.
        zoom: pixels per PDF point.
        page_w_pt, page_h_pt: displayed page size, points.
        view_w_px, view_h_px: largest image wanted, pixels.
        margin_px: space kept around the highlight when possible.

    Returns:
        The clip, display-frame fractions; ``Bbox(0, 0, 1, 1)`` for no boxes
        and a page that fits.
    """
    boxes = list(boxes)
    fw = min(1.0, view_w_px / max(1e-9, page_w_pt * zoom))
    fh = min(1.0, view_h_px / max(1e-9, page_h_pt * zoom))
    if not boxes:
        return Bbox(0.0, 0.0, fw, fh)
    union = boxes[0]
    for b in boxes[1:]:
        union = union.union(b)
    mx = margin_px / max(1e-9, page_w_pt * zoom)
    my = margin_px / max(1e-9, page_h_pt * zoom)

    def axis(lo: float, size: float, first: float, first_end: float, frac: float, m: float) -> float:
        if frac >= 1.0:
            return 0.0
        if size + 2 * m <= frac:
            start = lo + size / 2 - frac / 2  # the whole highlight fits: centre it
        else:  # as near the highlight's edge as the first box allows (it stays in view)
            start = max(lo - m, min(first - m, first_end + m - frac))
        return min(max(0.0, start), 1.0 - frac)

    f = boxes[0]
    return Bbox(axis(union.x, union.w, f.x, f.x + f.w, fw, mx), axis(union.y, union.h, f.y, f.y + f.h, fh, my), fw, fh)


#: Hyphens that end a line inside a split word (hyphen-minus, U+2010, soft hyphen).
_LINE_END_HYPHENS = frozenset("-\u2010\u00ad")


def query_word_boxes(page, terms: Sequence[str]) -> list[Bbox]:
    """The words of one PyMuPDF page holding one of the query ``terms``, as display-frame boxes.

    A page word (``get_text("words")``: whitespace-separated, punctuation attached) is
    marked when a term starts one of its word runs in the keyword index's form
    (``engine.store.fts.term_pattern`` over ``mark_view``: case, diacritics and the marks
    the keyword text drops folded, a term of 3+ characters also as a word's beginning). A
    word ending a line with a hyphen and the next line's first word are both marked when a
    term runs across the break (``acknowl-`` / ``edged`` for ``acknowledged``). Boxes come
    in the unrotated frame and are mapped with ``page.rotation_matrix``, then divided by the
    displayed ``page.rect``.
    """
    from engine.store.fts import mark_view, term_pattern

    pattern = term_pattern(tuple(terms)) if terms else None
    if pattern is None:
        return []
    import pymupdf

    rect, mat = page.rect, page.rotation_matrix
    pw, ph = rect.width or 1.0, rect.height or 1.0
    words = page.get_text("words", sort=False)
    marked: set[int] = set()
    for i, w in enumerate(words):
        word = unicodedata.normalize("NFKC", w[4])
        if pattern.search(mark_view(word)[0]):
            marked.add(i)
        if word[-1:] in _LINE_END_HYPHENS and i + 1 < len(words) and words[i + 1][5:7] != w[5:7]:
            # a word split at a line end: marked when a term crosses the break
            left = mark_view(word[:-1])[0]
            joined = left + mark_view(unicodedata.normalize("NFKC", words[i + 1][4]))[0]
            if any(m.start() < len(left) < m.end() for m in pattern.finditer(joined)):
                marked.update((i, i + 1))
    out: list[Bbox] = []
    for i in sorted(marked):
        r = pymupdf.Rect(words[i][:4]) * mat
        out.append(
            Bbox(
                max(0.0, (r.x0 - rect.x0) / pw),
                max(0.0, (r.y0 - rect.y0) / ph),
                min(1.0, r.width / pw),
                min(1.0, r.height / ph),
            )
        )
    return out


def _mark_words(img, boxes: Sequence[Bbox], page_w_px: int, page_h_px: int, off_x: int, off_y: int):
    """Violet fill and underline of each query word box over a Pillow RGB image (a copy)."""
    from PIL import Image, ImageDraw

    base = img.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for b in boxes:
        x0, y0 = round(b.x * page_w_px) - off_x, round(b.y * page_h_px) - off_y
        x1, y1 = round((b.x + b.w) * page_w_px) - off_x, round((b.y + b.h) * page_h_px) - off_y
        if x1 < 0 or y1 < 0 or x0 >= base.width or y0 >= base.height:
            continue
        draw.rectangle((x0, y0, x1, y1), fill=QUERY_WORD_FILL)
        draw.rectangle((x0, y1, x1, y1 + QUERY_WORD_LINE_PX - 1), fill=QUERY_WORD_LINE)
    return Image.alpha_composite(base, overlay).convert("RGB")


def _norm(s: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", s).split())


def find_text_boxes(page, texts: Iterable[str]) -> list[Bbox]:
    """Where the given texts appear on one PyMuPDF page, as display-frame boxes.

    Ligatures on the page are expanded for the search (``ﬁnd`` matches
    ``find``). Each text is searched whole first; when that finds nothing (a chunk spans
    many lines, or starts on another page) each of its lines of at least
    ``MIN_SEARCH_CHARS`` characters is searched on its own.

    Args:
        page: a ``pymupdf.Page``.
        texts: strings to find (NFKC-normalised, whitespace folded before search).

    Returns:
        ``Bbox`` list, 0..1 of the displayed page, top-left origin, in search
        order; [] when nothing is found. ``search_for`` rectangles are in
        unrotated points: they are multiplied by ``page.rotation_matrix`` and
        divided by the displayed ``page.rect`` size.
    """
    import pymupdf

    rect = page.rect
    if rect.width <= 0 or rect.height <= 0:
        return []
    rot = page.rotation_matrix
    # expand ligatures (U+FB01 "fi" ...) so the NFKC text of a chunk matches
    # the glyphs on the page (EXPECTED.md trap 2)
    flags = pymupdf.TEXTFLAGS_SEARCH & ~pymupdf.TEXT_PRESERVE_LIGATURES
    out: list[Bbox] = []
    seen: set[tuple[float, float, float, float]] = set()

    def add(hits) -> None:
        for r in hits:
            d = pymupdf.Rect(r) * rot
            d.normalize()
            x0 = min(max((d.x0 - rect.x0) / rect.width, 0.0), 1.0)
            x1 = min(max((d.x1 - rect.x0) / rect.width, 0.0), 1.0)
            y0 = min(max((d.y0 - rect.y0) / rect.height, 0.0), 1.0)
            y1 = min(max((d.y1 - rect.y0) / rect.height, 0.0), 1.0)
            key = (round(x0, 4), round(y0, 4), round(x1, 4), round(y1, 4))
            if x1 > x0 and y1 > y0 and key not in seen:
                seen.add(key)
                out.append(Bbox(x0, y0, x1 - x0, y1 - y0))

    for text in texts:
        if not text or not text.strip():
            continue
        whole = _norm(text)
        hits = page.search_for(whole, flags=flags) if len(whole) <= 400 else []
        if hits:
            add(hits)
            continue
        for line in re.split(r"[\r\n\f]+", unicodedata.normalize("NFKC", text)):
            line = " ".join(line.split())
            if len(line) >= MIN_SEARCH_CHARS:
                add(page.search_for(line, flags=flags))
    return out


def _draw(
    img,
    boxes: list[Bbox],
    unions: Sequence[Bbox] = (),
    *,
    page_w_px: int | None = None,
    page_h_px: int | None = None,
    off_x: int = 0,
    off_y: int = 0,
    pad: int | None = None,
):
    """Translucent fill + outline for each box, faint outline for each union, over a
    Pillow RGB image (a copy is returned). Boxes are fractions of the whole page,
    whose raster is ``page_w_px`` x ``page_h_px`` (default: the image) and of
    which the image shows the part starting at pixel ``(off_x, off_y)``."""
    from PIL import Image, ImageDraw

    base = img.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    W, H = base.size
    PW, PH = page_w_px or W, page_h_px or H
    # a hair of padding so thin boxes (one text line at low zoom) stay visible;
    # line rectangles get 1 px so neighbouring lines do not merge
    pad = max(1, HIGHLIGHT_OUTLINE_PX) if pad is None else pad

    def px(b: Bbox, grow: int) -> tuple[int, int, int, int] | None:
        x0 = int(round(b.x * PW)) - off_x - grow
        y0 = int(round(b.y * PH)) - off_y - grow
        x1 = int(round((b.x + b.w) * PW)) - off_x + grow
        y1 = int(round((b.y + b.h) * PH)) - off_y + grow
        if x1 < 0 or y1 < 0 or x0 > W - 1 or y0 > H - 1:
            return None
        return (max(0, x0), max(0, y0), min(W - 1, x1), min(H - 1, y1))

    for u in unions:
        box = px(u, pad + 3)
        if box is not None:
            draw.rectangle(box, outline=UNION_OUTLINE, width=1)
    width = 1 if unions else HIGHLIGHT_OUTLINE_PX
    for b in boxes:
        box = px(b, pad)
        if box is not None:
            draw.rectangle(box, fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_OUTLINE, width=width)
    return Image.alpha_composite(base, overlay).convert("RGB")


def _clip_px(clip: Bbox | None, page_w_px: int, page_h_px: int) -> tuple[int, int, int, int]:
    """Pixel-aligned ``(x0, y0, x1, y1)`` of a clip in the whole page's raster (at least 1 px)."""
    if clip is None:
        return 0, 0, page_w_px, page_h_px
    x0 = min(max(0, int(round(clip.x * page_w_px))), page_w_px - 1)
    y0 = min(max(0, int(round(clip.y * page_h_px))), page_h_px - 1)
    x1 = min(page_w_px, max(x0 + 1, int(round((clip.x + clip.w) * page_w_px))))
    y1 = min(page_h_px, max(y0 + 1, int(round((clip.y + clip.h) * page_h_px))))
    return x0, y0, x1, y1


def _poppler_page(pdf_path: str | os.PathLike[str], page: int, zoom: float, password: str | None):
    """The whole page rasterised by Poppler (``pdftoppm -cropbox``, /Rotate applied), Pillow RGB.

    Raises:
        ExtractError: pdf2image or pdftoppm missing, or Poppler could not render the page.
    """
    from engine.errors import ExtractError

    try:
        from pdf2image import convert_from_path as _convert
    except ImportError:
        raise ExtractError("extractor-error", "the poppler renderer needs pdf2image (pip install pdf2image)") from None
    # pdftoppm takes a fractional resolution and no password as None; pdf2image's
    # annotations say int and str, so it is called untyped
    convert_from_path: Any = _convert
    try:
        images = convert_from_path(
            str(pdf_path),
            dpi=72.0 * zoom,
            first_page=page,
            last_page=page,
            use_cropbox=True,
            userpw=password or None,
            single_file=True,
        )
    except Exception as e:  # PDFInfoNotInstalledError, PDFPageCountError, PDFSyntaxError...
        raise ExtractError("extractor-error", f"poppler could not render page {page}: {e}") from None
    if not images:
        raise ExtractError("extractor-error", f"poppler rendered no image for page {page}")
    return images[0].convert("RGB")


def render_page_info(
    pdf_path: str | os.PathLike[str],
    page: int,
    zoom: float = 1.5,
    regions: Iterable[Any] | None = None,
    password: str | None = None,
    highlight_texts: Iterable[str] | None = None,
    *,
    renderer: str = "pymupdf",
    clip: Bbox | None = None,
    mark_terms: Sequence[str] = (),
) -> RenderedPage:
    """Render one page as displayed, with the chunk's highlight, plus facts about it.

    Args:
        pdf_path: the PDF file (the caller resolves it inside the collection root).
        page: 1-based page number.
        zoom: scale, 1.0 = one pixel per PDF point (72 dpi); clamped to
            ``ZOOM_MIN..ZOOM_MAX``.
        regions: highlights, ``Bbox`` 0..1 of the displayed page, top-left
            origin: ``{"page", "bbox", "rects"}`` dicts or ``Region`` objects
            (line rectangles drawn, the union bbox outlined faintly),
            ``(page, Bbox)`` tuples, ``{"page", "bbox"}`` dicts or bare bbox
            dicts (taken to be on ``page``). Those on other pages are skipped.
        password: user password for an encrypted PDF.
        highlight_texts: used only when no region lies on ``page``: texts whose
            occurrences on the page are marked (the chunk's text, no-bbox fallback).
        renderer: ``"pymupdf"`` (default) or ``"poppler"`` (``RENDERERS``);
            a file that is not a PDF (``renders_pages``) is always drawn by
            PyMuPDF, whose layout gave its boxes (``renderer`` in the result says so).
        clip: the part of the displayed page to render (``Bbox`` 0..1, e.g. from
            ``clip_around``); None = the whole page.
        mark_terms: the query's terms; the page words holding one are drawn in violet
            (``query_word_boxes``), apart from the chunk's highlight.

    Returns:
        ``RenderedPage``: PNG of the displayed page or its clip (rotation and
        CropBox applied; the whole page is ``round(points * zoom)`` pixels with
        PyMuPDF, Poppler's own rounding with Poppler), the boxes drawn and where
        they came from (``"rects" | "bbox" | "text" | "none"``).

    Raises:
        ValueError: ``page`` outside ``1..page_count`` (the message names the
            range) or an unknown ``renderer``.
        ExtractError: the file cannot be opened (or Poppler cannot render it).
        EncryptedError: a password is needed or the given one is wrong.
    """
    import pymupdf
    from PIL import Image

    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {', '.join(RENDERERS)}, got {renderer!r}")
    if renderer == "poppler" and Path(os.fspath(pdf_path)).suffix.lower() != ".pdf":
        renderer = "pymupdf"  # Poppler reads PDF only; the other paged formats are MuPDF's layout
    zoom = min(max(float(zoom), ZOOM_MIN), ZOOM_MAX)
    doc = _open(pdf_path, password)
    try:
        pg = _page(doc, page)
        n = doc.page_count
        rects, unions = _rects_for_page(regions, page)
        if rects:
            boxes, source = rects, "rects"
        else:
            unions = []
            boxes = _boxes_for_page(regions, page)
            source = "bbox" if boxes else "none"
        if not boxes and highlight_texts:
            boxes = find_text_boxes(pg, highlight_texts)
            source = "text" if boxes else "none"
        words = query_word_boxes(pg, mark_terms) if mark_terms else []
        if renderer == "pymupdf":
            rect = pg.rect
            page_w_px, page_h_px = max(1, round(rect.width * zoom)), max(1, round(rect.height * zoom))
            x0, y0, x1, y1 = _clip_px(clip, page_w_px, page_h_px)
            if (x0, y0, x1, y1) == (0, 0, page_w_px, page_h_px):
                pix = pg.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
                page_w_px, page_h_px = pix.width, pix.height
                x1, y1 = pix.width, pix.height
            else:  # a pixel-aligned clip in the displayed frame renders exactly that part
                area = pymupdf.Rect(rect.x0 + x0 / zoom, rect.y0 + y0 / zoom, rect.x0 + x1 / zoom, rect.y0 + y1 / zoom)
                pix = pg.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=area, alpha=False)
            img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    finally:
        doc.close()
    if renderer == "poppler":
        full = _poppler_page(pdf_path, page, zoom, password)
        page_w_px, page_h_px = full.size
        x0, y0, x1, y1 = _clip_px(clip, page_w_px, page_h_px)
        img = full if (x0, y0, x1, y1) == (0, 0, page_w_px, page_h_px) else full.crop((x0, y0, x1, y1))
    if boxes:
        img = _draw(
            img,
            boxes,
            unions,
            page_w_px=page_w_px,
            page_h_px=page_h_px,
            off_x=x0,
            off_y=y0,
            pad=1 if source == "rects" else None,
        )
    if words:
        img = _mark_words(img, words, page_w_px, page_h_px, x0, y0)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=3)
    shown = Bbox(x0 / page_w_px, y0 / page_h_px, (x1 - x0) / page_w_px, (y1 - y0) / page_h_px)
    return RenderedPage(
        buf.getvalue(),
        img.width,
        img.height,
        page,
        n,
        tuple(boxes),
        source,
        renderer,
        shown,
        page_w_px,
        page_h_px,
        x0,
        y0,
        tuple(unions),
        tuple(words),
    )


def render_page(
    pdf_path: str | os.PathLike[str],
    page: int,
    zoom: float = 1.5,
    regions: Iterable[Any] | None = None,
    password: str | None = None,
    highlight_texts: Iterable[str] | None = None,
    *,
    renderer: str = "pymupdf",
    clip: Bbox | None = None,
) -> bytes:
    """PNG bytes of one PDF page as displayed, with translucent highlight rectangles.

    Same arguments, frame and errors as ``render_page_info``; returns only
    its ``png``.
    """
    return render_page_info(pdf_path, page, zoom, regions, password, highlight_texts, renderer=renderer, clip=clip).png
