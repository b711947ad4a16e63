"""The search tools: pages of hits, their neighbours, and answers cut to a token budget.

Owns ``tool_search`` and ``tool_search_chunks``: a page of hits from ``cursor`` on
(the search runs again and the page is its slice: every page of one cursor ranks
at the first page's depth and mode, so pages neither repeat nor skip a hit), the
``neighbours`` context of each hit (merged spans of chunks around it), the heading
path of each hit (``engine.search.headings``), and the budget ladder (``_fit``):
context cut to a query-focused snippet, then context and regions dropped with
shorter snippets, then fewer hits; with ``truncated``, ``omitted`` and ``cursor``.
The envelope of one hit is ``engine.tools.answers``' (``_search_envelope``); the
token rule and cursors are ``engine.tools.budget``'s. Imports no face (streamlit, mcp,
argparse).
"""

from __future__ import annotations

from typing import Any

from engine.tools import envelopes as E
from engine.tools.answers import _search_envelope
from engine.tools.operations import mark_missing
from engine.tools.budget import (
    MAX_TOKENS_DEFAULT,
    args_digest,
    collection_stamp,
    count_tokens,
    fit_count,
    make_cursor,
    read_cursor,
)
from engine.search.headings import HEADINGS_KEY, chunk_heading_path
from engine.search.snippets import make_snippet, shown_terms
from engine.service import Engine
from engine.values import Chunk

__all__ = ["tool_search", "tool_search_chunks", "NEIGHBOURS_MOST", "CONTEXT_SNIPPET_CHARS"]

#: Most chunks of context on each side of a hit (``neighbours``).
NEIGHBOURS_MOST = 10
#: Characters a hit's context is cut to (around the query's first term) when the budget is short.
CONTEXT_SNIPPET_CHARS = 480
#: Characters a hit's snippet is cut to on the last rung of the budget ladder.
SHORT_SNIPPET_CHARS = 120
#: Characters of a snippet on the ladder's last rung, where a hit keeps only what locates it.
BARE_SNIPPET_CHARS = 60


def tool_search(
    engine: Engine,
    query: str,
    scope: str | list[str] | None = None,
    limit: int = 20,
    mode: str = "auto",
    minScore: float | None = None,
    vectorWeight: float | None = None,
    maxTokens: int | None = None,
    cursor: str | None = None,
    modified: str | None = None,
    heading: str | None = None,
) -> E.SearchResult:
    """``search``: one hit per file (its best chunk), ranked over the scoped collections."""
    args = {"query": query, "scope": scope, "mode": mode, "minScore": minScore, "vectorWeight": vectorWeight}
    args.update({"modified": modified, "heading": heading})
    return _page(engine, "search", args, limit, maxTokens, cursor, 0, True)


def tool_search_chunks(
    engine: Engine,
    query: str,
    scope: str | list[str] | None = None,
    limit: int = 20,
    mode: str = "auto",
    minScore: float | None = None,
    vectorWeight: float | None = None,
    maxTokens: int | None = None,
    cursor: str | None = None,
    neighbours: int = 0,
    modified: str | None = None,
    heading: str | None = None,
) -> E.SearchResult:
    """``search_chunks``: one hit per chunk, not deduplicated by file; ``neighbours`` chunks of
    context on each side of each hit."""
    args = {"query": query, "scope": scope, "mode": mode, "minScore": minScore, "vectorWeight": vectorWeight}
    args.update({"modified": modified, "heading": heading, "neighbours": neighbours or None})
    return _page(engine, "search_chunks", args, limit, maxTokens, cursor, neighbours, False)


