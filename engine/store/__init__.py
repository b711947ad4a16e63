"""Stores: the ``Store`` protocol, SQLite (default) and Postgres + pgvector (scale).

``open_store(settings)`` picks the backend: ``settings.dsn`` set -> Postgres,
else the SQLite file ``settings.db``.
"""

from __future__ import annotations

from engine.store.base import Store

__all__ = ["Store", "open_store"]


def open_store(settings) -> Store:
    """Open the configured store (Postgres when ``settings.dsn`` is set, else SQLite).

    Raises:
        SettingsError: the DSN or database path is unusable.
    """
    if settings.dsn:
        from engine.store.postgres import PostgresStore

        return PostgresStore(settings.dsn)
    from engine.store.sqlite import SqliteStore

    return SqliteStore(settings.db)
