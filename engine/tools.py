"""The tool registry: one entry per DESIGN.md tool (the ``Engine`` they run on lives in ``engine.service``).

Owns: each tool's name, agent-facing description, JSON Schema for its
arguments, engine function and envelope type; argument validation; the one
JSON serialisation every face uses (``to_json``); the equivalent ``chunknav``
command line of a call (``cli_command``). The CLI subcommands, the MCP tool
list and the GUI's "maps to a tool call" panel are all built from
``REGISTRY``: a tool added here appears in all three.

Envelopes are built here and only here (internal values -> camelCase). No
exception crosses a tool boundary except ``ToolArgumentError`` (bad
arguments: a protocol-level error for MCP, exit 2 for the CLI).
Imports no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import json
import logging
import shlex
from dataclasses import dataclass
from typing import Any, Callable

import jsonschema

from engine import envelopes as E
from engine.errors import PathEscapeError, StoreUnavailableError
from engine.extract.reasons import reason_code
from engine.model import Chunk
from engine.paths import document_path, resolve_inside
from engine.runs import run_outcome
from engine.search import MAX_QUERY_CHARS, SCOPE_QUALIFIERS, make_snippet, normalise_collection_path
from engine.secrets import public_dsn, redact_obj
from engine.service import Engine

__all__ = [
    "Tool",
    "REGISTRY",
    "Engine",
    "ToolArgumentError",
    "call_tool",
    "to_json",
    "normalise",
    "cli_command",
    "READ_LIMIT_DEFAULT",
    "LIST_LIMIT_DEFAULT",
]

log = logging.getLogger(__name__)

#: Characters ``read_document`` returns per call unless ``limit`` says otherwise.
READ_LIMIT_DEFAULT = 200_000
#: Decimals kept on ``score`` in every envelope.
SCORE_DECIMALS = 6


class ToolArgumentError(ValueError):
    """Arguments that do not fit the tool's schema; the message names the argument."""


# ---------------------------------------------------------------------------
# envelope builders


def _bbox(b) -> E.BboxDict | None:
    return None if b is None else b.to_dict()  # type: ignore[return-value]


def _provenance(out: dict, chunk: Chunk, regions: bool = True, all_rects: bool = True) -> None:
    if chunk.page is not None:
        out["page"] = chunk.page
    if chunk.page_label:
        out["pageLabel"] = chunk.page_label
    if chunk.bbox is not None:
        out["bbox"] = _bbox(chunk.bbox)
    if regions and chunk.regions:
        out["regions"] = [r.to_dict() for r in chunk.regions]
        if not all_rects:  # search hits: rects of the first region only (README "Highlights")
            for r in out["regions"][1:]:
                r.pop("rects", None)
        ocr_pages = chunk.metadata.get("ocrPages") if chunk.metadata else None
        if ocr_pages:  # words on these pages came from OCR (engine/extract/ocr.py)
            conf = chunk.metadata.get("ocrConfidence") or {}
            for r in out["regions"]:
                if r["page"] in ocr_pages:
                    r["ocr"] = True
                    if conf.get(str(r["page"])) is not None:
                        r["ocrConfidence"] = conf[str(r["page"])]
    if chunk.metadata and chunk.metadata.get("ocr"):
        out["ocr"] = True


def _failure_fields(outcome) -> dict[str, Any]:
    if outcome.failure is not None:
        return outcome.failure.to_fields()
    return {"error": outcome.error, "message": outcome.message or ""}


def _search_envelope(outcome, per_file: bool) -> E.SearchResult:
    out: dict[str, Any] = {
        "searched": outcome.searched,
        "query": outcome.query,
        "mode": outcome.mode,
        "collections": list(outcome.collections),
    }
    if outcome.failure is not None or outcome.error:
        out.update(_failure_fields(outcome))  # count and hits stay absent (DESIGN table)
        return out  # type: ignore[return-value]
    hits = []
    for rank, ranked in enumerate(outcome.hits):
        chunk, score = ranked.chunk, ranked.score
        h: dict[str, Any] = {
            "documentPath": document_path(chunk.collection_path, chunk.file_path),
            "collectionPath": chunk.collection_path,
            "filePath": chunk.file_path,
            "chunkIndex": chunk.chunk_index,
            "rank": rank,
            "score": round(float(score), SCORE_DECIMALS),
            "snippet": make_snippet(chunk.chunk_text, outcome.terms),
        }
        if outcome.mode == "hybrid":
            _breakdown(h, ranked)
        _provenance(h, chunk, regions=not per_file, all_rects=False)
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
    if outcome.hint:
        out["hint"] = outcome.hint
    if outcome.message:
        out["message"] = outcome.message
    return out  # type: ignore[return-value]


