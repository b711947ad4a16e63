"""list_documents: a collection's files with status, pages, chunks, encoding; paged; shapes."""

from engine.tools.envelopes import DocumentEntry, DocumentList
from engine.paths import document_path
from engine.tools.registry import call_tool
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION as C


def _shape(env, t):
    assert t.__required_keys__ <= set(env) <= t.__required_keys__ | t.__optional_keys__, set(env) ^ t.__required_keys__


def test_lists_every_document_with_its_facts(sample_engine):
    env = call_tool(sample_engine, "list_documents", {"collectionPath": C})
    _shape(env, DocumentList)
    docs = sample_engine.store.documents(C)
    assert env["found"] and env["total"] == env["count"] == len(docs) and env["nextOffset"] is None
    assert [d["filePath"] for d in env["documents"]] == sorted(d.file_path for d in docs)
    for row, d in zip(env["documents"], docs):
        _shape(row, DocumentEntry)
        assert row["documentPath"] == document_path(C, d.file_path)
        assert (row["status"], row["chunkCount"], row["pageCount"]) == (d.status, d.chunk_count, d.page_count)
        node = call_tool(sample_engine, "get_document", {"documentPath": row["documentPath"]})
        assert node["found"] and node["filePath"] == row["filePath"]
    txt = [r for r in env["documents"] if r["fileType"] in ("txt", "md")]
    assert txt and all(r.get("encoding") for r in txt)


def test_pages_and_unknown_collection(sample_engine):
    full = call_tool(sample_engine, "list_documents", {"collectionPath": C})["documents"]
    page = call_tool(sample_engine, "list_documents", {"collectionPath": C + "/", "offset": 1, "limit": 2})
    assert page["documents"] == full[1:3] and page["collectionPath"] == C
    assert page["nextOffset"] == (3 if len(full) > 3 else None)
    missing = call_tool(sample_engine, "list_documents", {"collectionPath": "No/Such"})
    _shape(missing, DocumentList)
    assert missing["found"] is False and "No/Such" in missing["message"] and "error" not in missing
