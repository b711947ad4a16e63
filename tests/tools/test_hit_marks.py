"""Marks a hit carries beside its text: line numbers, the state of its file, aliases.

Real files in a temporary root, a real SQLite index, the tools as every face calls them.
"""

from __future__ import annotations

import os

import pytest

from engine.config import Settings
from engine.tools.envelopes import ChunkHit, ChunkResult, DocumentEntry, SearchHit
from engine.tools.marks import line_span
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

LINES = [f"line {n} of the notes, nothing to see here" for n in range(1, 301)]
LINES[199] = "the café opens at nine on line 200"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request, tmp_path):
    dsn, drop = None, None
    if request.param == "postgres":
        from tests.fixtures.pg import fresh_database, pg_dsn, pg_skip_reason

        if pg_dsn() is None:
            pytest.skip(pg_skip_reason())
        from tests.search.test_tie_order import _uri

        dsn, drop = fresh_database()
        dsn = _uri(dsn)  # the postgresql:// form the dsn setting takes
    root = tmp_path / "docs"
    root.mkdir()
    (root / "notes.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (root / "other.md").write_text("# other\n\nthe cafe next door\n", encoding="utf-8")
    os.symlink("notes.txt", root / "link-to-notes.txt")
    settings = Settings(
        db=str(tmp_path / "index.db"), dsn=dsn or "", embed_provider="none", allowed_roots=ALLOWED_ROOTS
    ).validate()
    eng = Engine(settings)
    eng.add_collection("Docs", str(root))
    eng.run_index()
    yield eng, root
    eng.close()
    if drop is not None:
        drop()


def _hits(eng: Engine, tool: str = "search_chunks", query: str = "nine door") -> list[dict]:
    env = call_tool(eng, tool, {"query": query, "scope": "Docs", "mode": "keyword"})
    return env["hits"]


def test_line_span_counts_lines_of_the_text():
    text = "a\nbb\nccc\n"
    assert line_span(text, 0, 1) == (1, 1)
    assert line_span(text, 2, 4) == (2, 2)
    assert line_span(text, 2, 5) == (2, 2)  # the line end belongs to its line
    assert line_span(text, 2, 6) == (2, 3)
    assert line_span(text, 5, 5) == (3, 3)


def test_text_hits_carry_lines_that_hold_their_text(engine):
    eng, root = engine
    hit = next(h for h in _hits(eng) if h["filePath"] == "notes.txt")
    assert set(hit) <= ChunkHit.__required_keys__ | ChunkHit.__optional_keys__
    assert hit["lineStart"] <= 200 <= hit["lineEnd"]
    chunk = call_tool(
        eng, "get_chunk", {"collectionPath": "Docs", "filePath": "notes.txt", "chunkIndex": hit["chunkIndex"]}
    )
    assert set(chunk) <= ChunkResult.__required_keys__ | ChunkResult.__optional_keys__
    assert (chunk["lineStart"], chunk["lineEnd"]) == (hit["lineStart"], hit["lineEnd"])
    lines = (root / "notes.txt").read_text(encoding="utf-8").split("\n")
    shown = "\n".join(lines[chunk["lineStart"] - 1 : chunk["lineEnd"]])
    assert chunk["text"].strip("\n") in shown  # the chunk lies within those lines of the file
    per_file = next(h for h in _hits(eng, "search") if h["filePath"] == "notes.txt")
    assert set(per_file) <= SearchHit.__required_keys__ | SearchHit.__optional_keys__
    assert per_file["lineStart"] <= 200 <= per_file["lineEnd"]


def test_a_changed_or_vanished_file_is_flagged_on_every_hit(engine):
    eng, root = engine
    assert {h["fileState"] for h in _hits(eng)} == {"current"}
    with open(root / "other.md", "a", encoding="utf-8") as f:
        f.write("one more line\n")
    os.remove(root / "notes.txt")
    states = {h["filePath"]: h["fileState"] for h in _hits(eng)}
    assert states == {"other.md": "changed", "notes.txt": "missing"}
    chunk = call_tool(eng, "get_chunk", {"collectionPath": "Docs", "filePath": "other.md", "chunkIndex": 0})
    assert chunk["fileState"] == "changed" and chunk["stale"] is True


def test_a_touched_file_with_the_same_bytes_is_current(engine):
    eng, root = engine
    os.utime(root / "other.md", (1_000_000_000, 1_000_000_000))
    assert {h["filePath"]: h["fileState"] for h in _hits(eng)}["other.md"] == "current"


def test_a_symlink_in_the_same_root_is_an_alias_not_a_second_document(engine):
    eng, root = engine
    hits = _hits(eng)
    assert [h["filePath"] for h in hits].count("link-to-notes.txt") == 0
    assert len({(h["filePath"], h["snippet"]) for h in hits}) == len(hits)  # no hit twice
    docs = call_tool(eng, "list_documents", {"collectionPath": "Docs"})["documents"]
    notes = next(d for d in docs if d["filePath"] == "notes.txt")
    assert set(notes) <= DocumentEntry.__required_keys__ | DocumentEntry.__optional_keys__
    assert notes["aliases"] == ["link-to-notes.txt"] and len(docs) == 2
    node = call_tool(eng, "get_document", {"documentPath": notes["documentPath"]})
    assert node["aliases"] == ["link-to-notes.txt"]
    summary = eng.run_index()  # a second run: the alias stays an alias, nothing re-read
    assert any(s.get("code") == "alias" for s in summary["skippedFiles"])
    # the link removed: the document no longer lists it
    os.remove(root / "link-to-notes.txt")
    eng.run_index()
    docs = call_tool(eng, "list_documents", {"collectionPath": "Docs"})["documents"]
    assert "aliases" not in next(d for d in docs if d["filePath"] == "notes.txt")


def test_a_symlink_indexed_as_its_own_document_becomes_an_alias(engine, tmp_path):
    eng, root = engine
    from engine.values import Document

    doc = eng.store.get_document("Docs", "notes.txt")
    text = eng.store.document_text("Docs", "notes.txt")
    chunks = [eng.store.get_chunk("Docs", "notes.txt", i) for i in range(doc.chunk_count)]
    import dataclasses

    twin = dataclasses.replace(doc, file_path="link-to-notes.txt", metadata={})
    eng.store.replace_document(twin, text, [dataclasses.replace(c, file_path="link-to-notes.txt") for c in chunks])
    assert eng.store.get_document("Docs", "link-to-notes.txt") is not None
    assert isinstance(twin, Document)
    eng.run_index()
    assert eng.store.get_document("Docs", "link-to-notes.txt") is None
    assert eng.store.get_document("Docs", "notes.txt").metadata["aliases"] == ["link-to-notes.txt"]
