"""Fixtures: corpus (see tests/conftest.py).

* ``real_corpus``: Path of ``tests/corpus``: real-world files copied byte for
  byte with their origins and licences (``tests/corpus/SOURCES.md``) and
  ground truth (``expected.json``, ``EXPECTED.md``).
* ``expected``: ``expected.json`` of that corpus, parsed.
* ``built_pdfs``: a directory of real PDFs built here with PyMuPDF, for cases no
  real file covers. Files and what is known about them
  (``BUILT`` below holds the same facts for tests):

  ============== ============================================================
  multi.pdf      3 pages, 612 x 792 pt; page n has the line "page N alpha
                 bravo" ("N" = one/two/three) at x=72, baseline y=100, and a
                 second block "closing words here" at x=72, baseline y=700;
                 roman page labels "i", "ii", "iii"
  rotated.pdf    4 pages, 400 x 600 pt unrotated, /Rotate 0, 90, 180, 270;
                 each page holds only the word "north", drawn so that it
                 reads upright near the top-left of the *displayed* page
  cropped.pdf    page 1: MediaBox 0 0 612 792, CropBox 100 150 500 650 with
                 "inside" in the visible area and "outside" beyond it;
                 page 2: MediaBox -50 -30 562 762 (non-zero origin), "offset"
  encrypted.pdf  user password "s3cret" (owner "owner-pw"), AES-256, 2 pages
                 "secret page one" / "secret page two"
  image_only.pdf page 1 an image and no text, page 2 "caption text", page 3
                 an image and no text
  scan.pdf       2 pages, images only: no word at all
  ============== ============================================================

* ``samples_dir``: the repository's ``assets/samples`` (the first-run corpus).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_CORPUS = REPO_ROOT / "tests" / "corpus"

#: Facts about ``built_pdfs`` that tests check against.
BUILT = {
    "multi.pdf": {"pages": 3, "labels": ["i", "ii", "iii"], "size_pt": (612, 792)},
    "rotated.pdf": {"pages": 4, "rotations": [0, 90, 180, 270], "size_pt": (400, 600)},
    "cropped.pdf": {"pages": 2},
    "encrypted.pdf": {"pages": 2, "password": "s3cret"},
    "image_only.pdf": {"pages": 3, "no_text_note": "no text layer on pages 1, 3"},
    "scan.pdf": {"pages": 2, "no_text_note": "no text layer on pages 1-2"},
}


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    """``tests/corpus`` (real-world files, see its SOURCES.md)."""
    assert (REAL_CORPUS / "expected.json").is_file(), f"test corpus missing at {REAL_CORPUS}"
    return REAL_CORPUS


@pytest.fixture(scope="session")
def expected(real_corpus: Path) -> dict:
    """The corpus ground truth (``expected.json``), parsed."""
    return json.loads((real_corpus / "expected.json").read_text("utf-8"))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """The repository's bundled sample corpus, ``assets/samples``."""
    return REPO_ROOT / "assets" / "samples"


def _grey_image(pymupdf) -> bytes:
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 30), False)
    pix.clear_with(90)  # dark grey: visible ink, no text
    return pix.tobytes("png")


def _upright_text(page, x_pt: float, y_pt: float, text: str, fontsize: float = 14) -> None:
    """Insert ``text`` so that it reads upright with its baseline start at
    (x_pt, y_pt) of the *displayed* page (top-left origin), whatever /Rotate is."""
    import pymupdf

    point = pymupdf.Point(x_pt, y_pt) * page.derotation_matrix
    page.insert_text(point, text, fontsize=fontsize, rotate=page.rotation)


def _build(directory: Path) -> None:
    import pymupdf

    # multi.pdf: 3 pages, two blocks each, roman page labels
    doc = pymupdf.open()
    for name in ("one", "two", "three"):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 100), f"page {name} alpha bravo", fontsize=12)
        page.insert_text((72, 700), "closing words here", fontsize=12)
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1}])
    doc.save(directory / "multi.pdf")
    doc.close()

    # rotated.pdf: one word per page, upright near the displayed top-left
    doc = pymupdf.open()
    for rotation in (0, 90, 180, 270):
        page = doc.new_page(width=400, height=600)
        page.set_rotation(rotation)
        _upright_text(page, 40, 60, "north", fontsize=20)
    doc.save(directory / "rotated.pdf")
    doc.close()

    # cropped.pdf: a CropBox inside the MediaBox; a MediaBox with negative origin
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((150, 250), "inside", fontsize=16)  # within the CropBox
    page.insert_text((20, 40), "outside", fontsize=16)  # cut away by the CropBox
    page.set_cropbox(pymupdf.Rect(100, 150, 500, 650))
    page = doc.new_page(width=612, height=792)
    page.set_mediabox(pymupdf.Rect(-50, -30, 562, 762))
    page.insert_text((100, 100), "offset", fontsize=16)
    doc.save(directory / "cropped.pdf")
    doc.close()

    # encrypted.pdf: user password s3cret
    doc = pymupdf.open()
    for name in ("one", "two"):
        doc.new_page().insert_text((72, 100), f"secret page {name}", fontsize=12)
    doc.save(directory / "encrypted.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256,
             user_pw="s3cret", owner_pw="owner-pw")
    doc.close()

    png = _grey_image(pymupdf)
    # image_only.pdf: pages 1 and 3 carry only an image
    doc = pymupdf.open()
    for n in range(3):
        page = doc.new_page()
        if n == 1:
            page.insert_text((72, 100), "caption text", fontsize=12)
        else:
            page.insert_image(pymupdf.Rect(72, 72, 472, 372), stream=png)
    doc.save(directory / "image_only.pdf")
    doc.close()

    # scan.pdf: no text layer at all
    doc = pymupdf.open()
    for _ in range(2):
        doc.new_page().insert_image(pymupdf.Rect(50, 50, 550, 750), stream=png)
    doc.save(directory / "scan.pdf")
    doc.close()


@pytest.fixture(scope="session")
def built_pdfs(tmp_path_factory) -> Path:
    """Directory of real PDFs built with PyMuPDF (see the module docstring / ``BUILT``)."""
    directory = tmp_path_factory.mktemp("built_pdfs")
    _build(directory)
    return directory
