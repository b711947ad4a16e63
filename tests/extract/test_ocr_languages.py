"""OCR languages without Tesseract data: a scan indexed before must not lose its
text when ``CHUNKNAV_OCR_LANGUAGES`` names a language whose data is not installed. Some
languages usable: OCR with those, a note naming the missing ones. None usable: the stored
OCR text is kept, stale with the reason ``ocr-unavailable``.

The scan is built here (PyMuPDF: text rendered to an image, the image placed on an empty
page). ``xqz`` is a language code no Tesseract has, so the test does not depend on which
language packages this machine has.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.index.gate import settings_key
from engine.config import Settings
from engine.extract import extract
from engine.extract.ocr import OcrSettings, ocr_unavailable, resolve_languages
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

needs_tesseract = pytest.mark.skipif(
    ocr_unavailable("eng") is not None,
    reason="needs Tesseract with English data: Debian package tesseract-ocr-eng (apt-get install "
    "tesseract-ocr tesseract-ocr-eng)",
)


def _scan(path: Path) -> Path:
    """A one-page image-only PDF reading "The zebra crossing was repainted" (150 dpi)."""
    import pymupdf

    text = pymupdf.open()
    page = text.new_page(width=420, height=160)
    page.insert_text((30, 80), "The zebra crossing was repainted", fontsize=20, fontname="helv")
    png = page.get_pixmap(dpi=150).tobytes("png")
    scan = pymupdf.open()
    scan.new_page(width=420, height=160).insert_image(pymupdf.Rect(0, 0, 420, 160), stream=png)
    scan.save(path)
    return path


def _engine(tmp_path: Path, languages: str) -> Engine:
    return Engine(
        Settings(
            allowed_roots=ALLOWED_ROOTS,
            db=str(tmp_path / "ocr.db"),
            embed_provider="none",
            ocr="auto",
            ocr_languages=languages,
            ocr_dpi=150,
        ).validate()
    )


def _scan_collection(tmp_path: Path, folder: str, languages: str) -> Engine:
    """An engine with OCR languages ``languages`` and collection O: ``folder`` holding scan.pdf."""
    root = tmp_path / folder
    root.mkdir()
    _scan(root / "scan.pdf")
    engine = _engine(tmp_path, languages)
    engine.add_collection("O", str(root))
    return engine


def _zebra(engine: Engine) -> dict:
    return call_tool(engine, "search_chunks", {"query": "zebra", "scope": "O", "mode": "keyword"})


@needs_tesseract
def test_resolve_languages_narrows_to_those_with_data():
    use, note = resolve_languages(OcrSettings("auto", "eng+xqz", 150))
    assert use.languages == "eng"
    assert (
        note == "OCR languages without Tesseract data: xqz (install: apt-get install tesseract-ocr-xqz); read with eng"
    )
    use, note = resolve_languages(OcrSettings("auto", "xqz", 150))
    assert use is None and note.startswith("OCR unavailable: no Tesseract data for xqz")
    assert resolve_languages(OcrSettings("auto", "eng", 150)) == (OcrSettings("auto", "eng", 150), None)
    # the hash gate names what is missing (installing it re-reads the scans); nothing when all is there
    assert settings_key(Settings(ocr_languages="eng+xqz")).endswith(",without=xqz")
    assert ",without=" not in settings_key(Settings(ocr_languages="eng"))


@needs_tesseract
def test_a_missing_second_language_still_reads_with_the_first(tmp_path):
    x = extract(_scan(tmp_path / "scan.pdf"), ocr=OcrSettings("auto", "eng+xqz", 150))
    assert "zebra crossing" in x.text
    assert (
        "OCR languages without Tesseract data: xqz (install: apt-get install tesseract-ocr-xqz); "
        "read with eng" in x.notes
    )
    assert x.metadata["ocr"]["languages"] == "eng" and "ocrUnavailable" not in x.metadata
    assert any(n.startswith("OCR (") and ", eng, 150 dpi) on page 1" in n for n in x.notes), x.notes


@pytest.mark.slow
@needs_tesseract
def test_indexed_scan_keeps_its_text_when_no_language_has_data(tmp_path):
    engine = _scan_collection(tmp_path, "ocrl", "eng")
    try:
        assert engine.run_index()["indexed"] == 1
        assert _zebra(engine)["count"] == 1
    finally:
        engine.close()

    # a second language without data -> still read (with eng), noted
    engine = _engine(tmp_path, "eng+xqz")
    try:
        s = engine.run_index()
        assert s["indexed"] == 1 and not s["empty"] and not s["stale"], s
        assert _zebra(engine)["count"] == 1
        docs = call_tool(engine, "list_documents", {"collectionPath": "O"})["documents"]
        assert docs[0]["status"] == "indexed" and "without Tesseract data: xqz" in docs[0]["reason"]
    finally:
        engine.close()

    # no configured language has data: the OCR text stored before stays, marked stale
    engine = _engine(tmp_path, "xqz")
    try:
        s = engine.run_index()
        assert s["indexed"] == 0 and not s["empty"] and s["counts"]["stale"] == 1, s
        (stale,) = s["stale"]
        assert stale["filePath"] == "scan.pdf" and stale["code"] == "ocr-unavailable"
        assert "no Tesseract data for xqz" in stale["reason"]
        hits = _zebra(engine)
        assert hits["count"] == 1, hits
        c = call_tool(engine, "get_chunk", {"collectionPath": "O", "filePath": "scan.pdf", "chunkIndex": 0})
        assert c["found"] and "zebra" in c["text"], c
        doc = call_tool(engine, "get_document", {"documentPath": "O/_Documents/scan.pdf"})
        assert doc["metadata"]["stale"]["code"] == "ocr-unavailable" and doc["metadata"]["ocrPages"], doc
        failures = call_tool(engine, "index_status", {})["failures"]
        assert [(f["filePath"], f["status"]) for f in failures] == [("scan.pdf", "stale")], failures
        again = engine.run_index()  # every run retries, the text stays
        assert again["counts"]["stale"] == 1 and _zebra(engine)["count"] == 1
    finally:
        engine.close()

    # languages back: the document is current again, no longer stale
    engine = _engine(tmp_path, "eng")
    try:
        s = engine.run_index()
        assert not s["stale"] and _zebra(engine)["count"] == 1, s
        doc = call_tool(engine, "get_document", {"documentPath": "O/_Documents/scan.pdf"})
        assert "stale" not in doc["metadata"], doc
    finally:
        engine.close()


def test_never_ocrd_scan_without_language_data_is_empty(tmp_path):
    """Nothing stored before: the scan is ``empty`` with the note, not stale."""
    engine = _scan_collection(tmp_path, "fresh", "xqz")
    try:
        s = engine.run_index()
        assert s["counts"]["empty"] == 1 and not s["stale"], s
        assert "not OCR'd: page 1" in s["empty"][0]["reason"]
    finally:
        engine.close()
