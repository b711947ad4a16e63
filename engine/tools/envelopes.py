"""Wire envelopes: one TypedDict per tool with the exact DESIGN.md keys.

Owns: the camelCase JSON shapes every face (Python, CLI, MCP, GUI) returns.
Only ``engine/tools/registry.py`` builds them. Exempt from the mixedCase lint rule;
nothing else renames keys. No ``from __future__ import annotations`` here: on
3.11 it hides ``NotRequired`` from ``__required_keys__`` (checked in tests).

Units: ``start``/``end``/``offset``/``limit``/``totalLength`` are characters;
``page`` is 1-based; ``bbox`` fields are 0..1 fractions of the displayed page,
origin top-left; ``score`` is cosine similarity (``scoreKind: "cosine"``),
``-bm25`` (``"bm25"``) or reciprocal-rank fusion (``"rrf"``), rounded to 6
decimals; times are seconds since the epoch.
"""

from typing import Any, NotRequired, TypedDict

__all__ = [
    "BboxDict",
    "RegionDict",
    "SearchHit",
    "ChunkHit",
    "SearchResult",
    "ChunkResult",
    "DocumentText",
    "DocumentNode",
    "DocumentEntry",
    "DocumentList",
    "CollectionStatus",
    "ModelVectors",
    "FailedFile",
    "NotedFile",
    "ProviderStatus",
    "IndexStatus",
    "FailureFields",
    "EmbedFailedChunk",
    "Provenance",
    "PlanFile",
    "PlanMove",
    "IndexPlan",
    "CoverageRow",
    "Coverage",
    "ContextSpan",
    "CancelIndexResult",
]


class BboxDict(TypedDict):
    x: float
    y: float
    w: float
    h: float


class RegionDict(TypedDict):
    page: int
    bbox: BboxDict  # union of the chunk's words on the page
    rects: NotRequired[list[BboxDict]]  # one per line of the chunk's words: what a highlight draws
    ocr: NotRequired[bool]  # the words on this page came from OCR
    ocrConfidence: NotRequired[float]  # mean Tesseract word confidence of the page, 0..100


class FailureFields(TypedDict):
    """Fields an envelope carries when an embedding call was refused."""

    error: str
    message: str
    endpoint: NotRequired[str]
    model: NotRequired[str]
    statusCode: NotRequired[int | None]
    responseBody: NotRequired[str]
    storedDim: NotRequired[int]  # embedding-dimension-changed: dim of the vectors stored for model
    serverDim: NotRequired[int]  # embedding-dimension-changed: dim the server answers now
    whoFixes: NotRequired[str]  # who can act, where WHO_FIXES of the code says otherwise (an exhausted quota)


class Provenance(TypedDict, total=False):
    """Where a chunk is, as hits and get_chunk carry it (keys of ``ChunkHit`` and ``ChunkResult``)."""

    page: int
    pageLabel: str
    bbox: BboxDict
    regions: list[RegionDict]
    ocr: bool


class ContextSpan(TypedDict):  # search_chunks neighbours: the chunks around a hit, merged
    fromIndex: int  # first chunk of the span
    toIndex: int  # last chunk of the span (inclusive)
    start: int  # characters into the extracted text
    end: int  # end exclusive
    text: str  # the span's text, overlaps given once
    cut: NotRequired[bool]  # true: text is a query-focused snippet of the span (budget)


class SearchHit(TypedDict):  # search: one hit per file
    documentPath: str
    collectionPath: str
    filePath: str
    rank: int  # 0-based, best first, over all searched collections
    score: float
    snippet: str
    chunkIndex: NotRequired[int]  # the best chunk of the file
    page: NotRequired[int]
    pageLabel: NotRequired[str]
    bbox: NotRequired[BboxDict]
    ocr: NotRequired[bool]  # some words came from OCR
    lastModified: NotRequired[float]  # the file's mtime, epoch seconds
    headingPath: NotRequired[list[str]]  # headings the chunk sits under, outermost first
    lineStart: NotRequired[int]  # text, Markdown, HTML: 1-based first line of the chunk in the extracted text
    lineEnd: NotRequired[int]  # its last line (inclusive)
    fileState: NotRequired[str]  # current | changed | missing: the file now against what was indexed
    vectorScore: NotRequired[float]  # hybrid: cosine in the vector list
    vectorRank: NotRequired[int]  # hybrid: 0-based rank in the vector list
    keywordScore: NotRequired[float]  # hybrid: -bm25 in the keyword list
    keywordRank: NotRequired[int]  # hybrid: 0-based rank in the keyword list
    missing: NotRequired[bool]  # the file is gone; the document was kept (keep_missing)
    match: NotRequired[float]  # 0..1: max(wordCoverage, calibrated cosine) (docs/tools.md)
    wordCoverage: NotRequired[float]  # 0..1: share of the query's content words the chunk holds


