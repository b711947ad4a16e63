"""Text as people type it, and files judged by their bytes: each case a real file in a
real SQLite index, searched by keyword through the engine (``call_tool``)."""

import os
from pathlib import Path

import pytest

from engine.config import Settings
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS


@pytest.fixture
def index(tmp_path):
    """``index(files)``: an engine over a collection ``C`` holding ``files`` (name -> bytes),
    indexed once; returns ``(engine, run summary)``."""
    engines: list[Engine] = []

    def make(files: dict[str, bytes]):
        root = tmp_path / "root"
        root.mkdir()
        for name, data in files.items():
            (root / name).write_bytes(data)
        settings = Settings(
            db=str(tmp_path / "index.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none", ocr="off"
        ).validate()
        eng = Engine(settings)
        engines.append(eng)
        eng.add_collection("C", str(root))
        return eng, eng.run_index()

    yield make
    for eng in engines:
        eng.close()


def _found(eng, query):
    """filePaths of the keyword hits of ``query`` in collection C."""
    env = call_tool(eng, "search_chunks", {"query": query, "scope": "C", "mode": "keyword"})
    assert env["searched"], env
    return {h["filePath"] for h in env["hits"]}


def _text(eng, file_path):
    """The stored text of chunk 0 of ``file_path`` in collection C (``get_chunk``)."""
    env = call_tool(eng, "get_chunk", {"collectionPath": "C", "filePath": file_path, "chunkIndex": 0})
    assert env["found"], env
    return env["text"]


def test_files_without_a_suffix_are_text_when_their_bytes_are(index):
    licence = "Permission is hereby granted, free of charge, to any person obtaining a copy.\n" * 3
    eng, summary = index(
        {
            "LICENSE": licence.encode(),
            "GPL-3": "GNU GENERAL PUBLIC LICENSE, Version 3, copyleft für alle\n".encode(),
            "copyright": "Format: https://www.debian.org/doc/packaging-manuals/copyright-format\n".encode("cp1252"),
            "blob": os.urandom(2048) + b"\x00",
        }
    )
    assert summary["indexed"] == 3, summary
    skipped = {s["filePath"]: s["code"] for s in summary["skippedFiles"]}
    assert skipped == {"blob": "unsupported-type"}, summary["skippedFiles"]
    assert _found(eng, "hereby granted") == {"LICENSE"}
    assert _found(eng, "copyleft") == {"GPL-3"}
    docs = call_tool(eng, "list_documents", {"collectionPath": "C"})
    assert {d["filePath"] for d in docs["documents"]} >= {"LICENSE", "GPL-3", "copyright"}, docs


def test_binary_bytes_named_txt_are_recorded_not_read_as_latin1(index):
    noise = bytes(range(256)) * 8
    eng, summary = index({"data.txt": noise, "notes.txt": b"plain words about zebras"})
    assert summary["indexed"] == 1, summary
    failed = {f["filePath"]: f["code"] for f in summary["failed"]}
    assert failed == {"data.txt": "binary-content"}, summary["failed"]
    assert _found(eng, "zebras") == {"notes.txt"}


def test_soft_hyphens_are_not_in_the_way_in_txt_md_and_html(index):
    word = "Ge\u00adsamt\u00adkon\u00adzept"
    eng, summary = index(
        {
            "plan.txt": f"Das {word} der Stadt.".encode(),
            "plan.md": f"# Plan\n\nEin {word} für alle.".encode(),
            "plan.html": b"<html><body><p>Unser Ge&shy;samt&shy;kon&shy;zept steht.</p></body></html>",
        }
    )
    assert summary["indexed"] == 3, summary
    assert _found(eng, "Gesamtkonzept") == {"plan.txt", "plan.md", "plan.html"}
    assert _found(eng, "gesamtkonzept der") == {"plan.txt"}
    assert all(word in _text(eng, f) for f in ("plan.txt", "plan.md", "plan.html"))  # as printed


def test_arabic_and_hebrew_marks_fold_as_latin_accents_do(index):
    eng, summary = index(
        {
            "ar.txt": "قَالَ إِنَّهُ كَتَبَ الرِّسَالَةَ أَمْسِ".encode(),
            "tatweel.txt": "عنوان: كـتـب جديدة".encode(),
            "he.txt": "אָמַר לָהֶם שָׁלוֹם וּבְרָכָה".encode(),
            "fr.txt": "un café noir".encode(),
        }
    )
    assert summary["indexed"] == 4, summary
    assert _found(eng, "كتب") == {"ar.txt", "tatweel.txt"}
    assert _found(eng, "كَتَبَ") == {"ar.txt", "tatweel.txt"}  # a pointed query finds the bare text too
    assert _found(eng, "שלום") == {"he.txt"}
    assert _found(eng, "cafe") == {"fr.txt"}
    assert "שָׁלוֹם" in _text(eng, "he.txt") and "كـتـب" in _text(eng, "tatweel.txt")


def test_a_word_split_at_a_pdf_line_end_is_found_and_real_hyphens_stay(index, tmp_path):
    import pymupdf

    pdf = pymupdf.open()
    page = pdf.new_page()
    lines = ["The committee acknowl-", "edged the yield of n-", "tridecanal in the second run,", "as measured."]
    page.insert_text((72, 100), "\n".join(lines), fontsize=11)
    data = pdf.tobytes()
    eng, summary = index({"paper.pdf": data})
    assert summary["indexed"] == 1, summary
    assert _found(eng, "acknowledged") == {"paper.pdf"}
    assert _found(eng, "n-tridecanal") == {"paper.pdf"}
    assert _found(eng, "ntridecanal") == set()
    assert "acknowl-\nedged" in _text(eng, "paper.pdf") and "n-\ntridecanal" in _text(eng, "paper.pdf")


def test_vertical_japanese_reads_down_each_column(index):
    import pymupdf

    from engine.extract import extract

    pdf = pymupdf.open()
    page = pdf.new_page(width=400, height=500)
    x = 340.0
    for column in ("交流電燈の研究について", "明治時代の技術者たち"):  # right to left, top to bottom
        y = 60.0
        for glyph in column:
            page.insert_text((x, y), glyph, fontname="japan", fontsize=16)
            y += 18
        x -= 30
    data = pdf.tobytes()
    eng, summary = index({"tate.pdf": data})
    assert summary["indexed"] == 1, summary
    assert _found(eng, "交流電燈") == {"tate.pdf"}
    assert _found(eng, "技術者") == {"tate.pdf"}
    text = _text(eng, "tate.pdf")
    assert "交流電燈の研究について" in text and "明治時代の技術者たち" in text
    x = extract(Path(eng.settings.db).parent / "root" / "tate.pdf")
    for w in x.words:  # every glyph keeps its own box, in reading order
        assert w.end - w.start == 1 and w.page == 1 and w.bbox is not None
    first, second = x.words[0], x.words[1]
    assert x.text[first.start : second.end] == "交流" and second.bbox.y > first.bbox.y
