"""The tool functions: engine values -> the DESIGN envelopes (internal values -> camelCase).

Owns: one ``tool_<name>`` function per registry tool (``engine.tools.registry`` holds the
registry, schemas, validation and serialisation), and the envelope helpers
they share (provenance, failure fields, stale marks, honest reads). Every
envelope is built here and only here. Imports no face (streamlit, mcp,
argparse); raises nothing past ``engine.tools.registry.call_tool`` (which converts
``ChunknavError`` subclasses once).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from engine.tools import envelopes as E
from engine.errors import EmbedError, PathEscapeError
from engine.values import Bbox, Chunk, Document, Region
from engine.paths import document_path, resolve_inside
from engine.search.query import form_found, forms_found, normalise_collection_path, other_forms
from engine.index.runs import request_cancel, run_outcome
from engine.search.searcher import SearchOutcome
from engine.search.headings import HEADINGS_KEY, chunk_heading_path
from engine.search.snippets import make_snippets, shown_terms
from engine.tools.marks import HitMarks
from engine.service import Engine
from engine.tools.budget import (
    MAX_TOKENS_DEFAULT,
    args_digest,
    collection_stamp,
    count_tokens,
    document_stamp,
    fit_count,
    make_cursor,
    read_cursor,
)

if TYPE_CHECKING:
    from engine.values import RankedChunk

__all__ = [
    "READ_LIMIT_DEFAULT",
    "LIST_LIMIT_DEFAULT",
    "SCORE_DECIMALS",
    "tool_get_chunk",
    "tool_read_document",
    "tool_get_document",
    "tool_list_documents",
    "tool_index_status",
]

log = logging.getLogger(__name__)

#: Characters ``read_document`` returns per call unless ``limit`` says otherwise.
READ_LIMIT_DEFAULT = 200_000
#: Decimals kept on ``score`` in every envelope.
SCORE_DECIMALS = 6


# ---------------------------------------------------------------------------
# envelope builders


def _bbox(b: Bbox) -> E.BboxDict:
    d = b.to_dict()  # rounded as every wire box is
    return {"x": d["x"], "y": d["y"], "w": d["w"], "h": d["h"]}


def _region(r: Region) -> E.RegionDict:
    out: E.RegionDict = {"page": r.page, "bbox": _bbox(r.bbox)}
    if r.rects:
        out["rects"] = [_bbox(b) for b in r.rects]
    return out


def _provenance(chunk: Chunk, regions: bool = True, all_rects: bool = True) -> E.Provenance:
    """A chunk's page, page label, bbox, regions (``regions``; ``all_rects`` False: the
    rects of the first region only, as search hits carry them) and OCR marks."""
    out: E.Provenance = {}
    if chunk.page is not None:
        out["page"] = chunk.page
    if chunk.page_label:
        out["pageLabel"] = chunk.page_label
    if chunk.bbox is not None:
        out["bbox"] = _bbox(chunk.bbox)
    if regions and chunk.regions:
        wire = [_region(r) for r in chunk.regions]
        if not all_rects:  # search hits: rects of the first region only
            for r in wire[1:]:
                r.pop("rects", None)
        ocr_pages = chunk.metadata.get("ocrPages") if chunk.metadata else None
        if ocr_pages:  # words on these pages came from OCR (engine/extract/ocr.py)
            conf = chunk.metadata.get("ocrConfidence") or {}
            for r in wire:
                if r["page"] in ocr_pages:
                    r["ocr"] = True
                    if conf.get(str(r["page"])) is not None:
                        r["ocrConfidence"] = conf[str(r["page"])]
        out["regions"] = wire
    if chunk.metadata and chunk.metadata.get("ocr"):
        out["ocr"] = True
    return out


def _failure_fields(outcome: SearchOutcome) -> E.FailureFields:
    """The failure fields of a search that did not run: the provider's classified refusal
    (``EmbedFailure.to_fields``, copied), else the outcome's own error code and message."""
    if outcome.failure is None:
        return {"error": outcome.error or "", "message": outcome.message or ""}
    f = outcome.failure.to_fields()
    out: E.FailureFields = {
        "error": f["error"],
        "message": f["message"],
        "endpoint": f["endpoint"],
        "model": f["model"],
        "statusCode": f["statusCode"],
        "responseBody": f["responseBody"],
    }
    if "storedDim" in f:
        out["storedDim"] = f["storedDim"]
    if "serverDim" in f:
        out["serverDim"] = f["serverDim"]
    if "whoFixes" in f:
        out["whoFixes"] = f["whoFixes"]
    return out