def _page(
    engine: Engine,
    tool: str,
    args: dict[str, Any],
    limit: int,
    max_tokens: int | None,
    cursor: str | None,
    neighbours: int,
    per_file: bool,
) -> E.SearchResult:
    """One page of a search answer, within the budget.

    Raises:
        engine.tools.budget.CursorError: a cursor not made for this tool and these arguments.
    """
    digest = args_digest(args)
    budget = max_tokens if max_tokens is not None else MAX_TOKENS_DEFAULT[tool]
    first, depth, mode = 0, None, args["mode"]
    if cursor:
        c = read_cursor(cursor, tool, digest)
        first, depth, mode = c["p"], c.get("d"), c.get("m", mode)
        if collection_stamp(engine.store, c.get("c", [])) != c["s"]:
            return _stale(args, mode, c.get("c", []))
    # search_chunks asks one hit more than the page, to know whether a next page exists
    want = first + limit + (0 if per_file else 1)
    outcome = engine.search.search(
        args["query"],
        args["scope"],
        want,
        mode,
        per_file=per_file,
        min_score=args["minScore"],
        vector_weight=args["vectorWeight"],
        depth=depth,
        modified=args["modified"],
        heading=args["heading"],
    )
    heads = _Heads(engine)
    out = mark_missing(engine, _search_envelope(outcome, per_file, first, heads, engine))
    if "hits" not in out:
        return out
    hits = out["hits"][:limit]
    more = len(out["hits"]) > limit or (per_file and len(outcome.hits) >= want)
    chunks = [r.chunk for r in outcome.hits[first : first + limit]]
    if neighbours > 0:
        _add_context(engine, hits, chunks, neighbours)
    out["hits"], out["count"] = hits, len(hits)
    stamp = collection_stamp(engine.store, outcome.collections)
    extra: dict[str, Any] = {"m": outcome.mode, "c": list(outcome.collections)}
    if outcome.depth is not None:
        extra["d"] = outcome.depth

    def next_cursor(position: int) -> str:
        return make_cursor(tool, digest, position, stamp, **extra)

    return _fit(out, int(budget or 0), first, more, next_cursor, shown_terms(outcome.terms))


def _stale(args: dict[str, Any], mode: str, collections: list[str]) -> E.SearchResult:
    """The answer to a cursor made before an index run changed its collections."""
    return {
        "searched": False,
        "query": args["query"],
        "mode": mode,
        "collections": list(collections),
        "error": "stale-cursor",
        "message": "the collections changed (an index run) since this cursor was made; "
        "search again without 'cursor' to page through the current index",
    }


class _Heads:
    """The heading path of a chunk, reading each document's recorded headings once."""

    def __init__(self, engine: Engine) -> None:
        self._store = engine.store
        self._rows: dict[tuple[str, str], Any] = {}

    def __call__(self, chunk: Chunk) -> list[str]:
        key = (chunk.collection_path, chunk.file_path)
        if key not in self._rows:
            doc = self._store.get_document(*key)
            self._rows[key] = (doc.metadata or {}).get(HEADINGS_KEY) if doc is not None else None
        return chunk_heading_path(self._rows[key], chunk.start, chunk.end) if self._rows[key] else []


def _stitch(chunks: list[Chunk]) -> tuple[int, int, str]:
    """``(start, end, text)`` of consecutive chunks of one document, their overlaps given once."""
    text, end = chunks[0].chunk_text, chunks[0].end
    for c in chunks[1:]:
        text += c.chunk_text[max(0, end - c.start) :]
        end = max(end, c.end)
    return chunks[0].start, end, text


def _add_context(engine: Engine, hits: list[dict[str, Any]], chunks: list[Chunk], k: int) -> None:
    """Give each hit up to ``k`` chunks before and after it as one merged ``context`` span.

    Windows ``[i - k, i + k]`` of hits in one document that overlap or touch merge into one
    span, carried by the best-ranked hit in it; the other hits in it carry ``contextOf`` (the
    rank of that hit), so no chunk's text is given twice in one answer.
    """
    k = min(k, NEIGHBOURS_MOST)
    by_doc: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(chunks):
        by_doc.setdefault((c.collection_path, c.file_path), []).append(i)
    for (cp, fp), members in by_doc.items():
        total = engine.store.chunk_count(cp, fp)
        windows = sorted(
            (max(0, chunks[i].chunk_index - k), min(total - 1, chunks[i].chunk_index + k), i) for i in members
        )
        spans: list[list[Any]] = []  # [lo, hi, [hit positions]]
        for lo, hi, i in windows:
            if spans and lo <= spans[-1][1] + 1:
                spans[-1][1] = max(spans[-1][1], hi)
                spans[-1][2].append(i)
            else:
                spans.append([lo, hi, [i]])
        for lo, hi, inside in spans:
            owner = min(inside)  # best rank: hits are in rank order
            parts = [engine.store.get_chunk(cp, fp, j) for j in range(lo, hi + 1)]
            if any(p is None for p in parts):
                continue  # the document was replaced meanwhile: no context rather than a wrong one
            start, end, text = _stitch([p for p in parts if p is not None])
            hits[owner]["context"] = {"fromIndex": lo, "toIndex": hi, "start": start, "end": end, "text": text}
            for i in inside:
                if i != owner:
                    hits[i]["contextOf"] = hits[owner]["rank"]


