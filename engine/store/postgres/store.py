"""The Postgres + pgvector store: one schema per partition, HNSW vector search.

Owns: the Postgres implementation of the ``Store`` protocol
(``engine/store/base.py``): the connection pool, the reads and writes, keyword
search, the HNSW build settings and the indexer lock. Selected by
``CHUNKNAV_DSN=postgresql://...`` (``open_store``). The schema side (layout,
naming, self-provisioning DDL, vector index DDL) lives in
``engine/store/postgres/schema.py``; row <-> dataclass conversion and the SQL
text of row I/O in ``engine/store/postgres/rows.py``; the vector half
(vector rows, HNSW upkeep, vector search) in ``engine/store/postgres/vectors.py``
(``PgVectors``) and the embedding notes in ``engine/store/postgres/notes.py``
(``PgNotes``), both built here and delegated to. Imports psycopg 3,
psycopg_pool and pgvector; must not import streamlit, mcp, argparse or any
engine module outside ``engine.values``, ``engine.errors``, ``engine.passwords``
and ``engine.store``.

Layout: see ``engine/store/postgres/schema.py`` and ``docs/postgres.md``.
Vectors live in the shared schema, keyed by ``chunk_id`` (see
``engine/store/postgres/vectors.py``).

Provisioning (``engine/store/postgres/schema.py``) is idempotent and additive
and runs under a transaction-scoped advisory lock, so several processes may
provision at once. ``Partitions`` (``engine/store/postgres/partitions.py``)
decides when: once per schema per process, on first touch; a read never
creates a partition.

Concurrency: every write is one transaction; ``replace_document`` also takes a
per-file transaction advisory lock, so two writers of one file serialise and
the last one wins with exactly one copy of each chunk. ``index_lock`` is a
session advisory lock held on a dedicated connection.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

import numpy as np

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool
except ImportError as e:  # the [postgres] extra is not installed
    raise ImportError(
        f"CHUNKNAV_DSN selects the Postgres store, which needs the [postgres] extra "
        f"(missing module {e.name!r}): pip install 'chunknav[postgres]' "
        f"(or pip install -r requirements-postgres.txt)",
        name=e.name,
    ) from e

from engine.errors import IndexBusyError, StoreFaultError
from engine.store.base import StoreBase, merge_run
from engine.store.fts import keyword_text
from engine.values import Chunk, Collection, Document, KeywordHit, VectorHit
from engine.passwords import is_password_ref
from engine.store.postgres.rows import (
    CHUNK_INSERT,
    CHUNK_SELECT,
    DOCUMENT_SELECT,
    DOCUMENT_UPSERT,
    chunk_params,
    document_params,
    pg_jsonb,
    pg_text,
    row_to_chunk,
    row_to_document,
)

# SHARED_SCHEMA, partition_of, schema_for, HNSW_MAX_DIM, HALFVEC_MAX_DIM are re-exported (__all__).
from engine.store.postgres.schema import (
    one_row,
    DictConnection,
    HALFVEC_MAX_DIM,
    HNSW_MAX_DIM,
    SHARED_SCHEMA,
    ensure_vector_extension,
    partition_of,
    schema_for,
)
from engine.store.postgres.faults import StorePool, pg_fault
from engine.store.postgres.vectors import PgVectors
from engine.store.postgres.keyword import search_keyword as postgres_search_keyword
from engine.store.postgres.notes import PgNotes
from engine.store.postgres.partitions import Partitions

__all__ = [
    "PostgresStore",
    "SHARED_SCHEMA",
    "partition_of",
    "schema_for",
    "HNSW_MAX_DIM",
    "HALFVEC_MAX_DIM",
]

log = logging.getLogger(__name__)

#: Session advisory-lock key of the "one indexer at a time" rule (any fixed int64).
INDEX_LOCK_KEY = 0x63686E6B6E6176  # "chnknav"


class PostgresStore(StoreBase):
    """``Store`` on PostgreSQL + pgvector (layout: ``engine/store/postgres/schema.py``).

    Safe to share between threads: each call borrows a connection from a
    psycopg pool. Open one per process; several processes may share a database.

    HNSW upkeep: pgvector inserts into an existing HNSW index one row at a
    time (~430 vectors/s measured on 2 cores, 256-d), about 10x slower than
    building the index over loaded rows. So while this store holds
    ``index_lock``, the first vectors of a ``(model, dim)`` that has no index
    yet are loaded without one, and the index is built in bulk when the lock
    is released (searches meanwhile are exact). Later runs insert into the
    existing index. ``build_vector_indexes()`` builds any missing index.
    The vector methods delegate to ``PgVectors`` (``engine/store/postgres/vectors.py``), the
    embedding notes to ``PgNotes`` (``engine/store/postgres/notes.py``).

    Args:
        dsn: ``postgresql://user:pass@host:port/db`` (libpq URI or key=value).
        pool_size: most connections this store holds at once (>= 1), plus one
            dedicated connection while ``index_lock`` is held.
        build_memory_mb: ``maintenance_work_mem`` for HNSW builds, in MiB; the
            build is fast while the graph fits (about 1.5 KiB per 256-d vector).
        ef_search: HNSW candidate list per search (``hnsw.ef_search``), raised
            to 2 x limit for large limits; higher is slower and more exact
            (``bench/search_latency_pg.py --ef`` measures the trade-off).

    Raises:
        psycopg.OperationalError: the server cannot be reached or refuses the login.
        psycopg.errors.InsufficientPrivilege: the role may not create the
            ``vector`` extension or the schemas (create them once as an owner).
    """

    def __init__(self, dsn: str, pool_size: int = 4, build_memory_mb: int = 1024, ef_search: int = 100):
        if pool_size < 1:
            raise ValueError(f"pool_size must be >= 1 connections, got {pool_size}")
        if build_memory_mb < 64:
            raise ValueError(f"build_memory_mb must be >= 64 MiB, got {build_memory_mb}")
        self.dsn = dsn
        self.build_memory_mb = build_memory_mb
        self.ef_search = ef_search
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = ensure_vector_extension(conn)  # before register_vector() can find its type
        #: pgvector >= 0.8 has iterative index scans; older ones rely on the exact fallback alone.
        self.pgvector_version = version
        iterative = tuple(int(p) for p in re.findall(r"\d+", self.pgvector_version)[:2]) >= (0, 8)
        self._pool: ConnectionPool[DictConnection] = StorePool(  # faults classified: engine/store/postgres/faults.py
            dsn,
            min_size=1,
            max_size=pool_size,
            # prepare_threshold=None: no server-side prepared statements, so
            # plans always see the literals that the partial HNSW indexes need
            # and the store also works behind pgbouncer in transaction mode.
            kwargs={"autocommit": True, "prepare_threshold": None, "row_factory": dict_row},
            configure=register_vector,
            open=True,
            name="chunknav",
        )
        #: The vector half (HNSW upkeep state included); see ``engine/store/postgres/vectors.py``.
        #: Partition schemas: provisioning once per process, and which schemas a call visits.
        self._partitions = Partitions(self._pool)
        self._schema, self._schemas = self._partitions.schema, self._partitions.schemas
        self._vectors = PgVectors(self._pool, self._schemas, iterative)
        #: The embedding notes; see ``engine/store/postgres/notes.py``.
        self._notes = PgNotes(self._pool, self._schemas)
        self._partitions.provision_shared()

    # -- connections and provisioning -----------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[DictConnection]:
        """A pooled connection inside one transaction (commit on success)."""
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    def provision(self, partition: str) -> str:
        """Create or upgrade one partition's schema; idempotent, safe across processes
        (``Partitions.provision``). Returns the schema name (``schema_for(partition)``)."""
        return self._partitions.provision(partition)

    def partitions(self) -> dict[str, str]:
        """Registered partitions: partition name -> schema name, sorted by name."""
        return self._partitions.registered()

    # -- collections -------------------------------------------------------------
    def add_collection(self, collection: Collection) -> None:
        """Insert or update a collection (path -> root directory, password).

        Also provisions the collection's partition schema.
        """
        self._schema(collection.collection_path, create=True)
        with self._tx() as conn:
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.collections (collection_path, root, password, partition) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (collection_path) DO UPDATE SET "
                    "root = EXCLUDED.root, password = EXCLUDED.password, partition = EXCLUDED.partition"
                ).format(sql.Identifier(SHARED_SCHEMA)),
                (
                    collection.collection_path,
                    collection.root,
                    collection.password_ref,
                    partition_of(collection.collection_path),
                ),
            )

    def remove_collection(self, collection_path: str) -> bool:
        """Drop a collection with its documents and chunks (vectors stay, stale).

        Returns:
            False when no such collection was registered (its partition's rows,
            if any, are still removed).
        """
        schema = self._schema(collection_path)
        with self._tx() as conn:
            cur = conn.execute(
                sql.SQL("DELETE FROM {}.collections WHERE collection_path = %s").format(sql.Identifier(SHARED_SCHEMA)),
                (collection_path,),
            )
            existed = cur.rowcount > 0
            if schema is None:
                return existed
            s = sql.Identifier(schema)
            conn.execute(sql.SQL("DELETE FROM {}.documents WHERE collection_path = %s").format(s), (collection_path,))
            conn.execute(
                sql.SQL("DELETE FROM {}.content_chunks WHERE collection_path = %s").format(s), (collection_path,)
            )
        return existed

    def collections(self) -> list[Collection]:
        """All collections, sorted by ``collection_path``."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                sql.SQL("SELECT collection_path, root, password FROM {}.collections ORDER BY collection_path").format(
                    sql.Identifier(SHARED_SCHEMA)
                )
            ).fetchall()
        return [
            Collection(r["collection_path"], r["root"], r["password"] if is_password_ref(r["password"]) else None)
            for r in rows
        ]

    def get_collection(self, collection_path: str) -> Collection | None:
        """One collection or None."""
        with self._pool.connection() as conn:
            r = conn.execute(
                sql.SQL("SELECT collection_path, root, password FROM {}.collections WHERE collection_path = %s").format(
                    sql.Identifier(SHARED_SCHEMA)
                ),
                (collection_path,),
            ).fetchone()
        return (
            None
            if r is None
            else Collection(r["collection_path"], r["root"], r["password"] if is_password_ref(r["password"]) else None)
        )

    # -- documents and chunks ----------------------------------------------------
    def _document_row(self, collection_path: str, file_path: str, columns: str) -> dict[str, Any] | None:
        """``columns`` (SQL text) of one ``documents`` row by key, or None (no
        partition or no row). Reads never create a partition."""
        schema = self._schema(collection_path)
        if schema is None:
            return None
        with self._pool.connection() as conn:
            return conn.execute(
                sql.SQL(
                    "SELECT " + columns + " FROM {}.documents WHERE collection_path = %s AND file_path = %s"
                ).format(sql.Identifier(schema)),
                (collection_path, file_path),
            ).fetchone()

    def get_document(self, collection_path: str, file_path: str) -> Document | None:
        """One document row (no text) or None."""
        r = self._document_row(collection_path, file_path, DOCUMENT_SELECT)
        return None if r is None else row_to_document(r)

    def documents(self, collection_path: str | None = None) -> list[Document]:
        """Document rows (no text), all or of one collection, sorted by (collection_path, file_path)."""
        out: list[Document] = []
        with self._pool.connection() as conn:
            for schema in self._schemas(None if collection_path is None else [collection_path]):
                q = sql.SQL("SELECT " + DOCUMENT_SELECT + " FROM {}.documents").format(sql.Identifier(schema))
                if collection_path is None:
                    rows = conn.execute(q).fetchall()
                else:
                    rows = conn.execute(q + sql.SQL(" WHERE collection_path = %s"), (collection_path,)).fetchall()
                out.extend(row_to_document(r) for r in rows)
        out.sort(key=lambda d: (d.collection_path, d.file_path))
        return out

    def document_text(self, collection_path: str, file_path: str) -> str | None:
        """The full extracted text of a stored document ("" for empty/failed), or None."""
        r = self._document_row(collection_path, file_path, "text")
        return None if r is None else (r["text"] or "")

    def replace_document(self, document: Document, text: str, chunks: list[Chunk]) -> None:
        """Store the document row, its text and its chunks in one transaction.

        Any previous row and chunks for ``(collection_path, file_path)`` are
        replaced; readers see the old set or the new set, never a mix. A
        per-file advisory lock serialises concurrent writers of one file, so
        the last writer wins and each chunk exists once.

        Args:
            document: the row; its key decides the partition schema.
            text: the full extracted text (offsets of ``chunks`` index into it).
            chunks: this file's chunks, ``chunk_index`` 0..n-1, each carrying
                the same collection_path and file_path as ``document``.

        Raises:
            ValueError: a chunk belongs to another file.
        """
        key = (document.collection_path, document.file_path)
        for c in chunks:
            if (c.collection_path, c.file_path) != key:
                raise ValueError(
                    f"chunk {c.chunk_index} belongs to {c.collection_path}/{c.file_path}, not {key[0]}/{key[1]}"
                )
        schema = self._schema(document.collection_path, create=True)
        assert schema is not None
        s = sql.Identifier(schema)
        with self._tx() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{schema}\x1f{key[0]}\x1f{key[1]}",)
            )
            conn.execute(sql.SQL(DOCUMENT_UPSERT).format(s), document_params(document, text))
            conn.execute(
                sql.SQL("DELETE FROM {}.content_chunks WHERE collection_path = %s AND file_path = %s").format(s), key
            )
            if chunks:
                fold = keyword_text(text)  # chunk text -> its keyword text, None: the same
                params = [(*chunk_params(c), pg_text(fold(c.chunk_text))) for c in chunks]
                with conn.cursor() as cur:
                    cur.executemany(sql.SQL(CHUNK_INSERT).format(s), params)

    def set_document_metadata(self, collection_path: str, file_path: str, metadata: dict[str, Any]) -> bool:
        """Replace one document's ``metadata`` only: its text, chunks and vectors stay as they
        are (the indexer's stale marks). False: no such document."""
        schema = self._schema(collection_path)
        if schema is None:
            return False
        s = sql.Identifier(schema)
        with self._tx() as conn:
            cur = conn.execute(
                sql.SQL(
                    "UPDATE {}.documents SET metadata = %s::jsonb WHERE collection_path = %s AND file_path = %s"
                ).format(s),
                (pg_jsonb(metadata or {}), collection_path, file_path),
            )
            return cur.rowcount > 0

    def remove_document(self, collection_path: str, file_path: str) -> None:
        """Delete the document row, its text and its chunks (vectors stay, counted stale)."""
        schema = self._schema(collection_path)
        if schema is None:
            return
        s = sql.Identifier(schema)
        with self._tx() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"{schema}\x1f{collection_path}\x1f{file_path}",),
            )
            # Tables in the order every write and the DDL take them: documents, then chunks.
            conn.execute(
                sql.SQL("DELETE FROM {}.documents WHERE collection_path = %s AND file_path = %s").format(s),
                (collection_path, file_path),
            )
            conn.execute(
                sql.SQL("DELETE FROM {}.content_chunks WHERE collection_path = %s AND file_path = %s").format(s),
                (collection_path, file_path),
            )

    def get_chunk(self, collection_path: str, file_path: str, chunk_index: int) -> Chunk | None:
        """One chunk by key ``(collection_path, file_path, chunk_index)``, or None."""
        schema = self._schema(collection_path)
        if schema is None:
            return None
        s = sql.Identifier(schema)
        with self._pool.connection() as conn:
            r = conn.execute(
                sql.SQL(
                    "SELECT " + CHUNK_SELECT + " FROM {}.content_chunks "
                    "WHERE collection_path = %s AND file_path = %s AND chunk_index = %s"
                ).format(s),
                (collection_path, file_path, chunk_index),
            ).fetchone()
        return None if r is None else row_to_chunk(r)

    def chunk_count(self, collection_path: str, file_path: str) -> int:
        """Number of chunks stored for the file (0 when never indexed)."""
        schema = self._schema(collection_path)
        if schema is None:
            return 0
        s = sql.Identifier(schema)
        with self._pool.connection() as conn:
            r = conn.execute(
                sql.SQL(
                    "SELECT count(*) AS n FROM {}.content_chunks WHERE collection_path = %s AND file_path = %s"
                ).format(s),
                (collection_path, file_path),
            ).fetchone()
        return int(one_row(r)["n"])

    def chunks(self, collection_path: str, file_path: str) -> list[Chunk]:
        """All chunks of one file, ordered by ``chunk_index``."""
        schema = self._schema(collection_path)
        if schema is None:
            return []
        s = sql.Identifier(schema)
        with self._pool.connection() as conn:
            rows = conn.execute(
                sql.SQL(
                    "SELECT " + CHUNK_SELECT + " FROM {}.content_chunks "
                    "WHERE collection_path = %s AND file_path = %s ORDER BY chunk_index"
                ).format(s),
                (collection_path, file_path),
            ).fetchall()
        return [row_to_chunk(r) for r in rows]

    # -- vectors (PgVectors, engine/store/postgres/vectors.py) ------------------------
    def chunks_missing_vectors(
        self, model: str, limit: int | None = None, after: str | None = None
    ) -> list[tuple[str, str]]:
        """Distinct chunk ids that have no vector for ``model``, with their text.

        Returns:
            ``[(chunk_id, chunk_text)]`` ordered by chunk_id (stable), only ids
            greater than ``after`` (None: all), at most ``limit`` (None: all).
            A chunk id stored at several paths appears once.
        """
        return self._vectors.chunks_missing_vectors(model, limit, after)

    def build_vector_indexes(self) -> list[tuple[str, int, float]]:
        """Build every missing HNSW index (one per stored ``(model, dim)``), in bulk.

        Returns:
            ``[(model, dim, seconds)]`` for each index built (empty when all exist).
        """
        return self._vectors.build_vector_indexes(self.build_memory_mb)

    def add_vectors(self, model: str, chunk_ids: list[str], vectors: np.ndarray) -> int:
        """Add vectors for ``model``; existing ``(chunk_id, model)`` rows are kept.

        Concurrent writers never fail. The first vectors of a ``(model, dim)``
        create its HNSW index, or, under ``index_lock``, defer it to a bulk
        build at lock release (class docstring).

        Args:
            model: embedding model name.
            chunk_ids: n chunk ids (need not exist as chunks: such vectors
                count as stale).
            vectors: float32, shape (n, dim), L2-normalised.

        Returns:
            Rows added (duplicates within ``chunk_ids`` count once).

        Raises:
            ValueError: ``vectors`` is not 2-D, its row count is not
                ``len(chunk_ids)``, or ``model`` already has vectors of another dim.
        """
        return self._vectors.add_vectors(model, chunk_ids, vectors, self.build_memory_mb)

    def iter_vectors(self, model: str | None = None, batch: int = 10000) -> Iterator[tuple[str, list[str], np.ndarray]]:
        """Every stored vector (stale ones too), in batches, for export or migration.

        Args:
            model: only this model (None: every model).
            batch: most rows per yielded batch (>= 1).

        Yields:
            ``(model, chunk_ids, vectors)`` with vectors float32, shape
            (len(chunk_ids), dim); one model and one dim per batch, ordered by
            (model, dim, chunk_id).
        """
        return self._vectors.iter_vectors(model, batch)

    def has_vectors(self, model: str) -> bool:
        """True when at least one vector is stored for ``model`` (one indexed lookup)."""
        with self._pool.connection() as conn:
            return (
                conn.execute(
                    sql.SQL("SELECT 1 FROM {}.vectors WHERE model = %s LIMIT 1").format(sql.Identifier(SHARED_SCHEMA)),
                    (model,),
                ).fetchone()
                is not None
            )

    def vector_counts(self) -> dict[str, dict[str, int]]:
        """Per model: ``{"vectors", "dim", "stale", "missing"}``.

        ``stale``: vectors whose chunk_id is in no chunk of any partition;
        ``missing``: distinct chunk ids (all partitions) with no vector for
        that model. ``dim`` is the model's largest stored dimension.
        """
        return self._vectors.vector_counts()

    def search_vectors(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> list[VectorHit]:
        """Top ``limit`` chunks by cosine similarity, HNSW first, exact when filtering starves it.

        How: ``PgVectors.search_vectors`` (``ef_search`` is this store's setting).

        Args:
            model: embedding model whose vectors are searched.
            query: float32, shape (dim,), L2-normalised.
            collection_paths: collections to search (None: all).
            limit: most hits returned (>= 0).

        Returns:
            Hits best first; ``score`` = 1 - cosine distance = cosine similarity
            (-1..1). A chunk_id stored at several paths yields one hit per path.
            No vectors for ``model`` -> [].

        Raises:
            ValueError: ``query`` is not 1-D or its dim differs from the model's vectors.
        """
        return self._vectors.search_vectors(model, query, collection_paths, limit, self.ef_search)

    def explain_vector_search(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int = 10
    ) -> str:
        """The Postgres plan of ``search_vectors``' HNSW query, one partition per block.

        For operators and tests: a healthy plan shows ``Index Scan using
        vectors_hnsw_...``. Returns "" when the model has no vectors.

        Args:
            model, query, collection_paths, limit: as for ``search_vectors``.
        """
        return self._vectors.explain_vector_search(model, query, collection_paths, limit, self.ef_search)

    def vector_dim(self, model: str) -> int | None:
        """Dimension of ``model``'s stored vectors, or None when it has none."""
        return self._vectors.vector_dim(model)

    def purge_stale_vectors(self) -> dict[str, int]:
        """Delete every stale vector (and its text notes) in one transaction (``engine.store.purge``)."""
        return self._vectors.purge_stale()

    # -- embedding notes (PgNotes, engine/store/postgres/notes.py) --------------------
    def vectors_by_text(self, model: str, text_hashes: list[str]) -> dict[str, tuple[np.ndarray, int | None]]:
        """Stored vectors of ``model`` by window-text sha256 (``PgNotes.vectors_by_text``)."""
        return self._notes.vectors_by_text(model, text_hashes)

    def note_vectors(
        self, model: str, chunk_ids: list[str], text_hashes: list[str], truncated_chars: list[int | None]
    ) -> None:
        """Remember the window text of each new vector and which were cut (``PgNotes.note_vectors``)."""
        self._notes.note_vectors(model, chunk_ids, text_hashes, truncated_chars)

    def record_embed_failures(self, model: str, failures: list[tuple[str, str, str]]) -> None:
        """Record ``(chunk_id, code, reason)`` of chunks that got no vector (``PgNotes``)."""
        self._notes.record_embed_failures(model, failures)

    def backfill_vector_texts(self, model: str, text_hash: Callable[[str], str]) -> int:
        """Text notes for vectors that came without one (``PgNotes.backfill_vector_texts``)."""
        return self._notes.backfill_vector_texts(model, text_hash)

    def embed_notes(self, limit: int = 50) -> dict[str, dict[str, Any]]:
        """Per model truncations and failures over live chunks (``PgNotes.embed_notes``)."""
        return self._notes.embed_notes(limit)

    def repair_orphans(self) -> int:
        """Drop the documents and chunks of collection paths that are not collections any
        more: per partition, its distinct collection paths against the registry.

        Returns:
            The number of collection paths whose rows were removed.
        """
        known = {c.collection_path for c in self.collections()}
        gone: set[str] = set()
        with self._pool.connection() as conn:
            for schema in self._schemas(None):
                rows = conn.execute(
                    sql.SQL("SELECT DISTINCT collection_path FROM {}.documents").format(sql.Identifier(schema))
                ).fetchall()
                gone.update(r["collection_path"] for r in rows if r["collection_path"] not in known)
        for cp in sorted(gone):
            self.remove_collection(cp)
        return len(gone)

    # -- keyword search -----------------------------------------------------------
    def search_keyword(self, query: str, collection_paths: Iterable[str] | None, limit: int) -> list[KeywordHit]:
        """Full-text hits over chunk_text, best first (``engine.store.postgres.keyword.search_keyword``)."""
        return postgres_search_keyword(self._pool, self._schemas, query, collection_paths, limit)

    # -- runs and locks -------------------------------------------------------------
    @contextmanager
    def batch(self) -> Iterator[None]:
        """No grouping: every file keeps its own transaction, so several
        indexers sharing the database interleave per file (Store.batch)."""
        yield

    @contextmanager
    def index_lock(self) -> Iterator[None]:
        """Exclusive indexer lock across processes (``pg_try_advisory_lock``).

        Held on a dedicated connection for the whole ``with`` block, released
        on exit (or by the server when the process dies). HNSW indexes
        deferred during the block are built before the lock is released.

        A server lost meanwhile (the run then ended on ``index-unavailable``) released the
        lock with the session; the deferred indexes are then built by a later run (searches
        are exact until then), and nothing raised here hides the run's own outcome.

        Raises:
            IndexBusyError: another session holds the lock (no waiting).
            StoreUnavailableError: the server cannot be reached to take the lock.
        """
        try:
            conn = psycopg.connect(self.dsn, autocommit=True)
            got = one_row(conn.execute("SELECT pg_try_advisory_lock(%s)", (INDEX_LOCK_KEY,)).fetchone())[0]
        except psycopg.Error as e:
            fault = pg_fault(e, self.dsn)
            if fault is None:
                raise
            raise fault from e
        try:
            if not got:
                raise IndexBusyError("another index run holds the lock (Postgres advisory lock)")
            self._vectors.lock_held = True
            try:
                yield
            finally:
                self._vectors.lock_held = False
                try:
                    if self._vectors.deferred:
                        self.build_vector_indexes()
                except (psycopg.OperationalError, StoreFaultError) as e:  # the server is gone
                    log.info("deferred vector indexes not built: %s", e)
                finally:
                    if not conn.broken:
                        try:
                            conn.execute("SELECT pg_advisory_unlock(%s)", (INDEX_LOCK_KEY,))
                        except psycopg.OperationalError as e:  # lost now: the server released it
                            log.info("index lock not released by hand: %s", e)
        finally:
            conn.close()

    def save_run(self, summary: dict[str, Any]) -> None:
        """Remember an index run's summary (JSON-able dict): a later save of the last run
        (same ``runId``) replaces its row (``engine.store.base.merge_run``); the last 20 are kept."""
        with self._tx() as conn:
            shared = sql.Identifier(SHARED_SCHEMA)
            row = conn.execute(
                sql.SQL("SELECT id, summary FROM {}.runs ORDER BY id DESC LIMIT 1 FOR UPDATE").format(shared)
            ).fetchone()
            merged = merge_run(row["summary"], summary) if row else None
            if merged is not None and row is not None:
                conn.execute(
                    sql.SQL("UPDATE {}.runs SET saved_at = %s, summary = %s::jsonb WHERE id = %s").format(shared),
                    (time.time(), pg_jsonb(merged), row["id"]),
                )
                return
            conn.execute(
                sql.SQL("INSERT INTO {}.runs (saved_at, summary) VALUES (%s, %s::jsonb)").format(shared),
                (time.time(), pg_jsonb(summary)),
            )
            conn.execute(
                sql.SQL(
                    "DELETE FROM {0}.runs WHERE id NOT IN (SELECT id FROM {0}.runs ORDER BY id DESC LIMIT 20)"
                ).format(shared)
            )

    def last_run(self) -> dict[str, Any] | None:
        """The last saved run summary, or None."""
        with self._pool.connection() as conn:
            r = conn.execute(
                sql.SQL("SELECT summary FROM {}.runs ORDER BY id DESC LIMIT 1").format(sql.Identifier(SHARED_SCHEMA))
            ).fetchone()
        return None if r is None else r["summary"]

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        """``with PostgresStore(dsn) as store:`` closes the pool on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the pool."""
        self.close()
