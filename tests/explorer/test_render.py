"""engine/render.py: the page image the Source view shows, tested on its pixels.

For every phrase of tests/corpus/expected.json (rotated, cropped and
offset pages included) the highlight drawn by ``render_page`` must cover the
phrase's region of the rendered page, whether the box comes from the given
bbox, from the real extract -> chunk pipeline (a chunk's regions), or from the
no-bbox fallback (the text searched on the page).
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine import render
from engine.chunk import chunk_text
from engine.errors import EncryptedError, ExtractError
from engine.extract import extract
from engine.values import Bbox

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
EXPECTED = CORPUS / "expected.json"
ZOOM = 1.5
TOL_X, TOL_Y = 0.01, 0.02  # EXPECTED.md tolerances


def _cases():
    if not EXPECTED.is_file():
        return []
    data = json.loads(EXPECTED.read_text("utf-8"))
    out = []
    for doc in data["documents"]:
        for phrase in doc["phrases"]:
            for n, occ in enumerate(phrase["occurrences"][:4]):  # up to 4 per phrase (test-2812: all rotations)
                out.append(
                    pytest.param(
                        doc["file"],
                        doc.get("password"),
                        phrase["text"],
                        occ["page"],
                        Bbox(*occ["bbox"]),
                        n,
                        id=f"{Path(doc['file']).stem}-{phrase['text'][:18]}-{n}",
                    )
                )
    return out


CASES = _cases()


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


@functools.lru_cache(maxsize=64)
def _plain(pdf, page, password) -> np.ndarray:
    return _pixels(render.render_page(pdf, page, ZOOM, password=password))


@functools.lru_cache(maxsize=16)
def _extract(pdf, password):
    return extract(pdf, password)


def _changed(pdf, page, **kw) -> np.ndarray:
    """Boolean mask of the pixels the highlight changed (highlighted render vs plain render)."""
    plain = _plain(pdf, page, kw.get("password"))
    marked = _pixels(render.render_page(pdf, page, ZOOM, **kw))
    assert plain.shape == marked.shape
    return np.abs(marked - plain).max(axis=2) > 8


def _coverage(mask: np.ndarray, box: Bbox, inset_x: float = 0.0, inset_y: float = 0.0) -> float:
    """Share of the pixels inside ``box`` (shrunk by the insets, fractions) that changed."""
    H, W = mask.shape
    x0 = int(np.ceil((box.x + inset_x) * W))
    x1 = int(np.floor((box.x + box.w - inset_x) * W))
    y0 = int(np.ceil((box.y + inset_y) * H))
    y1 = int(np.floor((box.y + box.h - inset_y) * H))
    region = mask[y0 : max(y0 + 1, y1), x0 : max(x0 + 1, x1)]
    return float(region.mean())


def _outside(mask: np.ndarray, box: Bbox, grow_px: int = 6) -> float:
    """Share of changed pixels that lie outside ``box`` grown by ``grow_px`` plus the tolerances."""
    H, W = mask.shape
    x0 = max(0, int((box.x - TOL_X) * W) - grow_px)
    x1 = min(W, int((box.x + box.w + TOL_X) * W) + grow_px)
    y0 = max(0, int((box.y - TOL_Y) * H) - grow_px)
    y1 = min(H, int((box.y + box.h + TOL_Y) * H) + grow_px)
    total = mask.sum()
    inside = mask[y0:y1, x0:x1].sum()
    return float((total - inside) / total) if total else 1.0


@pytest.mark.parametrize("file,password,text,page,box,n", CASES)
def test_bbox_highlight_covers_phrase(file, password, text, page, box, n):
    """A region given as a display-frame bbox is drawn exactly there (rotation/CropBox shown as displayed)."""
    mask = _changed(CORPUS / file, page, regions=[{"page": page, "bbox": box.to_dict()}], password=password)
    assert _coverage(mask, box) >= 0.98
    assert _outside(mask, box) == 0.0


@pytest.mark.parametrize("file,password,text,page,box,n", CASES)
def test_chunk_regions_highlight_covers_phrase(file, password, text, page, box, n):
    """The real pipeline: extract -> chunk windows -> the window holding the phrase -> its regions drawn."""
    ex = _extract(CORPUS / file, password)
    # the phrase's words: words on `page` whose centre lies inside the expected box
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
    regions = [(r.page, r.bbox) for r in win.regions]
    mask = _changed(CORPUS / file, page, regions=regions, password=password)
    assert _coverage(mask, box, inset_x=min(TOL_X, box.w / 4), inset_y=min(TOL_Y, box.h / 4)) >= 0.95


@pytest.mark.parametrize("file,password,text,page,box,n", CASES)
def test_text_fallback_covers_phrase(file, password, text, page, box, n):
    """No bbox: the phrase searched on the page (search_for rects mapped by rotation_matrix) is marked."""
    info = render.render_page_info(CORPUS / file, page, ZOOM, regions=None, password=password, highlight_texts=[text])
    assert info.source == "text"
    # the boxes found for this occurrence (a wrapped phrase gives one per line;
    # other occurrences on the page give boxes elsewhere)
    mine = [
        b for b in info.boxes if b.x < box.x + box.w and box.x < b.x + b.w and b.y < box.y + box.h and box.y < b.y + b.h
    ]
    assert mine, info.boxes
    union = mine[0]
    for b in mine[1:]:
        union = union.union(b)
    # substring search leaves out quote glyphs glued to a word ("“Huardest"), which
    # word-level boxes include: up to ~0.03 narrower (EXPECTED.md trap 4)
    assert union.contains(box, 0.035, TOL_Y) and box.contains(union, TOL_X, TOL_Y), (union, box)
    # and those boxes are really painted on the image
    mask = _changed(CORPUS / file, page, highlight_texts=[text], password=password)
    for b in mine:
        assert _coverage(mask, b) >= 0.98


def test_rotated_page_boxes_match_expected_display_frame():
    """search_for gives unrotated rects; the fallback's boxes are in the display frame (test-2812, /Rotate 0..270)."""
    import pymupdf

    doc = pymupdf.open(CORPUS / "pdf" / "test-2812.pdf")
    try:
        for pno in range(4):
            (b,) = render.find_text_boxes(doc[pno], ["cell[0][0]"])
            assert abs(b.x - 0.144) <= TOL_X and abs(b.w - 0.049) <= TOL_X, (pno, b)
            assert abs(b.y - 0.121) <= TOL_Y and abs(b.h - 0.025) <= TOL_Y, (pno, b)
    finally:
        doc.close()


