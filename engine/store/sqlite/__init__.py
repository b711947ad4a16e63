"""The SQLite store (the default backend): one file, WAL, FTS5 and numpy cosine.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from engine.lazy import reexports

_EXPORTS = {
    "SqliteStore": "engine.store.sqlite.store",
}

__all__ = sorted(_EXPORTS)

__getattr__ = reexports(__name__, _EXPORTS)