class ChunkHit(TypedDict):  # search_chunks: one hit per chunk, not deduped
    documentPath: str
    collectionPath: str
    filePath: str
    chunkIndex: int
    rank: int
    score: float
    snippet: str
    page: NotRequired[int]
    pageLabel: NotRequired[str]
    bbox: NotRequired[BboxDict]
    regions: NotRequired[list[RegionDict]]
    ocr: NotRequired[bool]  # some words came from OCR (regions say which pages)
    lastModified: NotRequired[float]  # the file's mtime, epoch seconds
    headingPath: NotRequired[list[str]]  # headings the chunk sits under, outermost first
    context: NotRequired[ContextSpan]  # neighbours > 0: the merged chunks around this hit
    contextOf: NotRequired[int]  # neighbours > 0: rank of the hit whose context holds this one
    lineStart: NotRequired[int]  # text, Markdown, HTML: 1-based first line of the chunk in the extracted text
    lineEnd: NotRequired[int]  # its last line (inclusive)
    fileState: NotRequired[str]  # current | changed | missing: the file now against what was indexed
    vectorScore: NotRequired[float]  # hybrid only; absent where the vector list lacked the chunk
    vectorRank: NotRequired[int]
    keywordScore: NotRequired[float]  # hybrid only; absent where the keyword list lacked the chunk
    keywordRank: NotRequired[int]
    match: NotRequired[float]  # 0..1: max(wordCoverage, calibrated cosine) (docs/tools.md)
    wordCoverage: NotRequired[float]  # 0..1: share of the query's content words the chunk holds


class SearchResult(TypedDict):  # search, search_chunks
    searched: bool
    query: str
    mode: str  # vector | keyword | hybrid
    collections: list[str]  # the collections searched
    count: NotRequired[int]  # absent on every failure arm
    hits: NotRequired[list[Any]]  # SearchHit | ChunkHit; absent on failure arms
    scoreKind: NotRequired[str]  # cosine | bm25 | rrf
    model: NotRequired[str]
    vectorWeight: NotRequired[float]  # hybrid: the fusion weight used
    minScore: NotRequired[float]  # the threshold applied
    confident: NotRequired[bool]  # searched: a hit's match reaches the floor; false: message says so
    hint: NotRequired[str]
    error: NotRequired[str]  # an ErrorCode
    message: NotRequired[str]
    endpoint: NotRequired[str]
    statusCode: NotRequired[int | None]
    responseBody: NotRequired[str]
    storedDim: NotRequired[int]  # embedding-dimension-changed
    serverDim: NotRequired[int]  # embedding-dimension-changed
    whoFixes: NotRequired[str]  # who can act, where WHO_FIXES of the code says otherwise
    truncated: NotRequired[bool]  # true: cut to maxTokens (shorter contexts/snippets, fewer hits)
    omitted: NotRequired[int]  # hits of this page left out by maxTokens
    cursor: NotRequired[str]  # pass back as 'cursor' for the next page


class ChunkResult(TypedDict):  # get_chunk
    found: bool
    collectionPath: str
    filePath: str
    chunkIndex: int
    totalChunks: int
    documentPath: NotRequired[str]
    text: NotRequired[str]
    start: NotRequired[int]  # char offset into extracted text; end exclusive
    end: NotRequired[int]
    page: NotRequired[int]  # 1-based, PDFs only
    pageLabel: NotRequired[str]
    bbox: NotRequired[BboxDict]  # 0..1 of the displayed page, top-left origin
    regions: NotRequired[list[RegionDict]]
    prevIndex: NotRequired[int | None]
    nextIndex: NotRequired[int | None]
    chunkId: NotRequired[str]
    overlapPrev: NotRequired[int]  # characters shared with the previous chunk
    overlapNext: NotRequired[int]  # characters shared with the next chunk
    lineStart: NotRequired[int]  # text, Markdown, HTML: 1-based first line of the chunk in the extracted text
    lineEnd: NotRequired[int]  # its last line (inclusive)
    fileState: NotRequired[str]  # current | changed | missing: the file now against what was indexed
    message: NotRequired[str]  # found False: names the valid range
    error: NotRequired[str]
    # found False on a failed / encrypted / empty file: its status and recorded reason code
    status: NotRequired[str]  # failed | empty
    reasonCode: NotRequired[str]  # engine.errors.ExtractReason
    ocr: NotRequired[bool]  # some of the chunk's words came from OCR (regions carry ocr: true)
    stale: NotRequired[bool]  # true: the file changed on disk or vanished since it was indexed
    indexedAt: NotRequired[float]  # with stale: when the indexed version was read (epoch seconds)
    staleReason: NotRequired[str]  # with stale: "code: reason" when the last run could not read the file
    headingPath: NotRequired[list[str]]  # headings the chunk sits under, outermost first
    truncated: NotRequired[bool]  # true: text cut to maxTokens
    omitted: NotRequired[int]  # characters of text left out
    cursor: NotRequired[str]  # pass back as 'cursor' for the rest