def _breakdown(h: dict[str, Any], ranked) -> None:
    """A hybrid hit's fusion inputs: each list's score and 0-based rank, absent where
    that list did not return the chunk."""
    if ranked.vector_rank is not None:
        h["vectorScore"] = round(float(ranked.vector_score), SCORE_DECIMALS)
        h["vectorRank"] = ranked.vector_rank
    if ranked.keyword_rank is not None:
        h["keywordScore"] = round(float(ranked.keyword_score), SCORE_DECIMALS)
        h["keywordRank"] = ranked.keyword_rank


def tool_search(engine: Engine, query: str, scope: str | list[str] | None = None, limit: int = 20,
                mode: str = "auto", minScore: float | None = None,
                vectorWeight: float | None = None) -> E.SearchResult:
    """``search``: one hit per file (its best chunk), ranked over the scoped collections."""
    return _search_envelope(engine.search.search(query, scope, limit, mode, per_file=True,
                                                 min_score=minScore, vector_weight=vectorWeight), True)


def tool_search_chunks(engine: Engine, query: str, scope: str | list[str] | None = None, limit: int = 20,
                       mode: str = "auto", minScore: float | None = None,
                       vectorWeight: float | None = None) -> E.SearchResult:
    """``search_chunks``: one hit per chunk, not deduplicated by file."""
    return _search_envelope(engine.search.search(query, scope, limit, mode, per_file=False,
                                                 min_score=minScore, vector_weight=vectorWeight), False)


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


def tool_get_chunk(engine: Engine, collectionPath: str, filePath: str, chunkIndex: int) -> E.ChunkResult:
    """``get_chunk``: one chunk with provenance and its neighbours' indices.

    Out of range or never indexed: ``found: false`` with ``totalChunks`` and a
    message naming the valid range; never an exception.
    """
    collectionPath = normalise_collection_path(collectionPath)
    out: dict[str, Any] = {"found": False, "collectionPath": collectionPath, "filePath": filePath,
                           "chunkIndex": chunkIndex}
    escape = _check_file_path(engine, collectionPath, filePath)
    if escape:
        out.update(totalChunks=0, error="path-escape", message=escape)
        return out  # type: ignore[return-value]
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
        return out  # type: ignore[return-value]
    prev = engine.store.get_chunk(collectionPath, filePath, chunkIndex - 1) if chunkIndex > 0 else None
    nxt = engine.store.get_chunk(collectionPath, filePath, chunkIndex + 1) if chunkIndex + 1 < total else None
    out.update(
        found=True,
        documentPath=document_path(collectionPath, filePath),
        text=chunk.chunk_text,
        start=chunk.start,
        end=chunk.end,
        prevIndex=chunkIndex - 1 if chunkIndex > 0 else None,
        nextIndex=chunkIndex + 1 if chunkIndex + 1 < total else None,
        chunkId=chunk.chunk_id,
        overlapPrev=max(0, prev.end - chunk.start) if prev else 0,
        overlapNext=max(0, chunk.end - nxt.start) if nxt else 0,
    )
    _provenance(out, chunk)
    _mark_stale(engine, out)
    return out  # type: ignore[return-value]


def _no_text(out: dict[str, Any], doc) -> None:
    """``found: false`` fields of a failed / encrypted / empty document: its
    ``status``, the recorded ``reasonCode`` and the recorded reason in ``message``."""
    code = doc.metadata.get("reasonCode") or reason_code(doc.status, doc.reason)
    out["status"] = doc.status
    if code:
        out["reasonCode"] = code
    what = "failed" if doc.status == "failed" else "has no text"
    out["message"] = f"{doc.file_path!r} {what} ({code}): {doc.reason or 'no text'}"


