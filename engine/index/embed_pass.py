"""The indexer's embed pass: give every chunk a vector for the current model.

Owns: ``EmbedPass`` (the pass as a collaborator of ``engine.index.indexer.Indexer``,
run after the text pass with the run's ``RunContext``), ``embed_pass`` (the
pass itself, over any store), ``DeferredEmbedder`` and ``text_hash``. The
pass, in order:

1. Reads the chunks without a vector for the embedder's model in groups of
   ``GROUP_TEXTS`` (chunk-id order, a cursor, so memory stays bounded). When
   there are none, it returns at once: no probe, no model load.
2. Probes the provider once, and compares its dimension with the vectors
   already stored for the model: a difference is the classified failure
   ``embedding-dimension-changed`` (``storedDim``/``serverDim``) and nothing
   is written.
3. Per group: looks up each window text's sha256 among stored vectors of the
   model (``Store.vectors_by_text``: a re-saved file, or a text that recurs,
   is not embedded again; ``reused`` counts them), embeds each remaining
   distinct text once, in length order (every batch of ``EMBED_BATCH`` texts
   pads to similar lengths), with ``engine.embed.embed_isolating`` so one
   refused text never blocks the others; a text embedded cut is noted
   ``truncated``, one that could not be embedded is recorded with its reason
   (``Store.record_embed_failures``), and the pass goes on.
4. A failure that is not about one text (unreachable, credential, unknown
   model) stops the pass: ``embedError`` in the summary; the next run embeds
   what is missing.

The text pass has committed every chunk before this pass starts, so keyword
search finds them while it runs; vector search keeps using the model that
covers the collection (``engine.search.searcher``) until this one does.
Progress: an ``embed`` event after every model batch (see ``embed_pass``),
with the rate and the time left measured over this pass alone.

Imports ``engine.embed`` (the isolation helper and failures, on first use),
``engine.index.context`` and the store protocol; never a face (streamlit, mcp,
argparse).
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import TYPE_CHECKING, Any, Callable

from engine.errors import EmbedError
from engine.lazy import np  # numpy on first use (engine.lazy)

if TYPE_CHECKING:
    from engine.index.context import RunContext
    from engine.store.base import Store

__all__ = ["EmbedPass", "embed_pass", "text_hash", "DeferredEmbedder", "GROUP_TEXTS"]

log = logging.getLogger(__name__)

#: Texts read and length-sorted together (then cut into EMBED_BATCH batches).
GROUP_TEXTS = 1000


def text_hash(text: str) -> str:
    """Hex sha256 of a window's text (UTF-8; lone surrogates pass through), the vector-reuse key."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class DeferredEmbedder:
    """An embedder built only when the pass needs more than its model name.

    ``EMBED_PROVIDER=auto`` probes the server to pick a wire format; wrapped in
    this, an index run with nothing to embed never calls the server. ``model``
    is known up front; any other attribute builds the real embedder with
    ``factory`` once (its ``EmbedError`` surfaces where the pass probes, and is
    reported as ``embedError``).

    Args:
        model: the model name vectors are stored under (``EMBED_MODEL``).
        factory: ``() -> Embedder``; may raise ``EmbedError``.
    """

    def __init__(self, model: str, factory: Callable[[], Any]):
        self.model = model
        self._factory = factory
        self._real: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._real is None:
            self._real = self._factory()
        return getattr(self._real, name)


class EmbedPass:
    """The embedding pass of one run.

    Args:
        ctx: the run: its store, ``settings.embed_batch``, summary, progress,
            cancel check (before each batch) and busy-lock retry (each write).
        embedder: an ``engine.embed.Embedder`` (or a ``DeferredEmbedder``).
    """

    def __init__(self, ctx: RunContext, embedder: Any):
        self._ctx = ctx
        self._embedder = embedder

    def run(self) -> None:
        """Embed chunks without a vector for the embedder's model (``embed_pass``).

        Raises:
            RunCancelled: a cancel request reached a batch boundary (stored vectors are kept).
        """
        ctx = self._ctx
        embed_pass(
            ctx.store,
            self._embedder,
            ctx.settings.embed_batch,
            ctx.summary,
            ctx.emit,
            ctx.t0,
            check=ctx.check_cancel,
            write=ctx.retrying,
        )


