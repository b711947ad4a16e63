"""Search: scoped keyword, vector and hybrid search over a store, with snippets.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ContentChunkSearch": "engine.search.searcher",
    "Scope": "engine.search.query",
    "RankedChunk": "engine.values",
    "SearchOutcome": "engine.search.searcher",
    "MODES": "engine.search.searcher",
    "RRF_K": "engine.search.fusion",
    "FUSION_DEPTH": "engine.search.fusion",
    "VECTOR_WEIGHT_DEFAULT": "engine.search.fusion",
    "HybridRanker": "engine.search.hybrid",
    "MAX_QUERY_CHARS": "engine.search.searcher",
    "SCOPE_QUALIFIERS": "engine.search.query",
    "parse_query": "engine.search.query",
    "query_terms": "engine.search.query",
    "shown_terms": "engine.search.snippets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'engine.search' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
