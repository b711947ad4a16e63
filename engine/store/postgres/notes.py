"""The Postgres store's embedding notes: vectors reused by window text, truncations, failures.

Owns: ``PgNotes``, the ``PostgresStore`` methods on the shared tables
``vector_texts`` (sha256 of a window's text, model -> the chunk_id whose vector
holds it) and ``embed_notes`` (per chunk and model: a vector made from a cut
text, or a chunk that could not be embedded), built on the store's pool and
partition-schema resolver; the tables are declared in
``engine.store.postgres.schema`` and provisioned with the shared schema. Same contract as ``engine.store.sqlite.notes``. Imports psycopg
and ``engine.store.postgres.schema``; never a face, never extract/embed.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
from psycopg import sql
from psycopg_pool import ConnectionPool

from engine.store.postgres.schema import SHARED_SCHEMA, DictConnection
from engine.store.postgres.vectors import SchemaResolver, as_array

__all__ = ["PgNotes"]


class PgNotes:
    """The embedding-note methods of one ``PostgresStore`` (thread-safe as its pool).

    Args:
        pool: the store's pool (autocommit, ``dict_row``, ``register_vector``).
        schemas: the store's partition-schema resolver (``SchemaResolver``).
    """

    def __init__(self, pool: ConnectionPool[DictConnection], schemas: SchemaResolver) -> None:
        self._pool = pool
        self._schemas = schemas

    def vectors_by_text(self, model: str, text_hashes: list[str]) -> dict[str, tuple[np.ndarray, int | None]]:
        """Stored vectors of ``model`` by window-text sha256 (see ``engine.store.sqlite.notes``)."""
        if not text_hashes:
            return {}
        q = sql.SQL(
            "SELECT t.text_hash, v.embedding, t.truncated_chars FROM {0}.vector_texts t "
            "JOIN {0}.vectors v ON v.chunk_id = t.chunk_id AND v.model = t.model "
            "WHERE t.model = %s AND t.text_hash = ANY(%s)"
        ).format(sql.Identifier(SHARED_SCHEMA))
        with self._pool.connection() as conn:
            rows = conn.execute(q, (model, list(text_hashes))).fetchall()
        return {r["text_hash"]: (as_array(r["embedding"]).copy(), r["truncated_chars"]) for r in rows}

    def note_vectors(
        self, model: str, chunk_ids: list[str], text_hashes: list[str], truncated_chars: list[int | None]
    ) -> None:
        """Remember the window text of each new vector and which were cut (see ``engine.store.sqlite.notes``)."""
        if not chunk_ids:
            return
        sh = sql.Identifier(SHARED_SCHEMA)
        now = time.time()
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                sql.SQL(
                    "INSERT INTO {}.vector_texts (text_hash, model, chunk_id, truncated_chars) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (text_hash, model) DO NOTHING"
                ).format(sh),
                list(zip(text_hashes, [model] * len(chunk_ids), chunk_ids, truncated_chars)),
            )
            cur.execute(
                sql.SQL(
                    "DELETE FROM {}.embed_notes WHERE model = %s AND kind = 'failed' AND chunk_id = ANY(%s)"
                ).format(sh),
                (model, list(chunk_ids)),
            )
            cut = [(cid, model, t, now) for cid, t in zip(chunk_ids, truncated_chars) if t is not None]
            if cut:
                cur.executemany(
                    sql.SQL(
                        "INSERT INTO {}.embed_notes (chunk_id, model, kind, chars, created) "
                        "VALUES (%s, %s, 'truncated', %s, %s) ON CONFLICT (chunk_id, model) DO UPDATE SET "
                        "kind = 'truncated', chars = EXCLUDED.chars, code = NULL, reason = NULL, "
                        "created = EXCLUDED.created"
                    ).format(sh),
                    cut,
                )

    def record_embed_failures(self, model: str, failures: list[tuple[str, str, str]]) -> None:
        """Record chunks that could not be embedded: ``[(chunk_id, code, reason)]``."""
        if not failures:
            return
        now = time.time()
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                sql.SQL(
                    "INSERT INTO {}.embed_notes (chunk_id, model, kind, code, reason, created) "
                    "VALUES (%s, %s, 'failed', %s, %s, %s) ON CONFLICT (chunk_id, model) DO UPDATE SET "
                    "kind = 'failed', chars = NULL, code = EXCLUDED.code, reason = EXCLUDED.reason, "
                    "created = EXCLUDED.created"
                ).format(sql.Identifier(SHARED_SCHEMA)),
                [(cid, model, code, reason, now) for cid, code, reason in failures],
            )

    def backfill_vector_texts(self, model: str, text_hash: Callable[[str], str]) -> int:
        """Once per model: note the text hash of vectors stored without one (e.g. copied by
        ``migrate``); rows added."""
        sh = sql.Identifier(SHARED_SCHEMA)
        with self._pool.connection() as conn:
            if conn.execute(
                sql.SQL("SELECT 1 FROM {}.vector_texts WHERE model = %s LIMIT 1").format(sh), (model,)
            ).fetchone():
                return 0
        parts = [
            sql.SQL("SELECT chunk_id, chunk_text FROM {}.content_chunks").format(sql.Identifier(s))
            for s in self._schemas(None)
        ]
        if not parts:
            return 0
        q = sql.SQL(
            "SELECT DISTINCT ON (c.chunk_id) c.chunk_id, c.chunk_text FROM ({}) c JOIN {}.vectors v "
            "ON v.chunk_id = c.chunk_id AND v.model = %s ORDER BY c.chunk_id"
        ).format(sql.SQL(" UNION ALL ").join(parts), sh)
        with self._pool.connection() as conn:
            rows = conn.execute(q, (model,)).fetchall()
        if not rows:
            return 0
        self.note_vectors(
            model, [r["chunk_id"] for r in rows], [text_hash(r["chunk_text"]) for r in rows], [None] * len(rows)
        )
        return len(rows)

    def embed_notes(self, limit: int = 50) -> dict[str, dict[str, Any]]:
        """Per model ``{"truncated", "failed", "failures": [...]}`` over live chunks (see ``engine.store.sqlite.notes``)."""
        sh = sql.Identifier(SHARED_SCHEMA)
        with self._pool.connection() as conn:
            if conn.execute(sql.SQL("SELECT 1 FROM {}.embed_notes LIMIT 1").format(sh)).fetchone() is None:
                return {}  # the common case: never scan the chunks of every partition for nothing
        parts = [
            sql.SQL("SELECT collection_path, file_path, chunk_index, chunk_id FROM {}.content_chunks").format(
                sql.Identifier(s)
            )
            for s in self._schemas(None)
        ]
        out: dict[str, dict[str, Any]] = {}
        if not parts:
            return out
        live = sql.SQL(" UNION ALL ").join(parts)
        with self._pool.connection() as conn:
            for r in conn.execute(
                sql.SQL(
                    "SELECT n.model, n.kind, count(*) AS n FROM {}.embed_notes n WHERE n.chunk_id IN "
                    "(SELECT chunk_id FROM ({}) c) GROUP BY n.model, n.kind"
                ).format(sh, live)
            ).fetchall():
                out.setdefault(r["model"], {"truncated": 0, "failed": 0, "failures": []})[r["kind"]] = int(r["n"])
            for r in conn.execute(
                sql.SQL(
                    "SELECT n.model, c.collection_path, c.file_path, c.chunk_index, n.chunk_id, n.code, n.reason "
                    "FROM {}.embed_notes n JOIN ({}) c ON c.chunk_id = n.chunk_id WHERE n.kind = 'failed' "
                    "ORDER BY n.model, c.collection_path, c.file_path, c.chunk_index LIMIT %s"
                ).format(sh, live),
                (int(limit),),
            ).fetchall():
                out.setdefault(r["model"], {"truncated": 0, "failed": 0, "failures": []})["failures"].append(
                    {
                        "collectionPath": r["collection_path"],
                        "filePath": r["file_path"],
                        "chunkIndex": int(r["chunk_index"]),
                        "chunkId": r["chunk_id"],
                        "error": r["code"] or "",
                        "reason": r["reason"] or "",
                    }
                )
        return out