def _mark_stale(engine: Engine, out: dict[str, Any]) -> None:
    """``stale: true`` (+ ``indexedAt``) when the chunk's file changed on disk or vanished
    since it was indexed (``engine.freshness.check_file``: a stat, a hash only on a difference)."""
    from engine.freshness import check_file

    coll = engine.store.get_collection(out["collectionPath"])
    doc = engine.store.get_document(out["collectionPath"], out["filePath"])
    if coll is None or doc is None:
        return
    fresh = check_file(coll.root, doc)
    if fresh.stale:
        out["stale"] = True
        out["indexedAt"] = fresh.indexed_at


def tool_read_document(engine: Engine, collectionPath: str, filePath: str, offset: int = 0,
                       limit: int | None = None) -> E.DocumentText:
    """``read_document``: the extracted text, ``limit`` characters from ``offset``.

    ``nextOffset`` is the offset of the next page, None at the end. Never
    reads outside the collection root; a ``..``/absolute/escaping path gives
    ``error: path-escape``.
    """
    collectionPath = normalise_collection_path(collectionPath)
    out: dict[str, Any] = {"found": False, "collectionPath": collectionPath, "filePath": filePath,
                           "offset": offset}
    escape = _check_file_path(engine, collectionPath, filePath)
    if escape:
        out.update(error="path-escape", message=escape)
        return out  # type: ignore[return-value]
    doc = engine.store.get_document(collectionPath, filePath)
    text = None if doc is None or doc.status != "indexed" else engine.store.document_text(collectionPath, filePath)
    if text is None:
        if doc is None:
            out["message"] = f"{filePath!r} is not indexed in {collectionPath!r}"
        else:
            _no_text(out, doc)
        return out  # type: ignore[return-value]
    limit = READ_LIMIT_DEFAULT if limit is None else limit
    end = min(len(text), offset + limit)
    out.update(found=True, documentPath=document_path(collectionPath, filePath), totalLength=len(text),
               text=text[offset:end], nextOffset=end if end < len(text) else None)
    return out  # type: ignore[return-value]


def _find_document(engine: Engine, doc_path: str):
    coll, sep, _ = doc_path.rpartition("/_Documents/")
    if not sep:
        return None
    for d in engine.store.documents(coll):
        if document_path(d.collection_path, d.file_path) == doc_path:
            return d
    return None


def tool_get_document(engine: Engine, documentPath: str) -> E.DocumentNode:
    """``get_document``: node metadata + summary, never the text; carries
    ``collectionPath`` + ``filePath`` so the caller can ``read_document``."""
    d = _find_document(engine, documentPath)
    if d is None:
        return {"found": False, "documentPath": documentPath,  # type: ignore[return-value]
                "message": f"no document node {documentPath!r}; paths look like "
                           "'<collectionPath>/_Documents/<slug>' (see search hits)"}
    out: dict[str, Any] = {
        "found": True, "documentPath": documentPath, "collectionPath": d.collection_path,
        "filePath": d.file_path, "fileType": d.file_type, "status": d.status,
        "contentHash": d.content_hash, "sizeBytes": d.size_bytes, "lastModified": d.last_modified,
        "indexedAt": d.indexed_at, "pageCount": d.page_count, "chunkCount": d.chunk_count,
        "textLength": d.text_length, "summary": d.summary, "metadata": d.metadata,
    }
    if d.reason:
        out["reason"] = d.reason
    code = d.metadata.get("reasonCode") or reason_code(d.status, d.reason)
    if code:
        out["reasonCode"] = code
    return out  # type: ignore[return-value]


def _noted_file(d) -> dict[str, Any]:
    """An indexed document's extraction notes (and text encoding) for ``index_status``."""
    out: dict[str, Any] = {"collectionPath": d.collection_path, "filePath": d.file_path,
                           "notes": list(d.metadata["notes"])}
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
    if isinstance(pages, dict):  # i11 records {"<page>": mean word confidence}
        return sorted(int(p) for p in pages)
    if isinstance(pages, (list, tuple)):
        return [int(p) for p in pages]
    return None