def _mark_hit(h: dict[str, Any], marks: HitMarks, chunk: Chunk) -> None:
    """A hit's (or chunk's) ``lineStart``/``lineEnd`` (documents numbered by lines) and
    ``fileState`` (``engine.tools.marks``)."""
    cp, fp = chunk.collection_path, chunk.file_path
    lines = marks.lines(cp, fp, chunk.start, chunk.end, chunk.page)
    if lines is not None:
        h["lineStart"], h["lineEnd"] = lines
    state = marks.state(cp, fp)
    if state is not None:
        h["fileState"] = state


def _search_envelope(
    outcome: SearchOutcome, per_file: bool, first: int = 0, heads: Any = None, engine: Engine | None = None
) -> E.SearchResult:
    """The envelope of a search: ``outcome.hits[first:]`` ranked from ``first`` on.

    ``heads``: ``heads(chunk)`` -> its heading path (``engine.tools.hits``), None: none shown.
    ``engine``: each hit's line numbers and file state (``engine.tools.marks``), None: none."""
    out: E.SearchResult = {
        "searched": outcome.searched,
        "query": outcome.query,
        "mode": outcome.mode,
        "collections": list(outcome.collections),
    }
    if outcome.failure is not None or outcome.error:
        return {**out, **_failure_fields(outcome)}  # count and hits stay absent (DESIGN table)
    hits: list[dict[str, Any]] = []
    page = outcome.hits[first:]
    snippets = make_snippets([r.chunk.chunk_text for r in page], shown_terms(outcome.terms))
    hybrid, regions = outcome.mode == "hybrid", not per_file
    marks = HitMarks(engine.store) if engine is not None else None
    for i, ranked in enumerate(page):
        rank = first + i
        chunk = ranked.chunk
        cp, fp = chunk.collection_path, chunk.file_path
        h: dict[str, Any] = {
            "documentPath": document_path(cp, fp),
            "collectionPath": cp,
            "filePath": fp,
            "chunkIndex": chunk.chunk_index,
            "rank": rank,
            "score": round(float(ranked.score), SCORE_DECIMALS),
            "snippet": snippets[i],
            "lastModified": chunk.last_modified,
        }
        if hybrid:
            _breakdown(h, ranked)
        if ranked.match is not None:
            h["match"] = ranked.match
            h["wordCoverage"] = round(float(ranked.coverage or 0.0), 3)
        h.update(_provenance(chunk, regions, False))
        path = heads(chunk) if heads is not None else None
        if path:
            h["headingPath"] = path
        if marks is not None:
            _mark_hit(h, marks, chunk)
        hits.append(h)
    out["count"] = len(hits)
    out["hits"] = hits
    if outcome.score_kind:
        out["scoreKind"] = outcome.score_kind
    if outcome.model:
        out["model"] = outcome.model
    if outcome.vector_weight is not None:
        out["vectorWeight"] = outcome.vector_weight
    if outcome.min_score is not None:
        out["minScore"] = outcome.min_score
    if outcome.confident is not None:
        out["confident"] = outcome.confident
    if outcome.hint:
        out["hint"] = outcome.hint
    if outcome.message:
        out["message"] = outcome.message
    return out


def _breakdown(h: dict[str, Any], ranked: RankedChunk) -> None:
    """A hybrid hit's fusion inputs: each list's score and 0-based rank, absent where
    that list did not return the chunk."""
    if ranked.vector_rank is not None and ranked.vector_score is not None:
        h["vectorScore"] = round(float(ranked.vector_score), SCORE_DECIMALS)
        h["vectorRank"] = ranked.vector_rank
    if ranked.keyword_rank is not None and ranked.keyword_score is not None:
        h["keywordScore"] = round(float(ranked.keyword_score), SCORE_DECIMALS)
        h["keywordRank"] = ranked.keyword_rank


def _one_form(name: str, exists: Callable[[str], bool], what: str) -> tuple[str, str | None]:
    """``(name to use, message)``: ``name`` when it exists as given (the exact match first);
    else the one of its other normalisation forms (NFC, NFD) that exists, so a file named
    in NFD (macOS, SMB shares) is found by the NFC name that looks the same, and the other
    way round. Two that exist are different files: ``name`` is kept and the message names
    them (never a guess); none: ``name`` and None."""
    found = forms_found(name, exists)
    if len(found) == 1:
        return found[0], None
    if found:
        return name, (
            f"{name!r} is not indexed as written; {len(found)} different {what}s look the same "
            f"({', '.join(repr(f) for f in found)}: NFC and NFD forms): give one exactly"
        )
    return name, None


