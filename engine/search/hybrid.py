"""Hybrid ranking machinery: the two lists, the keyword worker pool, fusion over row ids.

Owns: ``HybridRanking``, the part of ``engine.search.searcher.ContentChunkSearch``
that ranks a hybrid search's vector and keyword lists (one after the other,
or the keyword list on the ``chunknav-hybrid`` worker pool that then helps
score the vector scan's blocks, ``engine.store.scan_share``; which one is timed by
``_HYBRID_CHOICE``) and fuses them over the stores' row ids
(``search_vector_refs`` / ``search_keyword_refs`` / ``chunks_at``), reading
only the fused rows; ``_fuse_entries``, the reciprocal-rank fusion that
``engine.search.searcher.fuse`` and the row-id path share; ``_hybrid_pool``.
``HybridRanking`` is a mixin of ``ContentChunkSearch`` (uses its ``store``,
``_hybrid_rows`` and ``_vector_hits``).

Moved out of ``engine.search.searcher`` (which re-exports ``_fuse_entries`` and
``_hybrid_pool``). Its tuning points are this module's: ``_HYBRID_CHOICE``,
and ``LARGE_SCAN_ROWS`` / ``ScanShare`` as imported here (tests and benches
set them on this module). ``RRF_K`` and ``RankedChunk`` are ``engine.search.searcher``'s,
imported when called (that module imports this one). Imports
``engine.store.threads`` and ``engine.store.scan_share`` (numpy only on first use,
``engine.lazy``); never a store backend or a face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Sequence

from engine.store.threads import LARGE_SCAN_ROWS, ThreadChoice
from engine.store.scan_share import ScanShare

if TYPE_CHECKING:
    from engine.values import RankedChunk

__all__ = ["HybridRanking"]

_POOL: ThreadPoolExecutor | None = None  # see _hybrid_pool
_POOL_LOCK = threading.Lock()


#: How a hybrid search over a large full scan ranks its two lists, chosen by timing
#: (``engine.store.threads.ThreadChoice``): 1 = one after the other on the calling thread;
#: 2 = the keyword list on a worker thread that then helps score the vector scan's
#: blocks (``engine.store.scan_share``). Faster of the two per row, the other re-timed now and then.
_HYBRID_CHOICE = ThreadChoice()


def _fuse_entries(
    vector: Sequence[tuple[object, float]],
    keyword: Sequence[tuple[object, float]],
    vector_weight: float,
    k: int,
    key: Callable[[object], object],
) -> list[dict]:
    """``fuse`` over any items (chunks, or store row ids with ``key`` the identity): dicts
    with ``chunk`` (the item), ``score`` and the lists' ``*_score`` / ``*_rank``, best first."""
    fused: dict[object, dict] = {}
    for name, ranking, weight in (("vector", vector, vector_weight), ("keyword", keyword, 1.0 - vector_weight)):
        for rank, (chunk, score) in enumerate(ranking):
            entry = fused.setdefault(key(chunk), {"chunk": chunk, "score": 0.0, "order": len(fused)})
            if f"{name}_rank" in entry:
                continue  # a chunk listed twice keeps its best rank
            entry[f"{name}_rank"] = rank
            entry[f"{name}_score"] = float(score)
            entry["score"] += 2.0 * weight / (k + rank + 1)
    return sorted(fused.values(), key=lambda e: (-e["score"], e["order"]))


