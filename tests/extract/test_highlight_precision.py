"""Line rectangles (``regions[].rects``) measured against the page's words.

Over every readable PDF of tests/corpus (two columns, tables, /Rotate 90, 180
and 270, CropBox/MediaBox offsets, page-crossing chunks, CJK): no word of
another chunk has its centre inside a drawn rectangle, every word of the chunk
lies inside some rectangle, rectangles stay inside 0..1, and the drawn area is
mostly the chunk's own words (floors just under what bench/highlight_precision.py
measures). The union bbox is checked to fail the same test, so the test can fail.
Then: the rectangles survive the SQLite store and reach get_chunk and
search_chunks; the stale-file check of get_chunk.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from engine.config import Settings
from tests.conftest import ALLOWED_ROOTS
from engine.values import Bbox, Region, rects_code, rects_decode
from engine.tools.registry import Engine, call_tool

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import highlight_precision as hp  # noqa: E402

CORPUS = REPO / "tests" / "corpus"
PDFS = [p for p, _ in hp.corpus_pdfs(CORPUS) if p.stat().st_size > 0]
#: Layouts the issue names; each must have zero foreign words.
NAMED = [
    "multicolumn.pdf",
    "small-table.pdf",
    "nics-background-checks-2015-11.pdf",
    "test-2812.pdf",
    "issue14415.pdf",
    "nics-background-checks-2015-11-rotated.pdf",
    "test_3357.pdf",
    "160F-2019.pdf",
    "pdflatex-4-pages.pdf",
    "senate-expenditures.pdf",
    "tracemonkey.pdf",
]
#: Exceptions: a word of another chunk lying physically inside a line of this one
#: (none measured on the corpus; a file listed here is reported, not failed).
FOREIGN_EXCEPTIONS: dict[str, int] = {}


@pytest.mark.parametrize("path", PDFS, ids=[str(p.relative_to(CORPUS)) for p in PDFS])
def test_rects_cover_the_chunk_and_nothing_else(path):
    r = hp.measure(path, hp.PASSWORDS.get(path.name))
    assert r.out_of_bounds == 0
    assert r.covered_words == r.chunk_words, f"{r.chunk_words - r.covered_words} chunk words outside every rect"
    assert len(r.foreign) <= FOREIGN_EXCEPTIONS.get(path.name, 0), r.foreign[:10]
    if r.chunks:
        assert r.precision >= 0.8, r.precision  # lowest measured: 0.84 (scotus transcript)


def test_named_layouts_are_in_the_corpus():
    names = {p.name for p in PDFS}
    assert set(NAMED) <= names


def test_union_bbox_would_fail_the_same_check():
    """The seed's one-box highlight on multicolumn.pdf covers other chunks' words."""
    r = hp.measure(CORPUS / "pdf" / "multicolumn.pdf")
    assert r.bbox_foreign > 100 and r.bbox_precision < 0.5 and r.precision > 0.85


@pytest.mark.slow
def test_corpus_precision_floor():
    total_own = total_area = 0.0
    for path in PDFS:
        r = hp.measure(path, hp.PASSWORDS.get(path.name))
        total_own += r.own_area
        total_area += r.rect_area
    assert total_own / total_area >= 0.9  # measured 0.917


def test_rects_code_round_trip():
    rects = (Bbox(0.1234, 0.5, 0.25, 0.0119), Bbox(0.0, 0.0, 1.0, 1.0))
    assert rects_decode(rects_code(rects)) == rects
    region = Region(3, Bbox(0.1, 0.2, 0.3, 0.4), rects)
    assert Region.from_dict(region.to_store()) == region
    assert Region.from_dict(region.to_dict()) == region
    assert Region.from_dict({"page": 1, "bbox": {"x": 0, "y": 0, "w": 1, "h": 1}}).rects == ()


def _index(tmp_path: Path, files: list[Path]) -> Engine:
    root = tmp_path / "root"
    root.mkdir()
    for f in files:
        shutil.copy(f, root / f.name)
    engine = Engine(
        Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate()
    )
    engine.add_collection("C", str(root))
    engine.run_index()
    return engine


def test_rects_reach_get_chunk_and_search_chunks(tmp_path):
    engine = _index(tmp_path, [CORPUS / "pdf" / "pdflatex-4-pages.pdf", CORPUS / "pdf" / "multicolumn.pdf"])
    try:
        crossing = None
        for i in range(engine.store.get_document("C", "pdflatex-4-pages.pdf").chunk_count):
            env = call_tool(
                engine, "get_chunk", {"collectionPath": "C", "filePath": "pdflatex-4-pages.pdf", "chunkIndex": i}
            )
            assert "stale" not in env
            for reg in env["regions"]:
                assert reg["rects"], reg
                b = reg["bbox"]
                for r in reg["rects"]:  # inside the union (rects are rounded outwards by < 1e-4)
                    assert Bbox(b["x"], b["y"], b["w"], b["h"]).contains(Bbox(**r), 2e-4, 2e-4)
            if len(env["regions"]) > 1:
                crossing = env
        assert crossing is not None, "pdflatex-4-pages.pdf should have a page-crossing chunk"
        res = call_tool(engine, "search_chunks", {"query": "Lorem ipsum", "scope": "C", "mode": "keyword"})
        assert res["count"] > 0
        for hit in res["hits"]:  # search hits: the first region's rects only (README)
            assert hit["regions"][0]["rects"]
            assert all("rects" not in reg for reg in hit["regions"][1:])
    finally:
        engine.close()


def test_get_chunk_is_stale_when_the_file_changed_or_vanished(tmp_path):
    engine = _index(tmp_path, [CORPUS / "pdf" / "minimal-document.pdf"])
    args = {"collectionPath": "C", "filePath": "minimal-document.pdf", "chunkIndex": 0}
    path = tmp_path / "root" / "minimal-document.pdf"
    try:
        assert "stale" not in call_tool(engine, "get_chunk", args)
        later = time.time() + 10
        os.utime(path, (later, later))  # touched: same bytes, not stale
        assert "stale" not in call_tool(engine, "get_chunk", args)
        shutil.copy(CORPUS / "pdf" / "small-table.pdf", path)  # replaced
        env = call_tool(engine, "get_chunk", args)
        assert env["stale"] is True and env["indexedAt"] > 0 and env["found"]
        path.unlink()
        assert call_tool(engine, "get_chunk", args)["stale"] is True
    finally:
        engine.close()


def test_rects_round_trip_through_every_store(store):
    """Real windows of a page-crossing PDF, stored and read back (SQLite; Postgres when available)."""
    from engine.chunk import chunk_id, chunk_text
    from engine.extract import extract
    from engine.values import Chunk, Document

    ex = extract(CORPUS / "pdf" / "pdflatex-4-pages.pdf")
    wins = chunk_text(ex, 1000, 150)
    chunks = [
        Chunk(
            "C",
            "p.pdf",
            w.chunk_index,
            chunk_id("h", ex.text[w.start : w.end]),
            "h",
            w.start,
            w.end,
            ex.text[w.start : w.end],
            w.page,
            None,
            w.bbox,
            w.regions,
        )
        for w in wins
    ]
    store.replace_document(Document("C", "p.pdf", "h", "k", "pdf", "indexed", chunk_count=len(chunks)), ex.text, chunks)
    assert any(len(w.regions) > 1 for w in wins)
    for c in chunks:
        back = store.get_chunk("C", "p.pdf", c.chunk_index)
        assert [r.rects for r in back.regions] == [r.rects for r in c.regions]  # exact: grid values
        assert [r.page for r in back.regions] == [r.page for r in c.regions]
        assert all(r.rects for r in back.regions)