def tool_list_documents(engine: Engine, collectionPath: str, offset: int = 0,
                        limit: int = LIST_LIMIT_DEFAULT) -> E.DocumentList:
    """``list_documents``: a collection's files, sorted by filePath, paged.

    Each entry: ``documentPath`` (for ``get_document``), ``filePath`` (for
    ``get_chunk`` / ``read_document``), ``fileType``, ``status`` and ``reason``,
    ``pageCount``, ``chunkCount``, ``textLength``, ``sizeBytes``, and where the
    extractor recorded them the text ``encoding`` and the ``ocrPages``.
    Unknown collection: ``found: false`` with a message (an answer, not an error).
    """
    collectionPath = normalise_collection_path(collectionPath)
    out: dict[str, Any] = {"found": False, "collectionPath": collectionPath, "offset": offset}
    if engine.store.get_collection(collectionPath) is None:
        known = ", ".join(c.collection_path for c in engine.store.collections()) or "none"
        out.update(total=0, count=0, documents=[], nextOffset=None,
                   message=f"no collection {collectionPath!r}; known: {known}")
        return out  # type: ignore[return-value]
    docs = engine.store.documents(collectionPath)
    page = docs[offset:offset + limit]
    rows = []
    for d in page:
        meta = d.metadata or {}
        row: dict[str, Any] = {
            "documentPath": document_path(d.collection_path, d.file_path), "filePath": d.file_path,
            "fileType": d.file_type, "status": d.status, "pageCount": d.page_count,
            "chunkCount": d.chunk_count, "textLength": d.text_length, "sizeBytes": d.size_bytes,
        }
        if d.reason:
            row["reason"] = d.reason
        if meta.get("encoding"):
            row["encoding"] = str(meta["encoding"])
        ocr = _ocr_pages(meta)
        if ocr is not None:
            row["ocrPages"] = ocr
        rows.append(row)
    end = offset + len(page)
    out.update(found=True, total=len(docs), count=len(rows), documents=rows,
               nextOffset=end if end < len(docs) else None)
    return out  # type: ignore[return-value]


def tool_index_status(engine: Engine, probe: bool = True) -> E.IndexStatus:
    """``index_status``: collections, documents, chunks, vectors per model,
    stale vectors, failed/empty files with reasons, the provider and its probe."""
    store = engine.store
    docs = store.documents()
    per: dict[str, dict[str, int]] = {}
    failures = []
    noted: list[dict[str, Any]] = []
    for d in docs:
        p = per.setdefault(d.collection_path, {"documents": 0, "chunks": 0, "failed": 0})
        p["documents"] += 1
        p["chunks"] += d.chunk_count
        if d.status != "indexed":
            p["failed"] += d.status == "failed"
            failures.append({"collectionPath": d.collection_path, "filePath": d.file_path,
                             "status": d.status, "reason": d.reason or ""})
        elif (d.metadata or {}).get("stale"):  # kept: its file could not be read this time
            stale = d.metadata["stale"]
            failures.append({"collectionPath": d.collection_path, "filePath": d.file_path,
                             "status": "stale", "reason": f"{stale.get('code')}: {stale.get('reason', '')}"})
        elif d.metadata.get("notes"):
            noted.append(_noted_file(d))
    colls = [{"collectionPath": c.collection_path, "root": c.root,
              **per.get(c.collection_path, {"documents": 0, "chunks": 0, "failed": 0}),
              **({"passwordRef": c.password_ref} if c.password_ref else {})}  # a reference, never the password
             for c in store.collections()]
    vectors = [{"model": m, "dim": int(v.get("dim", 0)), "vectors": int(v.get("vectors", 0)),
                "stale": int(v.get("stale", 0)), "missing": int(v.get("missing", 0))}
               for m, v in sorted(store.vector_counts().items())]
    notes = store.embed_notes()  # embed pass: truncated / failed chunks per model
    for v in vectors:
        n = notes.get(v["model"], {})
        v["truncated"] = int(n.get("truncated", 0))
        v["failed"] = int(n.get("failed", 0))
    embed_failures = [{"model": m, **f} for m, n in sorted(notes.items()) for f in n.get("failures", [])]
    return {  # type: ignore[return-value]
        "collections": colls,
        "documents": len(docs),
        "chunks": sum(d.chunk_count for d in docs),
        "vectors": vectors,
        "staleVectors": sum(v["stale"] for v in vectors),
        "embedFailures": embed_failures,
        "failures": failures,
        "notes": noted,
        "provider": engine.provider_status(probe),
        "lastRun": run_outcome(store.last_run()),
    }


