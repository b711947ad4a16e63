"""HTML (engine/extract/html.py) and the PyMuPDF page formats EPUB, XPS, FB2, MOBI, CBZ
(engine/extract/pages.py) on real files in tests/corpus/formats (see SOURCES.md) and a CBZ
built here: each phrase is found by ``search_chunks`` (keyword) and read back with
``get_chunk``, with page + bbox for the page formats."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from engine.config import Settings
from engine.extract import SUPPORTED_SUFFIXES, extract
from engine.extract.ocr import OcrSettings, ocr_unavailable
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

FORMATS = Path(__file__).resolve().parents[1] / "corpus" / "formats"

#: file -> (file type, phrase, has pages)
CASES = {
    "visible-text.html": ("html", "impeller was replaced in March", False),
    "test_open2.html": ("html", "Encyclopedia of Mathematics", False),
    "test_open2.epub": ("epub", "Drawing a Circle with", True),
    "test_open2.fb2": ("fb2", "Another test paragraph", True),
    "test_open2.mobi": ("mobi", "Yet more copy", True),
    "test_open2.xps": ("xps", "HTML parser for read_html", True),
}


def test_suffixes_are_supported():
    for suffix in (".html", ".htm", ".epub", ".xps", ".oxps", ".fb2", ".mobi", ".cbz"):
        assert suffix in SUPPORTED_SUFFIXES


def test_html_visible_text_only():
    x = extract(FORMATS / "visible-text.html")
    assert x.file_type == "html" and x.pages == () and x.metadata["title"] == "Pump station notes"
    for gone in (
        "styled away",
        "scripted away",
        "written by script",
        "skip navigation",
        "hidden draft",
        "invisible inline",
        "enable scripts",
        "template content",
        "a comment",
        "Pump station notes",
    ):
        assert gone not in x.text, gone
    assert x.text == (
        "Pump station maintenance\n\n"
        "The impeller was replaced in March; vibration dropped to normal.\n\n"
        "Readings\n\nSensor | Value\nFlow rate | 42 l/s\n\n"
        "Check seals monthly\n\nLog pressure daily\n\n"
        "Café & canteen closed\non Sundays"
    )


def test_html_declared_charset_and_bom(tmp_path):
    page = tmp_path / "latin.htm"
    page.write_bytes(
        '<html><head><meta charset="iso-8859-1"></head><body><p>Gr\u00fc\u00dfe</p></body></html>'.encode("iso-8859-1")
    )
    x = extract(page)
    assert x.text == "Grüße" and x.metadata["encodingMethod"] == "meta" and x.file_type == "htm"
    x = extract(FORMATS / "test_open2.html")  # UTF-16 with a BOM whose <meta> claims windows-1252
    assert x.metadata["encoding"] == "utf-16" and "Encyclopedia of Mathematics" in x.text


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[2]])
def test_page_formats_have_pages_and_boxes(name):
    kind, phrase, _ = CASES[name]
    x = extract(FORMATS / name)
    assert x.file_type == kind and x.pages and phrase in x.text
    assert all(w.page is not None and w.bbox is not None for w in x.words)
    assert x.text.count("\f") == len(x.pages) - 1
    for w in x.words:
        b = w.bbox
        assert 0 <= b.x <= 1 and 0 <= b.y <= 1 and b.w >= 0 and b.h >= 0


@pytest.fixture(scope="module")
def formats_engine(tmp_path_factory):
    base = tmp_path_factory.mktemp("formats")
    shutil.copytree(FORMATS, base / "files")
    engine = Engine(
        Settings(allowed_roots=ALLOWED_ROOTS, db=str(base / "i.db"), embed_provider="none", ocr="off").validate()
    )
    engine.add_collection("Fmt", str(base / "files"))
    summary = engine.run_index()
    assert summary["indexed"] == len(CASES) and not summary["failed"] and not summary["unsupported"], summary
    yield engine
    engine.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_phrase_found_and_read_back(formats_engine, name):
    kind, phrase, paged = CASES[name]
    r = call_tool(formats_engine, "search_chunks", {"query": phrase, "scope": "Fmt", "mode": "keyword", "limit": 50})
    want = " ".join(phrase.split())
    for hit in (h for h in r["hits"] if h["filePath"] == name):  # keyword hits: the words, any order
        c = call_tool(
            formats_engine, "get_chunk", {"collectionPath": "Fmt", "filePath": name, "chunkIndex": hit["chunkIndex"]}
        )
        if c["found"] and want in " ".join(c["text"].split()):
            break
    else:
        raise AssertionError(f"{phrase!r} in no chunk hit of {name}")
    node = call_tool(formats_engine, "get_document", {"documentPath": hit["documentPath"]})
    assert node["fileType"] == kind
    if paged:
        assert c["page"] >= 1 and c["bbox"] and c["regions"] and node["pageCount"] >= 1
    else:
        assert "page" not in c and "bbox" not in c


def _cbz(path: Path) -> None:
    """A one-page comic archive: a page image with three lines of printed text."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    for i, line in enumerate(("Captain Harbour", "sails at dawn", "with the cargo")):
        page.insert_text((40, 80 + 60 * i), line, fontsize=30)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("page001.png", page.get_pixmap(dpi=150).tobytes("png"))


@pytest.mark.skipif(
    ocr_unavailable("eng") is not None, reason="needs Tesseract with English data: Debian package tesseract-ocr-eng"
)
def test_cbz_is_read_by_ocr_with_boxes(tmp_path):
    _cbz(tmp_path / "comic.cbz")
    x = extract(tmp_path / "comic.cbz", ocr=OcrSettings("auto", "eng", 150))
    assert x.file_type == "cbz" and len(x.pages) == 1 and x.metadata["ocrPages"].keys() == {"1"}
    assert "sails at dawn" in x.text
    at = x.text.index("sails")
    word = next(w for w in x.words if w.start == at)
    assert 0.05 < word.bbox.x < 0.3 and 0.3 < word.bbox.y < 0.5  # second line, left side


def test_cbz_without_ocr_is_empty_and_says_why(tmp_path):
    _cbz(tmp_path / "comic.cbz")
    x = extract(tmp_path / "comic.cbz")
    assert x.text == "" and x.notes == ("no text layer on page 1",)
