"""Deleting stale vectors on request: ``chunknav vectors purge-stale``.

Owns: ``purge_stale_vectors`` for both stores. A vector is *stale* when no
chunk row carries its ``chunk_id`` any more (its file was deleted or changed,
its collection removed): exactly what ``vector_counts()["stale"]`` and
``index_status.staleVectors`` count. Stale vectors are kept on purpose (a
restored file or a model switched back costs no embedding call); this is the
only code that deletes them. Imports ``engine.store.postgres.schema`` lazily;
no face.
"""

from __future__ import annotations

import fcntl
from typing import Any

__all__ = ["purge_stale_vectors"]


def purge_stale_vectors(store: Any) -> dict[str, int]:
    """Delete every stale vector of every model (and the text-hash reuse rows
    that pointed to them) in one write transaction.

    Args:
        store: a ``SqliteStore`` or ``PostgresStore``.

    Returns:
        ``{model: vectors deleted}`` for the models that had stale vectors ({} when none).

    Raises:
        StoreBusyError: the SQLite writer lock is busy.
        TypeError: another kind of store.
    """
    from engine.store.sqlite.store import SqliteStore

    if isinstance(store, SqliteStore):
        return _purge_sqlite(store)
    if type(store).__name__ == "PostgresStore":
        return _purge_postgres(store)
    raise TypeError(f"purge_stale_vectors: unsupported store {type(store).__name__}")


_STALE = "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = vectors.chunk_id)"


def _purge_sqlite(store: Any) -> dict[str, int]:
    with store._write() as conn:
        gone = dict(conn.execute(f"SELECT model, count(*) FROM vectors WHERE {_STALE} GROUP BY model").fetchall())
        if not gone:
            return {}
        conn.execute(f"DELETE FROM vectors WHERE {_STALE}")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_texts'").fetchone():
            conn.execute(
                "DELETE FROM vector_texts WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE "
                "v.chunk_id = vector_texts.chunk_id AND v.model = vector_texts.model)"
            )
        for model in gone:
            store._bump(conn, f"vectors_gen:{model}")
    cache = store._vectors  # the search matrix is append-only: rebuild it from the rows left
    with cache.lock:
        for model in gone:
            cache.matrices.pop(model, None)
            cache.occurrences.pop(model, None)
            if not cache.memory:
                paths = cache._cache_paths(model)
                with open(paths["lock"], "a+b") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)  # the cache files' own lock (other processes)
                    for key, path in paths.items():
                        if key != "lock":
                            path.unlink(missing_ok=True)
    return {m: int(n) for m, n in gone.items()}


def _purge_postgres(store: Any) -> dict[str, int]:
    from psycopg import sql

    from engine.store.postgres.schema import SHARED_SCHEMA

    shared = sql.Identifier(SHARED_SCHEMA)
    ids = store._vectors._all_chunk_ids_sql()
    with store._pool.connection() as conn, conn.transaction():
        rows = conn.execute(
            sql.SQL(
                "DELETE FROM {0}.vectors v WHERE NOT EXISTS (SELECT 1 FROM ({1}) a WHERE a.chunk_id = v.chunk_id) "
                "RETURNING v.model"
            ).format(shared, ids)
        ).fetchall()
        gone: dict[str, int] = {}
        for r in rows:
            model = r["model"] if isinstance(r, dict) else r[0]
            gone[model] = gone.get(model, 0) + 1
        if gone:
            conn.execute(
                sql.SQL(
                    "DELETE FROM {0}.vector_texts t WHERE NOT EXISTS (SELECT 1 FROM {0}.vectors v "
                    "WHERE v.chunk_id = t.chunk_id AND v.model = t.model)"
                ).format(shared)
            )
    return gone
