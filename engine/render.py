"""Page images for the explorer: a PDF page as displayed, with highlights drawn.

Owns: rendering one PDF page to PNG bytes (``render_page``) in the *display
frame* (CropBox and /Rotate applied, exactly what ``page.get_pixmap`` shows),
drawing translucent highlight rectangles for chunk regions (``Bbox`` 0..1 of
the displayed page, origin top-left) and, when a chunk has no bbox, for its
text found on the page (``page.search_for`` rectangles, which come in the
unrotated frame and are mapped with ``page.rotation_matrix``); and
``page_count``. The GUI never imports PyMuPDF itself: page PNGs come from here.

Imports PyMuPDF and Pillow lazily; imports no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import io
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from engine.extract import open_pdf
from engine.model import Bbox

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
]

#: RGBA fill of a highlight (translucent yellow).
HIGHLIGHT_FILL = (255, 213, 0, 96)
#: RGBA outline of a highlight (opaque orange), ``HIGHLIGHT_OUTLINE_PX`` wide.
HIGHLIGHT_OUTLINE = (230, 92, 0, 255)
HIGHLIGHT_OUTLINE_PX = 2
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
        boxes: the highlight boxes drawn, ``Bbox`` of the displayed page.
        source: ``"bbox"`` (from regions), ``"text"`` (found by text search),
            ``"none"`` (nothing to draw on this page).
    """

    png: bytes
    width_px: int
    height_px: int
    page: int
    page_count: int
    boxes: tuple[Bbox, ...]
    source: str


def _open(pdf_path: str | os.PathLike[str], password: str | None):
    """Open and decrypt a PDF (``engine.extract.open_pdf``: the same rules and
    the same EXPECTED.md trap 7 care). Raises ExtractError / EncryptedError."""
    return open_pdf(pdf_path, password)[0]


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


def _draw(png_rgb, boxes: list[Bbox]):
    """Translucent fill + outline for each box over a Pillow RGB image (in place copy)."""
    from PIL import Image, ImageDraw

    base = png_rgb.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    W, H = base.size
    for b in boxes:
        x0 = int(round(b.x * W))
        y0 = int(round(b.y * H))
        x1 = int(round((b.x + b.w) * W))
        y1 = int(round((b.y + b.h) * H))
        # a hair of padding so thin boxes (one text line at low zoom) stay visible
        pad = max(1, HIGHLIGHT_OUTLINE_PX)
        box = (max(0, x0 - pad), max(0, y0 - pad), min(W - 1, x1 + pad), min(H - 1, y1 + pad))
        draw.rectangle(box, fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_OUTLINE, width=HIGHLIGHT_OUTLINE_PX)
    return Image.alpha_composite(base, overlay).convert("RGB")


def render_page_info(pdf_path: str | os.PathLike[str], page: int, zoom: float = 1.5,
                     regions: Iterable[Any] | None = None, password: str | None = None,
                     highlight_texts: Iterable[str] | None = None) -> RenderedPage:
    """Render one page as displayed, with the chunk's highlight, plus facts about it.

    Args:
        pdf_path: the PDF file (the caller resolves it inside the collection root).
        page: 1-based page number.
        zoom: scale, 1.0 = one pixel per PDF point (72 dpi); clamped to
            ``ZOOM_MIN..ZOOM_MAX``.
        regions: highlight boxes, ``Bbox`` 0..1 of the displayed page, top-left
            origin: ``(page, Bbox)`` tuples, ``{"page", "bbox"}`` dicts or bare
            bbox dicts (taken to be on ``page``). Those on other pages are skipped.
        password: user password for an encrypted PDF.
        highlight_texts: used only when no region lies on ``page``: texts whose
            occurrences on the page are marked (the chunk's text, no-bbox fallback).

    Returns:
        ``RenderedPage``: PNG of the displayed page (rotation and CropBox
        applied, ``round(points * zoom)`` pixels), the boxes drawn and where
        they came from (``"bbox" | "text" | "none"``).

    Raises:
        ValueError: ``page`` outside ``1..page_count`` (the message names the range).
        ExtractError: the file cannot be opened.
        EncryptedError: a password is needed or the given one is wrong.
    """
    import pymupdf
    from PIL import Image

    zoom = min(max(float(zoom), ZOOM_MIN), ZOOM_MAX)
    doc = _open(pdf_path, password)
    try:
        n = doc.page_count
        if not 1 <= page <= n:
            raise ValueError(f"page {page} is out of range: valid 1..{n}")
        pg = doc[page - 1]
        boxes = _boxes_for_page(regions, page)
        source = "bbox" if boxes else "none"
        if not boxes and highlight_texts:
            boxes = find_text_boxes(pg, highlight_texts)
            source = "text" if boxes else "none"
        pix = pg.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    finally:
        doc.close()
    if boxes:
        img = _draw(img, boxes)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=3)
    return RenderedPage(buf.getvalue(), img.width, img.height, page, n, tuple(boxes), source)


def render_page(pdf_path: str | os.PathLike[str], page: int, zoom: float = 1.5,
                regions: Iterable[Any] | None = None, password: str | None = None,
                highlight_texts: Iterable[str] | None = None) -> bytes:
    """PNG bytes of one PDF page as displayed, with translucent highlight rectangles.

    Same arguments, frame and errors as ``render_page_info``; returns only
    its ``png``.
    """
    return render_page_info(pdf_path, page, zoom, regions, password, highlight_texts).png
