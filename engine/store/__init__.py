"""Stores: the ``Store`` protocol, SQLite (default) and Postgres + pgvector (scale).

``open_store(settings)`` picks the backend: ``settings.dsn`` set -> Postgres,
else the SQLite file ``settings.db``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.store.base import Store

if TYPE_CHECKING:
    from engine.config import Settings

__all__ = ["Store", "open_store"]


def open_store(settings: Settings) -> Store:
    """Open the configured store (Postgres when ``settings.dsn`` is set, else SQLite).

    Raises:
        SettingsError: the DSN or database path is unusable.
    """
    if settings.dsn:
        from engine.store.postgres.store import PostgresStore

        return PostgresStore(settings.dsn)
    from engine.store.sqlite.store import SqliteStore

    # one write waits up to a quarter of lock_wait_s (0.5..30 s) for another
    # process's writer lock; the indexer retries with backoff up to lock_wait_s
    wait_s = max(0.5, min(30.0, float(settings.lock_wait_s) / 4))
    return SqliteStore(
        settings.db,
        busy_timeout_ms=int(wait_s * 1000),
        vector_scan=settings.vector_scan,
        int8_min_rows=settings.vector_int8_min_rows,
    )