# ---------------------------------------------------------------------------
# registry


@dataclass(frozen=True)
class Tool:
    """One tool: ``name``, agent-facing ``description``, JSON Schema ``schema``
    for its arguments, the function ``fn(engine, **arguments)`` and its
    ``envelope`` TypedDict."""

    name: str
    description: str
    schema: dict[str, Any]
    fn: Callable[..., Any]
    envelope: type


_PATHS = {
    "collectionPath": {"type": "string", "minLength": 1,
                       "description": "collection node path, e.g. 'ACME/Reports'"},
    "filePath": {"type": "string", "minLength": 1,
                 "description": "POSIX path of the file relative to the collection root"},
}
_SEARCH_ARGS = {
    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
              "description": "words to search for (at most "
              f"{MAX_QUERY_CHARS} characters); may contain 'namespace:<collectionPath>' (targets "
              f"that collection; repeatable) and 'scope:{'|'.join(SCOPE_QUALIFIERS)}' (exact: that "
              "collection only, the default; subtree: it and the collections below; "
              "ancestorsandself: it and its ancestors). Other key:value tokens are named in "
              "'hint' and not searched"},
    "scope": {"type": ["string", "array", "null"], "items": {"type": "string", "minLength": 1},
              "minItems": 1, "maxItems": 100,
              "description": "anchored scope: a node path, or a list of them; each path and its "
              "ancestors are searched; '*' = every collection. A trailing '/' is accepted"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 20,
              "description": "hits to return"},
    "mode": {"type": "string", "enum": ["auto", "vector", "keyword", "hybrid"], "default": "auto",
             "description": "vector = cosine over embeddings, keyword = BM25 (stemmed; CJK by "
             "substring), hybrid = weighted reciprocal rank fusion of both (each hit carries "
             "vectorScore/vectorRank/keywordScore/keywordRank); auto = hybrid when a provider is "
             "configured and vectors exist for it, else keyword"},
    "minScore": {"type": ["number", "null"],
                 "description": "drop hits whose score (the mode's own: cosine, BM25 or fused) is below this"},
    "vectorWeight": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
                     "description": "hybrid only: weight of the vector ranking in the fusion, 0..1 "
                     "(default 0.5; 1 = vector order, 0 = keyword order)"},
}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


REGISTRY: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("search",
             "Which documents are about X? Ranks files by their best chunk. Returns one hit per file "
             "(documentPath, collectionPath, filePath, rank, score, snippet, chunkIndex of the best "
             "chunk). Give a scope or a namespace: token. On error the envelope has searched=false "
             "and an 'error' code; never read that as 'no results'.",
             _schema(_SEARCH_ARGS, ["query"]), tool_search, E.SearchResult),
        Tool("search_chunks",
             "Find passages about X. Returns chunks (not deduplicated by file) with rank, score "
             "(hybrid by default: fused, with vectorScore/vectorRank/keywordScore/keywordRank), "
             "snippet, page and bbox (0..1 of the displayed page). Follow up with get_chunk "
             "for the full text and its neighbours.",
             _schema(_SEARCH_ARGS, ["query"]), tool_search_chunks, E.SearchResult),
        Tool("get_chunk",
             "Read one chunk (about 1000 characters; neighbours overlap by 150) with its page, bbox, "
             "start/end character offsets, and prevIndex/nextIndex to step through the document. "
             "Out of range answers found=false with totalChunks and the valid range; a file that failed, "
             "is encrypted or has no text answers found=false with status, reasonCode and message.",
             _schema({**_PATHS, "chunkIndex": {"type": "integer", "minimum": 0,
                                               "description": "0-based chunk index"}},
                     ["collectionPath", "filePath", "chunkIndex"]),
             tool_get_chunk, E.ChunkResult),
        Tool("read_document",
             "Read a document's whole extracted text (use this for a whole table or section, not "
             "chunk stepping). Paged: 'limit' characters from 'offset'; nextOffset is null at the end. "
             "A file that failed, is encrypted or has no text answers found=false with status, "
             "reasonCode and message (never an empty text).",
             _schema({**_PATHS,
                      "offset": {"type": "integer", "minimum": 0, "default": 0,
                                 "description": "character offset to start at"},
                      "limit": {"type": ["integer", "null"], "minimum": 1,
                                "description": f"characters to return (default {READ_LIMIT_DEFAULT})"}},
                     ["collectionPath", "filePath"]),
             tool_read_document, E.DocumentText),
        Tool("get_document",
             "Metadata and a short summary of a document node (never its text), with collectionPath "
             "and filePath for read_document.",
             _schema({"documentPath": {"type": "string", "minLength": 1,
                                       "description": "'<collectionPath>/_Documents/<slug>' as in search hits"}},
                     ["documentPath"]),
             tool_get_document, E.DocumentNode),
        Tool("list_documents",
             "List a collection's files (paged, sorted by filePath): documentPath for get_document, "
             "filePath for get_chunk/read_document, type, status and reason (failed/empty files "
             "too), pages, chunks, text encoding and OCR pages where recorded.",
             _schema({"collectionPath": _PATHS["collectionPath"],
                      "offset": {"type": "integer", "minimum": 0, "default": 0,
                                 "description": "documents to skip"},
                      "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": LIST_LIMIT_DEFAULT,
                                "description": "documents to return"}},
                     ["collectionPath"]),
             tool_list_documents, E.DocumentList),
        Tool("index_status",
             "What is indexed: collections, documents, chunks, vectors per model, stale vectors, failed "
             "files with reasons, and the embedding provider with its probe result.",
             _schema({"probe": {"type": "boolean", "default": True,
                                "description": "embed a fixed string to check the provider"}}, []),
             tool_index_status, E.IndexStatus),
    )
}


