"""SQLite store search: the vector-cache glue, vector and keyword search, and their row-id variants.

Owns: ``SqliteSearch``, the read side of ``engine.store.sqlite.SqliteStore``
that ranks: ``_prepare`` (the model's matrix and occurrence table, read in
one snapshot with the counters), ``search_vectors`` / ``search_vector_refs``
(exact or int8 full scans, ``engine.store.sqlite_vectors``; a writer that
changed the chunks meanwhile makes it refresh and scan again),
``search_keyword`` / ``search_keyword_refs`` (BM25 over the FTS5 indexes,
``engine.store.sqlite_keyword``) and ``chunks_at`` (rows by rowid, for the
row-id variants hybrid search fuses). A mixin of ``SqliteStore`` (uses its
``_read``, ``_gens``, ``_vectors``, ``_df_cache`` and ``_int8_min_rows``);
moved out of ``engine.store.sqlite`` unchanged. Imports ``engine.model``,
``engine.lazy`` (numpy on first use) and the store's own modules; never a
face (streamlit, mcp, argparse), never extract/embed.
"""

from __future__ import annotations

from typing import Callable, Iterable

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.model import Chunk, KeywordHit, VectorHit
from engine.store.sqlite_keyword import chunk_rows, keyword_refs, search_keyword
from engine.store.sqlite_rows import CHUNK_COLUMNS, chunk_of
from engine.store.sqlite_vectors import Matrix, Occurrences, id_bytes, top_occurrences

__all__ = ["SqliteSearch"]