def _indexed_names(engine: Engine, collection_path: str, file_path: str) -> tuple[str, str, str | None]:
    """``(collectionPath, filePath, message)`` of the indexed document meant by the two names:
    each exact when indexed so, else in its other Unicode normalisation form (``_one_form``);
    message when two different ones match."""
    store = engine.store
    coll, msg = _one_form(collection_path, lambda c: store.get_collection(c) is not None, "collection")
    if msg:
        return collection_path, file_path, msg
    fp, msg = _one_form(file_path, lambda f: store.get_document(coll, f) is not None, "file")
    return coll, fp, msg


def _check_file_path(engine: Engine, collection_path: str, file_path: str) -> str | None:
    """A message when ``file_path`` escapes the collection root, else None."""
    coll = engine.store.get_collection(collection_path)
    try:
        if coll is not None:
            resolve_inside(coll.root, file_path)
        elif file_path.startswith("/") or ".." in file_path.split("/"):
            raise PathEscapeError(f"filePath {file_path!r} leaves the collection root")
    except PathEscapeError as e:
        return str(e)
    return None


def tool_get_chunk(
    engine: Engine,
    collectionPath: str,
    filePath: str,
    chunkIndex: int,
    maxTokens: int | None = None,
    cursor: str | None = None,
) -> E.ChunkResult:
    """``get_chunk``: one chunk with provenance and its neighbours' indices.

    Out of range or never indexed: ``found: false`` with ``totalChunks`` and a
    message naming the valid range; never an exception. ``maxTokens``: the text is
    cut to fit (``_fit_text``); ``cursor`` continues it.
    """
    collectionPath = normalise_collection_path(collectionPath)
    digest = args_digest({"collectionPath": collectionPath, "filePath": filePath, "chunkIndex": chunkIndex})
    out: E.ChunkResult = {
        "found": False,
        "collectionPath": collectionPath,
        "filePath": filePath,
        "chunkIndex": chunkIndex,
        "totalChunks": 0,
    }
    escape = _check_file_path(engine, collectionPath, filePath)
    if escape:
        out.update({"error": "path-escape", "message": escape})
        return out
    collectionPath, filePath, ambiguous = _indexed_names(engine, collectionPath, filePath)
    out.update({"collectionPath": collectionPath, "filePath": filePath})
    if ambiguous:
        out["message"] = ambiguous
        return out
    chunk, total = engine.search.get_chunk(collectionPath, filePath, chunkIndex)
    out["totalChunks"] = total
    if chunk is None:
        if engine.store.get_collection(collectionPath) is None:
            out["message"] = f"no collection {collectionPath!r}; see index_status for the known ones"
        elif total == 0:
            doc = engine.store.get_document(collectionPath, filePath)
            if doc is None:
                out["message"] = f"{filePath!r} is not indexed in {collectionPath!r}"
            else:
                _no_text(out, doc)
        else:
            out["message"] = f"chunkIndex {chunkIndex} is out of range: valid 0..{total - 1} ({total} chunks)"
        return out
    prev = engine.store.get_chunk(collectionPath, filePath, chunkIndex - 1) if chunkIndex > 0 else None
    nxt = engine.store.get_chunk(collectionPath, filePath, chunkIndex + 1) if chunkIndex + 1 < total else None
    out.update(
        {
            "found": True,
            "documentPath": document_path(collectionPath, filePath),
            "text": chunk.chunk_text,
            "start": chunk.start,
            "end": chunk.end,
            "prevIndex": chunkIndex - 1 if chunkIndex > 0 else None,
            "nextIndex": chunkIndex + 1 if chunkIndex + 1 < total else None,
            "chunkId": chunk.chunk_id,
            "overlapPrev": max(0, prev.end - chunk.start) if prev else 0,
            "overlapNext": max(0, chunk.end - nxt.start) if nxt else 0,
        }
    )
    out = {**out, **_provenance(chunk)}
    path = chunk_heading_path(
        (engine.store.get_document(collectionPath, filePath) or _NO_DOC).metadata.get(HEADINGS_KEY),
        chunk.start,
        chunk.end,
    )
    if path:
        out["headingPath"] = path
    _mark_hit(out, HitMarks(engine.store), chunk)  # type: ignore[arg-type]
    _mark_stale(engine, out)
    doc = engine.store.get_document(collectionPath, filePath)
    return _fit_text(dict(out), "get_chunk", digest, maxTokens, cursor, document_stamp(doc), "start")  # type: ignore[return-value]


class _NoDoc:
    metadata: dict[str, Any] = {}


_NO_DOC = _NoDoc()


