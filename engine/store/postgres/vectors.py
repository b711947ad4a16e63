"""The vector half of the Postgres store: pgvector rows, HNSW upkeep and vector search.

Owns: ``PgVectors``, the helper a ``PostgresStore`` builds once and delegates
its vector methods to: listing chunks that miss a vector, loading vectors
(binary COPY), the HNSW index policy (create on first vectors of a
``(model, dim)``, or defer to a bulk build while the store holds
``index_lock``), streaming vectors out, per-model counts, deleting stale
vectors, and the HNSW-first / exact-fallback search with its ``EXPLAIN``.
The connection pool, settings (``ef_search``, ``build_memory_mb``) and
``index_lock`` stay with ``PostgresStore`` (``engine/store/postgres/store.py``),
which hands in its pool and its partition-schema resolver (``Partitions.schemas``).

Vectors live in the shared schema because they are keyed by ``chunk_id``
(content-addressed, not per partition): a chunk id indexed in two partitions
shares one vector, and a vector whose chunks vanished stays (stale) without
needing a partition to live in. Search drives the HNSW index of the model and
joins each hit to the scoped chunks of one partition schema at a time.

Imports psycopg 3, psycopg_pool and numpy. Must not import
``engine.store.postgres.store`` (it imports this module), streamlit, mcp, argparse
or any other engine module but ``engine.values``, ``engine.store.base``,
``engine.store.purge``, ``engine.store.postgres.schema`` and
``engine.store.postgres.rows``.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

import numpy as np
from psycopg import sql
from psycopg_pool import ConnectionPool

from engine.values import VectorHit
from engine.store.base import as_vector_rows
from engine.store.postgres.rows import CHUNK_SELECT, key_order, row_to_chunk
from engine.store.postgres.schema import (
    one_row,
    DictConnection,
    SHARED_SCHEMA,
    build_hnsw_index,
    has_hnsw_index,
    hnsw_index_sql,
    vector_type,
)

__all__ = ["PgVectors", "SchemaResolver", "as_array"]

log = logging.getLogger(__name__)

#: ``Partitions.schemas``: collection paths (None: all) -> {schema: paths to filter on (None: all)}.
SchemaResolver = Callable[[Iterable[str] | None], dict[str, list[str] | None]]


#: Walks of the HNSW graph, each 4x deeper, while the row past the limit ties with the limit-th.
_TIE_DEPTHS = 4


def as_array(embedding: Any) -> np.ndarray:
    """A pgvector value as read (``Vector``/``HalfVector`` or a sequence) -> float32 (dim,)."""
    return np.asarray(embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding, dtype=np.float32)


class PgVectors:
    """The vector methods of one ``PostgresStore`` (pgvector rows in the shared schema).

    Safe to share between threads, like its store: each call borrows a
    connection from the store's pool; the index bookkeeping is behind a lock.

    HNSW upkeep: pgvector inserts into an existing HNSW index one row at a
    time (~430 vectors/s measured on 2 cores, 256-d), about 10x slower than
    building the index over loaded rows. So while ``lock_held`` (the store
    holds ``index_lock``), the first vectors of a ``(model, dim)`` that has no
    index yet are loaded without one and the pair is put in ``deferred``; the
    store calls ``build_vector_indexes`` when the lock is released (searches
    meanwhile are exact). Later runs insert into the existing index.

    Args:
        pool: the store's pool (autocommit, ``dict_row``, ``register_vector``,
            no server-side prepared statements).
        schemas: the store's partition-schema resolver (``SchemaResolver``).
        iterative: pgvector >= 0.8, which has iterative index scans; older
            ones rely on the exact fallback alone.
    """

    def __init__(self, pool: ConnectionPool[DictConnection], schemas: SchemaResolver, iterative: bool):
        self._pool = pool
        self._schemas = schemas
        self.iterative = iterative
        #: ``(model, dim)`` pairs known to have their HNSW index (or to need none).
        self.indexed: set[tuple[str, int]] = set()
        #: ``(model, dim)`` pairs to build when ``index_lock`` ends.
        self.deferred: set[tuple[str, int]] = set()
        #: True while the owning store holds ``index_lock`` (set by the store).
        self.lock_held = False
        self._lock = threading.Lock()

    @contextmanager
    def _tx(self) -> Iterator[DictConnection]:
        """A pooled connection inside one transaction (commit on success)."""
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    def _all_chunk_ids_sql(self) -> sql.Composable:
        """A subquery yielding ``chunk_id`` of every chunk row in every partition."""
        parts = [
            sql.SQL("SELECT chunk_id FROM {}.content_chunks").format(sql.Identifier(s)) for s in self._schemas(None)
        ]
        if not parts:
            return sql.SQL("SELECT NULL::text AS chunk_id WHERE false")
        return sql.SQL(" UNION ALL ").join(parts)

    def chunks_missing_vectors(
        self, model: str, limit: int | None = None, after: str | None = None
    ) -> list[tuple[str, str]]:
        """Distinct chunk ids that have no vector for ``model``, with their text.

        One ``DISTINCT ON`` query over the ``UNION ALL`` of every partition's chunks.

        Returns:
            ``[(chunk_id, chunk_text)]`` ordered by chunk_id (stable), at most
            ``limit`` (None: all). A chunk id stored at several paths appears once.
        """
        parts = [
            sql.SQL("SELECT chunk_id, chunk_text FROM {}.content_chunks").format(sql.Identifier(s))
            for s in self._schemas(None)
        ]
        if not parts:
            return []
        q = sql.SQL(
            "SELECT DISTINCT ON (c.chunk_id) c.chunk_id, c.chunk_text FROM ({}) c "
            "WHERE NOT EXISTS (SELECT 1 FROM {}.vectors v WHERE v.chunk_id = c.chunk_id AND v.model = %s) "
            + ("AND c.chunk_id > %s " if after is not None else "")
            + "ORDER BY c.chunk_id"
        ).format(sql.SQL(" UNION ALL ").join(parts), sql.Identifier(SHARED_SCHEMA))
        params: list[Any] = [model] if after is None else [model, after]
        if limit is not None:
            q += sql.SQL(" LIMIT %s")
            params.append(int(limit))
        with self._pool.connection() as conn:
            rows = conn.execute(q, params).fetchall()
        return [(r["chunk_id"], r["chunk_text"]) for r in rows]

    def _ensure_vector_index(self, conn: DictConnection, model: str, dim: int, build_memory_mb: int) -> None:
        """Make sure ``(model, dim)`` has its HNSW index, or defer it (inside the caller's tx).

        Deferred while this store holds ``index_lock`` and the index does not
        exist yet (bulk build at lock release); dims above ``HALFVEC_MAX_DIM``
        get no index (exact search). ``build_memory_mb``: ``maintenance_work_mem``
        of a build, in MiB.
        """
        if (model, dim) in self.indexed or (model, dim) in self.deferred:
            return
        ddl = hnsw_index_sql(model, dim)
        if ddl is not None and not has_hnsw_index(conn, model, dim):
            if self.lock_held:
                with self._lock:
                    self.deferred.add((model, dim))
                return
            build_hnsw_index(conn, ddl, build_memory_mb)
        with self._lock:
            self.indexed.add((model, dim))

    def build_vector_indexes(self, build_memory_mb: int) -> list[tuple[str, int, float]]:
        """Build every missing HNSW index (one per stored ``(model, dim)``), in bulk.

        Args:
            build_memory_mb: ``maintenance_work_mem`` of each build, in MiB.

        Returns:
            ``[(model, dim, seconds)]`` for each index built (empty when all exist).
        """
        built: list[tuple[str, int, float]] = []
        with self._pool.connection() as conn:
            pairs = conn.execute(
                sql.SQL("SELECT DISTINCT model, dim FROM {}.vectors ORDER BY model, dim").format(
                    sql.Identifier(SHARED_SCHEMA)
                )
            ).fetchall()
        for r in pairs:
            model, dim = r["model"], int(r["dim"])
            ddl = hnsw_index_sql(model, dim)
            with self._tx() as conn:
                if ddl is not None and not has_hnsw_index(conn, model, dim):
                    t0 = time.perf_counter()
                    build_hnsw_index(conn, ddl, build_memory_mb)
                    built.append((model, dim, time.perf_counter() - t0))
                    log.info("built HNSW index of %s (dim %d) in %.1f s", model, dim, built[-1][2])
            with self._lock:
                self.deferred.discard((model, dim))
                self.indexed.add((model, dim))
        return built

    def add_vectors(self, model: str, chunk_ids: list[str], vectors: np.ndarray, build_memory_mb: int) -> int:
        """Add vectors for ``model``; existing ``(chunk_id, model)`` rows are kept.

        Loaded with binary COPY into a temporary table, then inserted with
        ``ON CONFLICT DO NOTHING`` (so concurrent writers never fail). The
        first vectors of a ``(model, dim)`` create its HNSW index, or, under
        ``index_lock``, defer it to a bulk build at lock release (class docstring).

        Args:
            model, chunk_ids, vectors: as for ``PostgresStore.add_vectors``.
            build_memory_mb: ``maintenance_work_mem`` of an index build, in MiB.

        Returns:
            Rows added (duplicates within ``chunk_ids`` count once).

        Raises:
            ValueError: as for ``PostgresStore.add_vectors``.
        """
        arr = as_vector_rows(chunk_ids, vectors)
        if not chunk_ids:
            return 0
        dim = int(arr.shape[1])
        now = time.time()
        with self._tx() as conn:
            have = self._model_dim(conn, model)
            if have is not None and have != dim:
                raise ValueError(f"model {model!r} has dim {have} in this index, got {dim}")
            self._ensure_vector_index(conn, model, dim, build_memory_mb)
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS _cn_vectors_in (chunk_id text, embedding vector) ON COMMIT DELETE ROWS"
            )
            with conn.cursor() as cur:
                with cur.copy("COPY _cn_vectors_in (chunk_id, embedding) FROM STDIN WITH (FORMAT BINARY)") as cp:
                    cp.set_types(["text", "vector"])
                    for cid, row in zip(chunk_ids, arr):
                        cp.write_row((cid, row))
                cur.execute(
                    sql.SQL(
                        "INSERT INTO {}.vectors (chunk_id, model, dim, embedding, created) "
                        "SELECT DISTINCT ON (chunk_id) chunk_id, %s, %s, embedding, %s FROM _cn_vectors_in "
                        "ORDER BY chunk_id ON CONFLICT (chunk_id, model) DO NOTHING"
                    ).format(sql.Identifier(SHARED_SCHEMA)),
                    (model, dim, now),
                )
                return max(cur.rowcount, 0)

    def iter_vectors(self, model: str | None = None, batch: int = 10000) -> Iterator[tuple[str, list[str], np.ndarray]]:
        """Every stored vector (stale ones too), in batches, through a server-side cursor.

        Args, Yields: as for ``PostgresStore.iter_vectors``.
        """
        shared = sql.Identifier(SHARED_SCHEMA)
        where = sql.SQL("") if model is None else sql.SQL(" WHERE model = %s")
        params = () if model is None else (model,)
        with self._pool.connection() as conn, conn.transaction():
            with conn.cursor(name="cn_vectors_scan") as cur:
                cur.itersize = batch
                cur.execute(
                    sql.SQL("SELECT model, dim, chunk_id, embedding FROM {}.vectors").format(shared)
                    + where
                    + sql.SQL(" ORDER BY model, dim, chunk_id"),
                    params,
                )
                key: tuple[str, int] | None = None
                ids: list[str] = []
                rows: list[np.ndarray] = []
                for r in cur:
                    k = (r["model"], r["dim"])
                    if ids and (k != key or len(ids) >= batch):
                        yield key[0], ids, np.vstack(rows).astype(np.float32)  # type: ignore[index]
                        ids, rows = [], []
                    key = k
                    ids.append(r["chunk_id"])
                    rows.append(as_array(r["embedding"]))
                if ids:
                    yield key[0], ids, np.vstack(rows).astype(np.float32)  # type: ignore[index]

    def vector_counts(self) -> dict[str, dict[str, int]]:
        """Per model: ``{"vectors", "dim", "stale", "missing"}`` (see ``PostgresStore.vector_counts``).

        The distinct chunk ids of every partition go into a temporary table
        (``_cn_ids``, analysed) once; each model is then two anti-joins.
        """
        ids = self._all_chunk_ids_sql()
        shared = sql.Identifier(SHARED_SCHEMA)
        with self._pool.connection() as conn:
            models = conn.execute(
                sql.SQL(
                    "SELECT model, count(*) AS n, max(dim) AS dim FROM {}.vectors GROUP BY model ORDER BY model"
                ).format(shared)
            ).fetchall()
            if not models:
                return {}
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _cn_ids (chunk_id text PRIMARY KEY)")
            with conn.transaction():
                conn.execute("TRUNCATE _cn_ids")
                conn.execute(sql.SQL("INSERT INTO _cn_ids SELECT DISTINCT chunk_id FROM ({}) a").format(ids))
                conn.execute("ANALYZE _cn_ids")
                out: dict[str, dict[str, int]] = {}
                for m in models:
                    r = one_row(
                        conn.execute(
                            sql.SQL(
                                "SELECT (SELECT count(*) FROM {0}.vectors v WHERE v.model = %(m)s AND NOT EXISTS "
                                "(SELECT 1 FROM _cn_ids i WHERE i.chunk_id = v.chunk_id)) AS stale, "
                                "(SELECT count(*) FROM _cn_ids i WHERE NOT EXISTS (SELECT 1 FROM {0}.vectors v "
                                "WHERE v.chunk_id = i.chunk_id AND v.model = %(m)s)) AS missing"
                            ).format(shared),
                            {"m": m["model"]},
                        ).fetchone()
                    )
                    out[m["model"]] = {
                        "vectors": int(m["n"]),
                        "dim": int(m["dim"]),
                        "stale": int(r["stale"]),
                        "missing": int(r["missing"]),
                    }
        return out

    def vector_dim(self, model: str) -> int | None:
        """Dimension of ``model``'s stored vectors, or None when it has none."""
        with self._pool.connection() as conn:
            return self._model_dim(conn, model)

    def purge_stale(self) -> dict[str, int]:
        """Delete every stale vector and its text notes in one transaction (``engine.store.purge``)."""
        from engine.store.purge import purge_stale_pg

        ids = self._all_chunk_ids_sql()
        with self._tx() as conn:
            return purge_stale_pg(conn, SHARED_SCHEMA, ids)

    def _model_dim(self, conn: DictConnection, model: str) -> int | None:
        """Dimension of ``model``'s stored vectors, or None when it has none."""
        r = conn.execute(
            sql.SQL("SELECT dim FROM {}.vectors WHERE model = %s LIMIT 1").format(sql.Identifier(SHARED_SCHEMA)),
            (model,),
        ).fetchone()
        return None if r is None else int(r["dim"])

    def search_vectors(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int, ef_search: int
    ) -> list[VectorHit]:
        """Top ``limit`` chunks by cosine similarity, HNSW first, exact when filtering starves it.

        Per partition schema: the model's HNSW index (``hnsw.ef_search`` =
        max(ef_search, 2 x limit), doubled when collections are given;
        ``hnsw.iterative_scan = relaxed_order``) walks nearest vectors and joins them to the scoped chunks. When that yields
        fewer than ``limit`` rows although the scope holds more chunks with
        vectors (a very selective scope), the partition is searched exactly.

        Args:
            model, query, collection_paths, limit: as for ``PostgresStore.search_vectors``.
            ef_search: HNSW candidate list per search (the store's setting).

        Returns, Raises: as for ``PostgresStore.search_vectors``.
        """
        q = np.asarray(query, dtype=np.float32)
        if q.ndim != 1:
            raise ValueError(f"query must have shape (dim,), got {q.shape}")
        if limit <= 0:
            return []
        targets = self._schemas(None if collection_paths is None else list(collection_paths))
        hits: list[VectorHit] = []
        with self._pool.connection() as conn:
            dim = self._model_dim(conn, model)
            if dim is None:
                return []
            if dim != q.shape[0]:
                raise ValueError(f"query has dim {q.shape[0]}, model {model!r} vectors have dim {dim}")
            kind = vector_type(dim)
            for schema, paths in targets.items():
                if paths is not None and not paths:
                    continue
                rows = self._search_partition(conn, schema, paths, model, dim, kind, q, limit, ef_search)
                hits.extend(VectorHit(row_to_chunk(r), 1.0 - float(r["distance"])) for r in rows)
        hits.sort(key=lambda h: (-h.score, h.chunk.collection_path, h.chunk.file_path, h.chunk.chunk_index))
        return hits[:limit]

    def _search_partition(
        self,
        conn: DictConnection,
        schema: str,
        paths: list[str] | None,
        model: str,
        dim: int,
        kind: str | None,
        q: np.ndarray,
        limit: int,
        ef_search: int,
        explain: bool = False,
    ) -> list[dict[str, Any]]:
        """Rows of one partition's top ``limit`` (chunk columns + ``distance``); with
        ``explain``, the approximate query's plan rows (``{"QUERY PLAN": line}``)."""
        s = sql.Identifier(schema)
        where = sql.SQL("v.model = {} AND v.dim = {}").format(sql.Literal(model), sql.Literal(dim))
        params: dict[str, Any] = {"q": q, "k": limit}
        if paths is not None:
            where += sql.SQL(" AND c.collection_path = ANY(%(paths)s)")
            params["paths"] = paths
        cols = sql.SQL(", ").join(sql.SQL("c.{}").format(sql.Identifier(n.strip())) for n in CHUNK_SELECT.split(","))
        exact = sql.SQL(
            "SELECT {cols}, (v.embedding <=> %(q)s::vector) AS distance FROM {sh}.vectors v "
            "JOIN {s}.content_chunks c ON c.chunk_id = v.chunk_id WHERE {where} "
            f"ORDER BY distance, {key_order('c')} LIMIT %(k)s"
        ).format(cols=cols, sh=sql.Identifier(SHARED_SCHEMA), s=s, where=where)
        if kind is None:
            return conn.execute((sql.SQL("EXPLAIN ") + exact) if explain else exact, params).fetchall()
        cast = sql.SQL("{}({})").format(sql.SQL(kind), sql.Literal(dim))
        # The ORDER BY expression matches the partial index expression exactly;
        # the outer query restores strict order (relaxed_order may swap neighbours).
        approx = sql.SQL(
            "WITH hits AS MATERIALIZED (SELECT {cols}, (v.embedding::{cast} <=> %(q)s::{cast}) AS distance "
            "FROM {sh}.vectors v JOIN {s}.content_chunks c ON c.chunk_id = v.chunk_id WHERE {where} "
            "ORDER BY v.embedding::{cast} <=> %(q)s::{cast} LIMIT %(k)s) "
            f"SELECT * FROM hits ORDER BY distance, {key_order()}"
        ).format(cols=cols, cast=cast, sh=sql.Identifier(SHARED_SCHEMA), s=s, where=where)
        with conn.transaction():
            # A collection filter discards candidates the graph walk found, so a
            # scoped search walks twice as wide (measured at 1M: one-collection
            # recall@10 0.949 at ef 100, 0.963 at ef 200, for about +5 ms).
            ef = max(ef_search, 2 * limit) * (2 if paths is not None else 1)
            conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
            if self.iterative:
                conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            if explain:
                return conn.execute(sql.SQL("EXPLAIN ") + approx, params).fetchall()
            # One row more than asked: when it ties with the limit-th, the cut runs through equal
            # distances, and the walk goes deeper until it holds every tied row (bounded), so
            # the key, not the graph, picks which of them are kept.
            for deeper in range(_TIE_DEPTHS):
                params["k"] = limit * 4**deeper + 1
                rows = conn.execute(approx, params).fetchall()
                if len(rows) < params["k"] or rows[-1]["distance"] != rows[limit - 1]["distance"]:
                    break
            rows = rows[:limit]
            params["k"] = limit
        if len(rows) < limit:
            have = one_row(
                conn.execute(
                    sql.SQL(
                        "SELECT count(*) AS n FROM (SELECT 1 FROM {sh}.vectors v JOIN {s}.content_chunks c "
                        "ON c.chunk_id = v.chunk_id WHERE {where} LIMIT %(k)s) x"
                    ).format(sh=sql.Identifier(SHARED_SCHEMA), s=s, where=where),
                    params,
                ).fetchone()
            )["n"]
            if have > len(rows):
                rows = conn.execute(exact, params).fetchall()
        return rows

    def explain_vector_search(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int, ef_search: int
    ) -> str:
        """The Postgres plan of ``search_vectors``' HNSW query, one partition per block.

        Returns "" when the model has no vectors.

        Args:
            model, query, collection_paths, limit, ef_search: as for ``search_vectors``.
        """
        q = np.asarray(query, dtype=np.float32)
        targets = self._schemas(None if collection_paths is None else list(collection_paths))
        out: list[str] = []
        with self._pool.connection() as conn:
            dim = self._model_dim(conn, model)
            if dim is None:
                return ""
            for schema, paths in targets.items():
                rows = self._search_partition(
                    conn, schema, paths, model, dim, vector_type(dim), q, limit, ef_search, explain=True
                )
                out.append(f"-- {schema}\n" + "\n".join(r["QUERY PLAN"] for r in rows))
        return "\n".join(out)
