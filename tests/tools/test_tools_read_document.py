"""``read_document``: whole text, paging, misses, path confinement, bad arguments."""

from __future__ import annotations

import pytest

from engine.tools import envelopes as E
from engine.paths import document_path
from engine.tools.registry import READ_LIMIT_DEFAULT, ToolArgumentError, call_tool
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION
from tests.tools.test_tools_get_chunk import KINDS, pick, read_all

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
    last = call_tool(
        sample_engine, "get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": doc.chunk_count - 1}
    )
    assert last["end"] == r["totalLength"]


def test_paging(sample_engine):
    doc = pick(sample_engine, ".pdf")
    whole = read_all(sample_engine, doc.file_path)
    r = call_tool(
        sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path, "offset": 5, "limit": 100}
    )
    _shape(r)
    assert r["text"] == whole[5:105] and r["nextOffset"] == 105 and r["totalLength"] == len(whole)
    tail = call_tool(
        sample_engine,
        "read_document",
        {"collectionPath": C, "filePath": doc.file_path, "offset": len(whole) - 3, "limit": 100},
    )
    assert tail["text"] == whole[-3:] and tail["nextOffset"] is None
    past = call_tool(
        sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path, "offset": len(whole) + 50}
    )
    assert past["found"] is True and past["text"] == "" and past["nextOffset"] is None


@pytest.mark.parametrize(
    "collection, file_path, needle",
    [
        (C, "never-indexed.md", "not indexed"),
        ("No/Such/Collection", "a.md", "not indexed"),
    ],
)
def test_missing_is_found_false(collection, file_path, needle, sample_engine):
    r = call_tool(sample_engine, "read_document", {"collectionPath": collection, "filePath": file_path})
    _shape(r)
    assert r["found"] is False and needle in r["message"] and "text" not in r and "error" not in r


@pytest.mark.parametrize("collection", [C, "No/Such/Collection"])
@pytest.mark.parametrize(
    "file_path", ["../outside.md", "/etc/passwd", "sub/../../outside.md", "../../../../etc/passwd"]
)
def test_path_traversal_is_refused(collection, file_path, sample_engine):
    r = call_tool(sample_engine, "read_document", {"collectionPath": collection, "filePath": file_path})
    _shape(r)
    assert r["found"] is False and r["error"] == "path-escape" and "text" not in r, r
    assert file_path in r["message"]


@pytest.mark.parametrize(
    "arguments, named",
    [
        ({"filePath": "a.md"}, "collectionPath"),
        ({"collectionPath": C}, "filePath"),
        ({"collectionPath": C, "filePath": "a.md", "offset": -1}, "offset"),
        ({"collectionPath": C, "filePath": "a.md", "offset": "ten"}, "offset"),
        ({"collectionPath": C, "filePath": "a.md", "limit": 0}, "limit"),
        ({"collectionPath": C, "filePath": ["a.md"]}, "filePath"),
        ({"collectionPath": C, "filePath": "a.md", "length": 10}, "length"),
    ],
)
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
    a = call_tool(
        sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path, "offset": 10.0, "limit": 100.0}
    )
    b = call_tool(
        sample_engine, "read_document", {"collectionPath": C, "filePath": doc.file_path, "offset": 10, "limit": 100}
    )
    assert a == b and isinstance(a["offset"], int) and isinstance(a["nextOffset"], int)
    c = call_tool(sample_engine, "get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": 0.0})
    assert c["chunkIndex"] == 0 and isinstance(c["chunkIndex"], int) and c["found"] is True