class HybridRanking:
    """Hybrid lists and row-id fusion for ``ContentChunkSearch`` (a mixin; no state of its own)."""

    def _hybrid_by_refs(
        self, text: str, collections: list[str] | None, depth: int, embedder, weight: float, want: int
    ) -> list[RankedChunk] | None:
        """Hybrid fused over the store's row ids, reading only the ``want`` fused rows (a store
        with ``search_vector_refs`` / ``search_keyword_refs`` / ``chunks_at``): the same hits,
        order and breakdown as fusing the two lists of chunks (a chunk is one row). None when a
        writer changed a fused row between ranking and reading (the caller ranks again with rows)."""
        from engine.search.fusion import RRF_K
        from engine.values import RankedChunk

        vec, kw = self._hybrid_lists(text, collections, depth, embedder, refs=True)
        fused = _fuse_entries([(r, s) for r, _c, s in vec], kw, weight, RRF_K, lambda r: r)[:want]
        rows = self.store.chunks_at([e["chunk"] for e in fused])
        ids = {r: c for r, c, _s in vec}
        out = []
        for e in fused:
            chunk = rows.get(e["chunk"])
            if chunk is None or chunk.chunk_id != ids.get(e["chunk"], chunk.chunk_id):
                return None
            out.append(
                RankedChunk(
                    chunk,
                    e["score"],
                    e.get("vector_score"),
                    e.get("vector_rank"),
                    e.get("keyword_score"),
                    e.get("keyword_rank"),
                )
            )
        return out

    def _per_file_hybrid(
        self, text: str, collections: list[str] | None, limit: int, embedder, weight: float, min_score: float | None
    ) -> list[RankedChunk] | None:
        """The ``search`` tool's hybrid hits (one per file) over the store's row ids, reading only
        the rows it returns; None when the store lacks ``chunk_files`` (or the row-id searches)
        or a writer changed a row meanwhile (the caller then ranks with rows, the same rule).

        The rule (``engine.search.searcher.ContentChunkSearch.search``): the fusion of the top ``depth``
        chunks of each list, ``depth`` the first of ``max(limit, FUSION_DEPTH)`` x 1, 4, 16, ...
        whose fused chunks come from ``max(limit, FUSION_DEPTH)`` files (after ``min_score``), or
        from every file of the scope (``_scope_files``), or that is more than the lists hold;
        each file's hit is its first fused chunk. Only the file of each fused row is read per
        pass (``chunk_files``), the chunks of the hits once at the end.

        Raises:
            EmbedError: the provider refused, or the model's dimension changed.
        """
        from engine.search.fusion import FUSION_DEPTH, RRF_K
        from engine.values import RankedChunk

        store = self.store
        if not store.row_refs:
            return None
        files_of = store.chunk_files
        depth = want_files = max(limit, FUSION_DEPTH)
        in_scope: int | None = None
        while True:
            vec, kw = self._hybrid_lists(text, collections, depth, embedder, refs=True)
            fused = _fuse_entries([(r, s) for r, _c, s in vec], kw, weight, RRF_K, lambda r: r)
            where = files_of([e["chunk"] for e in fused])  # rowid -> (collectionPath, filePath, chunkId)
            ids = {r: c for r, c, _s in vec}
            best: dict[tuple[str, str], dict] = {}
            for e in fused:
                row = where.get(e["chunk"])
                if row is None or ids.get(e["chunk"], row[2]) != row[2]:
                    return None  # a writer changed it between ranking and reading
                best.setdefault((row[0], row[1]), e)
            kept = [e for e in best.values() if min_score is None or e["score"] >= min_score]
            if len(kept) >= want_files or len(fused) < depth:
                break  # enough files, or the lists ran out (fewer fused chunks than the depth)
            if in_scope is None:
                in_scope = self._scope_files(collections)
            if 0 <= in_scope <= len(best):
                break
            depth *= 4
        kept = kept[:limit]
        rows = store.chunks_at([e["chunk"] for e in kept])
        out = []
        for e in kept:
            chunk = rows.get(e["chunk"])
            if chunk is None or chunk.chunk_id != where[e["chunk"]][2]:
                return None
            out.append(
                RankedChunk(
                    chunk,
                    e["score"],
                    e.get("vector_score"),
                    e.get("vector_rank"),
                    e.get("keyword_score"),
                    e.get("keyword_rank"),
                )
            )
        return out

    def _scope_files(self, collections: list[str] | None) -> int:
        """Files holding chunks in ``collections`` (every collection when None): the store's
        ``file_count``."""
        return int(self.store.file_count(collections))

    def _hybrid_lists(
        self, text: str, collections: list[str] | None, depth: int, embedder, refs: bool = False
    ) -> tuple[list[tuple], list[tuple]]:
        """The vector and keyword lists of a hybrid search, ``(chunk, score)`` best first
        (``refs``: the stores' ``(rowid, chunk_id, score)`` and ``(rowid, score)`` instead).

        When the last hybrid search of this object scanned a large matrix
        (>= ``LARGE_SCAN_ROWS`` rows, full scan), ``_HYBRID_CHOICE`` picks
        between ranking the lists one after the other (the scan then uses one
        or two BLAS threads, ``engine.store.threads``) and ranking the keyword list on a
        worker thread that afterwards scores blocks of the vector scan
        (``engine.store.scan_share``: the same scores as a one-thread scan). The
        lists are the same either way.
        """
        use = _HYBRID_CHOICE.pick() if self._hybrid_rows >= LARGE_SCAN_ROWS else 1
        share = ScanShare(helpers=use == 2)
        t = time.perf_counter()
        keyword = self.store.search_keyword_refs if refs else self.store.search_keyword
        listed: Future | None = Future() if use == 2 else None  # the keyword list, set before helping
        pending = (
            _hybrid_pool().submit(self._keyword_then_help, keyword, text, collections, depth, share, listed)
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
        self._hybrid_rows = share.rows
        if share.rows >= LARGE_SCAN_ROWS and (use == 1 or share.shared):
            _HYBRID_CHOICE.record(use, time.perf_counter() - t, share.rows)
        if refs:
            return vec, kw
        return [(h.chunk, h.score) for h in vec], [(h.chunk, h.score) for h in kw]

    @staticmethod
    def _keyword_then_help(
        keyword: Callable,
        text: str,
        collections: list[str] | None,
        depth: int,
        share: ScanShare,
        listed: Future | None = None,
    ) -> list:
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
