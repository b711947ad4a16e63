"""ContentChunkSearch: scoped search, chunk reads and document reads over a Store.

Owns: scope resolution (``namespace:`` tokens, or the anchored ``scope`` argument: one
path or a list, each searched with its ancestors; ``"*"`` = every collection), the
three ranking modes (vector cosine, keyword BM25, hybrid fusion of both with its score
breakdown), ``auto`` mode, per-file resolution for ``search``, and chunk reads. Returns
internal values (``SearchOutcome``, ``RankedChunk``, ``Chunk``);
``engine/tools/answers.py`` turns them into envelopes. Imports no face (streamlit,
mcp, argparse).

A refusal from the embedding provider is carried as the ``EmbedFailure`` that
``engine/embed/`` classified; it is never re-derived and never turned into
an empty result.

Collaborators: ``engine.search.hybrid.HybridRanker`` ranks and fuses hybrid searches
(the formula and its constants are ``engine.search.fusion``'s alone);
``engine.search.per_file.one_per_file`` is the one per-file loop (``per_file``, the
``search`` tool: each file's best chunk from a ranking whose depth does not depend on
the limit up to ``FUSION_DEPTH``, so more hits never reorder or rescore the first ones);
the query grammar, its terms and the collectionPath normal form are
``engine.search.query``'s and snippets ``engine.search.snippets``'s (both re-exported here).

Which model's vectors a search uses (``serving_embedder``): the configured
model's once they cover the collection (every chunk has its vector, or a
recorded reason why not). Until then, after a model change, the stored
vectors of the previous model keep serving, when that model runs in process
(``bridge_factory``: the local models), the one with the most live vectors;
the answer's ``model`` names it and ``message`` says how far the configured
model has come. The switch happens at the search after the embed pass
commits its last vector: one commit, so no search sees a mix.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from engine.errors import EmbedError
from engine.search.confidence import MATCH_FLOOR, NO_CONFIDENT_MATCH, match
from engine.search.fusion import FUSION_DEPTH, RRF_K, VECTOR_WEIGHT_DEFAULT
from engine.search.hybrid import HybridRanker
from engine.search.hybrid import fuse_chunks as fuse
from engine.search.headings import HEADINGS_KEY, heading_matches, heading_path, headings_within
from engine.search.per_file import one_per_file
from engine.values import Chunk, Collection, RankedChunk
from engine.search.query import (
    SCOPE_QUALIFIERS,
    Scope,
    TimeRange,
    parse_modified,
    cut_hint as _cut_hint,
    embeddable,
    form_found,
    input_limit as _input_limit,
    normalise_collection_path,
    parse_query,
    query_terms,
)
from engine.store.base import Store
from engine.search.snippets import _first_start, make_snippet, make_snippets, shown_terms  # noqa: F401  (re-exported)
from engine.search.words import content_words, coverage

if TYPE_CHECKING:
    from engine.embed.base import EmbedFailure

__all__ = [
    "MODES",
    "RRF_K",
    "FUSION_DEPTH",
    "VECTOR_WEIGHT_DEFAULT",
    "MAX_QUERY_CHARS",
    "SCOPE_QUALIFIERS",
    "ALL_COLLECTIONS",
    "Scope",
    "RankedChunk",
    "SearchOutcome",
    "ContentChunkSearch",
    "parse_query",
    "make_snippet",
    "make_snippets",
    "shown_terms",
    "query_terms",
    "normalise_collection_path",
    "fuse",
]

log = logging.getLogger(__name__)

#: Ranking modes; "auto" = hybrid when a provider is configured and vectors
#: exist for its model, else keyword (the envelope's ``mode`` says which ran).
MODES = ("auto", "vector", "keyword", "hybrid")
#: Longest ``query`` accepted, in characters (the tools' schema refuses longer ones).
MAX_QUERY_CHARS = 50_000
#: ``scope`` value meaning every collection, explicitly.
ALL_COLLECTIONS = "*"


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What a search did, before it becomes an envelope.

    Attributes:
        searched: False when no ranking ran (failure, no scope, no query).
        query: the query as given.
        mode: the mode that ran (``vector | keyword | hybrid``).
        collections: collection paths searched, sorted.
        hits: ``RankedChunk`` best first; for ``per_file`` one per file.
        score_kind: ``cosine | bm25 | rrf``.
        model: the embedding model for vector/hybrid.
        failure: the classified ``EmbedFailure`` when the provider refused.
        error: an ErrorCode when ``failure`` is None but searching failed
            (``search-not-performed``).
        hint / message: human text for the caller.
        vector_weight: the fusion weight used (hybrid only).
        min_score: the threshold applied, or None.
        depth: hybrid: the depth of each list that was fused (a later page passes it back).
        modified: the modification-time window applied, or None.
        headings: the ``heading:`` phrases applied.
        confident: searched: whether a hit reaches ``MATCH_FLOOR``
            (``engine.search.confidence``); None when nothing was searched.
    """

    searched: bool
    query: str
    mode: str
    collections: tuple[str, ...] = ()
    hits: tuple[RankedChunk, ...] = ()
    score_kind: str | None = None
    model: str | None = None
    failure: EmbedFailure | None = None
    error: str | None = None
    hint: str | None = None
    message: str | None = None
    terms: tuple[str, ...] = field(default_factory=tuple)
    vector_weight: float | None = None
    min_score: float | None = None
    depth: int | None = None
    modified: TimeRange | None = None
    headings: tuple[str, ...] = ()

    confident: bool | None = None