# -- a long document is paged from its chunks -----------------------------------------------------
@pytest.fixture
def long_doc(tmp_path):
    """A real index of one ~1.3M-character .txt (words with digits, multi-byte characters, line
    ends) and one short file, no provider."""
    import random

    from engine.tools.answers import READ_FROM_CHUNKS_CHARS
    from engine.config import Settings
    from engine.tools.registry import Engine
    from tests.conftest import ALLOWED_ROOTS

    rng = random.Random(6)
    words = ["alpha", "beta", "gämma", "δέλτα", "東北", "x²", "word", "line\n", "tab\t"]
    text = " ".join(f"{rng.choice(words)}{i}" for i in range(160_000))
    root = tmp_path / "docs"
    root.mkdir()
    (root / "big.txt").write_text(text, "utf-8")
    (root / "small.txt").write_text("a short file\n", "utf-8")
    eng = Engine(Settings(db=str(tmp_path / "i.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate())
    eng.add_collection("L", str(root))
    assert eng.run_index()["indexed"] == 2
    stored = eng.store.document_text("L", "big.txt")
    assert len(stored) >= READ_FROM_CHUNKS_CHARS
    yield eng, stored
    eng.close()


def _expected(stored: str, offset: int, limit: int) -> dict:
    end = min(len(stored), offset + limit)
    return {
        "found": True,
        "collectionPath": "L",
        "filePath": "big.txt",
        "offset": offset,
        "documentPath": document_path("L", "big.txt"),
        "totalLength": len(stored),
        "text": stored[offset:end],
        "nextOffset": end if end < len(stored) else None,
    }


def test_pages_of_a_long_document_are_its_exact_slices(long_doc):
    eng, stored = long_doc
    n = eng.store.get_document("L", "big.txt").chunk_count
    edges = [c.start for c in (eng.store.get_chunk("L", "big.txt", i) for i in (0, 1, 2, n // 2, n - 1))]
    offsets = [
        0,
        1,
        849,
        850,
        999,
        1000,
        1001,
        len(stored) // 3,
        len(stored) - 1000,
        len(stored) - 1,
        len(stored),
        len(stored) + 5,
        *edges,
        *(e - 1 for e in edges if e),
        *(e + 150 for e in edges),
    ]
    for offset in offsets:
        for limit in (1, 100, 150, 151, 850, 1000, 1001, 4321, 200_000):
            got = call_tool(
                eng, "read_document", {"collectionPath": "L", "filePath": "big.txt", "offset": offset, "limit": limit}
            )
            assert got == _expected(stored, offset, limit), (offset, limit)
    # the default page, and paging it through to the end by nextOffset joins to the whole text
    pages, offset = [], 0
    while offset is not None:
        r = call_tool(eng, "read_document", {"collectionPath": "L", "filePath": "big.txt", "offset": offset})
        assert r == _expected(stored, offset, READ_LIMIT_DEFAULT)
        pages.append(r["text"])
        offset = r["nextOffset"]
    assert "".join(pages) == stored


def test_a_page_of_a_long_document_does_not_read_its_whole_text(long_doc):
    import tracemalloc

    eng, stored = long_doc
    args = {"collectionPath": "L", "filePath": "big.txt", "offset": len(stored) - 500, "limit": 100}
    call_tool(eng, "read_document", args)  # warm: the validators, the schema checks
    statements: list[str] = []
    eng.store._conn().set_trace_callback(statements.append)
    tracemalloc.start()
    try:
        got = call_tool(eng, "read_document", args)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        eng.store._conn().set_trace_callback(None)
    assert got == _expected(stored, len(stored) - 500, 100)
    assert not [s for s in statements if "SELECT text FROM documents" in s], statements
    assert len(statements) < 40, statements  # a binary search over ~1,500 chunks, a few rows
    assert peak < 300_000, peak  # the whole text is ~1.3 M characters (several MB as str)
    # a short document and a long page still read the text itself, with the same envelope
    small = call_tool(eng, "read_document", {"collectionPath": "L", "filePath": "small.txt"})
    assert small["text"] == "a short file\n" and small["nextOffset"] is None
    whole = call_tool(eng, "read_document", {"collectionPath": "L", "filePath": "big.txt", "limit": 3_000_000})
    assert whole == _expected(stored, 0, 3_000_000)
