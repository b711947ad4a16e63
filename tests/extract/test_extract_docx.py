""".docx completeness (engine/extract/docx.py) on built files (tests/corpus/docx/built, made by
tests/fixtures/docx_builder.py) and the corpus: text boxes without their mc:Fallback duplicate,
equations as linear text, nested tables, vertical merges, footnotes, endnotes, headers and
footers, ISO-Strict packages, images counted; each phrase found by ``search_chunks``
(keyword) and read back with ``get_chunk``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.config import Settings
from engine.errors import ExtractError
from engine.extract import extract
from engine.extract.docx import omml_text
from engine.tools.registry import Engine, call_tool
from tests.fixtures.docx_builder import PHRASES
from tests.conftest import ALLOWED_ROOTS

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
BUILT = CORPUS / "docx" / "built"


@pytest.mark.parametrize("name", ["complete.docx", "strict.docx"])
def test_every_part_in_order(name):
    x = extract(BUILT / name)
    text = x.text
    for where, phrase in PHRASES.items():
        if where != "merged":  # the text box once: no mc:Fallback copy
            assert text.count(phrase) == 1, (where, phrase)
    order = ["body", "textbox", "equation", "nested", "merged", "footnote", "endnote", "header", "footer"]
    assert [text.index(PHRASES[k]) for k in order] == sorted(text.index(PHRASES[k]) for k in order)
    assert "(a+b)/(2c)=x^2" in text
    assert "[Footnote 1] " + PHRASES["footnote"] in text and "[Endnote 1] " + PHRASES["endnote"] in text
    assert "[Header] " + PHRASES["header"] in text and "[Footer] " + PHRASES["footer"] in text
    # the nested table stays inside its outer cell: "; " between nested cells
    assert "outer left | outer right " + PHRASES["nested"] + "; inner second" in text.splitlines()
    # vertical merge: the origin's text in both rows it spans
    assert text.count(PHRASES["merged"] + " | row") == 2
    assert x.notes == ("not read: 1 image",) and x.metadata["images"] == 1
    assert x.metadata.get("strict", False) is (name == "strict.docx")


def test_strict_is_what_python_docx_refuses():
    import docx

    with pytest.raises(KeyError):
        docx.Document(str(BUILT / "strict.docx"))
    assert extract(BUILT / "strict.docx").text == extract(BUILT / "complete.docx").text


@pytest.fixture(scope="module")
def docx_engine(tmp_path_factory):
    base = tmp_path_factory.mktemp("docx")
    root = base / "files"
    root.mkdir()
    shutil.copy(BUILT / "complete.docx", root / "complete.docx")
    shutil.copy(BUILT / "strict.docx", root / "strict.docx")
    engine = Engine(
        Settings(
            allowed_roots=ALLOWED_ROOTS,
            db=str(base / "i.db"),
            embed_provider="none",
            ocr="off",
            chunk_size=300,
            chunk_overlap=80,
        ).validate()
    )
    engine.add_collection("Docx", str(root))
    summary = engine.run_index()
    assert summary["indexed"] == 2 and not summary["failed"], summary
    yield engine
    engine.close()


@pytest.mark.parametrize("name", ["complete.docx", "strict.docx"])
@pytest.mark.parametrize("where", sorted(PHRASES))
def test_phrase_found_and_read_back(docx_engine, name, where):
    phrase = PHRASES[where]
    query = phrase if where != "equation" else "x 2c"
    r = call_tool(docx_engine, "search_chunks", {"query": query, "scope": "Docx", "mode": "keyword", "limit": 50})
    hits = [h for h in r["hits"] if h["filePath"] == name]
    assert hits, (where, r)
    texts = [
        call_tool(
            docx_engine, "get_chunk", {"collectionPath": "Docx", "filePath": name, "chunkIndex": h["chunkIndex"]}
        )["text"]
        for h in hits
    ]
    assert any(phrase in t for t in texts), (where, texts)


def test_omml_linear_forms():
    from xml.etree import ElementTree as ET

    m = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'

    def lin(body: str) -> str:
        return omml_text(ET.fromstring(f"<m:oMath {m}>{body}</m:oMath>"))

    r = lambda t: f"<m:r><m:t>{t}</m:t></m:r>"  # noqa: E731
    assert lin(f"<m:rad><m:radPr><m:degHide m:val='1'/></m:radPr><m:deg/><m:e>{r('x+1')}</m:e></m:rad>") == "√(x+1)"
    assert (
        lin(
            f"<m:nary><m:naryPr><m:chr m:val='∑'/></m:naryPr><m:sub>{r('i=1')}</m:sub><m:sup>{r('n')}</m:sup>"
            f"<m:e>{r('i')}</m:e></m:nary>"
        )
        == "∑_(i=1)^(n) i"
    )
    assert lin(f"<m:sSub><m:e>{r('x')}</m:e><m:sub>{r('i')}</m:sub></m:sSub>") == "x_i"
    assert lin(f"<m:d><m:e>{r('a')}</m:e><m:e>{r('b')}</m:e></m:d>") == "(a|b)"
    assert lin(f"<m:func><m:fName>{r('sin')}</m:fName><m:e>{r('x')}</m:e></m:func>") == "sin(x)"
    assert (
        lin(
            f"<m:m><m:mr><m:e>{r('1')}</m:e><m:e>{r('0')}</m:e></m:mr><m:mr><m:e>{r('0')}</m:e>"
            f"<m:e>{r('1')}</m:e></m:mr></m:m>"
        )
        == "[1, 0; 0, 1]"
    )


def test_corpus_docx_files_read_more_than_before(real_corpus):
    x = extract(real_corpus / "docx/hdr-header-footer.docx")
    assert "[Header] Header for section-1" in x.text and "[Footer] Footer for section 1" in x.text
    x = extract(real_corpus / "docx/docx_comments.docx")
    assert "[Comment 0] This is a sample reviewer comment on the first paragraph." in x.text
    x = extract(real_corpus / "docx/word_sample.docx")
    assert x.notes == ("not read: 1 image",)
    for path in sorted((real_corpus / "docx").glob("*.docx")):
        x = extract(path)
        assert x.text.strip(), path


def test_not_a_docx_is_corrupt(tmp_path):
    bad = tmp_path / "bad.docx"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ExtractError, match="^corrupt: "):
        extract(bad)
    import zipfile

    empty = tmp_path / "nomain.docx"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("hello.txt", "x")
    with pytest.raises(ExtractError, match="no main document part"):
        extract(empty)