def test_image_is_the_displayed_page_size():
    """Pixmap of the page as displayed: a /Rotate 90 page renders landscape-swapped."""
    info = render.render_page_info(CORPUS / "pdf" / "nics-background-checks-2015-11-rotated.pdf", 1, 1.0)
    flat = render.render_page_info(CORPUS / "pdf" / "nics-background-checks-2015-11.pdf", 1, 1.0)
    assert (info.width_px, info.height_px) == (flat.height_px, flat.width_px)
    assert info.source == "none" and info.boxes == ()
    assert info.png.startswith(b"\x89PNG")


def test_regions_on_other_pages_are_not_drawn():
    pdf = CORPUS / "pdf" / "multicolumn.pdf"
    info = render.render_page_info(pdf, 1, 1.0, regions=[(2, Bbox(0.1, 0.1, 0.2, 0.2))])
    assert info.boxes == () and info.source == "none"
    info = render.render_page_info(pdf, 2, 1.0, regions=[{"page": 2, "bbox": {"x": 0.1, "y": 0.1, "w": 0.2, "h": 0.2}}])
    assert info.source == "bbox" and len(info.boxes) == 1


def test_page_count_errors_and_range():
    assert render.page_count(CORPUS / "pdf" / "tracemonkey.pdf") == 14
    assert render.page_count(CORPUS / "edge" / "libreoffice-writer-password.pdf", "openpassword") == 1
    with pytest.raises(EncryptedError, match="password required"):
        render.page_count(CORPUS / "edge" / "libreoffice-writer-password.pdf")
    with pytest.raises(EncryptedError, match="wrong password"):
        render.render_page(CORPUS / "edge" / "libreoffice-writer-password.pdf", 1, password="wrong")
    with pytest.raises(ExtractError):
        render.page_count(CORPUS / "edge" / "empty.pdf")
    with pytest.raises(ValueError, match=r"valid 1\.\.14"):
        render.render_page(CORPUS / "pdf" / "tracemonkey.pdf", 15)


def test_encrypted_page_renders_text_after_authenticate():
    """EXPECTED.md trap 7: needs_pass is not re-read after authenticate, so the page keeps its text."""
    info = render.render_page_info(
        CORPUS / "edge" / "libreoffice-writer-password.pdf",
        1,
        1.0,
        password="openpassword",
        highlight_texts=["Lorem ipsum dolor sit amet"],
    )
    assert info.source == "text" and len(info.boxes) >= 1


def test_highlight_runs_split_at_a_column_change_and_a_gap():
    lines = [Bbox(0.1, 0.50 + k * 0.015, 0.3, 0.012) for k in range(5)]
    top_right = [Bbox(0.55, 0.10 + k * 0.015, 0.3, 0.012) for k in range(2)]
    far_below = [Bbox(0.45, 0.95, 0.02, 0.012)]
    runs = render.highlight_runs(lines + top_right + far_below)
    assert [len(r) for r in runs] == [5, 2, 1]
    assert render.highlight_runs([]) == []


def test_clip_around_keeps_the_first_box_in_view():
    first = Bbox(0.1, 0.9, 0.3, 0.01)
    clip = render.clip_around([first, Bbox(0.1, 0.2, 0.3, 0.01)], 3.0, 612, 1800, 880, 400)
    assert clip.y <= first.y and first.y + first.h <= clip.y + clip.h
    assert clip.x <= first.x and clip.h * 1800 * 3.0 <= 401
    assert render.clip_around([], 1.0, 612, 792, 880, 400) == Bbox(0.0, 0.0, 1.0, 400 / 792)
