"""Text as people type it, and files judged by their bytes: each case a real file in a
real SQLite index, searched by keyword through the engine (``call_tool``)."""

import os

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
