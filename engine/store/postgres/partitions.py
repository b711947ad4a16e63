"""Partition schemas of the Postgres store: provisioning once per process, and which schemas to visit.

Owns: ``Partitions``, built by ``engine.store.postgres.store.PostgresStore`` on its
pool: the shared schema's provisioning, each partition's (on first touch in
this process, so a schema gains any column or index it lacks; a read never
creates one), and the resolution of collection paths to the partition schemas
a call visits (``schemas``, the ``SchemaResolver`` the vector and note helpers
take). The DDL itself is ``engine.store.postgres.schema``'s. Imports psycopg;
never a face.
"""

from __future__ import annotations

import threading
from typing import Iterable

from psycopg import sql
from psycopg_pool import ConnectionPool

from engine.store.postgres.schema import (
    SHARED_SCHEMA,
    DictConnection,
    partition_of,
    provision_partition,
    provision_shared,
    schema_exists,
    schema_for,
    stale_keyword_columns,
)
from engine.store.postgres.keyword import refresh_keyword_text

__all__ = ["Partitions"]


class Partitions:
    """The partition schemas one store has provisioned in this process (thread-safe).

    Args:
        pool: the store's pool (autocommit, ``dict_row``).
    """

    def __init__(self, pool: ConnectionPool[DictConnection]) -> None:
        self._pool = pool
        self._provisioned: set[str] = set()
        self._lock = threading.Lock()

    def provision_shared(self) -> None:
        """Create or upgrade the shared ``chunknav`` schema (``schema.provision_shared``)."""
        with self._pool.connection() as conn, conn.transaction():
            provision_shared(conn)

    def provision(self, partition: str) -> str:
        """Create or upgrade one partition's schema; idempotent, safe across processes.

        Creates the schema, its tables, columns and indexes that are missing
        (``ADD COLUMN IF NOT EXISTS``, ``CREATE INDEX IF NOT EXISTS``); a schema
        already up to date is only read. Registers the partition in ``chunknav.partitions``.
        A partition whose keyword columns were made from the chunk text alone gets them
        from the keyword text, its stored rows' ``search_text`` filled in the same transaction.

        Args:
            partition: the first segment of a collection path, e.g. ``ACME``.

        Returns:
            The schema name (``schema_for(partition)``).
        """
        with self._pool.connection() as conn, conn.transaction():
            stale = stale_keyword_columns(conn, schema_for(partition))
            schema = provision_partition(conn, partition)
            if stale:  # rows stored before the keyword text: fill it (the keyword columns follow)
                refresh_keyword_text(conn, schema)
        with self._lock:
            self._provisioned.add(schema)
        return schema

    def schema(self, collection_path: str, create: bool = False) -> str | None:
        """The provisioned schema of a collection's partition, or None when it does not exist.

        A schema this process has not touched yet is provisioned first (it gains
        any column or index it lacks); a missing one is created only when
        ``create`` (writes), never by a read.
        """
        partition = partition_of(collection_path)
        schema = schema_for(partition)
        if schema in self._provisioned:
            return schema
        if not create:
            with self._pool.connection() as conn:
                if not schema_exists(conn, schema):
                    return None
        return self.provision(partition)

    def schemas(self, collection_paths: Iterable[str] | None = None) -> dict[str, list[str] | None]:
        """Schemas to visit -> the collection paths to filter on there (None: all).

        ``None`` gives every registered partition (each provisioned first).
        """
        if collection_paths is None:
            with self._pool.connection() as conn:
                rows = conn.execute(
                    sql.SQL("SELECT partition FROM {}.partitions ORDER BY partition").format(
                        sql.Identifier(SHARED_SCHEMA)
                    )
                ).fetchall()
            found = (self.schema(r["partition"]) for r in rows)
            return {schema: None for schema in found if schema is not None}
        out: dict[str, list[str]] = {}
        for path in dict.fromkeys(collection_paths):
            schema = self.schema(path)
            if schema is not None:
                out.setdefault(schema, []).append(path)
        return dict(out)

    def registered(self) -> dict[str, str]:
        """Registered partitions: partition name -> schema name, sorted by name."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                sql.SQL("SELECT partition, schema_name FROM {}.partitions ORDER BY partition").format(
                    sql.Identifier(SHARED_SCHEMA)
                )
            ).fetchall()
        return {r["partition"]: r["schema_name"] for r in rows}
