"""Indexing: walk collection roots, gate by content hash, extract, chunk, store, embed.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Indexer": "engine.index.indexer",
    "Prepared": "engine.index.indexer",
    "repair_orphans": "engine.index.indexer",
    "SUMMARY_CHARS": "engine.index.indexer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'engine.index' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