def _endpoint(embedder: Any) -> str:
    return getattr(embedder, "endpoint", None) or ""


def _fail(summary: dict, failure: Any, done: int, total: int) -> None:
    """Record ``failure`` (an ``engine.embed.EmbedFailure``) as the pass's ``embedError``."""
    summary["embedError"] = failure.to_fields()
    log.warning("embedding stopped after %d of %d chunks: %s", done, total, failure.message)


def embed_pass(
    store: Store,
    embedder: Any,
    batch: int,
    summary: dict,
    emit: Callable[[dict], None],
    t0: float,
    *,
    check: Callable[[], None] | None = None,
    write: Callable[[Callable[[], Any]], Any] | None = None,
) -> None:
    """Embed every chunk that has no vector for ``embedder.model``; failures become data.

    Args:
        store: the index (any ``Store``).
        embedder: an ``engine.embed.Embedder`` (``model``, ``dim``, ``probe``,
            ``embed``, ``embed_truncated``, ``cut_hint``, ``max_input_chars``).
        batch: texts per ``embed`` call (``EMBED_BATCH``), >= 1.
        summary: the run summary, updated in place: ``embedded`` (texts
            embedded and stored), ``reused`` (chunks whose vector existed, by
            chunk id or by window text), ``truncated`` (chunks embedded cut to
            the model's limit), ``embedFailed`` (chunks left without a vector,
            each recorded with its reason in the store), ``embedError``
            (``EmbedFailure.to_fields()`` of a failure that stopped the pass).
        emit: progress callback; after every batch gets ``{"phase": "embed",
            "done", "total", "file": "", "elapsedS", "chunksPerS", "leftS",
            "model"}``: chunks handled (embedded, reused or failed) of the
            chunks that lacked a vector, their rate over this pass so far and
            the seconds left at that rate (None until the first batch ends).
        t0: ``time.perf_counter()`` at the start of the run (for ``elapsedS``).
        check: called before each batch (the indexer's cancel check); whatever
            it raises stops the pass with what was stored kept, and propagates.
        write: ``write(fn)`` runs each store write ``fn()`` (the indexer's
            busy-lock retry); None calls it directly.
    """
    model = embedder.model
    summary.setdefault("truncated", 0)
    summary.setdefault("embedFailed", 0)
    live, missing = store.vector_coverage(model)
    if not missing:  # nothing to embed: the answer the three reads below give, no probe
        summary["reused"] = max(0, live)
        return
    group = store.chunks_missing_vectors(model, limit=GROUP_TEXTS)
    counts = store.vector_counts().get(model, {})
    live = int(counts.get("vectors", 0)) - int(counts.get("stale", 0))
    summary["reused"] = max(0, live)
    if not group:
        return  # nothing to embed: no probe, no model load
    # engine.embed only now: an unchanged run imports no provider code
    from engine.embed.base import dimension_changed

    total = int(counts.get("missing", 0)) or len(group)
    try:
        embedder.probe()  # unreachable / wrong EMBED_DIM: stop before any vector is written
    except EmbedError as e:
        summary["embedError"] = e.failure.to_fields()
        log.warning("embedding skipped, probe failed: %s", e.failure.message)
        return
    stored = store.vector_dim(model)
    if stored is not None and int(embedder.dim) != stored:
        _fail(summary, dimension_changed(model, _endpoint(embedder), stored, int(embedder.dim)), 0, total)
        return
    run = write or (lambda fn: fn())
    run(lambda: store.backfill_vector_texts(model, text_hash))
    batch = max(1, int(batch))
    done = 0
    started = time.perf_counter()

    def report(now_done: int) -> None:
        now = time.perf_counter()
        rate = now_done / (now - started) if now_done and now > started else None
        left = max(total, now_done) - now_done
        emit(
            {
                "phase": "embed",
                "done": now_done,
                "total": max(total, now_done),
                "file": "",
                "elapsedS": round(now - t0, 3),
                "chunksPerS": None if rate is None else round(rate, 2),
                "leftS": None if rate is None else round(left / rate, 1),
                "model": model,
            }
        )

    while group:
        after = group[-1][0]
        base = done
        try:
            done += _embed_group(
                store,
                embedder,
                model,
                group,
                batch,
                summary,
                check or (lambda: None),
                run,
                lambda k: report(base + k),
            )
        except EmbedError as e:
            _fail(summary, e.failure, done, total)
            return
        report(done)
        group = store.chunks_missing_vectors(model, limit=GROUP_TEXTS, after=after)


