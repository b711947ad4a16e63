"""ContentChunkSearch: scoped search, chunk reads and document reads over a Store.

Owns: scope resolution (anchored ``scope`` path + ancestors; targeted
``namespace:<collectionPath>`` token, widened by ``scope:subtree``), the three
ranking modes (vector cosine, keyword BM25, hybrid reciprocal-rank fusion),
per-file resolution for ``search``, snippets, and chunk stepping. Returns
internal values (``SearchOutcome``, ``Chunk``); ``engine/tools.py`` turns them
into envelopes. Imports no face (streamlit, mcp, argparse).

A refusal from the embedding provider is carried as the ``EmbedFailure`` that
``engine/embed/`` classified; it is never re-derived and never turned into
an empty result.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Callable

from engine.errors import EmbedError
from engine.model import Chunk, Collection
from engine.store.base import Store

__all__ = [
    "MODES",
    "RRF_K",
    "Scope",
    "SearchOutcome",
    "ContentChunkSearch",
    "parse_query",
    "make_snippet",
    "query_terms",
]

log = logging.getLogger(__name__)

#: Ranking modes; "auto" = vector when a provider is configured, else keyword.
MODES = ("auto", "vector", "keyword", "hybrid")
#: Reciprocal-rank-fusion constant (Cormack et al. 2009: score = sum 1/(k + rank)).
RRF_K = 60

_TOKEN = re.compile(r"(?:^|\s)(namespace|scope):(\S+)")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Scope:
    """A parsed query: the text to rank by and the collections it targets.

    Attributes:
        text: the query without ``namespace:``/``scope:`` tokens, stripped.
        namespace: the collectionPath of a ``namespace:`` token, or None.
        subtree: True when ``scope:subtree`` widens the namespace to the
            collections below it.
    """

    text: str
    namespace: str | None = None
    subtree: bool = False


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What a search did, before it becomes an envelope.

    Attributes:
        searched: False when no ranking ran (failure, no scope, no query).
        query: the query as given.
        mode: the mode that ran (``vector | keyword | hybrid``).
        collections: collection paths searched, sorted.
        hits: ``(chunk, score)`` best first; for ``per_file`` one per file.
        score_kind: ``cosine | bm25 | rrf``.
        model: the embedding model for vector/hybrid.
        failure: the classified ``EmbedFailure`` when the provider refused.
        error: an ErrorCode when ``failure`` is None but searching failed
            (``search-not-performed``).
        hint / message: human text for the caller.
    """

    searched: bool
    query: str
    mode: str
    collections: tuple[str, ...] = ()
    hits: tuple[tuple[Chunk, float], ...] = ()
    score_kind: str | None = None
    model: str | None = None
    failure: object | None = None  # engine.embed.EmbedFailure
    error: str | None = None
    hint: str | None = None
    message: str | None = None
    terms: tuple[str, ...] = field(default_factory=tuple)


def parse_query(query: str) -> Scope:
    """Split ``namespace:<path>`` and ``scope:subtree`` tokens off a query.

    The last ``namespace:`` token wins; ``scope:`` accepts only ``subtree``
    (other values are left in the text, so nothing is silently dropped).
    """
    namespace = None
    subtree = False
    kept: list[str] = []
    for part in query.split():
        key, _, value = part.partition(":")
        if key == "namespace" and value:
            namespace = value.strip("/")
        elif key == "scope" and value == "subtree":
            subtree = True
        else:
            kept.append(part)
    return Scope(" ".join(kept), namespace, subtree)


def query_terms(text: str) -> tuple[str, ...]:
    """Lower-cased word terms of a query (Unicode word characters), in order, unique."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        seen.setdefault(w, None)
    return tuple(seen)


@functools.lru_cache(maxsize=256)
def _terms_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One compiled regex per query: any term at a word start (longest first).
    Its leftmost match is the earliest position where some term starts."""
    if not terms:
        return None
    alts = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return re.compile(r"(?<!\w)(?:" + alts + ")")