def _fit_text(
    out: dict[str, Any],
    tool: str,
    digest: str,
    max_tokens: int | None,
    cursor: str | None,
    stamp: str,
    base: str,
) -> dict[str, Any]:
    """An answer carrying ``text`` within ``max_tokens`` (``engine.tools.budget``), from the
    cursor's position on.

    ``cursor``: the text starts where the cursor says (characters into this answer's text),
    or the answer is ``error: stale-cursor`` when the document changed since. Over the
    budget, ``text`` keeps the longest start that fits (``regions`` dropped first when they
    alone are over it; ``page`` and ``bbox`` stay): ``truncated: true``, ``omitted``
    (characters left out) and ``cursor`` (where the rest starts: a character offset into the
    document's text). ``base``: the key of the text's first character offset (``start`` or
    ``offset``), moved with the text.

    Raises:
        engine.tools.budget.CursorError: a cursor not made for this tool and these arguments.
    """
    budget = max_tokens if max_tokens is not None else MAX_TOKENS_DEFAULT[tool]
    skip = 0
    if cursor:
        c = read_cursor(cursor, tool, digest)
        if c["s"] != stamp:
            keep = {
                k: out[k] for k in ("collectionPath", "filePath", "chunkIndex", "totalChunks", "offset") if k in out
            }
            return {
                **keep,
                "found": False,
                "error": "stale-cursor",
                "message": "the document changed (an index run) since this cursor was made; read it again without 'cursor'",
            }
        skip = c["p"] - out.get(base, 0)  # the cursor holds a character offset into the document's text
    text = out.get("text")
    if text is None:
        return out
    skip = min(max(skip, 0), len(text))
    if skip:
        out = {**out, "text": text[skip:], base: out[base] + skip}
        text = out["text"]
    if budget is None or count_tokens(out) <= budget:
        return out

    def build(n: int) -> dict[str, Any]:
        return {
            **out,
            "text": text[:n],
            "truncated": True,
            "omitted": len(text) - n,
            "cursor": make_cursor(tool, digest, out[base] + n, stamp),
        }

    if count_tokens(build(0)) > budget and "regions" in out:  # the regions alone are over: page and bbox stay
        out = {k: v for k, v in out.items() if k != "regions"}
    kept = fit_count(build, len(text), budget)
    cut = build(kept)
    if base == "offset":
        cut["nextOffset"] = out[base] + kept
    return cut


def _no_text(out: E.ChunkResult | E.DocumentText, doc: Document) -> None:
    """``found: false`` fields of a failed / encrypted / empty document: its
    ``status``, the recorded ``reasonCode`` and the recorded reason in ``message``."""
    code = doc.metadata.get("reasonCode")
    out["status"] = doc.status
    if code:
        out["reasonCode"] = code
    what = "failed" if doc.status == "failed" else "has no text"
    out["message"] = f"{doc.file_path!r} {what} ({code}): {doc.reason or 'no text'}"


def _mark_stale(engine: Engine, out: E.ChunkResult) -> None:
    """``stale: true`` (+ ``indexedAt``) when the chunk's file changed on disk or vanished
    since it was indexed (``engine.index.gate.check_file``: a stat, a hash only on a difference),
    or when the last index run could not read it and kept its chunks (the document's stale
    mark: permissions, an unlistable folder or root); then also ``staleReason``, the mark's
    ``code: reason`` as the run recorded it (a chmod 000 file keeps its size and mtime, so
    the stat alone cannot tell)."""
    from engine.index.gate import check_file

    coll = engine.store.get_collection(out["collectionPath"])
    doc = engine.store.get_document(out["collectionPath"], out["filePath"])
    if coll is None or doc is None:
        return
    fresh = check_file(coll.root, doc)
    kept = (doc.metadata or {}).get("stale")
    if fresh.stale or kept:
        out["stale"] = True
        out["indexedAt"] = fresh.indexed_at
    if isinstance(kept, dict):
        out["staleReason"] = f"{kept.get('code')}: {kept.get('reason', '')}"