def _store_vectors(
    store: Store, model: str, ids: list[str], rows: np.ndarray, hashes: list[str], cuts: list[int | None]
) -> None:
    """Add vectors (float32 (n, dim)) and their window-text notes in one commit where the store can."""
    with store.batch():
        store.add_vectors(model, ids, rows)
        store.note_vectors(model, ids, hashes, cuts)


def _embed_group(
    store: Store,
    embedder: Any,
    model: str,
    group: list[tuple[str, str]],
    batch: int,
    summary: dict,
    check: Callable[[], None],
    run: Callable[[Callable[[], Any]], Any],
    on_batch: Callable[[int], None] = lambda _k: None,
) -> int:
    """One group of missing chunks -> vectors stored; returns chunks handled. Raises EmbedError.
    ``on_batch(k)``: called after each model batch with the group's chunks handled so far."""
    from engine.embed.base import dimension_changed
    from engine.embed.isolate import embed_isolating

    ids_of: dict[str, list[str]] = {}
    text_of: dict[str, str] = {}
    for cid, text in group:
        h = text_hash(text)
        ids_of.setdefault(h, []).append(cid)
        text_of.setdefault(h, text)
    found = {
        h: vc for h, vc in store.vectors_by_text(model, list(ids_of)).items() if vc[0].shape[0] == int(embedder.dim)
    }  # another dimension cannot be reused
    if found:
        ids, rows, hashes, cuts = [], [], [], []
        for h, (vec, cut) in found.items():
            for cid in ids_of[h]:
                ids.append(cid)
                rows.append(vec)
                hashes.append(h)
                cuts.append(cut)
        if ids:
            run(lambda: _store_vectors(store, model, ids, np.stack(rows), hashes, cuts))
            summary["reused"] += len(ids)
            summary["truncated"] += sum(1 for c in cuts if c is not None)
    todo = sorted((h for h in ids_of if h not in found), key=lambda h: len(text_of[h]))
    handled = sum(len(ids_of[h]) for h in found)
    for i in range(0, len(todo), batch):
        check()
        part = todo[i : i + batch]
        vectors, ok, outcomes = embed_isolating(embedder, [text_of[h] for h in part])
        if ok.any() and vectors.shape[1] != int(embedder.dim or vectors.shape[1]):
            raise EmbedError(dimension_changed(model, _endpoint(embedder), int(embedder.dim), int(vectors.shape[1])))
        stored = store.vector_dim(model)
        if ok.any() and stored is not None and stored != vectors.shape[1]:
            raise EmbedError(dimension_changed(model, _endpoint(embedder), stored, int(vectors.shape[1])))
        cut_of = {o.index: o.truncated_chars for o in outcomes if o.truncated_chars is not None}
        ids, rows, hashes, cuts = [], [], [], []
        failures: list[tuple[str, str, str]] = []
        for k, h in enumerate(part):
            if not ok[k]:
                continue
            for j, cid in enumerate(ids_of[h]):
                ids.append(cid)
                rows.append(k)
                hashes.append(h)
                cuts.append(cut_of.get(k))
                if j:
                    summary["reused"] += 1  # the same text at another chunk id: embedded once
            summary["embedded"] += 1
        for o in outcomes:
            if o.failure is not None:
                for cid in ids_of[part[o.index]]:
                    failures.append((cid, o.failure.code, o.failure.message))
        if ids:
            run(lambda: _store_vectors(store, model, ids, vectors[rows], hashes, cuts))
        summary["truncated"] += sum(1 for c in cuts if c is not None)
        if failures:
            run(lambda: store.record_embed_failures(model, failures))
            summary["embedFailed"] += len(failures)
        handled += sum(len(ids_of[h]) for h in part)
        if handled < len(group):  # the group's end is reported by the caller
            on_batch(handled)
    return len(group)
