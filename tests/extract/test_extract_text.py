"""engine/extract/text.py on real non-UTF-8 files (tests/corpus/text/encodings, generated
with Python's codecs from public text; see tests/corpus/SOURCES.md): each is decoded in its
own encoding, the encoding and confidence are recorded, and its known phrase is found by
``search_chunks`` (keyword) and read back with ``get_chunk``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.config import Settings
from engine.errors import ExtractError
from engine.extract import extract
from engine.extract.text import decode
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

ENC = Path(__file__).resolve().parents[1] / "corpus" / "text" / "encodings"

#: file -> (encoding recorded, phrase searched, text the chunk must contain)
CASES = {
    "wikipedia-big5.txt": ("big5", "網路為礎", "維基大典(Wikipedia)者,網路為礎"),
    "wikipedia-cp949.txt": ("cp949", "역사적 예수 연구자들은", "역사적 예수 연구자들은 복음서나"),
    "wikipedia-cp1255.txt": ("cp1255", "ניבים אזוריים", "אין כמעט ניבים אזוריים עבריים"),
    "moliere-cp1252.txt": ("cp1252", "Despréaux", "Non-seulement Despréaux ne se trompait pas"),
    "moliere-utf8-stray-byte.txt": ("utf-8", "Boileau", "demandait \ufffdLouis XIV\nà Boileau"),
}


@pytest.fixture(scope="module")
def enc_engine(tmp_path_factory):
    base = tmp_path_factory.mktemp("enc")
    shutil.copytree(ENC, base / "files")
    engine = Engine(Settings(allowed_roots=ALLOWED_ROOTS, db=str(base / "index.db"), embed_provider="none").validate())
    engine.add_collection("Enc", str(base / "files"))
    summary = engine.run_index()
    assert summary["indexed"] == len(CASES) and not summary["failed"], summary
    yield engine
    engine.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_encoding_decoded_and_recorded(name):
    encoding, _phrase, expect = CASES[name]
    x = extract(ENC / name)
    assert expect in x.text
    assert x.metadata["encoding"] == encoding
    conf = x.metadata["encodingConfidence"]
    assert 0.0 <= conf <= 1.0
    if encoding == "utf-8":
        assert x.notes == ("UTF-8 with 1 invalid byte replaced by U+FFFD",)
        assert x.metadata["encodingMethod"] == "utf-8-replaced" and x.text.count("\ufffd") == 1
    else:
        assert x.metadata["encodingMethod"] == "detected" and conf >= 0.9
        assert x.notes == (f"decoded as {encoding} (detected, confidence {conf:.2f}), not UTF-8",)


@pytest.mark.parametrize("name", sorted(CASES))
def test_encoding_phrase_found_and_read_back(enc_engine, name):
    encoding, phrase, expect = CASES[name]
    r = call_tool(enc_engine, "search_chunks", {"query": phrase, "scope": "Enc", "mode": "keyword"})
    assert r["searched"] and r["count"] >= 1, r
    hit = next(h for h in r["hits"] if h["filePath"] == name)  # the two Molière files share text
    c = call_tool(enc_engine, "get_chunk", {"collectionPath": "Enc", "filePath": name, "chunkIndex": hit["chunkIndex"]})
    assert c["found"] and phrase in c["text"]
    doc = call_tool(enc_engine, "get_document", {"documentPath": hit["documentPath"]})
    assert doc["metadata"]["encoding"] == encoding and "encodingConfidence" in doc["metadata"]


def test_index_status_lists_encoding_notes(enc_engine):
    status = call_tool(enc_engine, "index_status", {})
    noted = {n["filePath"]: n for n in status["notes"]}
    assert set(noted) == set(CASES)  # every file here carries a decoding note
    big5 = noted["wikipedia-big5.txt"]
    assert big5["encoding"] == "big5" and big5["encodingConfidence"] >= 0.9
    assert any("decoded as big5" in n for n in big5["notes"])


def test_decode_order_and_low_confidence():
    assert decode("日本語".encode("utf-8")).method == "utf-8"  # valid UTF-8 never goes to the detector
    assert decode(b"\xef\xbb\xbfabc").text == "abc"
    assert decode("héllo".encode("utf-16")).encoding == "utf-16"
    d = decode(b"caf\xe9 au lait")  # no valid multi-byte UTF-8 at all: detected
    assert d.method == "detected" and "café" in d.text
    d = decode(bytes(range(128, 256)) * 3)  # noise: whatever is chosen is noted, never clean
    assert d.notes and d.method in ("detected", "fallback")
    if d.confidence < 0.9:
        assert any("low-confidence" in n or "low confidence" in n for n in d.notes)


def test_whitespace_only_is_empty(tmp_path):
    (tmp_path / "blank.txt").write_bytes(b"  \n\t\r\n   \n")
    x = extract(tmp_path / "blank.txt")
    assert x.text == "" and x.words == () and x.notes == ("only whitespace",)
    (tmp_path / "zero.md").write_bytes(b"")
    assert extract(tmp_path / "zero.md").notes == ("empty file (0 bytes)",)


def test_utf16_without_bom_and_binary_named_txt(tmp_path):
    p = tmp_path / "wide.txt"
    p.write_bytes("Heat pump report, zweite Fassung: Wärme".encode("utf-16-le"))
    x = extract(p)
    assert x.text == "Heat pump report, zweite Fassung: Wärme" and x.metadata["encoding"] == "utf-16-le"
    assert x.notes[0].startswith("decoded as utf-16-le (no BOM")
    p.write_bytes("Heat pump report".encode("utf-16-be"))
    assert extract(p).metadata["encoding"] == "utf-16-be"
    import os

    blob = tmp_path / "blob.txt"
    blob.write_bytes(os.urandom(4096) + b"\x00")
    with pytest.raises(ExtractError) as e:  # never passed off as Latin-1 text
        extract(blob)
    assert e.value.code == "binary-content" and e.value.run_code == "binary-content"
    blob.write_bytes(b"\x01\x02\x03\x04 control \x05\x06\x07\x08\x0e\x0f\x10\x11" * 20)
    with pytest.raises(ExtractError, match="control characters"):
        extract(blob)


def test_stored_text_is_nfkc_with_lf_line_ends_and_nothing_else(tmp_path):
    """README "What the stored text is": line ends -> LF, then NFKC; no other
    change (leading/trailing spaces, tabs and a control character stay)."""
    raw = (
        "  Area is x² + y² = r²; ① first; the ﬁnal oﬃce;\tｶﾀｶﾅ; H₂O; ½ cup; ™ Ⅻ\r\n"
        "10\u00a0km … 5 µm, cafe\u0301，\x07 end  \rlast"
    )
    (tmp_path / "nfkc.txt").write_bytes(raw.encode("utf-8"))
    x = extract(tmp_path / "nfkc.txt")
    assert x.text == (
        "  Area is x2 + y2 = r2; 1 first; the final office;\tカタカナ; H2O; 1\u20442 cup; TM XII\n"
        "10 km ... 5 μm, café,\x07 end  \nlast"
    )
    assert x.notes == () and x.metadata["encoding"] == "utf-8"


@pytest.mark.parametrize(
    "name, data, code",
    [
        ("empty.txt", b"", "empty-file"),
        ("blank.md", b" \n\t \r\n", "only-whitespace"),
        ("words.txt", b"some words", None),
    ],
)
def test_the_reader_says_why_a_text_is_empty(tmp_path, name, data, code):
    """The reason code of an empty text is set by its reader (never read back from a note)."""
    path = tmp_path / name
    path.write_bytes(data)
    assert extract(path).metadata.get("reasonCode") == code


@pytest.mark.parametrize("name, code", [("issue18986.pdf", "no-pages"), ("test_4090.pdf", "no-text-layer")])
def test_the_pdf_reader_says_why_a_pdf_has_no_text(name, code):
    x = extract(Path(__file__).resolve().parents[1] / "corpus" / "edge" / name)
    assert x.text == "" and x.metadata["reasonCode"] == code