class HitFilter:
    """Which chunks a filtered search keeps: the file's mtime inside ``modified`` and
    the chunk's headings (its path at its start, and those starting inside it) holding
    every ``headings`` phrase. Documents' headings are read once per file per search."""

    def __init__(self, store: Store, modified: TimeRange | None, headings: Sequence[str]) -> None:
        self.store = store
        self.modified = modified
        self.headings = tuple(headings)
        self._docs: dict[tuple[str, str], Any] = {}

    def keeps(self, chunk: Chunk) -> bool:
        """True when ``chunk`` passes both conditions."""
        if self.modified is not None and not self.modified.holds(chunk.last_modified):
            return False
        if self.headings:
            key = (chunk.collection_path, chunk.file_path)
            if key not in self._docs:
                doc = self.store.get_document(*key)
                self._docs[key] = (doc.metadata or {}).get(HEADINGS_KEY) if doc is not None else None
            rows = self._docs[key]
            titles = heading_path(rows, chunk.start) + headings_within(rows, chunk.start, chunk.end)
            if not heading_matches(titles, self.headings):
                return False
        return True


def _deepened(rank: Callable[[int], Sequence[Any]], want: int, keeps: Callable[[Any], bool]) -> list[Any]:
    """The first ``want`` items of a ranking that ``keeps``, best first: rank at ``want``,
    then 4x deeper until enough are kept or the ranking holds everything there is (the
    filter applies before the top-k cut, on every store alike)."""
    depth = max(want, 1)
    while True:
        ranked = rank(depth)
        kept = [r for r in ranked if keeps(r)]
        if len(kept) >= want or len(ranked) < depth:
            return kept[:want]
        depth *= 4


