"""Hybrid ranking: the two lists, the keyword worker pool, and the fusion over chunks or row ids.

Owns ``HybridRanker``, the collaborator ``engine.search.searcher.ContentChunkSearch``
holds for hybrid searches. It ranks the vector and keyword lists (one after the
other, or the keyword list on the ``chunknav-hybrid`` worker pool that then helps
score the vector scan's blocks, ``engine.store.scan_share``; which one is timed by
``_HYBRID_CHOICE``), fuses them with ``engine.search.fusion.fuse`` (the formula lives
there alone), and over a store that ranks by row id (``search_vector_refs`` /
``search_keyword_refs`` / ``chunks_at``, plus ``chunk_files`` for one hit per file)
reads the fused rows once, for their texts: the exact-word tier of the fusion needs each
candidate's coverage of the query's content words (``engine.search.words``). Also
``fuse_chunks`` (the fusion of two lists of chunks) and ``_hybrid_pool``.

Tuning points (tests and benches set them on this module): ``_HYBRID_CHOICE``, and
``LARGE_SCAN_ROWS`` / ``ScanShare`` as imported here. Imports ``engine.store.threads``
and ``engine.store.scan_share`` (numpy only on first use, ``engine.lazy``); never a
store backend or a face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from engine.search.fusion import (
    FUSION_DEPTH,
    RRF_K,
    VECTOR_WEIGHT_DEFAULT,
    Fused,
    fuse,
    in_tie_order,
    with_coverage,
)
from engine.search.per_file import one_per_file
from engine.search.words import content_words, coverage
from engine.store.scan_share import ScanShare
from engine.store.threads import LARGE_SCAN_ROWS, ThreadChoice
from engine.values import Chunk, RankedChunk

__all__ = ["HybridRanker", "VectorHits", "fuse_chunks"]

_POOL: ThreadPoolExecutor | None = None  # see _hybrid_pool
_POOL_LOCK = threading.Lock()

#: How a hybrid search over a large full scan ranks its two lists, chosen by timing
#: (``engine.store.threads.ThreadChoice``): 1 = one after the other on the calling thread;
#: 2 = the keyword list on a worker thread that then helps score the vector scan's
#: blocks (``engine.store.scan_share``). Faster of the two per row, the other re-timed now and then.
_HYBRID_CHOICE = ThreadChoice()

#: ``vector_hits(text, collections, depth, embedder, refs)``: embed the query and scan, best
#: first; the store's ``VectorHit`` list, or its ``(rowid, chunk_id, score)`` tuples when ``refs``.
VectorHits = Callable[[str, "list[str] | None", int, Any, bool], list[Any]]


class _RowsChanged(Exception):
    """A writer changed a fused row between ranking and reading: rank again over chunks."""


def _chunk_key(chunk: Chunk) -> tuple[str, str, int]:
    return (chunk.collection_path, chunk.file_path, chunk.chunk_index)


def _ranked(f: Fused[Any], chunk: Chunk) -> RankedChunk:
    return RankedChunk(chunk, f.score, f.vector_score, f.vector_rank, f.keyword_score, f.keyword_rank, f.coverage)


def _coverage_of(words: frozenset[str]) -> Callable[[Chunk], float | None]:
    """A chunk's coverage of ``words`` (None for a query without content words: no tier)."""
    return lambda chunk: coverage(words, chunk.chunk_text) if words else None


def fuse_chunks(
    vector: Sequence[tuple[Chunk, float]],
    keyword: Sequence[tuple[Chunk, float]],
    vector_weight: float = VECTOR_WEIGHT_DEFAULT,
    k: int = RRF_K,
    query: str = "",
) -> list[RankedChunk]:
    """``engine.search.fusion.fuse`` of two lists of chunks, best first.

    Args:
        vector: ``(chunk, cosine)`` best first.
        keyword: ``(chunk, -bm25)`` best first.
        vector_weight: w in 0..1 (see ``engine.search.fusion``).
        k: the RRF constant.
        query: the query text: each chunk's coverage of its content words decides the
            exact-word tier ("": no tier).

    Returns:
        One ``RankedChunk`` per distinct chunk key (collection, file, index) with its
        fused score, coverage and both lists' scores and 0-based ranks; in the fusion's
        order and tie rules (equal keys in chunk key order).
    """
    words = frozenset(content_words(query))
    return [
        _ranked(f, f.item)
        for f in fuse(vector, keyword, vector_weight, _chunk_key, k, tie=_chunk_key, coverage=_coverage_of(words))
    ]


