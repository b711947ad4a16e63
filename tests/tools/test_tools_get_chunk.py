"""``get_chunk``: stepping a whole document, out-of-range answers, bad arguments.

Walks a PDF, a markdown file and a docx of the sample index from chunk 0
following ``nextIndex`` until null, and checks that the windows, with their
overlaps removed, reassemble exactly the text ``read_document`` returns.
"""

from __future__ import annotations

import pytest

from engine.tools import envelopes as E
from engine.tools.registry import Engine, ToolArgumentError, call_tool
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION

C = SAMPLE_COLLECTION
KINDS = [".pdf", ".md", ".docx"]


def pick(engine: Engine, suffix: str):
    """The indexed sample with ``suffix`` that has the most chunks (skips when there is none)."""
    docs = [d for d in engine.store.documents(C) if d.file_path.lower().endswith(suffix) and d.chunk_count]
    if not docs:
        pytest.skip(f"the sample corpus has no indexed {suffix} file")
    return max(docs, key=lambda d: d.chunk_count)


def read_all(engine: Engine, file_path: str, limit: int | None = None) -> str:
    """The whole extracted text through ``read_document``, following ``nextOffset``."""
    parts, offset = [], 0
    while True:
        args = {"collectionPath": C, "filePath": file_path, "offset": offset}
        if limit:
            args["limit"] = limit
        page = call_tool(engine, "read_document", args)
        assert page["found"], page
        parts.append(page["text"])
        if page["nextOffset"] is None:
            return "".join(parts)
        assert page["nextOffset"] == offset + len(page["text"])
        offset = page["nextOffset"]


def walk(get, file_path: str) -> tuple[str, list[dict]]:
    """Step from chunk 0 along ``nextIndex``; returns (reassembled text, chunks).

    ``get(arguments) -> envelope`` is the face under test (registry or MCP).
    """
    chunks: list[dict] = []
    index: int | None = 0
    text = ""
    while index is not None:
        c = get({"collectionPath": C, "filePath": file_path, "chunkIndex": index})
        assert c["found"] is True, c
        assert c["chunkIndex"] == index
        if chunks:
            prev = chunks[-1]
            assert c["prevIndex"] == prev["chunkIndex"]
            assert c["overlapPrev"] == prev["overlapNext"] == prev["end"] - c["start"]
            assert 0 <= c["overlapPrev"] < len(c["text"])
            # the overlap is the same characters at the end of prev and the start of c
            assert prev["text"][len(prev["text"]) - c["overlapPrev"] :] == c["text"][: c["overlapPrev"]]
            assert c["start"] == len(text) - c["overlapPrev"]
        else:
            assert c["prevIndex"] is None and c["start"] == 0 and c["overlapPrev"] == 0
        assert c["end"] - c["start"] == len(c["text"])
        text += c["text"][c["overlapPrev"] :]
        assert len(text) == c["end"]
        chunks.append(c)
        index = c["nextIndex"]
        assert len(chunks) <= c["totalChunks"], "nextIndex ran past totalChunks"
    last = chunks[-1]
    assert last["overlapNext"] == 0 and last["chunkIndex"] == last["totalChunks"] - 1 == len(chunks) - 1
    assert {c["totalChunks"] for c in chunks} == {len(chunks)}
    return text, chunks


@pytest.mark.parametrize("suffix", KINDS)
def test_walk_reassembles_read_document(suffix, sample_engine):
    doc = pick(sample_engine, suffix)
    text, chunks = walk(lambda a: call_tool(sample_engine, "get_chunk", a), doc.file_path)
    whole = read_all(sample_engine, doc.file_path)
    assert text == whole
    assert len(chunks) == doc.chunk_count
    for c in chunks:
        assert whole[c["start"] : c["end"]] == c["text"]
        assert (
            E.ChunkResult.__required_keys__
            <= set(c)
            <= E.ChunkResult.__required_keys__ | E.ChunkResult.__optional_keys__
        )
        if suffix == ".pdf":
            assert c["page"] >= 1 and all(0.0 <= c["bbox"][k] <= 1.0 for k in "xywh"), c
        else:
            assert "page" not in c and "bbox" not in c


@pytest.mark.parametrize("suffix", KINDS)
def test_read_document_pages_reassemble(suffix, sample_engine):
    doc = pick(sample_engine, suffix)
    whole = read_all(sample_engine, doc.file_path)
    assert read_all(sample_engine, doc.file_path, limit=997) == whole


def test_out_of_range_names_the_valid_range(sample_engine):
    doc = pick(sample_engine, ".pdf")
    n = doc.chunk_count
    for index in (n, n + 1, 10**9):
        r = call_tool(sample_engine, "get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": index})
        assert r["found"] is False and r["totalChunks"] == n, r
        assert f"0..{n - 1}" in r["message"] and "error" not in r and "text" not in r
        assert (
            E.ChunkResult.__required_keys__
            <= set(r)
            <= E.ChunkResult.__required_keys__ | E.ChunkResult.__optional_keys__
        )


@pytest.mark.parametrize(
    "collection, file_path, needle",
    [
        (C, "never-indexed.pdf", "not indexed"),
        ("No/Such/Collection", "a.pdf", "no collection"),
    ],
)
def test_never_indexed_is_found_false(collection, file_path, needle, sample_engine):
    r = call_tool(sample_engine, "get_chunk", {"collectionPath": collection, "filePath": file_path, "chunkIndex": 0})
    assert r["found"] is False and r["totalChunks"] == 0 and needle in r["message"] and "error" not in r


@pytest.mark.parametrize(
    "file_path", ["../outside.pdf", "/etc/passwd", "a/../../outside.pdf", "../../../../etc/passwd"]
)
def test_path_traversal_is_refused(file_path, sample_engine):
    r = call_tool(sample_engine, "get_chunk", {"collectionPath": C, "filePath": file_path, "chunkIndex": 0})
    assert r["found"] is False and r["error"] == "path-escape" and "text" not in r, r


@pytest.mark.parametrize(
    "arguments, named",
    [
        ({"filePath": "a.pdf", "chunkIndex": 0}, "collectionPath"),  # missing
        ({"collectionPath": C, "chunkIndex": 0}, "filePath"),
        ({"collectionPath": C, "filePath": "a.pdf"}, "chunkIndex"),
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": -1}, "chunkIndex"),  # negative
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": "three"}, "chunkIndex"),  # wrong type
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": "3.5"}, "chunkIndex"),  # no integer
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": "-3"}, "chunkIndex"),  # a negative string
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": 1.5}, "chunkIndex"),
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": True}, "chunkIndex"),
        ({"collectionPath": C, "filePath": 7, "chunkIndex": 0}, "filePath"),
        ({"collectionPath": "", "filePath": "a.pdf", "chunkIndex": 0}, "collectionPath"),  # empty
        ({"collectionPath": C, "filePath": "a.pdf", "chunkIndex": 0, "page": 2}, "page"),  # unknown
    ],
)
def test_bad_arguments_name_the_argument(arguments, named, sample_engine):
    with pytest.raises(ToolArgumentError) as e:
        call_tool(sample_engine, "get_chunk", arguments)
    assert f"'{named}'" in str(e.value) and str(e.value).startswith("get_chunk:")