class DocumentText(TypedDict):  # read_document
    found: bool
    collectionPath: str
    filePath: str
    offset: int  # characters
    totalLength: NotRequired[int]  # characters of the whole extracted text
    text: NotRequired[str]
    nextOffset: NotRequired[int | None]  # None at the end
    documentPath: NotRequired[str]
    message: NotRequired[str]
    error: NotRequired[str]
    status: NotRequired[str]  # found False: failed | empty
    reasonCode: NotRequired[str]  # found False: engine.errors.ExtractReason
    truncated: NotRequired[bool]  # true: text cut to maxTokens (nextOffset is where it stopped)
    omitted: NotRequired[int]  # characters of the page left out
    cursor: NotRequired[str]  # pass back as 'cursor' for the rest


class DocumentNode(TypedDict):  # get_document: metadata + summary, never the text
    found: bool
    documentPath: str
    collectionPath: NotRequired[str]
    filePath: NotRequired[str]
    fileType: NotRequired[str]
    status: NotRequired[str]  # indexed | empty | failed
    reason: NotRequired[str]
    contentHash: NotRequired[str]
    sizeBytes: NotRequired[int]
    lastModified: NotRequired[float]
    indexedAt: NotRequired[float]
    pageCount: NotRequired[int]
    chunkCount: NotRequired[int]
    textLength: NotRequired[int]
    summary: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]
    aliases: NotRequired[list[str]]  # filePaths of symlinks in the same root to this file (one document)
    message: NotRequired[str]
    error: NotRequired[str]
    reasonCode: NotRequired[str]  # failed / empty: engine.errors.ExtractReason


class DocumentEntry(TypedDict):  # one row of list_documents
    documentPath: str
    filePath: str
    fileType: str
    status: str  # indexed | empty | failed
    pageCount: int
    chunkCount: int
    textLength: int  # characters
    sizeBytes: int
    reason: NotRequired[str]
    encoding: NotRequired[str]  # text files: the encoding the bytes were decoded with
    ocrPages: NotRequired[list[int]]  # 1-based pages whose text came from OCR
    aliases: NotRequired[list[str]]  # filePaths of symlinks in the same root to this file (one document)


class DocumentList(TypedDict):  # list_documents
    found: bool
    collectionPath: str
    offset: int
    total: NotRequired[int]  # documents in the collection
    count: NotRequired[int]  # documents in this page
    documents: NotRequired[list[DocumentEntry]]
    nextOffset: NotRequired[int | None]  # None at the end
    message: NotRequired[str]
    error: NotRequired[str]
    truncated: NotRequired[bool]  # true: fewer entries than asked, to fit maxTokens
    omitted: NotRequired[int]  # entries of this page left out
    cursor: NotRequired[str]  # pass back as 'cursor' for the next page


class CollectionStatus(TypedDict):
    collectionPath: str
    root: str
    documents: int
    chunks: int
    failed: int
    passwordRef: NotRequired[str]  # env:NAME or file:/path the PDF password is read from; never the password
    indexed: NotRequired[int]  # documents with text, searchable (stale ones included)
    empty: NotRequired[int]  # documents without text (reason recorded)
    stale: NotRequired[int]  # indexed documents kept while their file cannot be read (or changed)


class ModelVectors(TypedDict):
    model: str
    dim: int
    vectors: int
    stale: int  # vectors whose chunk vanished
    missing: int  # chunks without a vector for this model
    truncated: NotRequired[int]  # chunks whose vector was made from their text cut to the model's limit
    failed: NotRequired[int]  # chunks the embed pass could not embed (see IndexStatus.embedFailures)
    serving: NotRequired[bool]  # true: searches use this model's vectors now (the configured one once it covers)


