"""Indexing: walk collection roots, gate by content hash, extract, chunk, store, embed.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from engine.lazy import reexports

_EXPORTS = {
    "Indexer": "engine.index.indexer",
    "Prepared": "engine.index.indexer",
    "repair_orphans": "engine.index.indexer",
    "SUMMARY_CHARS": "engine.index.indexer",
}

__all__ = sorted(_EXPORTS)

__getattr__ = reexports(__name__, _EXPORTS)