def make_snippet(text: str, terms: tuple[str, ...], width: int = 240) -> str:
    """About ``width`` characters of ``text`` around the first query term found.

    Whitespace is folded to single spaces; an ellipsis marks cut ends. With no
    term found, the start of the text.
    """
    low = text.lower()
    pattern = _terms_pattern(terms)
    m = pattern.search(low) if pattern is not None else None
    pos = m.start() if m else -1
    if pos < 0:
        start = 0
    else:
        start = max(0, pos - width // 3)
        # do not start mid-word
        while start > 0 and not text[start - 1].isspace() and pos - start < width // 2:
            start -= 1
    end = min(len(text), start + width)
    out = " ".join(text[start:end].split())
    if start > 0:
        out = "…" + out
    if end < len(text):
        out = out + "…"
    return out


class ContentChunkSearch:
    """Search and read over one Store.

    Args:
        store: the Store (SQLite or Postgres); must be safe for concurrent reads.
        embedder_factory: returns the configured Embedder, or None when the
            provider is ``none``; called lazily, at most once (thread-safe).
            It may raise ``EmbedError`` (e.g. a failed load), which is carried
            as data.
    """

    def __init__(self, store: Store, embedder_factory: Callable[[], object | None]):
        self.store = store
        self._factory = embedder_factory
        self._embedder: object | None = None
        self._loaded = False
        self._lock = threading.Lock()

    # -- provider ------------------------------------------------------------
    def embedder(self):
        """The Embedder (loaded once) or None when no provider is configured.

        Raises:
            EmbedError: the provider could not be set up.
        """
        with self._lock:
            if not self._loaded:
                self._embedder = self._factory()
                self._loaded = True
            return self._embedder

    # -- scope -----------------------------------------------------------------
    def resolve_scope(self, parsed: Scope, scope: str | None) -> tuple[list[str], str | None]:
        """Collections to search and a hint when there are none.

        Targeted (a ``namespace:`` token) wins over ``scope``; anchored
        ``scope`` searches that path and each ancestor prefix. Only existing
        collections are returned, sorted.
        """
        known = [c.collection_path for c in self.store.collections()]
        if parsed.namespace:
            ns = parsed.namespace
            found = [c for c in known if c == ns or (parsed.subtree and c.startswith(ns + "/"))]
            if not found:
                return [], f"no collection {ns!r}{' or below it' if parsed.subtree else ''}; known: {', '.join(known) or 'none'}"
            return sorted(found), None
        if scope:
            path = scope.strip("/")
            parts = path.split("/")
            prefixes = {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
            found = [c for c in known if c in prefixes]
            if not found:
                return [], (
                    f"no collection at {path!r} or above it; known: {', '.join(known) or 'none'}. "
                    "Add 'namespace:<collectionPath> scope:subtree' to search below a path."
                )
            return sorted(found), None
        return [], (
            "no scope given: pass scope=<collectionPath> or put namespace:<collectionPath> in the query"
            + (f"; known collections: {', '.join(known)}" if known else "; no collections are indexed yet")
        )

    # -- search ------------------------------------------------------------------
    def search(self, query: str, scope: str | None = None, limit: int = 20,
               mode: str = "auto", per_file: bool = False) -> SearchOutcome:
        """Rank chunks for ``query`` within the resolved scope.

        Args:
            query: free text, may carry ``namespace:``/``scope:subtree`` tokens.
            scope: anchored node path (ignored when a namespace token is given).
            limit: hits to return, >= 1.
            mode: ``auto | vector | keyword | hybrid`` (see ``MODES``).
            per_file: resolve to the best chunk of each file (the ``search`` tool).

        Returns:
            A ``SearchOutcome``; failures are data: a provider refusal sets
            ``failure`` (``searched`` False), no provider with an explicit
            vector/hybrid mode sets ``error="search-not-performed"``.

        Raises:
            ValueError: ``mode`` not in ``MODES`` or ``limit`` < 1.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        parsed = parse_query(query or "")
        terms = query_terms(parsed.text)
        if not parsed.text.strip():
            return SearchOutcome(False, query, mode if mode != "auto" else "vector",
                                 message="no query text: give words to search for", terms=terms)
        collections, hint = self.resolve_scope(parsed, scope)
        try:
            embedder = self.embedder() if mode != "keyword" else None
        except EmbedError as e:
            return SearchOutcome(False, query, "vector" if mode == "auto" else mode, tuple(collections),
                                 failure=e.failure, terms=terms)
        message = None
        if mode == "auto":
            if embedder is None:
                mode = "keyword"
                message = "no embedding provider configured (EMBED_PROVIDER=none): keyword (BM25) results"
            else:
                mode = "vector"
        if mode in ("vector", "hybrid") and embedder is None:
            return SearchOutcome(
                False, query, mode, tuple(collections), error="search-not-performed",
                message="no embedding provider is configured (EMBED_PROVIDER=none), so no "
                        f"{mode} search was performed; set EMBED_PROVIDER or use mode=keyword",
                terms=terms,
            )
        model = getattr(embedder, "model", None) if embedder is not None else None
        if not collections:
            return SearchOutcome(False, query, mode, (), hint=hint, model=model, terms=terms)

        want = limit * 4 if per_file else limit
        while True:
            try:
                ranked, kind = self._rank(parsed.text, terms, collections, want, mode, embedder)
            except EmbedError as e:
                return SearchOutcome(False, query, mode, tuple(collections), failure=e.failure,
                                     model=model, terms=terms)
            if not per_file:
                hits = ranked[:limit]
                break
            best: dict[tuple[str, str], tuple[Chunk, float]] = {}
            for chunk, score in ranked:
                best.setdefault((chunk.collection_path, chunk.file_path), (chunk, score))
            hits = list(best.values())[:limit]
            if len(hits) >= limit or len(ranked) < want:
                break
            want *= 4
        if mode in ("vector", "hybrid") and not hits and model:
            counts = self.store.vector_counts().get(model)
            if not counts or not counts.get("vectors"):
                message = (f"no vectors stored for model {model!r} yet: run 'chunknav index' to embed "
                           "the chunks (keyword mode works meanwhile)")
        return SearchOutcome(True, query, mode, tuple(collections), tuple(hits), kind,
                             model if mode != "keyword" else None, message=message, terms=terms)

    def _rank(self, text, terms, collections, want, mode, embedder):
        if mode == "keyword":
            return [(h.chunk, h.score) for h in self.store.search_keyword(text, collections, want)], "bm25"
        qv = embedder.embed_query(text)
        stored_dim = self.store.vector_dim(embedder.model)
        if stored_dim is not None and stored_dim != qv.shape[0]:  # the model behind the name changed
            from engine.embed import dimension_changed

            raise EmbedError(dimension_changed(embedder.model, getattr(embedder, "endpoint", None) or "",
                                               stored_dim, int(qv.shape[0])))
        vec = [(h.chunk, h.score) for h in self.store.search_vectors(embedder.model, qv, collections, want)]
        if mode == "vector":
            return vec, "cosine"
        kw = [(h.chunk, h.score) for h in self.store.search_keyword(text, collections, want)]
        fused: dict[tuple[str, str, int], list] = {}
        for ranking in (vec, kw):
            for rank, (chunk, _) in enumerate(ranking):
                key = (chunk.collection_path, chunk.file_path, chunk.chunk_index)
                entry = fused.setdefault(key, [chunk, 0.0])
                entry[1] += 1.0 / (RRF_K + rank + 1)
        out = sorted(((c, s) for c, s in fused.values()), key=lambda cs: -cs[1])
        return out[:want], "rrf"

    # -- reads -------------------------------------------------------------------
    def collection(self, collection_path: str) -> Collection | None:
        """The named collection, or None."""
        return self.store.get_collection(collection_path)

    def get_chunk(self, collection_path: str, file_path: str, chunk_index: int) -> tuple[Chunk | None, int]:
        """``(chunk or None, totalChunks)`` for one key; never raises on a bad index."""
        total = self.store.chunk_count(collection_path, file_path)
        if chunk_index < 0 or chunk_index >= total:
            return None, total
        return self.store.get_chunk(collection_path, file_path, chunk_index), total