class FailedFile(TypedDict):
    collectionPath: str
    filePath: str
    status: str  # failed | empty | stale (kept: its file could not be read this run)
    reason: str


class NotedFile(TypedDict):  # index_status notes: indexed files whose extraction said something
    collectionPath: str
    filePath: str
    notes: list[str]  # e.g. "decoded as big5 (detected, confidence 1.00), not UTF-8"
    encoding: NotRequired[str]  # text files: codec used
    encodingConfidence: NotRequired[float]  # 0..1 (engine/extract/text.py Decoded)


class ProviderStatus(TypedDict):
    provider: str  # local | ollama | openai | none
    model: str
    dim: int
    endpoint: NotRequired[str]
    probe: NotRequired[dict[str, Any]]  # {"ok": true, "seconds"} or failure fields


class EmbedFailedChunk(TypedDict):  # index_status.embedFailures: one chunk the embed pass could not embed
    model: str
    collectionPath: str
    filePath: str
    chunkIndex: int
    chunkId: str
    error: str  # the classified code of the last refusal
    reason: str  # its message


class IndexStatus(TypedDict):  # index_status
    collections: list[CollectionStatus]
    documents: int
    chunks: int
    vectors: list[ModelVectors]
    staleVectors: int
    failures: list[FailedFile]
    provider: ProviderStatus
    notes: NotRequired[list[NotedFile]]
    lastRun: NotRequired[dict[str, Any] | None]
    error: NotRequired[str]  # index-unavailable
    message: NotRequired[str]
    embedFailures: NotRequired[list[EmbedFailedChunk]]  # chunks without a vector, with the reason
    readOnly: NotRequired[bool]  # true: the index was opened read-only (reads work, an index run is refused)
    readOnlyReason: NotRequired[str]  # why: "its directory ... is not writable", "no space left on the disk ..."


class PlanFile(TypedDict):  # plan_index: one file in a list of the plan
    collectionPath: str
    filePath: str
    code: NotRequired[str]  # reason code (skipped, stale, missing)
    reason: NotRequired[str]  # for people: why the file is in this list


# "from" is a Python keyword: the functional form keeps the wire key.
PlanMove = TypedDict("PlanMove", {"collectionPath": str, "from": str, "to": str})


class IndexPlan(TypedDict):  # plan_index, chunknav index --dry-run
    dryRun: bool  # always true: nothing was written
    collections: list[str]
    force: bool
    keepMissing: bool
    filesSeen: int
    counts: dict[str, int]  # add, change, rename, remove, missing, unchanged, stale, skipped
    add: list[PlanFile]  # read and stored: no row yet
    change: list[PlanFile]  # read again: bytes, settings or a stale mark moved
    rename: list[PlanMove]  # row, chunks and vectors moved to the new path; nothing read
    remove: list[PlanFile]  # the file is gone: row and chunks removed (vectors stay)
    missing: list[PlanFile]  # the file is gone: kept, marked missing (keepMissing)
    unchanged: list[PlanFile]
    stale: list[PlanFile]  # cannot be read now: kept, marked stale
    skipped: list[PlanFile]  # passed over with a reason code
    rootErrors: list[dict[str, Any]]
    truncated: NotRequired[bool]  # a list was cut at limit (counts stay whole)
    limit: NotRequired[int]
    seconds: NotRequired[float]
    error: NotRequired[str]  # not-found (unknown collection), index-unavailable
    message: NotRequired[str]


class CoverageRow(TypedDict):  # coverage: one collection and file type ("*": the collection)
    collectionPath: str
    fileType: str  # suffix without the dot, lower case; "" none; "*" all
    filesSeen: int
    indexed: int
    empty: int
    failed: int
    stale: int
    missing: int
    notIndexed: int
    skipped: dict[str, int]  # reason code -> files
    chunks: int
    vectors: dict[str, int]  # model -> chunks with a vector of it


class Coverage(TypedDict):  # coverage
    collections: list[str]
    models: list[str]
    rows: list[CoverageRow]
    rootErrors: list[dict[str, Any]]
    error: NotRequired[str]  # not-found (unknown collection), index-unavailable
    message: NotRequired[str]


class CancelIndexResult(TypedDict):  # cancel_index
    requested: bool  # true: a running index run was asked to stop
    status: str  # that run's status (running), the last run's (finished, cancelled, interrupted, ...), or none
    message: str
    runId: NotRequired[str]  # the run found (running or last)
    startedAt: NotRequired[str]
    error: NotRequired[str]  # index-unavailable: the request could not be written