def tool_read_document(
    engine: Engine,
    collectionPath: str,
    filePath: str,
    offset: int = 0,
    limit: int | None = None,
    maxTokens: int | None = None,
    cursor: str | None = None,
) -> E.DocumentText:
    """``read_document``: the extracted text, ``limit`` characters from ``offset``.

    ``nextOffset`` is the offset of the next page, None at the end. Never
    reads outside the collection root; a ``..``/absolute/escaping path gives
    ``error: path-escape``. ``maxTokens`` cuts the page to fit (``_fit_text``);
    ``cursor`` starts where the cut one ended (its offset replaces ``offset``).
    """
    collectionPath = normalise_collection_path(collectionPath)
    digest = args_digest({"collectionPath": collectionPath, "filePath": filePath})
    if cursor:
        at = read_cursor(cursor, "read_document", digest)
        doc = engine.store.get_document(collectionPath, filePath)
        if at["s"] != document_stamp(doc):
            return _fit_text(
                {"found": False, "collectionPath": collectionPath, "filePath": filePath, "offset": offset},
                "read_document",
                digest,
                maxTokens,
                cursor,
                document_stamp(doc),
                "offset",
            )  # type: ignore[return-value]
        offset = at["p"]
    return _read_fitted(engine, collectionPath, filePath, offset, limit, maxTokens, digest)


def _read_fitted(
    engine: Engine,
    collectionPath: str,
    filePath: str,
    offset: int,
    limit: int | None,
    max_tokens: int | None,
    digest: str,
) -> E.DocumentText:
    """``_read`` within the budget (``_fit_text``)."""
    out = _read(engine, collectionPath, filePath, offset, limit)
    if "text" not in out:
        return out
    doc = engine.store.get_document(out["collectionPath"], out["filePath"])
    return _fit_text(dict(out), "read_document", digest, max_tokens, None, document_stamp(doc), "offset")  # type: ignore[return-value]


def _read(engine: Engine, collectionPath: str, filePath: str, offset: int, limit: int | None) -> E.DocumentText:
    """The page of text ``read_document`` answers, before any budget."""
    out: E.DocumentText = {"found": False, "collectionPath": collectionPath, "filePath": filePath, "offset": offset}
    escape = _check_file_path(engine, collectionPath, filePath)
    if escape:
        out.update({"error": "path-escape", "message": escape})
        return out
    collectionPath, filePath, ambiguous = _indexed_names(engine, collectionPath, filePath)
    out.update({"collectionPath": collectionPath, "filePath": filePath})
    if ambiguous:
        out["message"] = ambiguous
        return out
    doc = engine.store.get_document(collectionPath, filePath)
    limit = READ_LIMIT_DEFAULT if limit is None else limit
    page = None if doc is None or doc.status != "indexed" else _page_from_chunks(engine.store, doc, offset, limit)
    if doc is not None and page is not None:  # a long document: the page from its chunks, not the whole text
        end = min(doc.text_length, offset + limit)
        out.update(
            {
                "found": True,
                "documentPath": document_path(collectionPath, filePath),
                "totalLength": doc.text_length,
                "text": page,
                "nextOffset": end if end < doc.text_length else None,
            }
        )
        return out
    text = None if doc is None or doc.status != "indexed" else engine.store.document_text(collectionPath, filePath)
    if text is None:
        if doc is None:
            out["message"] = f"{filePath!r} is not indexed in {collectionPath!r}"
        else:
            _no_text(out, doc)
        return out
    end = min(len(text), offset + limit)
    out.update(
        {
            "found": True,
            "documentPath": document_path(collectionPath, filePath),
            "totalLength": len(text),
            "text": text[offset:end],
            "nextOffset": end if end < len(text) else None,
        }
    )
    return out


#: Documents of at least this many characters are paged from their chunks (``_page_from_chunks``);
#: a shorter one is read whole (one row, ~1 ms per million characters).
READ_FROM_CHUNKS_CHARS = 1_000_000
#: Longest page read from chunks, characters (~2,400 chunk reads at the default size); a longer
#: page reads the whole text, which is then about as cheap.
READ_FROM_CHUNKS_MOST = 2_000_000


