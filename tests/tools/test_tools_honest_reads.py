"""Empty means empty, and honest reads: a whitespace-only file gives no chunk and is
recorded ``empty``; ``get_chunk`` / ``read_document`` on a failed, encrypted or empty
file answer ``found: false`` with the recorded status, reason code and message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.tools import envelopes as E
from engine.config import Settings
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

#: file -> (status, reasonCode, words in the message)
CASES = {
    "blank.txt": ("empty", "only-whitespace", "only whitespace"),
    "empty.pdf": ("failed", "corrupt", "corrupt"),
    "libreoffice-writer-password.pdf": ("failed", "password-required", "password required"),
    "test_4090.pdf": ("empty", "no-text-layer", "no text layer"),
}


@pytest.fixture(scope="module")
def honest_engine(tmp_path_factory):
    base = tmp_path_factory.mktemp("honest")
    root = base / "files"
    root.mkdir()
    (root / "blank.txt").write_bytes(b" \n\t \r\n  \n")
    # (a 0-byte .md beside the 0-byte empty.pdf would share its extraction through the
    # duplicate-content cache, keyed by hash alone)
    for name in ("empty.pdf", "libreoffice-writer-password.pdf", "test_4090.pdf"):
        shutil.copy(CORPUS / "edge" / name, root / name)
    (root / "real.txt").write_text("a real sentence about heat pumps\n", "utf-8")
    # OCR off: this file is about what is recorded when a scan gives no text
    engine = Engine(
        Settings(allowed_roots=ALLOWED_ROOTS, db=str(base / "index.db"), embed_provider="none", ocr="off").validate()
    )
    engine.add_collection("H", str(root))
    engine.run_index()
    yield engine
    engine.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_text_is_found_false_with_reason(honest_engine, name):
    status, code, words = CASES[name]
    doc = honest_engine.store.get_document("H", name)
    assert doc.status == status and doc.chunk_count == 0 and words in doc.reason
    r = call_tool(honest_engine, "read_document", {"collectionPath": "H", "filePath": name})
    t = E.DocumentText
    assert t.__required_keys__ <= set(r) <= t.__required_keys__ | t.__optional_keys__
    assert r["found"] is False and "text" not in r and "error" not in r
    assert r["status"] == status and r["reasonCode"] == code and words in r["message"]
    c = call_tool(honest_engine, "get_chunk", {"collectionPath": "H", "filePath": name, "chunkIndex": 0})
    assert c["found"] is False and c["totalChunks"] == 0 and "text" not in c
    assert c["status"] == status and c["reasonCode"] == code and words in c["message"]
    node = call_tool(
        honest_engine, "get_document", {"documentPath": r.get("documentPath") or _node(honest_engine, name)}
    )
    assert node["found"] and node["status"] == status and node["reasonCode"] == code


def _node(engine, name):
    hits = call_tool(engine, "index_status", {"probe": False})
    assert any(f["filePath"] == name for f in hits["failures"])
    from engine.paths import document_path

    return document_path("H", name)


def test_whitespace_gives_no_hit(honest_engine):
    assert honest_engine.store.get_document("H", "real.txt").chunk_count == 1
    r = call_tool(honest_engine, "search_chunks", {"query": "heat pumps", "scope": "H", "mode": "keyword"})
    assert [h["filePath"] for h in r["hits"]] == ["real.txt"]
    assert all(h["snippet"].strip() for h in r["hits"])
    last = honest_engine.store.last_run()
    assert {e["filePath"] for e in last["empty"]} >= {"blank.txt", "test_4090.pdf"}