#: One validator per tool, built once at load: ``jsonschema.validate`` would
#: re-check the schema itself on every call (~1 ms; a built validator ~0.02 ms).
_VALIDATORS = {}


def _validator(tool: Tool):
    v = _VALIDATORS.get(tool.name)
    if v is None or v.schema is not tool.schema:
        cls = jsonschema.validators.validator_for(tool.schema)
        cls.check_schema(tool.schema)
        v = _VALIDATORS[tool.name] = cls(tool.schema)
    return v


for _tool in REGISTRY.values():
    _validator(_tool)


def _validate(tool: Tool, arguments: dict[str, Any]) -> None:
    try:
        error = jsonschema.exceptions.best_match(_validator(tool).iter_errors(arguments))
        if error is not None:
            raise error
    except jsonschema.ValidationError as e:
        where = ".".join(str(p) for p in e.absolute_path) or (
            e.message.split("'")[1] if e.validator in ("required", "additionalProperties") and "'" in e.message else "")
        raise ToolArgumentError(f"{tool.name}: argument {where!r}: {e.message}" if where
                                else f"{tool.name}: {e.message}") from None


def call_tool(engine: Engine, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``arguments`` against the tool's schema and run it.

    Returns:
        The tool's envelope (a plain dict, JSON-able, camelCase keys).

    Raises:
        ToolArgumentError: unknown tool, or arguments that break the schema
            (the message names the argument).
    """
    tool = REGISTRY.get(name)
    if tool is None:
        raise ToolArgumentError(f"unknown tool {name!r}; tools: {', '.join(REGISTRY)}")
    arguments = dict(arguments or {})
    _check_lengths(tool, arguments)
    _validate(tool, arguments)
    try:
        envelope = normalise(tool.fn(engine, **_integers(tool, arguments)))
    except StoreUnavailableError as e:
        envelope = normalise(_unavailable(name, arguments, str(e)))
    return redact_obj(envelope)  # engine.secrets: no configured secret leaves through any face


def _check_lengths(tool: Tool, arguments: dict[str, Any]) -> None:
    """Refuse a string longer than its schema's ``maxLength`` with a short message
    naming the argument (the schema validator's own message would repeat the value).

    Raises:
        ToolArgumentError: e.g. ``search: argument 'query': 60000 characters, the most is 50000``.
    """
    for arg, spec in tool.schema["properties"].items():
        value, most = arguments.get(arg), spec.get("maxLength")
        if most is not None and isinstance(value, str) and len(value) > most:
            raise ToolArgumentError(f"{tool.name}: argument {arg!r}: {len(value)} characters, the most is {most}")


def _unavailable(name: str, arguments: dict[str, Any], message: str) -> dict[str, Any]:
    """The tool's envelope when the index cannot be opened: ``error:
    index-unavailable`` with the store's reason, the tool's required keys kept."""
    fail = {"error": "index-unavailable", "message": message}
    a = arguments
    if name in ("search", "search_chunks"):
        return {"searched": False, "query": a.get("query", ""), "mode": a.get("mode", "auto"),
                "collections": [], **fail}
    if name == "get_chunk":
        return {"found": False, "collectionPath": a["collectionPath"], "filePath": a["filePath"],
                "chunkIndex": a["chunkIndex"], "totalChunks": 0, **fail}
    if name == "read_document":
        return {"found": False, "collectionPath": a["collectionPath"], "filePath": a["filePath"],
                "offset": a.get("offset", 0), **fail}
    if name == "get_document":
        return {"found": False, "documentPath": a["documentPath"], **fail}
    if name == "list_documents":
        return {"found": False, "collectionPath": a["collectionPath"], "offset": a.get("offset", 0), **fail}
    return {"collections": [], "documents": 0, "chunks": 0, "vectors": [], "staleVectors": 0,
            "failures": [], "provider": {"provider": "", "model": "", "dim": 0}, **fail}


def _integers(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema's ``integer`` admits ``3.0``; hand the tool ``3`` (a float
    index would break slicing and come back as ``3.0`` in the envelope)."""
    for arg, spec in tool.schema["properties"].items():
        kinds = spec.get("type")
        value = arguments.get(arg)
        if isinstance(value, float) and value.is_integer() and (
                kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds)):
            arguments[arg] = int(value)
    return arguments


def normalise(envelope: Any) -> Any:
    """The envelope as it travels: a JSON round trip of ``to_json`` (tuples
    become lists, floats keep their rounding)."""
    return json.loads(to_json(envelope))


def to_json(envelope: Any, indent: int | None = None) -> str:
    """The one serialisation of an envelope: keys in insertion order, UTF-8
    kept, ``None`` as ``null``; absent optional keys stay absent."""
    return json.dumps(envelope, ensure_ascii=False, indent=indent)


# CLI subcommand spelling of each tool and how arguments map to argv.
CLI_NAMES = {
    "search": "search",
    "search_chunks": "search-chunks",
    "get_chunk": "get-chunk",
    "read_document": "read",
    "get_document": "node",
    "list_documents": "documents",
    "index_status": "status",
}
CLI_POSITIONAL = {
    "search": ["query"],
    "search_chunks": ["query"],
    "get_chunk": ["collectionPath", "filePath", "chunkIndex"],
    "read_document": ["collectionPath", "filePath"],
    "get_document": ["documentPath"],
    "list_documents": ["collectionPath"],
    "index_status": [],
}


def cli_option(arg: str) -> str:
    """``chunkIndex`` -> ``--chunk-index``."""
    return "--" + "".join("-" + c.lower() if c.isupper() else c for c in arg)


def cli_command(name: str, arguments: dict[str, Any], settings: Any = None) -> str:
    """The ``chunknav`` command line equivalent to a tool call (JSON output).

    Args:
        name: a ``REGISTRY`` tool name.
        arguments: the call's arguments.
        settings: the ``Settings`` of the index the call ran on; when given,
            the command names that index so it runs from any directory:
            ``--dsn`` without its password (``engine.secrets.public_dsn``) for
            Postgres, else ``--db`` with the absolute path of the SQLite file.
    """
    parts = ["chunknav"]
    if settings is not None:
        if getattr(settings, "dsn", ""):
            parts += ["--dsn", public_dsn(settings.dsn)]
        elif getattr(settings, "db", "") and settings.db != ":memory:":
            import os

            parts += ["--db", os.path.abspath(settings.db)]
    parts.append(CLI_NAMES[name])
    for arg in CLI_POSITIONAL[name]:
        if arg in arguments:
            parts.append(str(arguments[arg]))
    for arg, value in arguments.items():
        if arg in CLI_POSITIONAL[name] or value is None:
            continue
        if isinstance(value, bool):
            if arg == "probe" and not value:
                parts.append("--no-probe")
            continue
        for item in (value if isinstance(value, list) else [value]):
            parts += [cli_option(arg), str(item)]
    if name == "index_status":
        parts.append("--json")
    return " ".join(shlex.quote(p) for p in parts)