def _page_from_chunks(store: Any, doc: Document, offset: int, limit: int) -> str | None:
    """``text[offset:offset + limit]`` of a long indexed document, built from the chunks that
    overlap it (found by a binary search over ``chunk_index``: the windows are in text order,
    each ``chunk_text == text[start:end]``, every character in at least one), so paging a
    200 MB document reads a few rows instead of its whole text.

    Returns:
        The page, exactly the slice of the stored text; None to read the whole text instead:
        a document shorter than ``READ_FROM_CHUNKS_CHARS``, a page longer than
        ``READ_FROM_CHUNKS_MOST``, or anything that does not add up (a gap between chunks, a
        chunk whose text is not ``end - start`` long, a last chunk not ending at
        ``text_length``, or the document replaced while its chunks were read).
    """
    total, n = doc.text_length, doc.chunk_count
    if total < READ_FROM_CHUNKS_CHARS or n <= 0 or limit > READ_FROM_CHUNKS_MOST:
        return None
    key = (doc.collection_path, doc.file_path)
    last = store.get_chunk(*key, n - 1)
    if last is None or last.end != total:
        return None
    end = min(total, offset + limit)
    if offset >= end:
        return ""
    lo, hi = 0, n - 1  # the first chunk ending after offset
    while lo < hi:
        mid = (lo + hi) // 2
        c = store.get_chunk(*key, mid)
        if c is None:
            return None
        if c.end > offset:
            hi = mid
        else:
            lo = mid + 1
    pieces, pos, i = [], offset, lo
    while pos < end:
        c = last if i == n - 1 else store.get_chunk(*key, i)
        if c is None or c.start > pos or len(c.chunk_text) != c.end - c.start:
            return None
        stop = min(c.end, end)
        pieces.append(c.chunk_text[pos - c.start : stop - c.start])
        pos, i = stop, i + 1
        if pos < end and i >= n:
            return None
    now = store.get_document(*key)
    if now is None or (now.content_hash, now.indexed_at, now.chunk_count, now.text_length) != (
        doc.content_hash,
        doc.indexed_at,
        n,
        total,
    ):
        return None
    return "".join(pieces)


def _find_document(engine: Engine, doc_path: str) -> Document | None:
    """The document whose node path is ``doc_path``, or None.

    The exact node path first. Else a file named in one Unicode normalisation form
    (NFD from macOS or an SMB share) is found by the node path of the other (NFC) name
    that looks the same, and a collection part in the other form is tried the same way
    (``other_forms``); only when exactly one document matches so (never a guess)."""
    coll, sep, _slug = doc_path.rpartition("/_Documents/")
    if not sep:
        return None
    colls = [coll] + other_forms(coll)
    docs: list[Document] = [d for name in colls for d in engine.store.documents(name)]
    for d in docs:
        if document_path(d.collection_path, d.file_path) == doc_path:
            return d
    found = [
        d
        for d in docs
        if any(
            document_path(c, f) == doc_path
            for c in [d.collection_path] + other_forms(d.collection_path)
            for f in [d.file_path] + other_forms(d.file_path)
        )
    ]
    return found[0] if len(found) == 1 else None


def tool_get_document(engine: Engine, documentPath: str) -> E.DocumentNode:
    """``get_document``: node metadata + summary, never the text; carries
    ``collectionPath`` + ``filePath`` so the caller can ``read_document``."""
    d = _find_document(engine, documentPath)
    if d is None:
        return {
            "found": False,
            "documentPath": documentPath,
            "message": f"no document node {documentPath!r}; paths look like "
            "'<collectionPath>/_Documents/<slug>' (see search hits)",
        }
    out: E.DocumentNode = {
        "found": True,
        "documentPath": documentPath,
        "collectionPath": d.collection_path,
        "filePath": d.file_path,
        "fileType": d.file_type,
        "status": d.status,
        "contentHash": d.content_hash,
        "sizeBytes": d.size_bytes,
        "lastModified": d.last_modified,
        "indexedAt": d.indexed_at,
        "pageCount": d.page_count,
        "chunkCount": d.chunk_count,
        "textLength": d.text_length,
        "summary": d.summary,
        "metadata": d.metadata,
    }
    if d.reason:
        out["reason"] = d.reason
    if d.metadata.get("aliases"):
        out["aliases"] = list(d.metadata["aliases"])
    code = d.metadata.get("reasonCode")
    if code:
        out["reasonCode"] = code
    return out


def _noted_file(d: Document) -> E.NotedFile:
    """An indexed document's extraction notes (and text encoding) for ``index_status``."""
    out: E.NotedFile = {
        "collectionPath": d.collection_path,
        "filePath": d.file_path,
        "notes": list(d.metadata["notes"]),
    }
    if "encoding" in d.metadata:
        out["encoding"] = d.metadata["encoding"]
    if "encodingConfidence" in d.metadata:
        out["encodingConfidence"] = d.metadata["encodingConfidence"]
    return out


#: Documents ``list_documents`` returns per call unless ``limit`` says otherwise.
LIST_LIMIT_DEFAULT = 200


def _ocr_pages(meta: dict[str, Any]) -> list[int] | None:
    """Pages read by OCR as the extractor recorded them (``ocrPages``/``ocr_pages``), or None."""
    pages = meta.get("ocrPages", meta.get("ocr_pages"))
    if isinstance(pages, dict):  # {"<page>": mean word confidence}
        return sorted(int(p) for p in pages)
    if isinstance(pages, (list, tuple)):
        return [int(p) for p in pages]
    return None


