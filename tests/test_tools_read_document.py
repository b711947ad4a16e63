"""``read_document``: whole text, paging, misses, path confinement, bad arguments."""

from __future__ import annotations

import pytest

from engine import envelopes as E
from engine.paths import document_path
from engine.tools import READ_LIMIT_DEFAULT, ToolArgumentError, call_tool
from tests.fixtures_engine import SAMPLE_COLLECTION
from tests.test_tools_get_chunk import KINDS, pick, read_all

C = SAMPLE_COLLECTION


def _shape(r: dict) -> None:
    t = E.DocumentText
    assert t.__required_keys__ <= set(r) <= t.__required_keys__ | t.__optional_keys__, set(r)


@pytest.mark.parametrize("suffix", KINDS)
def test_whole_text_in_one_call(suffix, sample_engine):
    doc = pick(sample_engine, suffix)
    r = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path})
    _shape(r)
    assert r["found"] is True and r["offset"] == 0 and r["nextOffset"] is None
    assert r["totalLength"] == len(r["text"]) == doc.text_length <= READ_LIMIT_DEFAULT
    assert r["text"] == sample_engine.store.document_text(C, doc.file_path)
    assert r["documentPath"] == document_path(C, doc.file_path)
    # the last chunk ends where the text ends
    last = call_tool(sample_engine, "get_chunk", {"collectionPath": C, "filePath": doc.file_path,
                                                  "chunkIndex": doc.chunk_count - 1})
    assert last["end"] == r["totalLength"]


def test_paging(sample_engine):
    doc = pick(sample_engine, ".pdf")
    whole = read_all(sample_engine, doc.file_path)
    r = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path,
                                                   "offset": 5, "limit": 100})
    _shape(r)
    assert r["text"] == whole[5:105] and r["nextOffset"] == 105 and r["totalLength"] == len(whole)
    tail = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path,
                                                      "offset": len(whole) - 3, "limit": 100})
    assert tail["text"] == whole[-3:] and tail["nextOffset"] is None
    past = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path,
                                                      "offset": len(whole) + 50})
    assert past["found"] is True and past["text"] == "" and past["nextOffset"] is None


@pytest.mark.parametrize("collection, file_path, needle", [
    (C, "never-indexed.md", "not indexed"),
    ("No/Such/Collection", "a.md", "not indexed"),
])
def test_missing_is_found_false(collection, file_path, needle, sample_engine):
    r = call_tool(sample_engine, "read_document", {"collectionPath": collection, "filePath": file_path})
    _shape(r)
    assert r["found"] is False and needle in r["message"] and "text" not in r and "error" not in r


@pytest.mark.parametrize("collection", [C, "No/Such/Collection"])
@pytest.mark.parametrize("file_path", ["../outside.md", "/etc/passwd", "sub/../../outside.md", "../../../../etc/passwd"])
def test_path_traversal_is_refused(collection, file_path, sample_engine):
    r = call_tool(sample_engine, "read_document", {"collectionPath": collection, "filePath": file_path})
    _shape(r)
    assert r["found"] is False and r["error"] == "path-escape" and "text" not in r, r
    assert file_path in r["message"]


@pytest.mark.parametrize("arguments, named", [
    ({"filePath": "a.md"}, "collectionPath"),
    ({"collectionPath": C}, "filePath"),
    ({"collectionPath": C, "filePath": "a.md", "offset": -1}, "offset"),
    ({"collectionPath": C, "filePath": "a.md", "offset": "10"}, "offset"),
    ({"collectionPath": C, "filePath": "a.md", "limit": 0}, "limit"),
    ({"collectionPath": C, "filePath": ["a.md"]}, "filePath"),
    ({"collectionPath": C, "filePath": "a.md", "length": 10}, "length"),
])
def test_bad_arguments_name_the_argument(arguments, named, sample_engine):
    with pytest.raises(ToolArgumentError) as e:
        call_tool(sample_engine, "read_document", arguments)
    assert f"'{named}'" in str(e.value) and str(e.value).startswith("read_document:")


def test_limit_null_means_default(sample_engine):
    doc = pick(sample_engine, ".md")
    a = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path, "limit": None})
    b = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path})
    assert a == b


def test_integral_floats_are_integers(sample_engine):
    """JSON Schema's integer admits 100.0; the tool pages as with 100 and answers ints."""
    doc = pick(sample_engine, ".pdf")
    a = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path,
                                                   "offset": 10.0, "limit": 100.0})
    b = call_tool(sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path,
                                                   "offset": 10, "limit": 100})
    assert a == b and isinstance(a["offset"], int) and isinstance(a["nextOffset"], int)
    c = call_tool(sample_engine, "get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": 0.0})
    assert c["chunkIndex"] == 0 and isinstance(c["chunkIndex"], int) and c["found"] is True
