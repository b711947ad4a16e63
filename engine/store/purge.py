"""Deleting stale vectors on request: ``chunknav vectors purge-stale``.

Owns: what *stale* means and the statements that delete stale vectors. A vector
is stale when no chunk row carries its ``chunk_id`` any more (its file was
deleted or changed, its collection removed): exactly what
``vector_counts()["stale"]`` and ``index_status.staleVectors`` count. Stale
vectors are kept on purpose (a restored file or a model switched back costs no
embedding call); ``purge_stale_vectors`` is the only way they are deleted. Each
store runs its statements (``purge_stale`` on SQLite, ``purge_stale_pg`` on
Postgres) inside its own write transaction and drops its own caches. Imports
psycopg lazily (Postgres only); no face.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.store.base import Store

__all__ = ["purge_stale_vectors", "purge_stale", "purge_stale_pg"]

_STALE = "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = vectors.chunk_id)"


def purge_stale_vectors(store: Store) -> dict[str, int]:
    """Delete every stale vector of every model (and the text notes that pointed to
    them) in one write transaction.

    Returns:
        ``{model: vectors deleted}`` for the models that had stale vectors ({} when none).

    Raises:
        StoreBusyError: the SQLite writer lock is busy.
    """
    return store.purge_stale_vectors()


def purge_stale(conn: sqlite3.Connection) -> dict[str, int]:
    """The SQLite deletes, inside the caller's write transaction: ``{model: vectors deleted}``."""
    gone = dict(conn.execute(f"SELECT model, count(*) FROM vectors WHERE {_STALE} GROUP BY model").fetchall())
    if not gone:
        return {}
    conn.execute(f"DELETE FROM vectors WHERE {_STALE}")
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_texts'").fetchone():
        conn.execute(
            "DELETE FROM vector_texts WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE "
            "v.chunk_id = vector_texts.chunk_id AND v.model = vector_texts.model)"
        )
    return {str(m): int(n) for m, n in gone.items()}


def purge_stale_pg(conn: Any, shared_schema: str, chunk_ids_sql: Any) -> dict[str, int]:
    """The Postgres deletes, inside the caller's transaction: ``{model: vectors deleted}``.

    Args:
        conn: a psycopg connection (``dict_row`` rows) inside a transaction.
        shared_schema: the schema holding ``vectors`` and ``vector_texts``.
        chunk_ids_sql: a ``psycopg.sql`` subquery yielding ``chunk_id`` of every chunk row.
    """
    from psycopg import sql

    shared = sql.Identifier(shared_schema)
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {0}.vectors v WHERE NOT EXISTS (SELECT 1 FROM ({1}) a WHERE a.chunk_id = v.chunk_id) "
            "RETURNING v.model"
        ).format(shared, chunk_ids_sql)
    ).fetchall()
    gone: dict[str, int] = {}
    for r in rows:
        gone[r["model"]] = gone.get(r["model"], 0) + 1
    if gone:
        conn.execute(
            sql.SQL(
                "DELETE FROM {0}.vector_texts t WHERE NOT EXISTS (SELECT 1 FROM {0}.vectors v "
                "WHERE v.chunk_id = t.chunk_id AND v.model = t.model)"
            ).format(shared)
        )
    return gone