def tool_list_documents(
    engine: Engine,
    collectionPath: str,
    offset: int = 0,
    limit: int = LIST_LIMIT_DEFAULT,
    maxTokens: int | None = None,
    cursor: str | None = None,
) -> E.DocumentList:
    """``list_documents``: a collection's files, sorted by filePath, paged.

    Each entry: ``documentPath`` (for ``get_document``), ``filePath`` (for
    ``get_chunk`` / ``read_document``), ``fileType``, ``status`` and ``reason``,
    ``pageCount``, ``chunkCount``, ``textLength``, ``sizeBytes``, and where the
    extractor recorded them the text ``encoding`` and the ``ocrPages``.
    Unknown collection: ``found: false`` with a message (an answer, not an error).
    Within ``maxTokens`` (``engine.tools.budget``): fewer entries, ``truncated: true``,
    ``omitted`` and ``cursor``; a page with more after it carries ``cursor`` too. A
    ``cursor`` replaces ``offset``; made before an index run changed the collection, it
    answers ``error: stale-cursor``.

    Raises:
        engine.tools.budget.CursorError: a cursor not made for this tool and collection.
    """
    collectionPath = form_found(
        normalise_collection_path(collectionPath), lambda c: engine.store.get_collection(c) is not None
    )  # NFC / NFD
    out: E.DocumentList = {"found": False, "collectionPath": collectionPath, "offset": offset}
    if engine.store.get_collection(collectionPath) is None:
        known = ", ".join(c.collection_path for c in engine.store.collections()) or "none"
        out.update(
            {
                "total": 0,
                "count": 0,
                "documents": [],
                "nextOffset": None,
                "message": f"no collection {collectionPath!r}; known: {known}",
            }
        )
        return out
    digest = args_digest({"collectionPath": collectionPath})
    stamp = collection_stamp(engine.store, [collectionPath])
    if cursor:
        at = read_cursor(cursor, "list_documents", digest)
        if at["s"] != stamp:
            out.update(
                {
                    "error": "stale-cursor",
                    "message": "the collection changed (an index run) since this cursor was made; "
                    "list it again without 'cursor'",
                }
            )
            return out
        offset = out["offset"] = at["p"]
    docs: list[Document] = engine.store.documents(collectionPath)
    page = docs[offset : offset + limit]
    rows: list[E.DocumentEntry] = []
    for d in page:
        meta = d.metadata or {}
        row: E.DocumentEntry = {
            "documentPath": document_path(d.collection_path, d.file_path),
            "filePath": d.file_path,
            "fileType": d.file_type,
            "status": d.status,
            "pageCount": d.page_count,
            "chunkCount": d.chunk_count,
            "textLength": d.text_length,
            "sizeBytes": d.size_bytes,
        }
        if d.reason:
            row["reason"] = d.reason
        if meta.get("encoding"):
            row["encoding"] = str(meta["encoding"])
        ocr = _ocr_pages(meta)
        if ocr is not None:
            row["ocrPages"] = ocr
        if meta.get("aliases"):
            row["aliases"] = list(meta["aliases"])
        rows.append(row)
    end = offset + len(page)
    out.update(
        {
            "found": True,
            "total": len(docs),
            "count": len(rows),
            "documents": rows,
            "nextOffset": end if end < len(docs) else None,
        }
    )
    if end < len(docs):
        out["cursor"] = make_cursor("list_documents", digest, end, stamp)
    budget = maxTokens if maxTokens is not None else MAX_TOKENS_DEFAULT["list_documents"]
    if budget is None or count_tokens(out) <= budget:
        return out

    def build(n: int) -> E.DocumentList:
        return {
            **out,
            "count": n,
            "documents": rows[:n],
            "nextOffset": offset + n if offset + n < len(docs) else None,
            "truncated": True,
            "omitted": len(rows) - n,
            "cursor": make_cursor("list_documents", digest, offset + n, stamp),
        }

    return build(fit_count(build, len(rows), budget))


def tool_cancel_index(engine: Engine) -> E.CancelIndexResult:
    """``cancel_index``: ask the active index run of this index to stop, whichever process
    runs it (``engine.index.runs.request_cancel``): it abandons the files it is reading
    within seconds, keeps what it committed and is recorded ``cancelled``."""
    answer = request_cancel(engine.store)
    out: E.CancelIndexResult = {
        "requested": bool(answer["requested"]),
        "status": str(answer["status"]),
        "message": str(answer["message"]),
    }
    if answer.get("runId"):
        out["runId"] = str(answer["runId"])
        out["startedAt"] = str(answer.get("startedAt") or "")
    return out


