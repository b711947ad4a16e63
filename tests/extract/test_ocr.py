"""engine/extract/ocr.py: scanned pages read by Tesseract through PyMuPDF, words boxed in the
displayed-page frame (rotation and CropBox as for text pages), recorded as OCR with the mean
word confidence; a phrase on a scan is found by search and its box covers the phrase's ink.

Needs Tesseract's English data (Debian: tesseract-ocr-eng); the tests that OCR skip, naming
the package, only when it is absent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.index.gate import settings_key
from engine.config import Settings
from engine.extract import extract
from engine.extract.ocr import OcrSettings, ocr_unavailable, tesseract_version
from engine.values import Bbox
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
OCR = OcrSettings("auto", "eng", 200)  # 200 dpi: enough for these scans, cheaper than 300

needs_tesseract = pytest.mark.skipif(
    ocr_unavailable("eng") is not None,
    reason="needs Tesseract with English data: Debian package tesseract-ocr-eng (apt-get install "
    "tesseract-ocr tesseract-ocr-eng)",
)

LINES = ["Quarterly maintenance report", "The heat exchanger was cleaned", "Pressure valve replaced on Tuesday"]


def _text_page(doc, rotation: int, crop: tuple[float, float, float, float] | None):
    """A 612x792 page with CropBox ``crop`` and /Rotate ``rotation`` whose LINES, native
    text, read upright on the page as displayed."""
    import pymupdf

    page = doc.new_page(width=612, height=792)
    if crop:
        page.set_cropbox(pymupdf.Rect(*crop))
    page.set_rotation(rotation)
    for i, line in enumerate(LINES):
        at = pymupdf.Point(60, 120 + 60 * i) * page.derotation_matrix
        page.insert_text(at, line, fontsize=22, fontname="helv", rotate=rotation)
    return page


def _build_scans(directory: Path) -> tuple[Path, Path]:
    """``text-rotated.pdf`` (native text reading upright on a /Rotate 90 page with a
    CropBox) and its scanned twin ``scan-rotated.pdf``: the twin's unrotated MediaBox
    rendered to an image at 150 dpi (the text runs sideways in it, as a scanner
    feeding a landscape sheet makes it), placed over the same MediaBox, then the same
    CropBox and /Rotate 90 (so the scan, too, reads upright as displayed)."""
    import pymupdf

    crop = (30, 40, 600, 760)
    text_doc = pymupdf.open()
    _text_page(text_doc, 90, crop)
    text_path = directory / "text-rotated.pdf"
    text_doc.save(text_path)

    flat = pymupdf.open(text_path)
    flat[0].set_rotation(0)
    flat[0].set_cropbox(flat[0].mediabox)
    png = flat[0].get_pixmap(dpi=150).tobytes("png")
    scan = pymupdf.open()
    page = scan.new_page(width=612, height=792)
    page.insert_image(page.rect, stream=png)
    page.set_cropbox(pymupdf.Rect(*crop))
    page.set_rotation(90)
    scan_path = directory / "scan-rotated.pdf"
    scan.save(scan_path)
    return text_path, scan_path


def _phrase_box(x, phrase: str, start: int = 0) -> tuple[int, Bbox]:
    """Page and union box of the words of the first occurrence of ``phrase`` in ``x.text``
    at or after character ``start``."""
    at = x.text.index(phrase, start)
    hit = [w for w in x.words if at <= w.start < at + len(phrase)]
    box = hit[0].bbox
    for w in hit[1:]:
        box = box.union(w.bbox)
    return hit[0].page, box


def _ink(path: Path, page: int, box: Bbox, zoom: float = 3.0) -> tuple[float, float]:
    """The box against the ink of the page rendered as displayed (rows of pixels along
    the text line; boxes here are of horizontal or vertical lines of text).

    Returns ``(ink, covered, loose)``: ``ink`` the least share of dark pixels over the
    box's three thirds along the line (every third has ink: the box spans the phrase);
    ``covered`` the share of the ink line's extent across the line (the run of inked
    pixel rows through the box's centre) inside the box (1.0: no glyph is cut);
    ``loose`` the box's extent across the line over that run's (font boxes include the
    line's ascender and descender room, so about 1-2)."""
    import pymupdf

    with pymupdf.open(path) as doc:
        pix = doc[page - 1].get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY)
        img = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width)
    dark = img < 140
    H, W = dark.shape
    x0, x1 = int(box.x * W), int(np.ceil((box.x + box.w) * W))
    y0, y1 = int(box.y * H), int(np.ceil((box.y + box.h) * H))
    vertical = (y1 - y0) > (x1 - x0)
    if vertical:  # a line running down the page: look across x
        dark, (x0, x1, y0, y1) = dark.T, (y0, y1, x0, x1)
    thirds = [dark[y0:y1, x0 + (x1 - x0) * i // 3 : x0 + (x1 - x0) * (i + 1) // 3].mean() for i in range(3)]
    rows = dark[:, x0:x1].sum(axis=1)
    mid = (y0 + y1) // 2
    top = mid
    while top > 0 and rows[top - 1] > 0:
        top -= 1
    bottom = mid
    while bottom < len(rows) - 1 and rows[bottom + 1] > 0:
        bottom += 1
    bottom += 1
    covered = max(0, min(y1, bottom) - max(y0, top)) / max(1, bottom - top)
    return float(min(thirds)), covered, (y1 - y0) / max(1, bottom - top)


def test_settings_key_changes_with_ocr():
    off = settings_key(Settings(ocr="off"))
    auto = settings_key(Settings(ocr="auto"))
    assert off != auto and "ocr=off" in off
    assert settings_key(Settings(ocr_languages="eng+deu")) != auto
    assert settings_key(Settings(ocr_dpi=200)) != auto
    assert f"tesseract={tesseract_version() or 'none'}" in auto


def test_bad_ocr_settings_are_named():
    from engine.errors import SettingsError

    for bad in ({"ocr": "sometimes"}, {"ocr_dpi": 10}, {"ocr_languages": "eng; rm"}):
        with pytest.raises(SettingsError, match="CHUNKNAV_OCR"):
            Settings(**bad).validate()


def test_ocr_unavailable_is_a_note_not_an_error(tmp_path, monkeypatch):
    empty = tmp_path / "tessdata"
    empty.mkdir()
    monkeypatch.setenv("TESSDATA_PREFIX", str(empty))
    x = extract(CORPUS / "edge/test_4090.pdf", ocr=OCR)
    assert x.text == "" and x.notes[0] == "no text layer on pages 1-5"
    assert x.notes[1].startswith("OCR unavailable: no Tesseract data for eng")
    assert "tesseract-ocr-eng" in x.notes[1] and x.notes[1].endswith("not OCR'd: pages 1-5")
    monkeypatch.delenv("TESSDATA_PREFIX")
    x = extract(CORPUS / "edge/test_4090.pdf", ocr=OcrSettings("auto", "xqz", 200))  # a language nobody has
    assert "no Tesseract data for xqz" in x.notes[1] and "tesseract-ocr-xqz" in x.notes[1]


def test_ocr_off_leaves_the_scan_empty():
    x = extract(CORPUS / "edge/test_4090.pdf", ocr=OcrSettings("off"))
    assert x.text == "" and x.notes == ("no text layer on pages 1-5",)
    assert "ocrPages" not in x.metadata


@pytest.fixture(scope="module")
def ocr_4090():
    """tests/corpus/edge/test_4090.pdf (5 scanned pages) read with OCR, once."""
    return extract(CORPUS / "edge/test_4090.pdf", ocr=OCR)


@needs_tesseract
def test_scanned_corpus_pdf_is_read_by_ocr(ocr_4090):
    x = ocr_4090
    assert [p.words for p in x.pages] and all(p.words > 20 for p in x.pages)
    assert "Laporan Mutasi Rekening" in x.text
    assert set(x.metadata["ocrPages"]) == {"1", "2", "3", "4", "5"}
    confs = [c for c in x.metadata["ocrPages"].values() if c is not None]
    if shutil.which("tesseract"):
        assert len(confs) == 5 and all(40 <= c <= 100 for c in confs)
    assert any(n.startswith("OCR (") and "on pages 1-5" in n for n in x.notes)
    page, box = _phrase_box(x, "Laporan Mutasi Rekening")
    inside, covered, loose = _ink(CORPUS / "edge/test_4090.pdf", page, box)
    assert inside > 0.03 and covered > 0.95 and loose < 2.5, (box, inside, covered, loose)


@needs_tesseract
def test_rotated_cropped_scan_boxes_match_the_text_twin(tmp_path):
    text_path, scan_path = _build_scans(tmp_path)
    native = extract(text_path)
    scanned = extract(scan_path, ocr=OCR)
    assert scanned.metadata.get("ocrPages") == {"1": scanned.metadata["ocrPages"]["1"]}
    assert (scanned.pages[0].width_pt, scanned.pages[0].height_pt) == (
        native.pages[0].width_pt,
        native.pages[0].height_pt,
    )
    for line in LINES:
        assert line in scanned.text, scanned.text
        _, a = _phrase_box(native, line)
        _, b = _phrase_box(scanned, line)
        # same displayed frame: the OCR box lies inside the native (font) box, grown by
        # 10 % of its height, and covers most of it (OCR boxes hug the ink)
        assert a.contains(b, a.h * 0.1, a.h * 0.1), (line, a, b)
        assert b.w * b.h > 0.55 * a.w * a.h, (line, a, b)
        assert b.w > b.h  # upright as displayed: the line runs across the page
        inside, covered, loose = _ink(scan_path, 1, b)
        assert inside > 0.03 and covered > 0.95 and loose < 2.5, (line, b, inside, covered, loose)


@needs_tesseract
def test_scan_phrase_found_and_read_back_with_ocr_region(tmp_path, ocr_4090):
    root = tmp_path / "files"
    root.mkdir()
    _build_scans(root)
    (root / "text-rotated.pdf").unlink()
    shutil.copy(CORPUS / "edge/test_4090.pdf", root / "test_4090.pdf")
    engine = Engine(
        Settings(allowed_roots=ALLOWED_ROOTS, db=str(tmp_path / "i.db"), embed_provider="none", ocr_dpi=200).validate()
    )
    try:
        engine.add_collection("Scans", str(root))
        summary = engine.run_index()
        assert summary["indexed"] == 2 and not summary["empty"], summary
        for name, phrase in (("scan-rotated.pdf", "heat exchanger"), ("test_4090.pdf", "Laporan Mutasi")):
            r = call_tool(engine, "search_chunks", {"query": phrase, "scope": "Scans", "mode": "keyword"})
            hit = next(h for h in r["hits"] if h["filePath"] == name)
            assert hit["ocr"] is True
            c = call_tool(
                engine, "get_chunk", {"collectionPath": "Scans", "filePath": name, "chunkIndex": hit["chunkIndex"]}
            )
            assert c["found"] and phrase in c["text"] and c["ocr"] is True
            assert all(g["ocr"] is True for g in c["regions"])
            # the chunk's region holds the phrase's words, and they cover ink on the rendered page
            x = ocr_4090 if name == "test_4090.pdf" else extract(root / name, ocr=OCR)
            assert x.text[c["start"] : c["end"]] == c["text"]
            page, box = _phrase_box(x, phrase, c["start"])
            region = next(g for g in c["regions"] if g["page"] == page)
            if shutil.which("tesseract"):
                assert 0 < region["ocrConfidence"] <= 100
            assert Bbox.from_dict(region["bbox"]).contains(box, 0.01, 0.01)
            inside, covered, loose = _ink(root / name, page, box)
            assert inside > 0.03 and covered > 0.95 and loose < 2.5, (name, box, inside, covered, loose)
        status = call_tool(engine, "index_status", {"probe": False})
        assert {n["filePath"] for n in status["notes"]} >= {"scan-rotated.pdf", "test_4090.pdf"}
    finally:
        engine.close()


@needs_tesseract
def test_force_ocrs_text_pages_and_auto_leaves_them(tmp_path):
    text_path, _ = _build_scans(tmp_path)
    native = extract(text_path, ocr=OCR)  # auto: the page has words, no OCR
    assert "ocrPages" not in native.metadata and not any(n.startswith("OCR") for n in native.notes)
    forced = extract(text_path, ocr=OcrSettings("force", "eng", 200))
    assert forced.metadata["ocrPages"].keys() == {"1"}
    for line in LINES:
        assert line in forced.text
        _, a = _phrase_box(native, line)
        _, b = _phrase_box(forced, line)
        assert a.contains(b, a.h * 0.1, a.h * 0.1), (line, a, b)


def _build_sideways(directory: Path) -> tuple[Path, Path]:
    """A page image with upright text placed on a /Rotate 90 page, so it shows sideways
    (a sheet fed the wrong way), and its native-text twin (same words, same /Rotate)."""
    import pymupdf

    flat = pymupdf.open()
    page = flat.new_page(width=612, height=792)
    for i, line in enumerate(LINES):
        page.insert_text((60, 120 + 60 * i), line, fontsize=22, fontname="helv")
    png = page.get_pixmap(dpi=150).tobytes("png")
    page.set_rotation(90)
    text_path = directory / "text-sideways.pdf"
    flat.save(text_path)
    scan = pymupdf.open()
    spage = scan.new_page(width=612, height=792)
    spage.insert_image(spage.rect, stream=png)
    spage.set_rotation(90)
    scan_path = directory / "scan-sideways.pdf"
    scan.save(scan_path)
    return text_path, scan_path


@needs_tesseract
@pytest.mark.skipif(
    not shutil.which("tesseract"),
    reason="orientation detection needs the tesseract program (Debian package tesseract-ocr)",
)
def test_sideways_scan_is_turned_upright_and_boxed_on_its_ink(tmp_path):
    text_path, scan_path = _build_sideways(tmp_path)
    native = extract(text_path)
    x = extract(scan_path, ocr=OCR)
    assert x.metadata["ocrTurned"] == {"1": 270} and any("read turned" in n for n in x.notes)
    for line in LINES:
        assert line in x.text, x.text
        _, a = _phrase_box(native, line)
        _, b = _phrase_box(x, line)
        assert b.h > b.w  # shown sideways: the line runs down the displayed page
        tol = 0.15 * min(a.w, a.h)
        assert a.contains(b, tol, tol) and b.w * b.h > 0.5 * a.w * a.h, (line, a, b)
        inside, covered, loose = _ink(scan_path, 1, b)
        assert inside > 0.03 and covered > 0.95 and loose < 2.5, (line, b, inside, covered, loose)


def test_what_tesseract_prints_is_captured_not_shown(capfd):
    """Tesseract writes to file descriptor 2 from C: the capture takes it off the terminal."""
    import os

    from engine.extract import ocr

    with ocr._capture_stderr() as said:
        os.write(2, b"Estimating resolution as 301\nEstimating resolution as 301\nWarning: low dpi\n")
    ocr._said.lines = said
    assert ocr.tesseract_output() == ["Estimating resolution as 301", "Warning: low dpi"]
    assert ocr.tesseract_output() == []  # cleared
    assert "Estimating" not in capfd.readouterr().err
    os.write(2, b"after\n")
    assert "after" in capfd.readouterr().err  # fd 2 is back