class ContentChunkSearch:
    """Search and read over one Store.

    Args:
        store: the Store (SQLite or Postgres); must be safe for concurrent reads.
        embedder_factory: returns the configured Embedder, or None when the
            provider is ``none``; called lazily, at most once (thread-safe).
            It may raise ``EmbedError`` (e.g. a failed load), which is carried
            as data.
        bridge_factory: model name -> an Embedder of that model, or None when
            it cannot run here; lets stored vectors of another model serve
            until the configured model covers the collection (None: never).
    """

    #: Seconds an "incomplete" coverage answer is reused before the store is asked again.
    COVERAGE_RECHECK_S = 2.0

    def __init__(
        self,
        store: Store,
        embedder_factory: Callable[[], Any],
        bridge_factory: Callable[[str], Any] | None = None,
    ):
        self.store = store
        self._factory = embedder_factory
        self._bridge_factory = bridge_factory
        self._embedder: Any = None
        self._loaded = False
        self._lock = threading.Lock()
        self._hybrid = HybridRanker(store, self._vector_hits)
        self._covered: set[str] = set()  # models seen covering the collection (they serve from then on)
        self._coverage: tuple[float, str, Any, str | None] | None = None  # (checked at, model, serving, note)
        self._bridges: dict[str, Any] = {}

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

    def serving_embedder(self) -> tuple[Any, str | None]:
        """``(embedder, note)``: the embedder whose model's vectors searches use now.

        The configured embedder once its model covers the collection (no chunk
        without its vector, failures recorded aside) or when no other model
        can serve; else a bridge to the stored model with the most live
        vectors, with a note naming both models and the configured one's
        progress. Remembered per process once covered; an incomplete answer
        is asked again after ``COVERAGE_RECHECK_S``.

        Raises:
            EmbedError: the configured provider could not be set up.
        """
        embedder = self.embedder()
        if embedder is None or self._bridge_factory is None:
            return embedder, None
        model = embedder.model
        if model in self._covered:
            return embedder, None
        memo = self._coverage
        if memo is not None and memo[1] == model and time.monotonic() - memo[0] < self.COVERAGE_RECHECK_S:
            return memo[2], memo[3]
        serving, note = self._choose(embedder)
        if serving is embedder and note is None:
            self._covered.add(model)
        self._coverage = (time.monotonic(), model, serving, note)
        return serving, note

    def _choose(self, embedder: Any) -> tuple[Any, str | None]:
        model = embedder.model
        live, missing = self.store.vector_coverage(model)
        if missing == 0:
            return embedder, None
        failed = int(self.store.embed_notes(limit=0).get(model, {}).get("failed", 0))
        if missing <= failed:  # every chunk has its vector or a recorded reason
            return embedder, None
        counts = self.store.vector_counts()
        others = sorted(
            (
                (int(c.get("vectors", 0)) - int(c.get("stale", 0)), m)
                for m, c in counts.items()
                if m != model and int(c.get("vectors", 0)) - int(c.get("stale", 0)) > live
            ),
            reverse=True,
        )
        for _, other in others:
            bridge = self._bridges.get(other)
            if bridge is None:
                bridge = self._bridge_factory(other) if self._bridge_factory is not None else None
                if bridge is None:
                    continue
                self._bridges[other] = bridge
            total = live + missing
            return bridge, (
                f"vectors of {other!r} serve this search: the configured model {model!r} has "
                f"{live} of {total} chunks embedded ({100 * live // max(total, 1)}%); searches "
                f"switch to it when 'chunknav index' has embedded the rest"
            )
        return embedder, None

    # -- scope -----------------------------------------------------------------
    def _resolve(self, parsed: Scope, scope: str | Sequence[str] | None) -> tuple[list[str], str | None, bool]:
        """``(collections, hint, every)``: every = the collections are all the known ones (the
        stores then search unfiltered, their fast path).

        Targeted (``namespace:`` tokens) wins over ``scope``; each namespace
        is searched by the qualifier (default ``exact``). The ``scope``
        argument is one node path or a list of them, each anchored (default
        qualifier ``ancestorsandself``: the path and each ancestor prefix; an
        explicit ``scope:`` token applies to them instead); ``"*"`` is every
        collection. Only existing collections are returned, sorted; paths that
        match none are named in the hint.
        """
        known = [c.collection_path for c in self.store.collections()]
        known_txt = ", ".join(known) or "none"
        if parsed.namespaces:
            paths, qualifier, what = list(parsed.namespaces), parsed.qualifier or "exact", "namespace"
        elif scope:
            raw = [scope] if isinstance(scope, str) else list(scope)
            if any(p.strip() == ALL_COLLECTIONS for p in raw):
                if not known:
                    return [], "no collections are indexed yet", False
                return sorted(known), None, True
            paths = [p for p in (normalise_collection_path(p) for p in raw) if p]
            qualifier, what = parsed.qualifier or "ancestorsandself", "scope"
            if not paths:
                return [], f"scope names no collection path; known collections: {known_txt}", False
        else:
            return (
                [],
                (
                    "no scope given: pass scope=<collectionPath> (or a list, or '*' for every collection) "
                    "or put namespace:<collectionPath> in the query"
                    + (f"; known collections: {', '.join(known)}" if known else "; no collections are indexed yet")
                ),
                False,
            )
        found: set[str] = set()
        missing: list[str] = []
        for path in paths:  # a path in NFC finds a collection named in NFD and back (one form only)
            path = form_found(path, lambda p: any(self._in_scope(c, p, qualifier) for c in known))
            hit = [c for c in known if self._in_scope(c, path, qualifier)]
            if not hit:
                missing.append(path)
            found.update(hit)
        hint = None
        if missing:
            where = {"exact": "", "subtree": " or below it", "ancestorsandself": " or above it"}[qualifier]
            names = ", ".join(repr(m) for m in missing)
            hint = f"no collection at {names}{where} ({what}, scope:{qualifier}); known: {known_txt}"
            if what == "scope" and qualifier == "ancestorsandself":
                hint += ". Add 'namespace:<collectionPath> scope:subtree' to search below a path."
        return sorted(found), hint, bool(found) and len(found) == len(known)

    @staticmethod
    def _in_scope(collection: str, path: str, qualifier: str) -> bool:
        if qualifier == "exact":
            return collection == path
        if qualifier == "subtree":
            return collection == path or collection.startswith(path + "/")
        return collection == path or path.startswith(collection + "/")  # ancestorsandself

    # -- search ------------------------------------------------------------------
    def has_vectors(self, model: str | None) -> bool:
        """True when the store holds vectors for ``model`` (``auto`` runs hybrid then)."""
        if not model:
            return False
        return bool(self.store.has_vectors(model))

    def search(
        self,
        query: str,
        scope: str | Sequence[str] | None = None,
        limit: int = 20,
        mode: str = "auto",
        per_file: bool = False,
        min_score: float | None = None,
        vector_weight: float | None = None,
        depth: int | None = None,
        modified: str | None = None,
        heading: str | None = None,
    ) -> SearchOutcome:
        """Rank chunks for ``query`` within the resolved scope.

        Args:
            query: free text, at most ``MAX_QUERY_CHARS``; may carry
                ``namespace:``/``scope:`` tokens (see ``parse_query``).
            scope: anchored node path, a list of them, or ``"*"`` (every
                collection); ignored when a namespace token is given.
            limit: hits to return, >= 1.
            mode: ``auto | vector | keyword | hybrid`` (see ``MODES``).
            per_file: resolve to the best chunk of each file (the ``search`` tool).
            min_score: drop hits whose score (the mode's own: cosine, -bm25 or
                fused) is below this.
            vector_weight: hybrid fusion weight of the vector list, 0..1
                (default ``VECTOR_WEIGHT_DEFAULT``); other modes ignore it.
            depth: hybrid, not ``per_file``: the depth of each list to fuse (default
                ``max(limit, FUSION_DEPTH)``); a later page of one answer passes the
                first page's, so its fused order continues the first page's.
            modified: a ``modified:`` window (``engine.search.query.parse_modified``),
                applied with any ``modified:`` token of the query.
            heading: a phrase the hits' heading path must hold (with any ``heading:`` token).

        Returns:
            A ``SearchOutcome``; failures are data: a provider refusal sets
            ``failure`` (``searched`` False), no provider with an explicit
            vector/hybrid mode sets ``error="search-not-performed"``. Tokens
            not understood are named in ``hint``.

        Raises:
            ValueError: ``mode`` not in ``MODES``, ``limit`` < 1, a query
                longer than ``MAX_QUERY_CHARS``, ``vector_weight`` outside 0..1
                or a ``modified`` value that is no window.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        if query and len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query is {len(query)} characters; the most is {MAX_QUERY_CHARS}")
        if vector_weight is not None and not 0.0 <= vector_weight <= 1.0:
            raise ValueError(f"vectorWeight must be within 0..1, got {vector_weight}")
        window = None
        if modified is not None:
            window = parse_modified(modified)
            if window is None:
                raise ValueError(
                    f"modified must look like >2026-01-01, <2026-02-01 or 2026-01-01..2026-03-31, got {modified!r}"
                )
        parsed = parse_query(query or "")
        window = window.both(parsed.modified) if window is not None else parsed.modified
        wanted = parsed.headings + ((heading.strip(),) if heading and heading.strip() else ())
        where_filter = HitFilter(self.store, window, wanted) if window is not None or wanted else None
        terms = query_terms(parsed.text)
        ignored = (
            (
                f"not understood, so not searched: {', '.join(parsed.ignored)} (known keys: "
                f"namespace:<collectionPath>, scope:{'|'.join(SCOPE_QUALIFIERS)})"
            )
            if parsed.ignored
            else None
        )
        bridge_note = None
        try:
            embedder, bridge_note = self.serving_embedder() if mode != "keyword" else (None, None)
        except EmbedError as e:
            return SearchOutcome(
                False, query, "hybrid" if mode == "auto" else mode, (), failure=e.failure, terms=terms, hint=ignored
            )
        model = getattr(embedder, "model", None) if embedder is not None else None
        message = None
        if mode == "auto":
            if embedder is None:
                mode = "keyword"
                message = "no embedding provider configured (EMBED_PROVIDER=none): keyword (BM25) results"
            elif not self.has_vectors(model):
                mode = "keyword"
                message = (
                    f"no vectors stored for model {model!r} yet: keyword (BM25) results; run "
                    "'chunknav index' to embed the chunks and get hybrid results"
                )
            else:
                mode = "hybrid"
        if bridge_note is not None and message is None and mode != "keyword":
            message = bridge_note
        if not parsed.text.strip():
            return SearchOutcome(
                False, query, mode, message="no query text: give words to search for", terms=terms, hint=ignored
            )
        collections, hint, every = self._resolve(parsed, scope)
        cut = _cut_hint(parsed.text, embedder, mode) if mode in ("vector", "hybrid") and embedder is not None else None
        hint = "; ".join(h for h in (hint, ignored, cut) if h) or None
        if mode in ("vector", "hybrid") and embedder is None:
            return SearchOutcome(
                False,
                query,
                mode,
                tuple(collections),
                error="search-not-performed",
                message="no embedding provider is configured (EMBED_PROVIDER=none), so no "
                f"{mode} search was performed; set EMBED_PROVIDER or use mode=keyword",
                terms=terms,
                hint=hint,
            )
        weight = (
            (VECTOR_WEIGHT_DEFAULT if vector_weight is None else float(vector_weight)) if mode == "hybrid" else None
        )
        if not collections:
            return SearchOutcome(
                False, query, mode, (), hint=hint, model=model if mode != "keyword" else None, terms=terms
            )

        where = None if every else collections
        try:
            fused_depth = max(limit, FUSION_DEPTH) if depth is None else max(depth, 1)
            hits = self._ranked(
                parsed.text, where, limit, mode, embedder, weight, per_file, min_score, fused_depth, where_filter
            )
        except EmbedError as e:
            return SearchOutcome(
                False, query, mode, tuple(collections), failure=e.failure, model=model, terms=terms, hint=hint
            )
        kind = {"keyword": "bm25", "vector": "cosine", "hybrid": "rrf"}[mode]
        if mode in ("vector", "hybrid") and not hits and model and not self.has_vectors(model):
            message = (
                f"no vectors stored for model {model!r} yet: run 'chunknav index' to embed "
                "the chunks (keyword mode works meanwhile)"
            )
        hits = _with_match(hits, parsed.text, mode, model)
        confident = any((h.match or 0.0) >= MATCH_FLOOR for h in hits)
        if not confident:
            message = "; ".join(m for m in (message, NO_CONFIDENT_MATCH.format(floor=MATCH_FLOOR)) if m)
        return SearchOutcome(
            True,
            query,
            mode,
            tuple(collections),
            tuple(hits),
            kind,
            model if mode != "keyword" else None,
            hint=hint,
            message=message,
            terms=terms,
            vector_weight=weight,
            min_score=min_score,
            depth=fused_depth if mode == "hybrid" and not per_file else None,
            modified=window,
            headings=wanted,
            confident=confident,
        )

    def _ranked(
        self,
        text: str,
        collections: list[str] | None,
        limit: int,
        mode: str,
        embedder: Any,
        weight: float | None,
        per_file: bool,
        min_score: float | None,
        fused_depth: int | None = None,
        keep: HitFilter | None = None,
    ) -> list[RankedChunk]:
        """The hits of one search, best first, at most ``limit`` (``collections`` None: all).

        Not ``per_file``: the best ``limit`` chunks (hybrid: fused from the top
        ``max(limit, FUSION_DEPTH)`` of each list) scoring at least ``min_score``.
        ``per_file``: each file's best chunk (``one_per_file``); vector and keyword
        scores do not depend on the depth, so their first pass ranks ``4 * limit``
        chunks; hybrid is ``HybridRanker.per_file`` (a fused score depends on the depth).
        ``keep``: only chunks it keeps take part (``_filtered``).

        Raises:
            EmbedError: the provider refused, or the model's dimension changed.
        """
        hybrid_weight = VECTOR_WEIGHT_DEFAULT if weight is None else weight
        depth = max(limit, FUSION_DEPTH) if fused_depth is None else fused_depth
        if keep is not None:
            return self._filtered(
                text, collections, limit, mode, embedder, hybrid_weight, per_file, min_score, depth, keep
            )
        if per_file:
            in_scope = functools.partial(self._scope_files, collections)
            if mode == "hybrid":
                return self._hybrid.per_file(text, collections, limit, embedder, hybrid_weight, min_score, in_scope)
            return one_per_file(
                lambda depth: self._rank(text, collections, depth, mode, embedder),
                4 * limit,
                limit,
                lambda r: (r.chunk.collection_path, r.chunk.file_path),
                lambda r: r.score,
                min_score,
                in_scope,
            )[:limit]
        if mode == "hybrid":
            ranked = self._hybrid.ranked(text, collections, depth, embedder, hybrid_weight, limit)
        else:
            ranked = self._rank(text, collections, limit, mode, embedder)
        return [r for r in ranked if min_score is None or r.score >= min_score][:limit]

    def _filtered(
        self,
        text: str,
        collections: list[str] | None,
        limit: int,
        mode: str,
        embedder: Any,
        weight: float,
        per_file: bool,
        min_score: float | None,
        depth: int,
        keep: HitFilter,
    ) -> list[RankedChunk]:
        """``_ranked`` over the chunks ``keep`` keeps: each list is deepened until it holds
        enough kept chunks (``_deepened``), so the filter runs before the top-k cut; hybrid
        fuses the top ``depth`` kept chunks of each list (``fuse``)."""
        ok = lambda r: keep.keeps(r.chunk)  # noqa: E731

        def one_list(kind: str, want: int) -> list[RankedChunk]:
            return _deepened(lambda d: self._rank(text, collections, d, kind, embedder), want, ok)

        def ranking(want: int) -> list[RankedChunk]:
            if mode != "hybrid":
                return one_list(mode, want)
            d = max(want, depth)
            vec = [(r.chunk, r.score) for r in one_list("vector", d)]
            kw = [(r.chunk, r.score) for r in one_list("keyword", d)]
            return fuse(vec, kw, weight)

        if per_file:
            return one_per_file(
                ranking,
                4 * limit,
                limit,
                lambda r: (r.chunk.collection_path, r.chunk.file_path),
                lambda r: r.score,
                min_score,
                functools.partial(self._scope_files, collections),
            )[:limit]
        ranked = ranking(limit)
        return [r for r in ranked if min_score is None or r.score >= min_score][:limit]

    def _rank(
        self, text: str, collections: list[str] | None, depth: int, mode: str, embedder: Any
    ) -> list[RankedChunk]:
        """The best ``depth`` chunks of one list (``mode`` vector or keyword), best first."""
        if mode == "keyword":
            return [RankedChunk(h.chunk, h.score) for h in self.store.search_keyword(text, collections, depth)]
        return [RankedChunk(h.chunk, h.score) for h in self._vector_hits(text, collections, depth, embedder)]

    def _scope_files(self, collections: list[str] | None) -> int:
        """Files holding chunks in ``collections`` (every collection when None): the store's
        ``file_count``."""
        return int(self.store.file_count(collections))

    def _vector_hits(
        self, text: str, collections: list[str] | None, depth: int, embedder: Any, refs: bool = False
    ) -> list[Any]:
        """Embed ``text`` and scan: the store's ``VectorHit``s, best first (``refs``: its
        ``search_vector_refs`` tuples).

        Raises:
            EmbedError: the provider refused, or the model's dimension changed.
        """
        qv = embedder.embed_query(embeddable(text, _input_limit(embedder)))  # a long query: its start
        stored_dim = self.store.vector_dim(embedder.model)
        if stored_dim is not None and stored_dim != qv.shape[0]:  # the model behind the name changed
            from engine.embed import dimension_changed

            raise EmbedError(
                dimension_changed(
                    embedder.model, getattr(embedder, "endpoint", None) or "", stored_dim, int(qv.shape[0])
                )
            )
        if refs:
            return list(self.store.search_vector_refs(embedder.model, qv, collections, depth))
        return self.store.search_vectors(embedder.model, qv, collections, depth)

    # -- reads -------------------------------------------------------------------
    def collection(self, collection_path: str) -> Collection | None:
        """The named collection, or None."""
        return self.store.get_collection(collection_path)

    def get_chunk(self, collection_path: str, file_path: str, chunk_index: int) -> tuple[Chunk | None, int]:
        """``(chunk or None, totalChunks)`` for one key; never raises on a bad index.
        ``collection_path`` is normalised (``normalise_collection_path``)."""
        collection_path = normalise_collection_path(collection_path)
        total = self.store.chunk_count(collection_path, file_path)
        if chunk_index < 0 or chunk_index >= total:
            return None, total
        return self.store.get_chunk(collection_path, file_path, chunk_index), total


def _with_match(hits: list[RankedChunk], text: str, mode: str, model: str | None) -> list[RankedChunk]:
    """``hits`` with each one's ``coverage`` of the query's content words (measured here when
    the ranking did not) and its ``match`` (``engine.search.confidence.match``: the cosine is
    the vector mode's score, or a hybrid hit's vector-list score)."""
    words = frozenset(content_words(text))
    out = []
    for h in hits:
        cov = h.coverage if h.coverage is not None else coverage(words, h.chunk.chunk_text) if words else 0.0
        cosine = h.score if mode == "vector" else h.vector_score if mode == "hybrid" else None
        out.append(dataclasses.replace(h, coverage=cov, match=match(cov, cosine, model)))
    return out
