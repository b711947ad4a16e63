"""Search: scoped keyword, vector and hybrid search over a store, with snippets.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from engine.lazy import reexports

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

__getattr__ = reexports(__name__, _EXPORTS)
