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

#: The snapshot's ``PRAGMA data_version`` as a column of the hit fetch (one statement, one snapshot).
_DATA_VERSION = "(SELECT data_version FROM pragma_data_version())"
#: A hit fetch's answer when the database moved past the token the cache was trusted at.
_MOVED = object()


def _same_ids(chunk_ids: list[str], digests: np.ndarray) -> bool:
    """True when each chunk id names its digest row (``id_bytes``): the joined hex text
    first (the chunk ids are lower-case sha256 hex, ``engine.chunk.chunk_id``), else id by id."""
    blob = digests.tobytes()
    if "".join(chunk_ids) == blob.hex() and all(len(c) == 64 for c in chunk_ids):
        return True
    return b"".join(id_bytes(c) for c in chunk_ids) == blob


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
                    resolve: Callable[[Matrix, Occurrences, np.ndarray, np.ndarray, tuple | None], object]) -> list:
        if limit <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        for _attempt in range(4):
            m, occ, token = self._prepare_trusted(model)
            if m is None or occ is None or len(occ.chunk_rowid) == 0:
                if self._still(token):
                    return []
                continue
            if q.shape[0] != m.dim:
                if self._still(token):
                    raise ValueError(f"query has dim {q.shape[0]}, model {model!r} has dim {m.dim}")
                continue
            picked, scores = top_occurrences(m, occ, q, collection_paths, limit, self._int8_min_rows)
            if len(picked) == 0:  # no fetch to check the snapshot with
                hits = [] if self._still(token) else _MOVED
            else:
                hits = resolve(m, occ, picked, scores, token)
            if hits is _MOVED:  # something was committed since the cache was last checked: check, scan again
                continue
            if hits is not None:
                return hits  # type: ignore[return-value]
            # A writer changed the chunks between our snapshot and the fetch: refresh.
            self._vectors.forget_occurrences(model)
        return []

    def _prepare_trusted(self, model: str) -> tuple[Matrix | None, Occurrences | None, tuple | None]:
        """``_prepare`` without its counter check when this connection checked them last at a
        snapshot token (``SqliteStore._unchanged``) and the cached matrix matched: ``(m, occ,
        token)``; the hit fetch then reads the snapshot's ``data_version`` in its own statement
        and the search starts again if the token moved (``_MOVED``). A scan of 4k rows costs
        ~0.2 ms; the check's statement ~25 us with caches cold after a scan. Else ``_prepare``
        and the token it checked at (None inside a transaction: no fetch check, as before)."""
        with self._read() as conn:
            key = id(conn)
            if not conn.in_transaction:
                memo = self._memo.get(key)
                gens = memo[1].get(("gens", model)) if memo is not None else None
                if gens is not None:
                    m, occ = self._vectors.matrices.get(model), self._vectors.occurrences.get(model)
                    if m is not None and occ is not None and m.gen == gens[1] and \
                            occ.chunks_gen == gens[0] and occ.vectors_gen == gens[1]:
                        return m, occ, memo[0]
            m, occ = self._prepare(model)
            memo = None if conn.in_transaction else self._memo.get(key)
            return m, occ, (memo[0] if memo is not None else None)

    def _still(self, token: tuple | None) -> bool:
        """True when ``token`` is None or the snapshot has not moved past it (one
        ``PRAGMA data_version``: the answers without a hit fetch); else forgets as ``_moved``."""
        if token is None:
            return True
        with self._read() as conn:
            return not self._moved(conn, conn.execute(f"SELECT {_DATA_VERSION}").fetchall(), token)

    def _moved(self, conn, rows: list, token: tuple | None) -> bool:
        """True when ``token`` is given and the fetch's snapshot (its last column:
        ``data_version``) or this connection's own writes moved past it; forgets the
        connection's remembered reads then."""
        if token is None or (rows and (rows[0][-1], conn.total_changes) == token):
            return False
        self._memo.pop(id(conn), None)
        return True

    def _resolve(self, m: Matrix, occ: Occurrences, picked: np.ndarray,
                 scores: np.ndarray, token: tuple | None = None) -> list[VectorHit] | None | object:
        """Chunk rows for the picked occurrences; None when the chunks changed meanwhile,
        ``_MOVED`` when the snapshot moved past ``token`` (``_prepare_trusted``)."""
        if len(picked) == 0:
            return []
        rowids = occ.chunk_rowid[picked].tolist()
        marks = ",".join("?" * len(rowids))
        with self._read() as conn:
            rows = conn.execute(f"SELECT rowid, {CHUNK_COLUMNS}, {_DATA_VERSION} FROM chunks "
                                f"WHERE rowid IN ({marks})", rowids).fetchall()
            if self._moved(conn, rows, token):
                return _MOVED
        by_rowid = {r[0]: r for r in rows}
        got = [by_rowid.get(rowid) for rowid in rowids]
        # every row still holds the chunk id of its matrix row (one comparison of the joined digests)
        if any(r is None for r in got) or not _same_ids([r[4] for r in got], m.digests[occ.matrix_row[picked]]):
            return None
        return [VectorHit(chunk_of(r[1:-1]), s) for r, s in zip(got, scores.tolist())]

    def _refs(self, m: Matrix, occ: Occurrences, picked: np.ndarray,
              scores: np.ndarray, token: tuple | None = None) -> list[tuple[int, str, float]] | None | object:
        """``(rowid, chunk_id, score)`` for the picked occurrences; None when the chunks changed
        meanwhile, ``_MOVED`` as ``_resolve``."""
        if len(picked) == 0:
            return []
        rowids = occ.chunk_rowid[picked].tolist()
        marks = ",".join("?" * len(rowids))
        with self._read() as conn:
            rows = conn.execute(f"SELECT rowid, chunk_id, {_DATA_VERSION} FROM chunks WHERE rowid IN ({marks})",
                                rowids).fetchall()
            if self._moved(conn, rows, token):
                return _MOVED
        ids = {r[0]: r[1] for r in rows}
        got = [ids.get(r) for r in rowids]
        if any(c is None for c in got) or not _same_ids(got, m.digests[occ.matrix_row[picked]]):
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
