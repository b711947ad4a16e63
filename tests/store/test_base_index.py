"""An index in the kept on-disk format opens, searches and reads with the current code.

``tests/fixtures/base_index/index.db`` was written by an earlier build of chunknav
(its README says which and how); the store must read it as it is, with no index run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.config import Settings
from engine.store.sqlite.store import SqliteStore
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "base_index" / "index.db"
MODEL = "l2_supercat_256"
FILES = ["minimal-document.pdf", "sample-french-1.txt", "word_tables.docx"]


@pytest.fixture
def base_db(tmp_path) -> str:
    """A copy of the fixture (opening writes vector cache files beside it)."""
    db = tmp_path / "index.db"
    shutil.copyfile(FIXTURE, db)
    return str(db)


def test_the_store_reads_every_row_of_the_kept_format(base_db):
    store = SqliteStore(base_db)
    try:
        assert [c.collection_path for c in store.collections()] == ["S"]
        docs = store.documents("S")
        assert [d.file_path for d in docs] == FILES
        assert all(d.status == "indexed" and d.chunk_count > 0 for d in docs)
        assert sum(d.chunk_count for d in docs) == 7
        chunks = store.chunks("S", "sample-french-1.txt")
        assert [c.chunk_index for c in chunks] == [0, 1, 2, 3]
        text = store.document_text("S", "sample-french-1.txt")
        assert text is not None and all(text[c.start : c.end] == c.chunk_text for c in chunks)
        first = store.get_chunk("S", "minimal-document.pdf", 0)
        assert first is not None and first.chunk_text.startswith("Lorem ipsum") and first.page == 1
        assert first.bbox is not None and first.regions
        assert store.chunk_count("S", "word_tables.docx") == 2
        assert store.vector_counts() == {MODEL: {"vectors": 7, "dim": 256, "stale": 0, "missing": 0}}
        assert store.has_vectors(MODEL) and store.vector_dim(MODEL) == 256
        assert store.vector_coverage(MODEL) == (7, 0)
        assert store.embed_notes() == {}
        assert store.last_run() is not None

        hits = store.search_keyword("Molière", None, 5)
        assert hits and hits[0].chunk.file_path == "sample-french-1.txt"
        assert store.search_keyword("merged cell", ["S"], 5)[0].chunk.file_path == "word_tables.docx"

        # a stored vector finds its own chunk first (cosine 1)
        ((cid, ids, vectors),) = [(m, i, v) for m, i, v in store.iter_vectors() if m == MODEL]
        assert cid == MODEL and len(ids) == 7 and vectors.shape == (7, 256)
        top = store.search_vectors(MODEL, vectors[0], None, 3)
        assert top[0].chunk.chunk_id == ids[0] and top[0].score == pytest.approx(1.0, abs=1e-5)
        reused = store.vectors_by_text(MODEL, ["0" * 64])
        assert reused == {}
    finally:
        store.close()


def test_the_tools_search_the_kept_format_without_an_index_run(base_db):
    settings = Settings(
        embed_model="l2_supercat_256", db=base_db, embed_provider="local", allowed_roots=ALLOWED_ROOTS
    ).validate()
    engine = Engine(settings)
    try:
        for mode in ("keyword", "vector", "hybrid"):
            got = call_tool(
                engine, "search_chunks", {"query": "Molière biography", "scope": "S", "mode": mode, "limit": 3}
            )
            assert got["searched"] and got["hits"], (mode, got)
            assert got["hits"][0]["filePath"] == "sample-french-1.txt", (mode, got["hits"][0])
        chunk = call_tool(
            engine, "get_chunk", {"collectionPath": "S", "filePath": "minimal-document.pdf", "chunkIndex": 0}
        )
        assert chunk["found"] and chunk["totalChunks"] == 1 and chunk["page"] == 1 and "bbox" in chunk
        assert chunk["text"].startswith("Lorem ipsum")
    finally:
        engine.close()
