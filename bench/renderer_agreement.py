"""Do PyMuPDF and Poppler draw the same page? Per page of tests/corpus/expected.json.

Usage: .venv/bin/python bench/renderer_agreement.py   (needs poppler-utils: pdftoppm)

Renders every page that holds an expected.json occurrence with both
rasterisers at zoom 1.5 and prints the two sizes, whether the aspect agrees
(rotation), and how much ink they disagree on after scaling Poppler's image to PyMuPDF's size: the share of ink pixels
(grey < INK) of one raster with no faint ink (grey < FAINT) of the other
within 2 px, the larger of both directions (anti-aliasing noise stays small; a control row prints
what a page turned 180 degrees gives). ``compare`` is also
used by tests/explorer/test_render_poppler.py.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.render import render_page_info  # noqa: E402

CORPUS = REPO / "tests" / "corpus"
ZOOM = 1.5
#: Share of differing pixels above which two renders are called different; the
#: control (a page against itself turned 180 degrees) prints what a wrong frame gives.
DISAGREE = 0.05
#: Grey levels: ink of one raster (< INK) must meet at least faint ink (< FAINT) of the
#: other within 2 px (small text anti-aliases differently in the two libraries).
INK, FAINT = 96, 200


def grey(png: bytes) -> Image.Image:
    """PNG bytes -> Pillow greyscale image."""
    return Image.open(io.BytesIO(png)).convert("L")


def compare(path: Path, page: int, password: str | None, zoom: float = ZOOM) -> dict:
    """Sizes of both renders and the share of strongly differing pixels (module docstring)."""
    a = render_page_info(path, page, zoom, password=password, renderer="pymupdf")
    b = render_page_info(path, page, zoom, password=password, renderer="poppler")
    ga, gb = grey(a.png), grey(b.png).resize((a.width_px, a.height_px))
    la, lb = np.asarray(ga), np.asarray(gb)
    aspect_a, aspect_b = a.width_px / a.height_px, b.width_px / b.height_px
    return {
        "pymupdf": (a.width_px, a.height_px),
        "poppler": (b.width_px, b.height_px),
        "aspect_agrees": abs(aspect_a - aspect_b) / aspect_a < 0.01,
        "differing": max(lone_ink(la < INK, lb < FAINT), lone_ink(lb < INK, la < FAINT)),
    }


def lone_ink(a: np.ndarray, b: np.ndarray, reach_px: int = 2) -> float:
    """Share of ink pixels of ``a`` with no ink of ``b`` within ``reach_px`` (0 when ``a`` has no ink)."""
    if not a.any():
        return 0.0
    near = np.zeros_like(b)
    h, w = b.shape
    for dy in range(-reach_px, reach_px + 1):
        for dx in range(-reach_px, reach_px + 1):
            near[max(0, dy) : h + min(0, dy), max(0, dx) : w + min(0, dx)] |= b[
                max(0, -dy) : h + min(0, -dy), max(0, -dx) : w + min(0, -dx)
            ]
    return float((a & ~near).sum() / a.sum())


def expected_pages() -> list[tuple[str, int, str | None]]:
    """``(file, page, password)`` of every page holding an expected.json occurrence, in order."""
    data = json.loads((CORPUS / "expected.json").read_text("utf-8"))
    out: list[tuple[str, int, str | None]] = []
    for doc in data["documents"]:
        for phrase in doc["phrases"]:
            for occ in phrase["occurrences"]:
                key = (doc["file"], occ["page"], doc.get("password"))
                if key not in out:
                    out.append(key)
    return out


def main() -> int:
    print(f"{'file':46} {'page':>4} {'pymupdf px':>11} {'poppler px':>11} {'aspect':>6} {'differing':>9}")
    worst = 0.0
    for file, page, password in expected_pages():
        r = compare(CORPUS / file, page, password)
        worst = max(worst, r["differing"])
        flag = "" if r["aspect_agrees"] and r["differing"] < DISAGREE else "  <- disagree"
        print(
            f"{file:46} {page:4d} {'%dx%d' % r['pymupdf']:>11} {'%dx%d' % r['poppler']:>11} "
            f"{'ok' if r['aspect_agrees'] else 'NO':>6} {r['differing']:9.4f}{flag}"
        )
    print(f"worst share of ink the two disagree on: {worst:.4f}")
    a = render_page_info(CORPUS / "pdf" / "multicolumn.pdf", 1, ZOOM)
    g = np.asarray(grey(a.png))
    control = lone_ink(g < INK, g[::-1, ::-1] < FAINT)
    print(f"control, multicolumn.pdf p1 against itself turned 180 degrees: {control:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
