"""SQLite vector search: the vector-cache glue and the scan, with its row-id variant.

Owns: ``VectorSearch``, which one ``engine.store.sqlite.store.SqliteStore`` builds
with its read-transaction helper, its counter reader, its ``VectorCache`` and its
int8 threshold, and delegates ``search_vectors`` / ``search_vector_refs`` to:
``prepare`` (the model's matrix and occurrence table, read in one snapshot with
the counters), then exact or int8 scans (``engine.store.sqlite.vectors``), then
the hit rows; a writer that changed the chunks meanwhile makes it refresh and
scan again. Imports ``engine.values``, ``engine.lazy`` (numpy on first use) and
the store's own modules; never a face (streamlit, mcp, argparse), never
extract/embed.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from operator import itemgetter
from typing import Any, Callable, Iterable

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.values import VectorHit
from engine.store.sqlite.rows import CHUNK_COLUMNS, hits_of
from engine.store.sqlite.vectors import Matrix, Occurrences, VectorCache, id_bytes, top_occurrences

__all__ = ["VectorSearch"]

_ROWID = itemgetter(0)  # a fetched row's rowid
_CHUNK_ID = itemgetter(4)  # a hit row's chunk_id (rowid, then CHUNK_COLUMNS)

#: The counters (chunks_gen, vectors_gen:<model>) as two columns of a statement; parameters
#: "chunks_gen", "vectors_gen:<model>" (``_counters_match``).
_GENS = "(SELECT value FROM meta WHERE key = ?), (SELECT value FROM meta WHERE key = ?)"
#: The same counters as a condition of the hit fetch (one statement, one snapshot): true while
#: they hold the values given (a missing counter is 0, as ``_gens_match`` reads it); parameters
#: "chunks_gen", its value, "vectors_gen:<model>", its value.
_GENS_ARE = (
    "CAST(COALESCE((SELECT value FROM meta WHERE key = ?), 0) AS INTEGER) = ? AND "
    "CAST(COALESCE((SELECT value FROM meta WHERE key = ?), 0) AS INTEGER) = ?"
)
#: A hit fetch's answer when the counters no longer name the cached matrix and occurrences.
_MOVED = object()
#: (rowids, columns, checked) -> the hit fetch's statement (``_rows_sql``).
_ROWS_SQL: dict[tuple[int, str, bool], str] = {}


def _rows_sql(n: int, columns: str, checked: bool) -> str:
    """``SELECT chunks.rowid, <columns>`` of the ``chunks`` rows at ``n`` rowids (parameters),
    in the order given: a VALUES list drives one rowid lookup per entry (the left side of a
    CROSS JOIN stays the outer loop in SQLite, so rows come in the list's order; a rowid with
    no row gives none). ``checked``: four more parameters, ``_GENS_ARE``: no row at all when the
    counters moved. Right after a 4k-row scan has flushed the caches, ~10 us less than
    ``rowid IN (...)`` (rows in rowid order, reordered in Python) with the counters as two
    more columns of every row (~65 us for 10 rows of ``CHUNK_COLUMNS``;
    docs/decisions/sqlite-hit-fetch.md)."""
    key = (n, columns, checked)
    sql = _ROWS_SQL.get(key)
    if sql is None:
        sql = (
            f"WITH w(r) AS (VALUES {','.join(['(?)'] * n)}) SELECT chunks.rowid, {columns} "
            f"FROM w CROSS JOIN chunks ON chunks.rowid = w.r" + (f" WHERE {_GENS_ARE}" if checked else "")
        )
        if len(_ROWS_SQL) > 256:
            _ROWS_SQL.clear()
        _ROWS_SQL[key] = sql
    return sql


def _gens_match(m: Matrix | None, occ: Occurrences | None, values) -> bool:
    """True when the counters read (``(chunks_gen, vectors_gen)`` as stored, None = 0) are the
    ones ``m`` and ``occ`` were built for (``prepare``'s own check)."""
    if m is None or occ is None or values is None:
        return False
    chunks_gen, vectors_gen = (int(v) if v is not None else 0 for v in values)
    return m.gen == vectors_gen and occ.chunks_gen == chunks_gen and occ.vectors_gen == vectors_gen


def _same_ids(chunk_ids: list[str], digests: np.ndarray) -> bool:
    """True when each chunk id names its digest row (``id_bytes``): the joined hex text
    first (the chunk ids are lower-case sha256 hex, ``engine.chunk.chunk_id``), else id by id."""
    blob = digests.tobytes()
    if "".join(chunk_ids) == blob.hex() and set(map(len, chunk_ids)) == {64}:
        return True
    return b"".join(id_bytes(c) for c in chunk_ids) == blob


class VectorSearch:
    """Cosine search over one SQLite store's vector cache.

    Thread-safe as its store: the cache takes its own lock, reads go through the
    store's per-thread connections.

    Args:
        read: the store's read-transaction helper (a context manager per call).
        gens: ``model -> (chunks_gen, vectors_gen of model)``, read as one snapshot.
        cache: the store's ``VectorCache``.
        int8_min_rows: a full scan of at least this many rows uses the int8 scan
            (None: never; ``engine.store.sqlite.vectors.top_occurrences``).
    """

    def __init__(
        self,
        read: Callable[[], AbstractContextManager[sqlite3.Connection]],
        gens: Callable[[str], tuple[int, int]],
        cache: VectorCache,
        int8_min_rows: int | None,
    ) -> None:
        self._read = read
        self._gens = gens
        self._cache = cache
        self._int8_min_rows = int8_min_rows

    def prepare(self, model: str) -> tuple[Matrix | None, Occurrences | None]:
        """The model's matrix and occurrences, read in one snapshot with the counters.

        One read transaction spans reading the counters and whatever the cache
        rebuilds from SQL, so a rebuilt (and persisted) occurrence table is
        exactly the one its counters name, even while another process writes.
        """
        with self._read() as conn:
            own = not conn.in_transaction
            if own:  # warm cache: one read of the counters, no transaction (small searches)
                chunks_gen, vectors_gen = self._gens(model)
                m, occ = self._cache.matrices.get(model), self._cache.occurrences.get(model)
                if (
                    m is not None
                    and occ is not None
                    and m.gen == vectors_gen
                    and occ.chunks_gen == chunks_gen
                    and occ.vectors_gen == vectors_gen
                ):
                    return m, occ
                conn.execute("BEGIN")
            try:
                chunks_gen, vectors_gen = self._gens(model)
                return self._cache.prepare(model, chunks_gen, vectors_gen)
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

    def search_vector_refs(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> list[tuple[int, str, float]]:
        """``search_vectors`` without reading the chunk rows: ``(chunks rowid, chunk_id, score)``
        best first (the same ranking; rows checked against the matrix as there). Read the
        rows with ``chunks_at``. Raises as ``search_vectors``."""
        return self._vector_top(model, query, collection_paths, limit, self._refs)

    def _vector_top(
        self,
        model: str,
        query: np.ndarray,
        collection_paths: Iterable[str] | None,
        limit: int,
        resolve: Callable[[Matrix, Occurrences, np.ndarray, np.ndarray, str | None], object],
    ) -> list:
        if limit <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        for attempt in range(4):
            # first the cached matrix as it is, its counters checked by the hit fetch itself;
            # after a miss (or without a cache) checked first, as prepare does
            m, occ, check = self._prepare_trusted(model) if attempt == 0 else (*self.prepare(model), None)
            if m is None or occ is None or len(occ.chunk_rowid) == 0:
                if self._counters_match(m, occ, check):
                    return []
                continue
            if q.shape[0] != m.dim:
                if self._counters_match(m, occ, check):
                    raise ValueError(f"query has dim {q.shape[0]}, model {model!r} has dim {m.dim}")
                continue
            picked, scores = top_occurrences(m, occ, q, collection_paths, limit, self._int8_min_rows)
            if len(picked) == 0:  # no fetch to check the counters with
                hits = [] if self._counters_match(m, occ, check) else _MOVED
            else:
                hits = resolve(m, occ, picked, scores, check)
            if hits is _MOVED:  # the index changed since the cache was built: check, scan again
                continue
            if hits is not None:
                return hits  # type: ignore[return-value]
            # A writer changed the chunks between our snapshot and the fetch: refresh.
            self._cache.forget_occurrences(model)
        return []

    def _prepare_trusted(self, model: str) -> tuple[Matrix | None, Occurrences | None, str | None]:
        """The model's cached matrix and occurrences as they are, with ``model`` as the third
        value: the hit fetch checks the counters in its own statement (``_GENS_ARE``) and the
        search scans again when they no longer match (``_MOVED``), so an unchanged index
        costs the fetch alone (a separate counter read takes ~25 us with caches cold after a
        4k-row scan of ~0.2 ms). No cache yet: ``prepare`` and None. Inside a transaction
        the hit fetch answers ``_MOVED`` (the search goes through ``prepare``), as do the
        answers without a fetch (``_counters_match``)."""
        vectors = self._cache
        m, occ = vectors.matrices.get(model), vectors.occurrences.get(model)
        if m is not None and occ is not None:
            return m, occ, model
        return (*self.prepare(model), None)

    def _counters_match(self, m: Matrix | None, occ: Occurrences | None, check: str | None) -> bool:
        """True when nothing is to be checked (``check`` None) or the counters of model
        ``check`` still name ``m`` and ``occ`` (one read: the answers without a hit fetch)."""
        if check is None:
            return True
        with self._read() as conn:
            if conn.in_transaction:
                return False
            row = conn.execute(f"SELECT {_GENS}", ("chunks_gen", f"vectors_gen:{check}")).fetchone()
        return _gens_match(m, occ, row)

    def _rows_at(
        self, m: Matrix, occ: Occurrences, rowids: list[int], columns: str, check: str | None
    ) -> list[tuple[Any, ...]] | None:
        """``(rowid, *columns)`` of the ``chunks`` rows at ``rowids``, in that order (one
        statement, ``_rows_sql``; missing rows left out). With ``check`` (a model), the same
        statement checks that model's counters too: None when they no longer name
        ``m``/``occ`` (or a row is missing, or inside a transaction: the search then checks
        and scans again, through ``prepare``)."""
        sql = _ROWS_SQL.get((len(rowids), columns, check is not None)) or _rows_sql(
            len(rowids), columns, check is not None
        )
        with self._read() as conn:
            if check is None:
                return conn.execute(sql, rowids).fetchall()
            if occ.vectors_gen != m.gen or conn.in_transaction:
                return None
            rows = conn.execute(sql, (*rowids, "chunks_gen", occ.chunks_gen, f"vectors_gen:{check}", m.gen)).fetchall()
        return rows if len(rows) == len(rowids) else None

    @staticmethod
    def _in_order(rows: list[tuple[Any, ...]], rowids: list[int]) -> list[tuple[Any, ...]] | None:
        """``rows`` (rowid first) put in ``rowids`` order, for rows that did not come in it
        (``_rows_sql`` returns them in it: the callers check that first); None when one is missing."""
        by_rowid = {r[0]: r for r in rows}
        got = []
        for rowid in rowids:
            row = by_rowid.get(rowid)
            if row is None:
                return None
            got.append(row)
        return got

    def _resolve(
        self, m: Matrix, occ: Occurrences, picked: np.ndarray, scores: np.ndarray, check: str | None = None
    ) -> list[VectorHit] | None | object:
        """Chunk rows for the picked occurrences; None when the chunks changed meanwhile,
        ``_MOVED`` when the counters of model ``check`` no longer name ``m``/``occ``."""
        if len(picked) == 0:
            return []
        rowids = occ.chunk_rowid[picked].tolist()
        rows = self._rows_at(m, occ, rowids, CHUNK_COLUMNS, check)
        if rows is None:
            return _MOVED
        got = rows if list(map(_ROWID, rows)) == rowids else self._in_order(rows, rowids)
        # every row still holds the chunk id of its matrix row (one comparison of the joined digests)
        if got is None or not _same_ids(list(map(_CHUNK_ID, got)), m.digests.take(occ.matrix_row.take(picked), 0)):
            return None
        return hits_of(VectorHit, got, scores.tolist())

    def _refs(
        self, m: Matrix, occ: Occurrences, picked: np.ndarray, scores: np.ndarray, check: str | None = None
    ) -> list[tuple[int, str, float]] | None | object:
        """``(rowid, chunk_id, score)`` for the picked occurrences; None when the chunks changed
        meanwhile, ``_MOVED`` as ``_resolve``."""
        if len(picked) == 0:
            return []
        rowids = occ.chunk_rowid[picked].tolist()
        rows = self._rows_at(m, occ, rowids, "chunk_id", check)
        if rows is None:
            return _MOVED
        got = rows if list(map(_ROWID, rows)) == rowids else self._in_order(rows, rowids)
        if got is None:
            return None
        ids = [r[1] for r in got]
        if not _same_ids(ids, m.digests.take(occ.matrix_row.take(picked), 0)):
            return None
        return list(zip(rowids, ids, scores.tolist()))
