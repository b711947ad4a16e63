"""A file named in NFD (macOS, SMB shares) is fetched by the NFC name that looks the same.

Real files on disk with decomposed and composed names, a real SQLite index, the tools
through ``call_tool``: ``get_chunk``, ``read_document`` and ``get_document`` take the
exact name first, then its other normalisation form (NFC / NFD) when exactly one
indexed file has it; two different files that look the same are never guessed between.
"""

from __future__ import annotations

import unicodedata

import pytest

from engine.config import Settings
from engine.paths import document_path
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

NFC = unicodedata.normalize("NFC", "café.txt")
NFD = unicodedata.normalize("NFD", "café.txt")
NFC2 = unicodedata.normalize("NFC", "résumé.txt")
NFD2 = unicodedata.normalize("NFD", "résumé.txt")
MIXED2 = "re\u0301sum\u00e9.txt"  # first é decomposed, second composed: neither form
COLL_NFD = unicodedata.normalize("NFD", "Équipe")


@pytest.fixture
def engine(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    (one / NFD).write_text("marmot lives in the alps\n", "utf-8")  # only the NFD name exists
    two = tmp_path / "two"
    two.mkdir()
    (two / NFC2).write_text("composed resume\n", "utf-8")  # two different files, one name each form
    (two / NFD2).write_text("decomposed resume\n", "utf-8")
    eng = Engine(Settings(db=str(tmp_path / "index.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate())
    eng.add_collection("One", str(one))
    eng.add_collection("Two", str(two))
    eng.add_collection(COLL_NFD, str(one))
    summary = eng.run_index()
    assert summary["indexed"] == 4, summary
    assert NFC != NFD and MIXED2 not in (NFC2, NFD2)
    yield eng
    eng.close()


@pytest.mark.parametrize("name", [NFD, NFC])
def test_get_chunk_and_read_document_take_either_form(engine, name):
    chunk = call_tool(engine, "get_chunk", {"collectionPath": "One", "filePath": name, "chunkIndex": 0})
    assert chunk["found"] and chunk["text"] == "marmot lives in the alps\n", chunk
    assert chunk["filePath"] == NFD and chunk["documentPath"] == document_path("One", NFD)  # the indexed name
    assert "stale" not in chunk
    read = call_tool(engine, "read_document", {"collectionPath": "One", "filePath": name, "limit": 6})
    assert read["found"] and read["text"] == "marmot" and read["filePath"] == NFD, read


def test_a_collection_named_in_nfd_is_found_by_its_nfc_name(engine):
    nfc = unicodedata.normalize("NFC", COLL_NFD)
    chunk = call_tool(engine, "get_chunk", {"collectionPath": nfc, "filePath": NFC, "chunkIndex": 0})
    assert chunk["found"] and chunk["collectionPath"] == COLL_NFD and chunk["filePath"] == NFD, chunk
    node = call_tool(engine, "get_document", {"documentPath": document_path(nfc, NFD)})
    assert node["found"] and node["collectionPath"] == COLL_NFD, node


def test_get_document_takes_the_node_path_of_either_form(engine):
    for name in (NFD, NFC):
        node = call_tool(engine, "get_document", {"documentPath": document_path("One", name)})
        assert node["found"] and node["filePath"] == NFD, node


def test_the_exact_name_wins_and_two_look_alike_files_are_never_guessed(engine):
    for name, text in ((NFC2, "composed resume\n"), (NFD2, "decomposed resume\n")):
        chunk = call_tool(engine, "get_chunk", {"collectionPath": "Two", "filePath": name, "chunkIndex": 0})
        assert chunk["found"] and chunk["filePath"] == name and chunk["text"] == text, chunk
        node = call_tool(engine, "get_document", {"documentPath": document_path("Two", name)})
        assert node["found"] and node["filePath"] == name
    chunk = call_tool(engine, "get_chunk", {"collectionPath": "Two", "filePath": MIXED2, "chunkIndex": 0})
    assert not chunk["found"] and chunk["totalChunks"] == 0 and "give one exactly" in chunk["message"], chunk
    assert repr(NFC2) in chunk["message"] and repr(NFD2) in chunk["message"]
    read = call_tool(engine, "read_document", {"collectionPath": "Two", "filePath": MIXED2})
    assert not read["found"] and "give one exactly" in read["message"], read
    node = call_tool(engine, "get_document", {"documentPath": document_path("Two", MIXED2)})
    assert not node["found"], node


def test_an_unknown_name_still_says_so(engine):
    chunk = call_tool(engine, "get_chunk", {"collectionPath": "One", "filePath": "thé.txt", "chunkIndex": 0})
    assert not chunk["found"] and chunk["message"] == "'thé.txt' is not indexed in 'One'", chunk


def test_list_documents_and_search_scope_take_the_other_form_of_a_collection(engine):
    """``list_documents``, a search's ``scope`` and a ``namespace:`` token find the
    collection named in NFD by its NFC name too (the exact name first, one form only)."""
    nfc = unicodedata.normalize("NFC", COLL_NFD)
    assert nfc != COLL_NFD
    for name in (COLL_NFD, nfc):
        docs = call_tool(engine, "list_documents", {"collectionPath": name})
        assert docs["found"] and docs["collectionPath"] == COLL_NFD and docs["total"] == 1, docs
        by_scope = call_tool(engine, "search_chunks", {"query": "marmot", "scope": name, "mode": "keyword"})
        assert by_scope["searched"] and by_scope["collections"] == [COLL_NFD] and by_scope["count"] == 1, by_scope
        by_token = call_tool(engine, "search_chunks", {"query": f"namespace:{name} marmot", "mode": "keyword"})
        assert by_token["collections"] == [COLL_NFD] and by_token["count"] == 1, by_token
    missing = call_tool(engine, "search_chunks", {"query": "marmot", "scope": "Ëquipe", "mode": "keyword"})
    assert not missing["searched"] and "no collection at 'Ëquipe'" in missing["hint"], missing
