"""SQLite schema: the tables, the keyword indexes' shape, the init lock and orphan repair.

Owns: creating the SQLite store's tables once per file (serialised across
processes by ``<db>.init.lock``), bringing the FTS indexes to this version
(``engine.store.sqlite.keyword``), and dropping rows whose collection is
gone. A mixin of ``engine.store.sqlite.store.SqliteStore`` (uses its connection
helpers ``_conn``, ``_read``, ``_write``, ``_write_lock``, ``memory``, ``path``).
Imports ``engine.errors`` and the store's own modules; never a face.
"""

from __future__ import annotations

import fcntl
import logging
import sqlite3
from contextlib import contextmanager
from typing import Iterator

from engine.errors import StoreBusyError
from engine.passwords import LEGACY_PASSWORD_SQL
from engine.store.sqlite.keyword import FTS_TOKENIZE, ensure_fts, fts_is_current

__all__ = ["SqliteSchema"]

log = logging.getLogger("engine.store.sqlite.store")


class SqliteSchema:
    """Schema creation and repair for ``SqliteStore`` (a mixin; no state of its own)."""

    def _create_schema(self) -> None:
        """Create the tables once (sqlite-utils DDL; serialised across processes by a file lock)."""
        with self._write_lock, self._init_lock():
            conn = self._conn()
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
                # a plain password stored by an older version: blank it (the index keeps
                # only references, engine/passwords.py); read first: opening must not
                # write, another process may hold the writer lock
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
                if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'chunks_ai'").fetchone():
                    # an index made before FTS rows were added per file: its insert
                    # trigger would add every row twice now
                    conn.execute("DROP TRIGGER chunks_ai")
                self._ensure_fts()
                return
            # sqlite-utils only here, for a new file: importing it imports pandas when
            # pandas is installed (+0.2-0.3 s on every process that opens the store).
            import sqlite_utils

            db = sqlite_utils.Database(conn)
            # sqlite-utils runs some DDL through executescript (which commits), so the
            # steps are idempotent instead of one transaction; "meta" is made last.
            db["collections"].create(
                {"collection_path": str, "root": str, "password": str}, pk="collection_path", if_not_exists=True
            )
            db["documents"].create(
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
            db["chunks"].create(
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
                },
                pk=("collection_path", "file_path", "chunk_index"),
                if_not_exists=True,
            )
            db["chunks"].create_index(["chunk_id"], index_name="chunks_chunk_id", if_not_exists=True)
            db["vectors"].create(
                {"chunk_id": str, "model": str, "dim": int, "vec": bytes, "created": float},
                pk=("chunk_id", "model"),
                if_not_exists=True,
            )
            db["vectors"].create_index(["model"], index_name="vectors_model", if_not_exists=True)
            db["runs"].create({"id": int, "saved_at": float, "summary": str}, pk="id", if_not_exists=True)
            # FTS5 over chunk_text, external content. Deletes and updates reach it
            # through triggers; inserts are added by one INSERT ... SELECT per file
            # in replace_document: one statement tokenises a whole file without the
            # GIL (a per-row trigger needs the GIL between rows), so the indexer's
            # writer thread overlaps with extraction.
            db.execute("DROP TRIGGER IF EXISTS chunks_ai")
            db["chunks"].enable_fts(
                ["chunk_text"], fts_version="FTS5", create_triggers=False, tokenize=FTS_TOKENIZE, replace=True
            )
            with self._write() as conn:
                conn.execute(
                    "CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN "
                    "INSERT INTO chunks_fts (chunks_fts, rowid, chunk_text) "
                    "VALUES('delete', old.rowid, old.chunk_text); END"
                )
                conn.execute(
                    "CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN "
                    "INSERT INTO chunks_fts (chunks_fts, rowid, chunk_text) "
                    "VALUES('delete', old.rowid, old.chunk_text); "
                    "INSERT INTO chunks_fts (rowid, chunk_text) VALUES (new.rowid, new.chunk_text); END"
                )
                conn.execute("CREATE TABLE IF NOT EXISTS meta ([key] TEXT PRIMARY KEY, [value] TEXT)")
                import uuid  # a new file's db_id only (uuid imports platform: ~1.5 ms at every open)

                conn.executemany(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)",
                    [("db_id", uuid.uuid4().hex), ("chunks_gen", "0")],
                )
            self._ensure_fts()

    def _ensure_fts(self) -> None:
        """Bring the keyword indexes to this version's shape (``sqlite_keyword.ensure_fts``).

        Read first: an up-to-date index takes no write lock, so opening the store
        never waits for (or blocks) another process's writer.
        """
        with self._read() as conn:
            if fts_is_current(conn):
                return
        with self._write() as conn:
            ensure_fts(conn)

    @contextmanager
    def _init_lock(self) -> Iterator[None]:
        if self.memory:
            yield
            return
        with open(self.path + ".init.lock", "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def repair_orphans(self) -> int:
        """Drop documents and chunks whose collection is gone (a remove that raced
        an index run); the Engine calls this when it opens the store. A
        read-only or busy file is left as is.

        Returns:
            The number of collection paths whose orphan rows were removed.
        """
        try:
            with self._read() as conn:
                gone = [
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT collection_path FROM documents WHERE collection_path NOT IN "
                        "(SELECT collection_path FROM collections)"
                    ).fetchall()
                ]
            for cp in gone:
                self.remove_collection(cp)
        except (sqlite3.Error, StoreBusyError):
            return 0
        return len(gone)