class HybridRanker:
    """The hybrid lists of one store and their fusion.

    Args:
        store: the Store; its row-id searches are used when it has them (looked up per
            call, so a store may lack them).
        vector_hits: the searcher's embed-and-scan (``VectorHits``).

    State: the rows the last hybrid search's vector scan read (0: none yet), which
    decides whether the next one times its two ways of ranking (``_HYBRID_CHOICE``).
    """

    def __init__(self, store: Any, vector_hits: VectorHits) -> None:
        self.store = store
        self._vector_hits = vector_hits
        self._last_scan_rows = 0

    def _by_row_ids(self) -> bool:
        """True when the store's row-id searches are cheap (its declared ``row_refs``)."""
        return bool(self.store.row_refs)

    def ranked(
        self, text: str, collections: list[str] | None, depth: int, embedder: Any, weight: float, want: int
    ) -> list[RankedChunk]:
        """The best ``want`` fused chunks of the top ``depth`` of each list.

        Over a store's row ids the fused rows are read once (their texts decide the
        exact-word tier); the hits, order and breakdown are those of fusing the two lists
        of chunks (a chunk is one row).

        Raises:
            EmbedError: the provider refused, or the model's dimension changed.
        """
        if self._by_row_ids():
            try:
                fused, seen = self._fused_refs(text, collections, depth, embedder, weight)
                rows = self._rows(fused, seen)
                ordered = self._in_order(fused, rows, text)
                return [_ranked(f, rows[f.item]) for f in ordered[:want]]
            except _RowsChanged:
                pass
        vec, kw = self.lists(text, collections, depth, embedder)
        return fuse_chunks(vec, kw, weight, query=text)[:want]

    def per_file(
        self,
        text: str,
        collections: list[str] | None,
        limit: int,
        embedder: Any,
        weight: float,
        min_score: float | None,
        files_in_scope: Callable[[], int],
    ) -> list[RankedChunk]:
        """The ``search`` tool's hybrid hits: one per file, at most ``limit``.

        The fusion of the top ``depth`` chunks of each list, ``depth`` the first of
        ``max(limit, FUSION_DEPTH)`` x 1, 4, 16, ... whose fused chunks come from
        ``max(limit, FUSION_DEPTH)`` files (after ``min_score``), or from every file of
        the scope, or that is more than the lists hold (``one_per_file``); each file's
        hit is its first fused chunk. For limits up to ``FUSION_DEPTH`` the depth does not
        depend on the limit, so more hits never reorder or rescore the first ones. Over a
        store with cheap row ids (``row_refs``) only the file of each fused row is read per pass
        (and the chunk index of rows tied with another row of their file), the chunks of the
        hits once at the end.

        Raises:
            EmbedError: the provider refused, or the model's dimension changed.
        """
        depth = max(limit, FUSION_DEPTH)
        if self._by_row_ids():
            read: dict[Any, Chunk] = {}

            def rank_refs(d: int) -> list[tuple[Fused[Any], str, tuple[str, str]]]:
                """``(fused row, its chunk id, its file)`` of the fusion at depth ``d``, in the
                fusion's order (the rows read once: texts for the exact-word tier, keys for ties)."""
                fused, seen = self._fused_refs(text, collections, d, embedder, weight)
                rows = self._rows(fused, seen)
                read.update(rows)
                return [
                    (f, rows[f.item].chunk_id, (rows[f.item].collection_path, rows[f.item].file_path))
                    for f in self._in_order(fused, rows, text)
                ]

            try:
                kept = one_per_file(
                    rank_refs, depth, depth, lambda e: e[2], lambda e: e[0].score, min_score, files_in_scope
                )[:limit]
                return [_ranked(f, read[f.item]) for f, _chunk_id, _file in kept]
            except _RowsChanged:
                pass
        return one_per_file(
            lambda d: self.ranked(text, collections, d, embedder, weight, 2 * d),
            depth,
            depth,
            lambda r: (r.chunk.collection_path, r.chunk.file_path),
            lambda r: r.score,
            min_score,
            files_in_scope,
        )[:limit]

    def _fused_refs(
        self, text: str, collections: list[str] | None, depth: int, embedder: Any, weight: float
    ) -> tuple[list[Fused[Any]], dict[Any, str]]:
        """The fusion over the store's row ids (``Fused.item`` a row id; equal fused scores in
        the order first met, until the rows' keys are read), and the chunk id the vector scan
        saw for each row it returned."""
        vec, kw = self.lists(text, collections, depth, embedder, refs=True)
        seen = {rowid: chunk_id for rowid, chunk_id, _score in vec}
        return fuse([(rowid, score) for rowid, _chunk_id, score in vec], kw, weight), seen

    def _rows(self, fused: list[Fused[Any]], seen: dict[Any, str]) -> dict[Any, Chunk]:
        """The chunks of fused row ids, read in one call.

        Args:
            fused: fused row ids.
            seen: row id -> the chunk id expected there (a row not in it may hold any).

        Raises:
            _RowsChanged: a row vanished, or holds another chunk than expected.
        """
        rows = self.store.chunks_at([f.item for f in fused])
        for f in fused:
            chunk = rows.get(f.item)
            if chunk is None or seen.get(f.item) not in (None, chunk.chunk_id):
                raise _RowsChanged
        return dict(rows)

    @staticmethod
    def _in_order(fused: list[Fused[Any]], rows: dict[Any, Chunk], text: str) -> list[Fused[Any]]:
        """Fused row ids in the fusion's order: each row's coverage of the query's content
        words measured on its text (``fusion.with_coverage``), equal keys in chunk key order."""
        cover = _coverage_of(frozenset(content_words(text)))
        fused = with_coverage(fused, lambda rowid: cover(rows[rowid]))
        return in_tie_order(fused, lambda rowid: _chunk_key(rows[rowid]))

    def lists(
        self, text: str, collections: list[str] | None, depth: int, embedder: Any, refs: bool = False
    ) -> tuple[list[Any], list[Any]]:
        """The vector and keyword lists of a hybrid search, ``(chunk, score)`` best first
        (``refs``: the stores' ``(rowid, chunk_id, score)`` and ``(rowid, score)`` instead).

        When the last hybrid search of this ranker scanned a large matrix
        (>= ``LARGE_SCAN_ROWS`` rows, full scan), ``_HYBRID_CHOICE`` picks
        between ranking the lists one after the other (the scan then uses one
        or two BLAS threads, ``engine.store.threads``) and ranking the keyword list on a
        worker thread that afterwards scores blocks of the vector scan
        (``engine.store.scan_share``: the same scores as a one-thread scan). The
        lists are the same either way.

        Raises:
            EmbedError: the provider refused, or the model's dimension changed.
        """
        use = _HYBRID_CHOICE.pick() if self._last_scan_rows >= LARGE_SCAN_ROWS else 1
        share = ScanShare(helpers=use == 2)
        t = time.perf_counter()
        keyword = self.store.search_keyword_refs if refs else self.store.search_keyword
        listed: Future[list[Any]] | None = Future() if use == 2 else None  # the keyword list, set before helping
        pending = (
            _hybrid_pool().submit(_keyword_then_help, keyword, text, collections, depth, share, listed)
            if listed is not None
            else None
        )
        try:
            with share.active():
                vec = self._vector_hits(text, collections, depth, embedder, refs)
        except BaseException:
            if pending is not None:
                pending.cancel() or pending.exception()  # never leave it running unseen
            raise
        # the list as soon as it is ranked: the helper's way out of the scan (every block of it
        # is done once the scan returns) is not waited for, nor its thread switch
        kw = keyword(text, collections, depth) if listed is None else listed.result()
        self._last_scan_rows = share.rows
        if share.rows >= LARGE_SCAN_ROWS and (use == 1 or share.shared):
            _HYBRID_CHOICE.record(use, time.perf_counter() - t, share.rows)
        if refs:
            return vec, kw
        return [(h.chunk, h.score) for h in vec], [(h.chunk, h.score) for h in kw]


def _keyword_then_help(
    keyword: Callable[..., list[Any]],
    text: str,
    collections: list[str] | None,
    depth: int,
    share: ScanShare,
    listed: Future[list[Any]] | None = None,
) -> list[Any]:
    """The keyword list (on the worker thread), then help the vector scan's blocks.

    ``listed``: given the list (or the keyword search's exception) before helping, so the
    calling thread can fuse without waiting for this thread to leave the scan."""
    try:
        kw = keyword(text, collections, depth)
    except BaseException as e:
        if listed is not None:
            listed.set_exception(e)
        share.help()
        raise
    if listed is not None:
        listed.set_result(kw)
    share.help()
    return kw


def _hybrid_pool() -> ThreadPoolExecutor:
    """The process-wide pool hybrid searches rank their keyword list on (made once, 2 threads)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chunknav-hybrid")
        return _POOL
