"""The SQLite store's embedding notes: vectors reused by window text, truncations, failures.

Owns: two tables beside ``vectors``, created on their first write (reads of a
file without them answer empty)::

    vector_texts(text_hash, model PK pair; chunk_id, truncated_chars)
        sha256 of a window's text -> the chunk_id whose vector holds it, so a
        file whose bytes changed but whose text did not (a re-saved PDF), or a
        window whose text recurs, reuses the vector instead of embedding again.
    embed_notes(chunk_id, model PK pair; kind 'truncated'|'failed', chars,
                code, reason, created)
        a vector made from a cut text (``chars`` sent) or a chunk that could
        not be embedded (``code``, ``reason``); a failure note is dropped when
        a vector arrives.

``EmbedNotes`` holds the ``Store`` methods on them for ``SqliteStore``, through the
read and write transaction helpers the store hands in. Imports numpy only; never a
face, never extract/embed. ``chunk_id`` stays as DESIGN defines it: these tables only
add a second way to find an existing vector.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from typing import Any, Callable

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = ["EmbedNotes"]

_PARAMS = 500  # bound parameters per statement (SQLite's limit is 32766; keep statements short)

_DDL = (
    "CREATE TABLE IF NOT EXISTS vector_texts (text_hash TEXT NOT NULL, model TEXT NOT NULL, "
    "chunk_id TEXT NOT NULL, truncated_chars INTEGER, PRIMARY KEY (text_hash, model))",
    "CREATE TABLE IF NOT EXISTS embed_notes (chunk_id TEXT NOT NULL, model TEXT NOT NULL, "
    "kind TEXT NOT NULL, chars INTEGER, code TEXT, reason TEXT, created REAL, PRIMARY KEY (chunk_id, model))",
)


class EmbedNotes:
    """The ``Store`` methods on ``vector_texts`` and ``embed_notes`` of one SQLite store.

    Args:
        read, write: the store's read and write transaction helpers (a context
            manager per call, giving the connection).
    """

    def __init__(
        self,
        read: Callable[[], AbstractContextManager[sqlite3.Connection]],
        write: Callable[[], AbstractContextManager[sqlite3.Connection]],
    ) -> None:
        self._read = read
        self._write = write
        self._ready = False  # both tables seen (they are never dropped)

    def _exist(self, conn: sqlite3.Connection) -> bool:
        if not self._ready:
            self._ready = (
                conn.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                    "AND name IN ('vector_texts', 'embed_notes')"
                ).fetchone()[0]
                == 2
            )
        return self._ready

    def _ensure(self, conn: sqlite3.Connection) -> None:
        if not self._exist(conn):
            for ddl in _DDL:
                conn.execute(ddl)
            self._ready = True

    def vectors_by_text(self, model: str, text_hashes: list[str]) -> dict[str, tuple[np.ndarray, int | None]]:
        """Stored vectors of ``model`` for window texts, by the text's sha256.

        Args:
            model: the vectors' model name.
            text_hashes: hex sha256 of window texts (UTF-8).

        Returns:
            ``{text_hash: (vector float32 shape (dim,), truncated_chars or None)}``
            for the hashes whose vector exists (stale vectors count: a re-saved
            file's old vectors are found); others are absent.
        """
        out: dict[str, tuple[np.ndarray, int | None]] = {}
        with self._read() as conn:
            if not text_hashes or not self._exist(conn):
                return out
            for i in range(0, len(text_hashes), _PARAMS):
                part = text_hashes[i : i + _PARAMS]
                rows = conn.execute(
                    "SELECT t.text_hash, v.vec, t.truncated_chars FROM vector_texts t JOIN vectors v "
                    "ON v.chunk_id = t.chunk_id AND v.model = t.model "
                    f"WHERE t.model = ? AND t.text_hash IN ({','.join('?' * len(part))})",
                    [model, *part],
                ).fetchall()
                for h, blob, trunc in rows:
                    out[h] = (np.frombuffer(blob, dtype=np.float32).copy(), trunc)
        return out

    def note_vectors(
        self, model: str, chunk_ids: list[str], text_hashes: list[str], truncated_chars: list[int | None]
    ) -> None:
        """Remember which window text each new vector holds, and which were cut.

        Args:
            model: the vectors' model name.
            chunk_ids, text_hashes, truncated_chars: parallel lists, one entry
                per vector just added (``truncated_chars`` None: the whole text).
        """
        if not chunk_ids:
            return
        now = time.time()
        with self._write() as conn:
            self._ensure(conn)
            conn.executemany(
                "INSERT OR IGNORE INTO vector_texts(text_hash, model, chunk_id, truncated_chars) VALUES (?, ?, ?, ?)",
                zip(text_hashes, [model] * len(chunk_ids), chunk_ids, truncated_chars),
            )
            conn.executemany(
                "DELETE FROM embed_notes WHERE chunk_id = ? AND model = ? AND kind = 'failed'",
                ((cid, model) for cid in chunk_ids),
            )
            conn.executemany(
                "INSERT OR REPLACE INTO embed_notes(chunk_id, model, kind, chars, code, reason, created) "
                "VALUES (?, ?, 'truncated', ?, NULL, NULL, ?)",
                ((cid, model, t, now) for cid, t in zip(chunk_ids, truncated_chars) if t is not None),
            )

    def record_embed_failures(self, model: str, failures: list[tuple[str, str, str]]) -> None:
        """Record chunks that could not be embedded: ``[(chunk_id, code, reason)]``
        (replacing an older note of the same chunk and model)."""
        if not failures:
            return
        now = time.time()
        with self._write() as conn:
            self._ensure(conn)
            conn.executemany(
                "INSERT OR REPLACE INTO embed_notes(chunk_id, model, kind, chars, code, reason, created) "
                "VALUES (?, ?, 'failed', NULL, ?, ?, ?)",
                ((cid, model, code, reason, now) for cid, code, reason in failures),
            )

    def backfill_vector_texts(self, model: str, text_hash: Callable[[str], str]) -> int:
        """Once per model: fill ``vector_texts`` for chunks whose vectors came without a text
        note (a model with vectors and no ``vector_texts`` row, e.g. vectors copied by ``migrate``).

        Args:
            model: the vectors' model name.
            text_hash: ``str -> hex sha256`` (the indexer's window-text hash).

        Returns:
            Rows added (0 when the model already has rows or no vectors).
        """
        with self._read() as conn:
            if (
                self._exist(conn)
                and conn.execute("SELECT 1 FROM vector_texts WHERE model = ? LIMIT 1", (model,)).fetchone()
            ):
                return 0
            rows = conn.execute(
                "SELECT c.chunk_id, min(c.chunk_text) FROM chunks c JOIN vectors v "
                "ON v.chunk_id = c.chunk_id AND v.model = ? GROUP BY c.chunk_id",
                (model,),
            ).fetchall()
        if not rows:
            return 0
        with self._write() as conn:
            self._ensure(conn)
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO vector_texts(text_hash, model, chunk_id, truncated_chars) "
                "VALUES (?, ?, ?, NULL)",
                ((text_hash(t), model, cid) for cid, t in rows),
            )
            return conn.total_changes - before

    def embed_notes(self, limit: int = 50) -> dict[str, dict[str, Any]]:
        """Per model: ``{"truncated": n, "failed": n, "failures": [...]}`` over live chunks.

        ``failures`` lists at most ``limit`` chunks without a vector, each
        ``{"collectionPath", "filePath", "chunkIndex", "chunkId", "error", "reason"}``.
        """
        out: dict[str, dict[str, Any]] = {}
        with self._read() as conn:
            if not self._exist(conn):
                return out
            for model, kind, n in conn.execute(
                "SELECT model, kind, count(*) FROM embed_notes n WHERE EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.chunk_id = n.chunk_id) GROUP BY model, kind"
            ).fetchall():
                out.setdefault(model, {"truncated": 0, "failed": 0, "failures": []})[kind] = int(n)
            for model, cp, fp, ci, cid, code, reason in conn.execute(
                "SELECT n.model, c.collection_path, c.file_path, c.chunk_index, n.chunk_id, n.code, n.reason "
                "FROM embed_notes n JOIN chunks c ON c.chunk_id = n.chunk_id WHERE n.kind = 'failed' "
                "ORDER BY n.model, c.collection_path, c.file_path, c.chunk_index LIMIT ?",
                (int(limit),),
            ):
                out.setdefault(model, {"truncated": 0, "failed": 0, "failures": []})["failures"].append(
                    {
                        "collectionPath": cp,
                        "filePath": fp,
                        "chunkIndex": int(ci),
                        "chunkId": cid,
                        "error": code or "",
                        "reason": reason or "",
                    }
                )
        return out