def _fit(
    out: E.SearchResult, budget: int, first: int, more: bool, next_cursor: Any, terms: tuple[str, ...]
) -> E.SearchResult:
    """``out`` within ``budget`` tokens (``engine.tools.budget.count_tokens``).

    The ladder: as it is; each context cut to ``CONTEXT_SNIPPET_CHARS`` around the query's
    first term; contexts and regions dropped and snippets cut to ``SHORT_SNIPPET_CHARS``;
    hits reduced to what locates and ranks them (``_bare``); then the fewest hits dropped
    from the end. The echoed ``query`` is not counted (the
    caller sent it). Anything cut sets ``truncated: true``;
    hits dropped are counted in ``omitted`` and the ``cursor`` starts at the first of them.
    A page that was not cut carries ``cursor`` when a next page may exist.
    """
    hits: list[dict[str, Any]] = out.get("hits", [])
    n = len(hits)
    if _cost({**out, "cursor": next_cursor(first + n)} if more else dict(out)) <= budget:
        if more:
            out["cursor"] = next_cursor(first + n)
        return out
    rungs = (_context_snippets, _lean, _bare)
    for rung in rungs:
        hits = [rung(h, terms) for h in hits]
        shrunk = {**out, "hits": hits, "truncated": True}
        if more:
            shrunk["cursor"] = next_cursor(first + n)
        if _cost(shrunk) <= budget:
            return shrunk  # type: ignore[return-value]

    def build(m: int) -> dict[str, Any]:
        return {
            **out,
            "count": m,
            "hits": hits[:m],
            "truncated": True,
            "omitted": n - m,
            "cursor": next_cursor(first + m),
        }

    kept = fit_count(lambda m: {**build(m), "query": ""}, n, budget)
    answer = build(kept)
    if kept == 0 and n:
        answer["message"] = f"maxTokens {budget} cannot hold one hit here; ask with a larger maxTokens"
    return answer  # type: ignore[return-value]


def _cost(out: dict[str, Any]) -> int:
    """Tokens of a search answer, its ``query`` (the caller's own words, echoed) not counted."""
    return count_tokens({**out, "query": ""})


def _context_snippets(hit: dict[str, Any], terms: tuple[str, ...]) -> dict[str, Any]:
    """The hit with its context cut to a query-focused snippet."""
    if "context" not in hit:
        return hit
    ctx = dict(hit["context"])
    ctx["text"] = make_snippet(ctx["text"], terms, CONTEXT_SNIPPET_CHARS)
    ctx["cut"] = True
    return {**hit, "context": ctx}


#: Keys a hit keeps on the last rung of the ladder (what locates it and ranks it).
_BARE_KEYS = ("documentPath", "collectionPath", "filePath", "chunkIndex", "rank", "score", "snippet", "page")


def _bare(hit: dict[str, Any], terms: tuple[str, ...]) -> dict[str, Any]:
    """The hit with only what locates and ranks it, its snippet cut to ``BARE_SNIPPET_CHARS``."""
    h = {k: hit[k] for k in _BARE_KEYS if k in hit}
    h["snippet"] = make_snippet(hit["snippet"].strip("…"), terms, BARE_SNIPPET_CHARS)
    return h


def _lean(hit: dict[str, Any], terms: tuple[str, ...]) -> dict[str, Any]:
    """The hit without context and regions, its snippet cut to ``SHORT_SNIPPET_CHARS``."""
    h = {k: v for k, v in hit.items() if k not in ("context", "regions")}
    h["snippet"] = make_snippet(hit["snippet"].strip("…"), terms, SHORT_SNIPPET_CHARS)
    return h