def _provider_status(p: dict[str, Any]) -> E.ProviderStatus:
    """``Engine.provider_status`` as its envelope (the same keys, in the same order)."""
    out: E.ProviderStatus = {"provider": p["provider"], "model": p["model"], "dim": p["dim"]}
    if "endpoint" in p:
        out["endpoint"] = p["endpoint"]
    if "probe" in p:
        out["probe"] = p["probe"]
    return out


def _failed_file(d: Document, status: str, reason: str) -> E.FailedFile:
    return {"collectionPath": d.collection_path, "filePath": d.file_path, "status": status, "reason": reason}


def _serving_model(engine: Engine) -> str | None:
    """The model whose vectors searches use now (``ContentChunkSearch.serving_embedder``),
    None without a provider or when it cannot be set up."""
    try:
        emb, _ = engine.search.serving_embedder()
    except EmbedError:
        return None
    return None if emb is None else str(emb.model)


def tool_index_status(engine: Engine, probe: bool = True) -> E.IndexStatus:
    """``index_status``: collections, documents, chunks, vectors per model,
    stale vectors, failed/empty files with reasons, the provider and its probe;
    ``readOnly: true`` when the store was opened read-only, ``readOnlyReason`` why (a directory
    that cannot be written, a full disk)."""
    store = engine.store
    docs: list[Document] = store.documents()
    per: dict[str, dict[str, int]] = {}
    failures: list[E.FailedFile] = []
    noted: list[E.NotedFile] = []
    zero = {"documents": 0, "chunks": 0, "failed": 0, "indexed": 0, "empty": 0, "stale": 0}
    for d in docs:
        p = per.setdefault(d.collection_path, dict(zero))
        p["documents"] += 1
        p["chunks"] += d.chunk_count
        if d.status != "indexed":
            p["failed"] += d.status == "failed"
            p["empty"] += d.status == "empty"
            failures.append(_failed_file(d, d.status, d.reason or ""))
            continue
        p["indexed"] += 1
        if (d.metadata or {}).get("stale"):  # kept: its file could not be read this time
            p["stale"] += 1
            stale = d.metadata["stale"]
            failures.append(_failed_file(d, "stale", f"{stale.get('code')}: {stale.get('reason', '')}"))
        elif d.metadata.get("notes"):
            noted.append(_noted_file(d))
    colls: list[E.CollectionStatus] = []
    for c in store.collections():
        counts = per.get(c.collection_path, zero)
        entry: E.CollectionStatus = {
            "collectionPath": c.collection_path,
            "root": c.root,
            "documents": counts["documents"],
            "chunks": counts["chunks"],
            "failed": counts["failed"],
        }
        if c.password_ref:
            entry["passwordRef"] = c.password_ref  # a reference, never the password
        entry["indexed"], entry["empty"], entry["stale"] = counts["indexed"], counts["empty"], counts["stale"]
        colls.append(entry)
    notes: dict[str, dict[str, Any]] = store.embed_notes()  # embed pass: truncated / failed chunks per model
    vectors: list[E.ModelVectors] = []
    serving = _serving_model(engine)
    for m, v in sorted(store.vector_counts().items()):
        n = notes.get(m, {})
        row: E.ModelVectors = {
            "model": m,
            "dim": int(v.get("dim", 0)),
            "vectors": int(v.get("vectors", 0)),
            "stale": int(v.get("stale", 0)),
            "missing": int(v.get("missing", 0)),
            "truncated": int(n.get("truncated", 0)),
            "failed": int(n.get("failed", 0)),
        }
        if m == serving:
            row["serving"] = True
        vectors.append(row)
    embed_failures: list[E.EmbedFailedChunk] = [
        {
            "model": m,
            "collectionPath": f["collectionPath"],
            "filePath": f["filePath"],
            "chunkIndex": f["chunkIndex"],
            "chunkId": f["chunkId"],
            "error": f["error"],
            "reason": f["reason"],
        }
        for m, n in sorted(notes.items())
        for f in n.get("failures", [])
    ]
    out: E.IndexStatus = {
        "collections": colls,
        "documents": len(docs),
        "chunks": sum(d.chunk_count for d in docs),
        "vectors": vectors,
        "staleVectors": sum(v["stale"] for v in vectors),
        "embedFailures": embed_failures,
        "failures": failures,
        "notes": noted,
        "provider": _provider_status(engine.provider_status(probe)),
        "lastRun": run_outcome(store.last_run()),
    }
    if store.read_only:
        out["readOnly"] = True
        if store.read_only_reason:
            out["readOnlyReason"] = store.read_only_reason
    return out
