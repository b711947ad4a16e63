"""SQLite schema: the tables, the keyword indexes' shape, the init lock and orphan rows.

Owns: creating the SQLite store's tables once per file (``create_schema``,
serialised across processes by ``init_lock`` on ``<db>.init.lock``), creating
the keyword indexes when missing (``engine.store.sqlite.keyword``), checking a
file opened read-only without changing it (``check_schema``), and finding
rows whose collection is gone (``orphan_collections``). Functions over the
connection and transaction helpers ``engine.store.sqlite.store.SqliteStore``
hands in; no state of their own. Imports ``engine.errors``, ``engine.passwords``
and the store's own modules; never a face.
"""

from __future__ import annotations

import fcntl
import logging
import sqlite3
from contextlib import AbstractContextManager, contextmanager
from typing import Callable, Iterator

from engine.errors import StoreUnavailableError
from engine.passwords import LEGACY_PASSWORD_SQL
from engine.store.sqlite.keyword import FTS_TOKENIZE, FTS_TRIGGERS, ensure_fts, fts_is_current, keyword_text_is_current

__all__ = ["check_schema", "create_schema", "init_lock", "orphan_collections"]

log = logging.getLogger("engine.store.sqlite.store")

#: A store's connection factory for one read or one write transaction (a context manager per call).
Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


def create_schema(conn: sqlite3.Connection, read: Transaction, write: Transaction) -> None:
    """Create the tables of a new file, or check those of an existing one (sqlite-utils DDL).

    The caller holds its write lock and ``init_lock``. On an existing file (``meta``
    present) it only reads, unless a collection row holds a password that is not a
    reference (``env:``/``file:``), which is blanked: the index keeps references only
    (``engine.passwords``), and a busy writer lock leaves that to the next open.

    Args:
        conn: the store's connection for this thread, outside a transaction.
        read, write: the store's read and write transaction helpers (on ``conn``'s file).
    """
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        # read first: opening must not write, another process may hold the writer lock
        if conn.execute(f"SELECT 1 FROM collections WHERE {LEGACY_PASSWORD_SQL} LIMIT 1").fetchone():
            try:
                conn.execute(f"UPDATE collections SET password = NULL WHERE {LEGACY_PASSWORD_SQL}")
                conn.commit()
                log.warning(
                    "blanked plain-text collection passwords in the SQLite index; set them "
                    "again with --password-env / --password-file"
                )
            except sqlite3.OperationalError as e:  # locked: reads ignore them; next open retries
                conn.rollback()
                log.warning("plain-text collection passwords not blanked yet (%s)", e)
        _ensure_keyword_indexes(read, write)
        return
    # sqlite-utils only here, for a new file: importing it imports pandas when
    # pandas is installed (+0.2-0.3 s on every process that opens the store).
    import sqlite_utils

    db = sqlite_utils.Database(conn)
    # sqlite-utils runs some DDL through executescript (which commits), so the
    # steps are idempotent instead of one transaction; "meta" is made last.
    db.table("collections").create(
        {"collection_path": str, "root": str, "password": str}, pk="collection_path", if_not_exists=True
    )
    db.table("documents").create(
        {
            "collection_path": str,
            "file_path": str,
            "content_hash": str,
            "settings_key": str,
            "file_type": str,
            "status": str,
            "reason": str,
            "size_bytes": int,
            "last_modified": float,
            "indexed_at": float,
            "page_count": int,
            "chunk_count": int,
            "text_length": int,
            "summary": str,
            "metadata": str,
            "text": str,
        },
        pk=("collection_path", "file_path"),
        if_not_exists=True,
    )
    chunks = db.table("chunks")
    chunks.create(
        {
            "collection_path": str,
            "file_path": str,
            "chunk_index": int,
            "chunk_id": str,
            "content_hash": str,
            "start": int,
            "end": int,
            "chunk_text": str,
            "page": int,
            "page_label": str,
            "bbox": str,
            "regions": str,
            "metadata": str,
            "last_modified": float,
            "search_text": str,
        },
        pk=("collection_path", "file_path", "chunk_index"),
        if_not_exists=True,
    )
    chunks.create_index(["chunk_id"], index_name="chunks_chunk_id", if_not_exists=True)
    vectors = db.table("vectors")
    vectors.create(
        {"chunk_id": str, "model": str, "dim": int, "vec": bytes, "created": float},
        pk=("chunk_id", "model"),
        if_not_exists=True,
    )
    vectors.create_index(["model"], index_name="vectors_model", if_not_exists=True)
    db.table("runs").create({"id": int, "saved_at": float, "summary": str}, pk="id", if_not_exists=True)
    # FTS5 over each chunk's keyword text (search_text, else chunk_text), external
    # content. Deletes and updates reach it through triggers (FTS_TRIGGERS); inserts are added by one INSERT ... SELECT per file
    # in replace_document: one statement tokenises a whole file without the
    # GIL (a per-row trigger needs the GIL between rows), so the indexer's
    # writer thread overlaps with extraction.
    chunks.enable_fts(["chunk_text"], fts_version="FTS5", create_triggers=False, tokenize=FTS_TOKENIZE, replace=True)
    with write() as w:
        for name, ddl in FTS_TRIGGERS.items():
            w.execute(f"DROP TRIGGER IF EXISTS {name}")
            w.execute(ddl)
        w.execute("CREATE TABLE IF NOT EXISTS meta ([key] TEXT PRIMARY KEY, [value] TEXT)")
        import uuid  # a new file's db_id only (uuid imports platform: ~1.5 ms at every open)

        w.executemany(
            "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
            [("db_id", uuid.uuid4().hex), ("chunks_gen", "0")],
        )
    _ensure_keyword_indexes(read, write)


def check_schema(conn: sqlite3.Connection, path: str) -> None:
    """Check a file opened read-only holds an index; nothing is created, blanked or repaired
    (``create_schema`` does that where the file can be written). Missing keyword index
    objects are logged: keyword search needs them, and only an open with write access
    makes them.

    Raises:
        StoreUnavailableError: the file holds no chunknav index (no ``meta`` table).
    """
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        raise StoreUnavailableError(f"the index at {path} is read-only and holds no chunknav index")
    if not fts_is_current(conn):
        log.warning(
            "the read-only index at %s lacks keyword index objects; keyword search may fail "
            "until it is opened once with write access",
            path,
        )


def _ensure_keyword_indexes(read: Transaction, write: Transaction) -> None:
    """Create the keyword indexes that are missing and bring the keyword text up to the
    current rules (``engine.store.sqlite.keyword.ensure_fts``).

    Read first: a file that has them takes no write lock, so opening the store
    never waits for (or blocks) another process's writer.
    """
    with read() as conn:
        if fts_is_current(conn) and keyword_text_is_current(conn):
            return
    with write() as conn:
        ensure_fts(conn)


@contextmanager
def init_lock(path: str, memory: bool) -> Iterator[None]:
    """Exclusive across processes while a store creates or checks the schema of ``path``
    (``flock`` on ``<path>.init.lock``); nothing for ``":memory:"``."""
    if memory:
        yield
        return
    with open(path + ".init.lock", "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def orphan_collections(conn: sqlite3.Connection) -> list[str]:
    """Collection paths that documents still name but ``collections`` no longer holds
    (a remove that raced an index run); one read."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT collection_path FROM documents WHERE collection_path NOT IN "
            "(SELECT collection_path FROM collections)"
        ).fetchall()
    ]
