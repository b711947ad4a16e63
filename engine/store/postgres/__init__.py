"""The Postgres + pgvector store: one schema per partition, HNSW vector search.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from engine.lazy import reexports

_EXPORTS = {
    "PostgresStore": "engine.store.postgres.store",
}

__all__ = sorted(_EXPORTS)

__getattr__ = reexports(__name__, _EXPORTS)
