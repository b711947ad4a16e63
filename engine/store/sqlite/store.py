"""SQLite store (the default backend): one file, WAL, FTS5 and numpy cosine.

Owns: ``SqliteStore``, the ``Store`` protocol on one SQLite file: the rows of
collections, documents, chunks, vectors and runs, the indexer lock, and the
collaborators it builds and delegates to. Imports ``engine.values``,
``engine.errors``, ``engine.passwords`` and the store's own modules
(``sqlite_utils`` only through ``engine.store.sqlite.schema``, for a new file);
never a face (streamlit, mcp, argparse), never extract/embed.

Schema (``PRAGMA page_size=16384`` is set before the first table, then WAL)::

    collections(collection_path PK, root, password)
    documents(collection_path, file_path PK pair, content_hash, settings_key,
              file_type, status, reason, size_bytes, last_modified, indexed_at,
              page_count, chunk_count, text_length, summary, metadata JSON, text)
    chunks(collection_path, file_path, chunk_index PK triple; chunk_id (indexed),
           content_hash, start, end, chunk_text, page, page_label, bbox JSON,
           regions JSON, metadata JSON, last_modified, search_text: the keyword text
           where engine.store.fts.keyword_text folds the chunk text, else NULL)
    chunks_fts   FTS5 (porter over unicode61) over coalesce(search_text, chunk_text) (external content;
                 rows added in bulk by replace_document, removed by the delete/update triggers)
    chunks_tri   FTS5 (trigram) over the chunks holding CJK characters (same upkeep,
                 conditional triggers; see engine.store.sqlite.keyword)
    vectors(chunk_id, model PK pair; dim, vec float32 blob, created)
    runs(id, saved_at, summary JSON)
    meta(key PK, value)   db_id, chunks_gen, vectors_gen:<model>

Concurrency: one ``sqlite3`` connection per thread for a file (``Connections``);
readers never wait for the writer (WAL) and every multi-row read is one
statement, so it sees one snapshot. ``:memory:`` uses one shared connection
behind a lock. Every write bumps a counter in ``meta`` so that the vector cache
of this or another process notices the change.

Vector cache: per model, a float32 matrix (n, dim) of every stored vector,
memory-mapped for a file database (``<db>.<model>.f32``/``.rowids``/``.ids``/
``.json``), in RAM for ``:memory:``, and the chunk -> matrix row table persisted
beside it (``<db>.<model>.occ.npz``, keyed by ``db_id`` and the counters); see
``engine.store.sqlite.vectors``.

Collaborators, each holding its own state: the connections, transactions and
counters (``Connections``, ``engine.store.sqlite.connections``); built on its
read/write helpers, the schema functions of ``engine.store.sqlite.schema``, the
embedding notes (``EmbedNotes``, ``engine.store.sqlite.notes``), the keyword
index (``KeywordIndex``, ``engine.store.sqlite.keyword``) and the vector search
(``VectorSearch``, ``engine.store.sqlite.search``, over the ``VectorCache``).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, cast

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.errors import IndexBusyError, StoreBusyError, StoreFaultError
from engine.values import Chunk, Collection, Document, KeywordHit, VectorHit
from engine.passwords import is_password_ref
from engine.store.base import ChunkRef, StoreBase, as_vector_rows, merge_run
from engine.store.fts import CJK_GLOB, is_cjk, keyword_text
from engine.store.purge import purge_stale
from engine.store.sqlite.connections import Connections, free_bytes, store_fault
from engine.store.sqlite.keyword import KEYWORD_TEXT_SQL, KeywordIndex, chunk_rows
from engine.store.sqlite.notes import EmbedNotes
from engine.store.sqlite.rows import (
    CHUNK_COLUMNS,
    DOC_COLUMNS,
    chunk_of,
    chunk_params,
    document_of,
    to_json,
)
from engine.store.sqlite.schema import check_schema, create_schema, init_lock, orphan_collections
from engine.store.sqlite.search import VectorSearch
from engine.store.sqlite.vectors import Matrix, Occurrences, VectorCache

#: Where ``chunk_text`` sits in a row of ``CHUNK_COLUMNS`` parameters.
_TEXT = [c.strip() for c in CHUNK_COLUMNS.split(",")].index("chunk_text")

__all__ = ["SqliteStore"]

log = logging.getLogger(__name__)

_BUSY_TIMEOUT_MS = 30_000


class SqliteStore(StoreBase):
    """The ``Store`` protocol on one SQLite file (or ``":memory:"``).

    Safe to share between threads: each thread reads through its own
    connection; writes are serialised by SQLite (``busy_timeout``) and by a
    process-local lock.
    """

    #: ``replace_document`` takes ``engine.index.rows.RowChunks`` as they are (INSERT
    #: parameters built ahead, in an extract worker): the indexer then builds rows, not ``Chunk``s.
    takes_chunk_rows = True
    #: The ``*_refs`` searches, ``chunks_at`` and ``chunk_files`` answer with ``chunks`` rowids.
    row_refs = True

    def __init__(
        self,
        path: str,
        busy_timeout_ms: int = _BUSY_TIMEOUT_MS,
        vector_scan: str = "auto",
        int8_min_rows: int = 200_000,
    ):
        """Open or create the database.

        Args:
            path: file path (parent directories are created) or ``":memory:"``.
            busy_timeout_ms: how long one write waits for another process's
                writer lock before ``StoreBusyError``.
            vector_scan, int8_min_rows: settings ``vector_scan`` ("auto": full scans of
                >= int8_min_rows rows use the int8 scan; "int8": every full scan; "exact": none).

        A file this process cannot write is opened read-only (``Connections``): no init
        lock, no schema change, no vector cache file written; ``read_only`` says so and
        every write raises ``StoreUnavailableError``.

        Raises:
            sqlite3.DatabaseError: the file is not a SQLite database.
            StoreUnavailableError: a read-only file that holds no index, or whose
                write-ahead log cannot be read.
        """
        self.path = str(path)
        self.memory = self.path == ":memory:"
        self._int8_min_rows = {"exact": None, "int8": 0}.get(vector_scan, int(int8_min_rows))
        self._index_thread_lock = threading.Lock()  # index_lock for ":memory:"
        if not self.memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = Connections(self.path, int(busy_timeout_ms))
        # the connection helpers every part of the store reads and writes through
        self._conn, self._read, self._write = self._db.conn, self._db.read, self._db.write
        if self._db.read_only is None:
            try:
                with self._db.write_lock, init_lock(self.path, self.memory):
                    create_schema(self._conn(), self._read, self._write)
            except (sqlite3.Error, OSError, StoreFaultError) as e:
                # a full disk or an I/O error while opening for writing: read it read-only
                if not self._db.fall_back_read_only(e):
                    raise
                log.info("the index at %s is opened read-only: %s", self.path, self._db.read_only)
        self.read_only = self._db.read_only is not None
        self.read_only_reason = self._db.read_only
        if self.read_only:
            check_schema(self._conn(), self.path)
        self.db_id = self._db.meta_get("db_id")
        self._vectors = VectorCache(self.path, self.db_id, self._read, read_only=self.read_only)
        self._df_cache: dict[str, Any] = {}  # keyword document frequencies of this chunks_gen
        self._warm_models: set[str] = set()  # models given vectors since the last warm_vectors()
        self._notes = EmbedNotes(self._read, self._write)
        self._keyword = KeywordIndex(self._read, self._write, self._df_cache)
        self._search = VectorSearch(self._read, self._db.gens, self._vectors, self._int8_min_rows)

    def batch(self) -> AbstractContextManager[None]:
        """Group this thread's writes in the block into one transaction (``Connections.batch``;
        Store.batch). Vector rows added in the block reach the matrix files only after it commits.

        Raises:
            Whatever the block raises, after rolling back the block's writes.
        """
        return self._db.batch()

    # -- collections -----------------------------------------------------------
    def add_collection(self, collection: Collection) -> None:
        """Insert or update a collection (path -> root directory, password)."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO collections(collection_path, root, password) VALUES (?, ?, ?) "
                "ON CONFLICT(collection_path) DO UPDATE SET root = excluded.root, "
                "password = excluded.password",
                (collection.collection_path, collection.root, collection.password_ref),
            )

    def remove_collection(self, collection_path: str) -> bool:
        """Drop a collection with its documents and chunks (vectors stay, then stale).

        Returns:
            False when the collection did not exist.
        """
        with self._write() as conn:
            n = conn.execute("DELETE FROM collections WHERE collection_path = ?", (collection_path,)).rowcount
            conn.execute("DELETE FROM chunks WHERE collection_path = ?", (collection_path,))
            conn.execute("DELETE FROM documents WHERE collection_path = ?", (collection_path,))
            self._db.bump(conn, "chunks_gen")
        return n > 0

    def collections(self) -> list[Collection]:
        """All collections, sorted by ``collection_path``."""
        return list(self._collections_by_path().values())

    def get_collection(self, collection_path: str) -> Collection | None:
        """One collection or None."""
        return self._collections_by_path().get(collection_path)

    def _collections_by_path(self) -> dict[str, Collection]:
        """``collection_path -> Collection`` sorted by path (read again only after a change: ``_unchanged``)."""

        def read(conn: sqlite3.Connection) -> dict[str, Collection]:
            rows = conn.execute(
                "SELECT collection_path, root, password FROM collections ORDER BY collection_path"
            ).fetchall()
            return {r[0]: Collection(r[0], r[1], r[2] if is_password_ref(r[2]) else None) for r in rows}

        return self._db.unchanged(("collections",), read)

    # -- documents and chunks -----------------------------------------------------
    def get_document(self, collection_path: str, file_path: str) -> Document | None:
        """One document row (no text) or None."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE collection_path = ? AND file_path = ?",
                (collection_path, file_path),
            ).fetchone()
        return document_of(row) if row else None

    def documents(self, collection_path: str | None = None) -> list[Document]:
        """Document rows (no text), all or of one collection, sorted by key."""
        sql = f"SELECT {DOC_COLUMNS} FROM documents"
        args: tuple = ()
        if collection_path is not None:
            sql += " WHERE collection_path = ?"
            args = (collection_path,)
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY collection_path, file_path", args).fetchall()
        return [document_of(r) for r in rows]

    def document_text(self, collection_path: str, file_path: str) -> str | None:
        """The full extracted text of a stored document ("" for empty/failed), or None."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT text FROM documents WHERE collection_path = ? AND file_path = ?", (collection_path, file_path)
            ).fetchone()
        return None if row is None else (row[0] or "")

    def replace_document(self, document: Document, text: str, chunks: list[Chunk]) -> None:
        """Swap the document row, its text and all its chunks (and FTS rows) in one transaction.

        Raises:
            ValueError: a chunk belongs to another key than ``document``.
        """
        key = (document.collection_path, document.file_path)
        ready = getattr(chunks, "sqlite_params", None)  # engine.index.rows.RowChunks: rows built ahead

        cjk = [False]  # any chunk text holding CJK, seen in the same pass (chunks may be made lazily)

        def rows() -> Iterator[tuple]:  # one pass, no list: a huge file's chunks stream in
            if ready is not None:
                cjk[0] = chunks.has_cjk()  # type: ignore[attr-defined]
                yield from ready(key)
                return
            for c in chunks:
                if (c.collection_path, c.file_path) != key:
                    raise ValueError(f"chunk {c.chunk_index} of {c.file_path!r} given for {key[1]!r}")
                if not cjk[0] and is_cjk(c.chunk_text):
                    cjk[0] = True
                yield chunk_params(c)

        d = document
        fold = keyword_text(text)  # chunk text -> its keyword text, None: the same
        with self._write() as conn:
            conn.execute("DELETE FROM chunks WHERE collection_path = ? AND file_path = ?", key)
            conn.execute(
                f"INSERT OR REPLACE INTO documents({DOC_COLUMNS}, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    d.collection_path,
                    d.file_path,
                    d.content_hash,
                    d.settings_key,
                    d.file_type,
                    d.status,
                    d.reason,
                    d.size_bytes,
                    d.last_modified,
                    d.indexed_at,
                    d.page_count,
                    d.chunk_count,
                    d.text_length,
                    d.summary,
                    to_json(d.metadata or {}),
                    text,
                ),
            )
            if chunks:
                conn.executemany(
                    f"INSERT INTO chunks({CHUNK_COLUMNS}, search_text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    ((*p, fold(p[_TEXT])) for p in rows()),
                )
                conn.execute(
                    f"INSERT INTO chunks_fts (rowid, chunk_text) SELECT rowid, {KEYWORD_TEXT_SQL.format(r='chunks')} "
                    "FROM chunks WHERE collection_path = ? AND file_path = ?",
                    key,
                )
                if cjk[0]:
                    conn.execute(
                        "INSERT INTO chunks_tri (rowid, chunk_text) SELECT rowid, chunk_text "
                        "FROM chunks WHERE collection_path = ? AND file_path = ? "
                        "AND chunk_text GLOB ?",
                        (*key, CJK_GLOB),
                    )
            self._db.bump(conn, "chunks_gen")

    def set_document_metadata(self, collection_path: str, file_path: str, metadata: dict[str, Any]) -> bool:
        """Replace one document's ``metadata`` only: its text, chunks (rowids), keyword rows
        and vectors stay as they are (the indexer's stale marks). False: no such document."""
        with self._write() as conn:
            n = conn.execute(
                "UPDATE documents SET metadata = ? WHERE collection_path = ? AND file_path = ?",
                (to_json(metadata or {}), collection_path, file_path),
            ).rowcount
        return n > 0

    def remove_document(self, collection_path: str, file_path: str) -> None:
        """Delete the document row, its text and its chunks (vectors stay)."""
        with self._write() as conn:
            conn.execute("DELETE FROM chunks WHERE collection_path = ? AND file_path = ?", (collection_path, file_path))
            conn.execute(
                "DELETE FROM documents WHERE collection_path = ? AND file_path = ?", (collection_path, file_path)
            )
            self._db.bump(conn, "chunks_gen")

    def get_chunk(self, collection_path: str, file_path: str, chunk_index: int) -> Chunk | None:
        """One chunk by key, or None."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE collection_path = ? AND file_path = ? AND chunk_index = ?",
                (collection_path, file_path, chunk_index),
            ).fetchone()
        return chunk_of(row) if row else None

    def chunk_count(self, collection_path: str, file_path: str) -> int:
        """Number of chunks stored for the file (0 when never indexed)."""
        with self._read() as conn:
            return conn.execute(
                "SELECT count(*) FROM chunks WHERE collection_path = ? AND file_path = ?", (collection_path, file_path)
            ).fetchone()[0]

    def chunks(self, collection_path: str, file_path: str) -> list[Chunk]:
        """All chunks of one file by ``chunk_index`` (one statement: one snapshot)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE collection_path = ? AND file_path = ? ORDER BY chunk_index",
                (collection_path, file_path),
            ).fetchall()
        return [chunk_of(r) for r in rows]

    # -- vectors ----------------------------------------------------------------------
    def chunks_missing_vectors(
        self, model: str, limit: int | None = None, after: str | None = None
    ) -> list[tuple[str, str]]:
        """``(chunk_id, chunk_text)`` for distinct chunk ids without a vector for ``model``,
        ordered by chunk_id, only ids greater than ``after`` (None: from the
        start); at most ``limit`` rows (None: all)."""
        sql = (
            "SELECT chunk_id, min(chunk_text) FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.chunk_id = c.chunk_id AND v.model = ?) "
            + ("AND chunk_id > ? " if after is not None else "")
            + "GROUP BY chunk_id ORDER BY chunk_id"
        )
        args: tuple = (model,) if after is None else (model, after)
        if limit is not None:
            sql += " LIMIT ?"
            args = (*args, int(limit))
        with self._read() as conn:
            return [(r[0], r[1]) for r in conn.execute(sql, args).fetchall()]

    def add_vectors(self, model: str, chunk_ids: list[str], vectors: np.ndarray) -> int:
        """Add vectors for ``model``; existing ``(chunk_id, model)`` rows are kept.

        Args:
            chunk_ids: n chunk ids, in the row order of ``vectors``.
            vectors: float32 (or castable), shape (n, dim), L2-normalised.

        Returns:
            Rows added (0..n).

        Raises:
            ValueError: shape does not match ``chunk_ids`` or the model's stored dim.
        """
        arr = as_vector_rows(chunk_ids, vectors)
        if not chunk_ids:
            return 0
        dim = int(arr.shape[1])
        now = time.time()
        committed = not self.memory  # rows for the matrix files: handed over after the (batch's) commit
        fresh = None
        with self._write() as conn:
            row = conn.execute("SELECT dim FROM vectors WHERE model = ? LIMIT 1", (model,)).fetchone()
            if row and row[0] != dim:
                raise ValueError(f"model {model!r} has dim {row[0]} in this index, got {dim}")
            prev = conn.execute("SELECT max(rowid) FROM vectors WHERE model = ?", (model,)).fetchone()[0] or 0
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO vectors(chunk_id, model, dim, vec, created) VALUES (?, ?, ?, ?, ?)",
                ((cid, model, dim, arr[i].tobytes(), now) for i, cid in enumerate(chunk_ids)),
            )
            added = conn.total_changes - before
            if added:
                self._db.bump(conn, f"vectors_gen:{model}")
                if committed:  # rows for the matrix files, handed over after the commit
                    gen = int(
                        conn.execute("SELECT value FROM meta WHERE key = ?", (f"vectors_gen:{model}",)).fetchone()[0]
                    )
                    fresh = (
                        prev,
                        conn.execute(
                            "SELECT rowid, chunk_id FROM vectors WHERE model = ? AND rowid > ? ORDER BY rowid",
                            (model, prev),
                        ).fetchall(),
                        gen,
                    )
        if fresh is not None:
            prev, rows, gen = fresh
            first: dict[str, int] = {}
            for i, cid in enumerate(chunk_ids):
                first.setdefault(cid, i)
            order = [first[cid] for _rid, cid in rows]
            rowids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
            ids, new_rows = [cid for _rid, cid in rows], arr[order]

            def handover() -> None:
                self._vectors.appended(model, prev, rowids, ids, new_rows, gen)
                self._warm_models.add(model)

            self._db.after_commit(handover)  # inside batch(): once the batch commits
        return added

    def has_vectors(self, model: str) -> bool:
        """True when at least one vector is stored for ``model`` (one indexed lookup)."""
        return self._db.unchanged(
            ("has_vectors", model),
            lambda conn: conn.execute("SELECT 1 FROM vectors WHERE model = ? LIMIT 1", (model,)).fetchone() is not None,
        )

    def vector_counts(self) -> dict[str, dict[str, int]]:
        """Per model ``{"vectors", "dim", "stale", "missing"}``.

        stale = vectors whose chunk_id is in no chunk; missing = distinct chunk
        ids without a vector for that model.
        """
        out: dict[str, dict[str, int]] = {}
        with self._read() as conn:
            models = conn.execute(
                "SELECT model, count(*), max(dim) FROM vectors GROUP BY model ORDER BY model"
            ).fetchall()
            for model, n, dim in models:
                stale = conn.execute(
                    "SELECT count(*) FROM vectors v WHERE v.model = ? AND NOT EXISTS "
                    "(SELECT 1 FROM chunks c WHERE c.chunk_id = v.chunk_id)",
                    (model,),
                ).fetchone()[0]
                missing = conn.execute(
                    "SELECT count(DISTINCT chunk_id) FROM chunks c WHERE NOT EXISTS "
                    "(SELECT 1 FROM vectors v WHERE v.chunk_id = c.chunk_id AND v.model = ?)",
                    (model,),
                ).fetchone()[0]
                out[model] = {"vectors": n, "dim": dim, "stale": stale, "missing": missing}
        return out

    def vector_dim(self, model: str) -> int | None:
        """Dimension of ``model``'s stored vectors, or None when it has none."""

        def read(conn: sqlite3.Connection) -> int | None:
            row = conn.execute("SELECT dim FROM vectors WHERE model = ? LIMIT 1", (model,)).fetchone()
            return None if row is None else int(row[0])

        dim: int | None = self._db.unchanged(("dim", model), read)
        return dim

    def vector_coverage(self, model: str) -> tuple[int, int]:
        """``(live, missing)`` for ``model`` in one statement (one snapshot): two index scans
        (~1.1 ms at 3.5k chunks, where ``vector_counts``' three reads take ~4 ms)."""
        with self._read() as conn:
            ids, missing = conn.execute(
                "SELECT (SELECT count(DISTINCT chunk_id) FROM chunks), (SELECT count(DISTINCT chunk_id) "
                "FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id = c.chunk_id "
                "AND v.model = ?))",
                (model,),
            ).fetchone()
        return int(ids) - int(missing), int(missing)

    def vectors_per_file(self, model: str) -> dict[tuple[str, str], int]:
        """Chunks per file with a vector of ``model``, in one statement (Store.vectors_per_file)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT collection_path, file_path, count(*) FROM chunks c WHERE EXISTS (SELECT 1 FROM "
                "vectors v WHERE v.chunk_id = c.chunk_id AND v.model = ?) GROUP BY collection_path, file_path",
                (model,),
            ).fetchall()
        return {(cp, fp): int(n) for cp, fp, n in rows}

    def iter_vectors(
        self, model: str | None = None, batch: int = 10_000
    ) -> Iterator[tuple[str, list[str], np.ndarray]]:
        """Every stored vector (stale ones too), in batches, read in one statement (one snapshot).

        Yields:
            ``(model, chunk_ids, vectors)`` with vectors float32, shape (len(chunk_ids), dim);
            one model and one dim per batch, in (model, vectors rowid) order.
        """
        sql = "SELECT model, dim, chunk_id, vec FROM vectors"
        args: tuple = ()
        if model is not None:
            sql, args = sql + " WHERE model = ?", (model,)
        with self._read() as conn:
            name, dim = "", 0
            ids: list[str] = []
            blobs: list[bytes] = []
            for m, d, cid, blob in conn.execute(sql + " ORDER BY model, rowid", args):
                if ids and (m != name or d != dim or len(ids) >= batch):
                    yield name, ids, np.frombuffer(b"".join(blobs), np.float32).reshape(len(ids), dim)
                    ids, blobs = [], []
                name, dim = m, int(d)
                ids.append(cid)
                blobs.append(blob)
            if ids:
                yield name, ids, np.frombuffer(b"".join(blobs), np.float32).reshape(len(ids), dim)

    def purge_stale_vectors(self) -> dict[str, int]:
        """Delete every stale vector (and the text notes that pointed to them) in one write
        transaction, then the matrix files of the models that lost rows (rebuilt on the next
        search); see ``engine.store.purge``.

        Raises:
            StoreBusyError: another writer held the lock past the busy timeout.
        """
        with self._write() as conn:
            gone = purge_stale(conn)
            for model in gone:
                self._db.bump(conn, f"vectors_gen:{model}")
        for model in gone:
            self._vectors.drop(model)
        return gone

    # -- embedding notes (EmbedNotes, engine/store/sqlite/notes.py) ----------------------
    def vectors_by_text(self, model: str, text_hashes: list[str]) -> dict[str, tuple[np.ndarray, int | None]]:
        """Stored vectors of ``model`` by window-text sha256 (``EmbedNotes.vectors_by_text``)."""
        return self._notes.vectors_by_text(model, text_hashes)

    def note_vectors(
        self, model: str, chunk_ids: list[str], text_hashes: list[str], truncated_chars: list[int | None]
    ) -> None:
        """Remember the window text of each new vector and which were cut (``EmbedNotes.note_vectors``)."""
        self._notes.note_vectors(model, chunk_ids, text_hashes, truncated_chars)

    def record_embed_failures(self, model: str, failures: list[tuple[str, str, str]]) -> None:
        """Record ``(chunk_id, code, reason)`` of chunks that got no vector (``EmbedNotes``)."""
        self._notes.record_embed_failures(model, failures)

    def backfill_vector_texts(self, model: str, text_hash: Callable[[str], str]) -> int:
        """Text notes for vectors that came without one (``EmbedNotes.backfill_vector_texts``)."""
        return self._notes.backfill_vector_texts(model, text_hash)

    def embed_notes(self, limit: int = 50) -> dict[str, dict[str, Any]]:
        """Per model truncations and failures over live chunks (``EmbedNotes.embed_notes``)."""
        return self._notes.embed_notes(limit)

    # -- search (VectorSearch, KeywordIndex) ---------------------------------------------
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
        return self._search.search_vectors(model, query, collection_paths, limit)

    def search_vector_refs(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> Sequence[tuple[ChunkRef, str, float]]:
        """``search_vectors`` as ``(chunks rowid, chunk_id, score)`` best first, no rows read."""
        return self._search.search_vector_refs(model, query, collection_paths, limit)

    def _prepare(self, model: str) -> tuple[Matrix | None, Occurrences | None]:
        """The model's matrix and occurrence table, refreshed (``VectorSearch.prepare``)."""
        return self._search.prepare(model)

    def search_keyword(self, query: str, collection_paths: Iterable[str] | None, limit: int) -> list[KeywordHit]:
        """BM25 keyword hits over chunk_text, best first (score = -bm25, higher is better).

        Latin terms match the ``porter`` index ("running" finds "runs"), CJK
        terms the ``trigram`` index as substrings; all terms first, then any
        term; see ``engine.store.sqlite.keyword.search_keyword``. Returns []
        for a query without a letter or digit or a limit <= 0.
        """
        return self._keyword.search(query, collection_paths, limit)

    def search_keyword_refs(
        self, query: str, collection_paths: Iterable[str] | None, limit: int
    ) -> Sequence[tuple[ChunkRef, float]]:
        """``search_keyword`` as ``(chunks rowid, -bm25)`` best first, no rows read."""
        return self._keyword.refs(query, collection_paths, limit)

    def tidy_keyword_index(self, written: int) -> bool:
        """Merge the keyword index after a run that wrote ``written`` chunks when it is
        fragmented (``KeywordIndex.tidy``); True when it merged.

        Raises:
            StoreBusyError: another writer held the lock past the busy timeout.
        """
        return self._keyword.tidy(written)

    def chunks_at(self, rowids: Iterable[ChunkRef]) -> dict[ChunkRef, Chunk]:
        """``chunks`` rowid -> Chunk for the rowids that exist (one query)."""
        ids = cast("list[int]", list(rowids))
        return {rid: chunk_of(row) for rid, row in chunk_rows(self._read, ids).items()}

    def chunk_files(self, rowids: Iterable[ChunkRef]) -> dict[ChunkRef, tuple[str, str, str]]:
        """``chunks`` rowid -> ``(collection_path, file_path, chunk_id)`` for the rowids that exist
        (one query, no text, boxes or regions decoded)."""
        ids = list(rowids)
        if not ids:
            return {}
        with self._read() as conn:
            return {
                r[0]: (r[1], r[2], r[3])
                for r in conn.execute(
                    "SELECT rowid, collection_path, file_path, chunk_id FROM chunks "
                    f"WHERE rowid IN ({','.join('?' * len(ids))})",
                    ids,
                )
            }

    def file_count(self, collection_paths: Iterable[str] | None) -> int:
        """Documents holding at least one chunk in ``collection_paths`` (None: every
        collection): one ``count(*)`` over the documents' key."""
        sql, args = "SELECT count(*) FROM documents WHERE chunk_count > 0", []
        if collection_paths is not None:
            paths = sorted(set(collection_paths))
            sql += f" AND collection_path IN ({','.join('?' * len(paths))})"
            args = paths
        with self._read() as conn:
            return int(conn.execute(sql, args).fetchone()[0])

    def repair_orphans(self) -> int:
        """Drop documents and chunks whose collection is gone (a remove that raced an index
        run). A read-only or busy file is left as is.

        Returns:
            The number of collection paths whose orphan rows were removed.
        """
        if self.read_only:
            return 0
        try:
            with self._read() as conn:
                gone = orphan_collections(conn)
            for cp in gone:
                self.remove_collection(cp)
        except (sqlite3.Error, StoreBusyError):
            return 0
        return len(gone)

    # -- runs and locks -----------------------------------------------------------------------
    @contextmanager
    def index_lock(self) -> Iterator[None]:
        """Exclusive indexer lock, across processes (``flock`` on ``<db>.lock``).

        Raises:
            IndexBusyError: another holder has it (raised at once, no waiting).
            StoreUnavailableError: the file is read-only for this process.
        """
        if self.read_only:
            raise self._db.refusal()
        if self.memory:
            if not self._index_thread_lock.acquire(blocking=False):
                raise IndexBusyError("an index run is already in progress")
            try:
                yield
            finally:
                self._index_thread_lock.release()
            return
        try:
            fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:  # no room for the lock file, or a directory that went read-only
            raise cast(StoreFaultError, store_fault(e, self.path)) from e
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise IndexBusyError("an index run is already in progress") from None
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def free_bytes(self) -> int | None:
        """Bytes an unprivileged writer may still use on the disk holding the file (None for
        ``":memory:"``)."""
        return None if self.memory else free_bytes(self.path)

    def save_run(self, summary: dict[str, Any]) -> None:
        """Remember an index run's summary (JSON-able): a later save of the last run
        (same ``runId``) replaces its row (``engine.store.base.merge_run``).

        The end of a run also readies the vector cache of each model this
        store added vectors to: pending matrix rows are appended and the
        chunk -> matrix row table is built and persisted, so the first search
        after the run (in any process) reads them instead of rebuilding.
        """
        with self._write() as conn:
            row = conn.execute("SELECT id, summary FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            merged = merge_run(json.loads(row[1]), summary) if row else None
            if merged is not None:
                conn.execute(
                    "UPDATE runs SET saved_at = ?, summary = ? WHERE id = ?", (time.time(), json.dumps(merged), row[0])
                )
            else:
                conn.execute("INSERT INTO runs(saved_at, summary) VALUES (?, ?)", (time.time(), json.dumps(summary)))
                conn.execute("DELETE FROM runs WHERE id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT 20)")
        if summary.get("status") != "running":  # a run's start and progress saves warm nothing
            self.warm_vectors()

    def warm_vectors(self) -> None:
        """Append pending matrix rows and persist the occurrence table of every
        model this store added vectors to since the last call (a cache: failures only log)."""
        models, self._warm_models = self._warm_models, set()
        for model in sorted(models):
            try:
                self._prepare(model)
            except (OSError, ValueError, sqlite3.Error) as e:
                log.warning("vector cache of %s not readied: %s", model, e)

    def last_run(self) -> dict[str, Any] | None:
        """The last saved run summary, or None."""
        with self._read() as conn:
            row = conn.execute("SELECT summary FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return json.loads(row[0]) if row else None

    def close(self) -> None:
        """Close every connection this store opened and drop the vector caches
        (rows still pending for the matrix files are written first)."""
        try:
            self._vectors.flush()
        except Exception as e:  # a cache: closing must not fail for it
            log.warning("vector cache not flushed: %s", e)
        with self._db.write_lock, self._vectors.lock:
            self._db.close()
            self._vectors.clear()
            self._df_cache.clear()  # keyword document counts and per-term lists (engine.store.sqlite.term_scores)