class SqliteSearch:
    """Vector and keyword search for ``SqliteStore`` (a mixin; no state of its own)."""

    # vector cache ---------------------------------------------------------------------
    def _prepare(self, model: str) -> tuple[Matrix | None, Occurrences | None]:
        """The model's matrix and occurrences, read in one snapshot with the counters.

        One read transaction spans reading the counters and whatever the cache
        rebuilds from SQL, so a rebuilt (and persisted) occurrence table is
        exactly the one its counters name, even while another process writes.
        """
        with self._read() as conn:
            own = not conn.in_transaction
            if own:  # warm cache: one read of the counters, no transaction (hyb: small searches)
                chunks_gen, vectors_gen = self._gens(model)
                m, occ = self._vectors.matrices.get(model), self._vectors.occurrences.get(model)
                if m is not None and occ is not None and m.gen == vectors_gen and \
                        occ.chunks_gen == chunks_gen and occ.vectors_gen == vectors_gen:
                    return m, occ
                conn.execute("BEGIN")
            try:
                chunks_gen, vectors_gen = self._gens(model)
                return self._vectors.prepare(model, chunks_gen, vectors_gen)
            finally:
                if own:
                    conn.execute("COMMIT")

    def search_vectors(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> list[VectorHit]:
        """Top ``limit`` chunks by cosine similarity to ``query``, best first.

        Args:
            model: the vectors' model name.
            query: float32, shape (dim,), L2-normalised.
            collection_paths: collections to search (None: all).
            limit: most hits to return.

        Returns:
            ``VectorHit``s, score = dot product = cosine (vectors are
            L2-normalised), descending; a chunk_id stored at several paths gives
            one hit per path. Unknown model or no vectors: [].

        Raises:
            ValueError: ``query`` has another dimension than the model's vectors.
        """
        return self._vector_top(model, query, collection_paths, limit, self._resolve)

    def search_vector_refs(self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None,
                           limit: int) -> list[tuple[int, str, float]]:
        """``search_vectors`` without reading the chunk rows: ``(chunks rowid, chunk_id, score)``
        best first (the same ranking; rows checked against the matrix as there). Read the
        rows with ``chunks_at``. Raises as ``search_vectors``."""
        return self._vector_top(model, query, collection_paths, limit, self._refs)

    def _vector_top(self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int,
                    resolve: Callable[[Matrix, Occurrences, np.ndarray, np.ndarray], list | None]) -> list:
        if limit <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        for _attempt in range(3):
            m, occ = self._prepare(model)
            if m is None or occ is None or len(occ.chunk_rowid) == 0:
                return []
            if q.shape[0] != m.dim:
                raise ValueError(f"query has dim {q.shape[0]}, model {model!r} has dim {m.dim}")
            picked, scores = top_occurrences(m, occ, q, collection_paths, limit, self._int8_min_rows)
            hits = resolve(m, occ, picked, scores)
            if hits is not None:
                return hits
            # A writer changed the chunks between our snapshot and the fetch: refresh.
            self._vectors.forget_occurrences(model)
        return []

    def _resolve(self, m: Matrix, occ: Occurrences, picked: np.ndarray,
                 scores: np.ndarray) -> list[VectorHit] | None:
        """Chunk rows for the picked occurrences; None when the chunks changed meanwhile."""
        if len(picked) == 0:
            return []
        rowids = occ.chunk_rowid[picked].tolist()
        marks = ",".join("?" * len(rowids))
        with self._read() as conn:
            rows = conn.execute(f"SELECT rowid, {CHUNK_COLUMNS} FROM chunks WHERE rowid IN ({marks})",
                                rowids).fetchall()
        by_rowid = {r[0]: r for r in rows}
        got = [by_rowid.get(rowid) for rowid in rowids]
        # every row still holds the chunk id of its matrix row (one comparison of the joined digests)
        if any(r is None for r in got) or \
                b"".join(id_bytes(r[4]) for r in got) != m.digests[occ.matrix_row[picked]].tobytes():
            return None
        return [VectorHit(chunk_of(r[1:]), s) for r, s in zip(got, scores.tolist())]

    def _refs(self, m: Matrix, occ: Occurrences, picked: np.ndarray,
              scores: np.ndarray) -> list[tuple[int, str, float]] | None:
        """``(rowid, chunk_id, score)`` for the picked occurrences; None when the chunks changed meanwhile."""
        if len(picked) == 0:
            return []
        rowids = occ.chunk_rowid[picked].tolist()
        marks = ",".join("?" * len(rowids))
        with self._read() as conn:
            ids = dict(conn.execute(f"SELECT rowid, chunk_id FROM chunks WHERE rowid IN ({marks})",
                                    rowids).fetchall())
        got = [ids.get(r) for r in rowids]
        if any(c is None for c in got) or \
                b"".join(id_bytes(c) for c in got) != m.digests[occ.matrix_row[picked]].tobytes():
            return None
        return list(zip(rowids, got, scores.tolist()))

    def chunks_at(self, rowids: Iterable[int]) -> dict[int, Chunk]:
        """``chunks`` rowid -> Chunk for the rowids that exist (one query); see ``search_vector_refs``."""
        return {rid: chunk_of(row) for rid, row in chunk_rows(self._read, list(rowids)).items()}

    # -- keyword search -------------------------------------------------------------------
    def search_keyword(
        self, query: str, collection_paths: Iterable[str] | None, limit: int
    ) -> list[KeywordHit]:
        """BM25 keyword hits over chunk_text, best first (score = -bm25, higher is better).

        Latin terms match the ``porter`` index ("running" finds "runs"), CJK
        terms the ``trigram`` index as substrings; all terms first, then any
        term; see ``engine.store.sqlite_keyword.search_keyword``. Returns []
        for a query without a letter or digit or a limit <= 0.
        """
        return search_keyword(self._read, self._df_cache, query, collection_paths, limit)

    def search_keyword_refs(self, query: str, collection_paths: Iterable[str] | None,
                            limit: int) -> list[tuple[int, float]]:
        """``search_keyword`` without reading the chunk rows: ``(chunks rowid, -bm25)`` best first."""
        return keyword_refs(self._read, self._df_cache, query, collection_paths, limit)
