"""The second renderer (Poppler through pdf2image) against the first (PyMuPDF).

For every occurrence of tests/corpus/expected.json, the chunk that holds the
phrase (real extract -> chunk pipeline) has its line rectangles drawn by both
renderers, and on both rasters the ink of the phrase (dark pixels inside the
expected box) must lie under the highlight: an independent check that the
display frame is the page as a viewer (Poppler) draws it, not only as MuPDF
does. Page sizes and aspect must agree on every page; pages where the ink of
the two rasters disagrees are listed by bench/renderer_agreement.py.
"""

from __future__ import annotations

import functools
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine import render
from engine.chunk import chunk_text
from engine.errors import ExtractError
from engine.extract import extract
from engine.values import Bbox

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import renderer_agreement as ra  # noqa: E402


CORPUS = REPO / "tests" / "corpus"
ZOOM = 1.5
TOL_X, TOL_Y = 0.01, 0.02

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not shutil.which("pdftoppm"), reason="poppler-utils not installed")]


def _cases():
    data = json.loads((CORPUS / "expected.json").read_text("utf-8"))
    out = []
    for doc in data["documents"]:
        for phrase in doc["phrases"]:
            for n, occ in enumerate(phrase["occurrences"]):
                out.append(
                    pytest.param(
                        doc["file"],
                        doc.get("password"),
                        occ["page"],
                        Bbox(*occ["bbox"]),
                        id=f"{Path(doc['file']).stem}-{phrase['text'][:18]}-{n}",
                    )
                )
    return out


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


@functools.lru_cache(maxsize=8)
def _extract(pdf, password):
    return extract(pdf, password)


@functools.lru_cache(maxsize=64)
def _plain(pdf, page, password, renderer) -> np.ndarray:
    return _pixels(render.render_page(pdf, page, ZOOM, password=password, renderer=renderer))


def _window_regions(pdf: Path, password, page: int, box: Bbox):
    ex = _extract(pdf, password)
    inside = [
        w
        for w in ex.words
        if w.page == page
        and w.bbox is not None
        and box.contains(Bbox(w.bbox.x + w.bbox.w / 2, w.bbox.y + w.bbox.h / 2, 0, 0), TOL_X, TOL_Y / 2)
    ]
    assert inside, "phrase words not found by extract"
    start, end = min(w.start for w in inside), max(w.end for w in inside)
    win = next(w for w in chunk_text(ex, 1000, 150) if w.start <= start and w.end >= end)
    return list(win.regions)


@pytest.mark.parametrize("renderer", ["pymupdf", "poppler"])
@pytest.mark.parametrize("file,password,page,box", _cases())
def test_line_rects_cover_the_phrase_ink_on_both_renderers(file, password, page, box, renderer):
    pdf = CORPUS / file
    regions = _window_regions(pdf, password, page, box)
    plain = _plain(pdf, page, password, renderer)
    info = render.render_page_info(pdf, page, ZOOM, regions=regions, password=password, renderer=renderer)
    assert info.source == "rects" and info.renderer == renderer
    marked = _pixels(info.png)
    assert marked.shape == plain.shape
    changed = np.abs(marked - plain).max(axis=2) > 8
    H, W = changed.shape
    # the phrase's ink: dark pixels inside the expected box (shrunk a little: EXPECTED.md tolerance)
    x0, x1 = int(np.ceil((box.x + 0.002) * W)), int(np.floor((box.x + box.w - 0.002) * W))
    y0, y1 = int(np.ceil((box.y + 0.002) * H)), int(np.floor((box.y + box.h - 0.002) * H))
    ink = plain[y0:y1, x0:x1].mean(axis=2) < 128
    assert ink.sum() > 10, f"no ink under the expected box on the {renderer} raster"
    covered = (ink & changed[y0:y1, x0:x1]).sum() / ink.sum()
    assert covered >= 0.97, f"{renderer}: only {covered:.3f} of the phrase's ink lies under the highlight"


@pytest.mark.parametrize("file,page,password", ra.expected_pages())
def test_both_renderers_give_the_same_page_size(file, page, password):
    r = ra.compare(CORPUS / file, page, password)
    assert r["aspect_agrees"], r
    assert abs(r["pymupdf"][0] - r["poppler"][0]) <= 1 and abs(r["pymupdf"][1] - r["poppler"][1]) <= 1, r


def test_poppler_clip_is_the_same_part_of_the_page():
    pdf = CORPUS / "pdf" / "test-2812.pdf"
    clip = Bbox(0.1, 0.2, 0.4, 0.3)
    for renderer in ("pymupdf", "poppler"):
        whole = render.render_page_info(pdf, 2, ZOOM, renderer=renderer)
        part = render.render_page_info(pdf, 2, ZOOM, renderer=renderer, clip=clip)
        full = _pixels(whole.png)
        crop = _pixels(part.png)
        y, x = part.clip_y_px, part.clip_x_px
        assert np.abs(full[y : y + part.height_px, x : x + part.width_px] - crop).mean() < 1.0


def test_unknown_renderer_and_bad_file():
    with pytest.raises(ValueError, match="renderer"):
        render.render_page(CORPUS / "pdf" / "minimal-document.pdf", 1, renderer="cairo")
    with pytest.raises(ExtractError):
        render.render_page(CORPUS / "edge" / "empty.pdf", 1, renderer="poppler")


@pytest.mark.parametrize("name", ["test_open2.xps", "test_open2.epub"])
def test_other_paged_formats_are_drawn_by_pymupdf_in_the_layout_of_their_boxes(name):
    """Poppler reads PDF only: an XPS/EPUB page asked of Poppler is drawn by PyMuPDF
    (the layout extraction used), with the stored box of its first chunk."""
    path = CORPUS / "formats" / name
    assert render.renders_pages(path) and render.renders_pages(str(path).upper())
    assert not render.renders_pages(CORPUS / "formats" / "test_open2.html")
    extracted = extract(path)
    chunk = chunk_text(extracted, 1000, 150)[0]
    region = chunk.regions[0]
    shot = render.render_page_info(path, region.page, 1.0, regions=[region], renderer="poppler")
    assert shot.renderer == "pymupdf" and shot.source in ("rects", "bbox") and shot.boxes
    w, h = render.page_size_pt(path, region.page)
    assert abs(shot.page_width_px - w) <= 1 and abs(shot.page_height_px - h) <= 1  # MuPDF rounds up
    assert render.page_label(path, region.page) == ""
