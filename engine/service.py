"""The ``Engine``: the engine objects every face shares (settings, store, search, indexer).

Owns: opening the store and the embedder lazily, the operator actions that
are not agent tools (add/remove a collection, run the indexer, the provider
probe). The tool functions in ``engine.tools.registry`` take an ``Engine``. Imports no
face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import functools
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

from engine.config import Settings, load_settings
from engine.errors import ChunknavError, CollectionBoundError, EmbedError, IndexBusyError, StoreUnavailableError
from engine.values import Collection
from engine.config import register_settings
from engine.secrets import register as register_secrets

if TYPE_CHECKING:
    from engine.search.searcher import ContentChunkSearch

__all__ = ["Engine"]

#: ``engine.embed.local.LOCAL_MODEL`` (tests/project/test_perf.py checks they agree), named here so that
#: ``run_index`` can defer the local provider without importing ``engine.embed``.
_LOCAL_MODEL = "l2_supercat_256"


def _same(value: Any) -> Any:
    """``value`` (an embedder factory that returns an embedder already built)."""
    return value


class Engine:
    """The engine objects every face shares: settings, store, search, indexer.

    Built once per process (the GUI caches it with ``st.cache_resource``);
    safe for concurrent reads. The store and the embedder open lazily.

    Args:
        settings: validated settings; default ``load_settings()``.
        store: an already opened Store (tests); default ``open_store(settings)``.
    """

    def __init__(self, settings: Settings | None = None, store=None):
        self.settings = settings or load_settings()
        self._store = store
        self._lock = threading.Lock()
        self._search: ContentChunkSearch | None = None
        register_settings(self.settings)  # every face redacts the configured secrets

    @property
    def store(self):
        """The Store, opened on first use."""
        with self._lock:
            if self._store is None:
                from engine.store import open_store

                try:
                    self._store = open_store(self.settings)
                    self._store.repair_orphans()  # rows of a collection removed while a run still wrote
                except ChunknavError:
                    raise
                except Exception as e:  # sqlite3 / psycopg / OSError: the index cannot be opened
                    where = self.settings.dsn.split("@")[-1] if self.settings.dsn else self.settings.db
                    raise StoreUnavailableError(
                        f"the index at {where} cannot be opened: {type(e).__name__}: {e}"
                    ) from e
                from engine.passwords import resolve_password

                register_secrets(
                    *(
                        resolve_password(c.password_ref)  # PDF passwords, from their references
                        for c in self._store.collections()
                    )
                )
            return self._store

    @property
    def search(self) -> ContentChunkSearch:
        """The ContentChunkSearch over ``store`` with the configured provider."""
        if self._search is None:
            # engine.search.searcher only when a search or the provider is asked for: an index run
            # or a chunk read never imports it
            from engine.search.searcher import ContentChunkSearch

            self._search = ContentChunkSearch(self.store, self._make_embedder)
        return self._search

    def _make_embedder(self):
        # engine.embed (and requests with it) only when a search or an index run needs
        # a provider: a chunk or document read never imports it.
        from engine.embed import make_embedder

        return make_embedder(self.settings)

    def embedder(self):
        """The configured Embedder or None (provider ``none``). Raises EmbedError."""
        return self.search.embedder()

    def auto_mode(self) -> str:
        """Which ranking ``mode="auto"`` runs now (as ``ContentChunkSearch.search`` decides):
        ``keyword`` without a provider or without vectors for its model, else ``hybrid``
        (also when the provider cannot be built: the search then reports that failure)."""
        from engine.errors import EmbedError

        try:
            emb = self.embedder()
        except EmbedError:
            return "hybrid"
        return "hybrid" if emb is not None and self.search.has_vectors(emb.model) else "keyword"

    # -- operator actions (not agent tools) -------------------------------
    def add_collection(
        self,
        collection_path: str,
        root: str,
        password_ref: str | None = None,
        *,
        replace: bool = False,
        allow_any_root: bool = False,
    ) -> Collection:
        """Bind ``collection_path`` (slash-separated) to the directory ``root``.

        Adding a path that is already bound to the same directory is a no-op
        (the password reference is updated). A path bound to another directory is only
        re-pointed with ``replace=True``: its documents and chunks are dropped
        first (vectors stay, counted stale) and the next run indexes the new
        root; refused while an index run is active.

        Args:
            collection_path: e.g. ``ACME/Reports``.
            root: an existing directory; must pass ``engine.paths.check_root``
                (``CHUNKNAV_ALLOWED_ROOTS``; never ``/`` or a system directory).
            password_ref: where encrypted PDFs' password comes from: ``env:NAME``
                or ``file:/path`` (``engine.passwords``); never the password.
                The password it points at is registered as a secret (redacted everywhere).
            replace: re-point an existing path to another root, on purpose.
            allow_any_root: skip the allowed-roots list (the CLI's
                ``--allow-any-root``; the GUI never passes it).

        Raises:
            ValueError: empty path, a path segment '..' or '_Documents', a
                root that is not a directory, or a ``password_ref`` that is not
                a reference (SettingsError).
            RootRefusedError: the root is refused (message names the setting).
            CollectionBoundError: the path is bound to another root and
                ``replace`` is False.
            IndexBusyError: ``replace`` while an index run is active.
        """
        import os

        from engine.paths import check_root

        path = collection_path.strip("/")
        if not path or any(p in ("", ".", "..", "_Documents") for p in path.split("/")):
            raise ValueError(f"bad collectionPath {collection_path!r}: use segments like 'ACME/Reports'")
        if "\x00" in root or not os.path.isdir(root):
            raise ValueError(f"collection root {root!r} is not a directory")
        real = check_root(root, self.settings.allowed_roots, allow_any=allow_any_root)
        from engine.passwords import check_password_ref, resolve_password

        ref = check_password_ref(password_ref)
        register_secrets(resolve_password(ref))
        existing = self.store.get_collection(path)
        c = Collection(path, real, ref)
        if existing is not None and os.path.realpath(existing.root) != real:
            if not replace:
                raise CollectionBoundError(path, existing.root, real)
            self._refuse_while_running(f"replace collection {path!r}")
            self.store.remove_collection(path)
        self.store.add_collection(c)
        return c

    def collection_counts(self, collection_path: str) -> dict[str, int]:
        """What removing (or replacing) a collection drops: ``{"documents": n,
        "chunks": n}`` (vectors are kept and counted stale)."""
        docs = self.store.documents(collection_path.strip("/"))
        return {"documents": len(docs), "chunks": sum(d.chunk_count for d in docs)}

    def _refuse_while_running(self, what: str) -> None:
        """Raise IndexBusyError when an index run holds the lock (checked, then released)."""
        try:
            with self.store.index_lock():
                pass
        except IndexBusyError as e:
            raise IndexBusyError(f"cannot {what}: {e}; wait for it to finish") from None

    def remove_collection(self, collection_path: str) -> bool:
        """Drop a collection's documents and chunks (vectors stay, counted stale).

        Holds the index lock across the removal, so no run can start in between
        (a run that kept writing would leave orphan rows).

        Raises:
            IndexBusyError: an index run is active; nothing was removed.
        """
        path = collection_path.strip("/")
        if self.store.get_collection(path) is None:
            return False
        try:
            with self.store.index_lock():
                return self.store.remove_collection(path)
        except IndexBusyError as e:
            raise IndexBusyError(
                f"cannot remove collection {path!r}: {e}; nothing was removed, "
                "wait for the run to finish (or cancel it)"
            ) from None

    def run_index(
        self,
        collections: list[str] | None = None,
        force: bool = False,
        on_progress: Callable[[dict], None] | None = None,
        embed: bool = True,
        cancel: threading.Event | None = None,
    ) -> dict:
        """Run the indexer (hash-gated, or forced: Rebuild) and return its summary.

        A provider that cannot be set up is reported in ``embedError`` and the
        text is indexed anyway. ``cancel`` set: the run stops at the next file
        boundary and ends ``cancelled``. Raises IndexBusyError when a run is active.
        """
        from engine.index.indexer import Indexer

        embedder = None
        setup_error = None
        if embed and self.settings.embed_provider == "auto" and self.settings.embed_model:
            from engine.index.embed_pass import DeferredEmbedder

            # auto-detection probes the server: only do it when something needs embedding
            embedder = DeferredEmbedder(self.settings.embed_model, self.embedder)
        elif embed and self.settings.embed_provider == "local" and self.settings.embed_model in ("", _LOCAL_MODEL):
            from engine.index.embed_pass import DeferredEmbedder

            # the local model's name is known without engine.embed: a run with nothing
            # to embed imports no provider code at all
            embedder = DeferredEmbedder(_LOCAL_MODEL, self.embedder)
        elif embed:
            try:
                embedder = self.embedder()
            except EmbedError as e:
                setup_error = e.failure.to_fields()
        summary = Indexer(self.store, self.settings, embedder).run(collections, force, on_progress, cancel=cancel)
        if setup_error and not summary.get("embedError"):
            summary["embedError"] = setup_error
        return summary

    def provider_status(self, probe: bool = True) -> dict[str, Any]:
        """``ProviderStatus``: provider, model, dim, endpoint and (optionally) the probe result."""
        s = self.settings
        out: dict[str, Any] = {"provider": s.embed_provider, "model": s.embed_model, "dim": s.embed_dim}
        try:
            emb = self.embedder()
        except EmbedError as e:
            out["probe"] = {"ok": False, **e.failure.to_fields()}
            return out
        if emb is None:
            out["probe"] = {
                "ok": False,
                "error": "search-not-performed",
                "message": "no embedding provider configured (EMBED_PROVIDER=none)",
            }
            return out
        out.update(provider=emb.provider, model=emb.model, dim=int(emb.dim or 0))
        if emb.endpoint:
            out["endpoint"] = emb.endpoint
        if probe:
            try:
                seconds = emb.probe()
                out["probe"] = {"ok": True, "seconds": round(float(seconds), 4)}
                out["dim"] = int(emb.dim)
                stored = self.store.vector_dim(emb.model)
                if stored is not None and stored != int(emb.dim):  # the model behind the name changed
                    from engine.embed import dimension_changed

                    out["probe"] = {
                        "ok": False,
                        "seconds": round(float(seconds), 4),
                        **dimension_changed(emb.model, emb.endpoint or "", stored, int(emb.dim)).to_fields(),
                    }
            except EmbedError as e:
                out["probe"] = {"ok": False, **e.failure.to_fields()}
                if e.failure.server_dim is not None:
                    out["dim"] = int(e.failure.server_dim)  # what the provider answers now
        return out

    def index_dir(self) -> str:
        """The folder beside the index where its own files go (evaluation runs): the SQLite
        file's folder, or ``./.chunknav`` for Postgres and ``:memory:``."""
        if self.settings.dsn or self.settings.db == ":memory:":
            return os.path.abspath(".chunknav")
        return os.path.dirname(os.path.abspath(self.settings.db))

    def evaluate(
        self,
        questions: str,
        *,
        models: list[str] | tuple[str, ...] = (),
        modes: list[str] | tuple[str, ...] | None = None,
        save_to: str | None = None,
        save: bool = True,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Run the labelled questions of a file against this index (``engine.search.evaluate``).

        Args:
            questions: path of a questions file (JSON Lines).
            models: further embedding models to rank with in vector and hybrid mode, beside
                the configured one; a model without vectors in this index, or that cannot be
                built, gets a result row with ``error`` and ``message`` instead of metrics.
            modes: subset of ``keyword``, ``vector``, ``hybrid`` (default all three).
            save_to: where to save the run (default ``<index_dir>/evals/eval-<UTC time>.json``).
            save: False: do not save.
            on_progress: called with ``(searches done, searches in all)``.

        Returns:
            The run (``engine.search.evaluate.run_eval``), plus ``savedTo`` when saved.

        Raises:
            OSError: the questions file cannot be read, or the run cannot be saved.
        """
        import dataclasses

        from engine import __version__
        from engine.search.evaluate import EVAL_MODES, default_run_path, load_questions, run_eval, save_run
        from engine.search.searcher import ContentChunkSearch
        from engine.secrets import public_dsn

        qs, problems = load_questions(questions)
        wanted = tuple(modes or EVAL_MODES)
        extra: list[tuple[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for name in dict.fromkeys(models):
            row = {"model": name}
            if not self.store.has_vectors(name):
                row.update(error="no-vectors", message=f"this index holds no vectors for model {name!r}")
            else:
                try:
                    other = dataclasses.replace(self.settings, embed_model=name)
                    emb = self._embedder_for(other)
                except (ChunknavError, ValueError) as e:
                    row.update(error="model-unavailable", message=str(e))
                else:
                    extra.append((name, ContentChunkSearch(self.store, functools.partial(_same, emb))))
                    continue
            skipped.extend({"mode": m, **row} for m in wanted if m != "keyword")
        s = self.settings
        run = run_eval(
            self.search,
            qs,
            extra=extra,
            modes=wanted,
            settings={
                "provider": s.embed_provider,
                "model": s.embed_model or None,
                "store": "postgres" if s.dsn else "sqlite",
                "index": public_dsn(s.dsn) if s.dsn else os.path.abspath(s.db) if s.db != ":memory:" else s.db,
                "chunkSize": s.chunk_size,
                "chunkOverlap": s.chunk_overlap,
                "version": __version__,
            },
            source=os.path.abspath(questions),
            problems=problems,
            on_progress=on_progress,
        )
        run["results"].extend(skipped)
        if save:
            run["savedTo"] = str(save_run(run, save_to or default_run_path(self.index_dir())))
        return run

    @staticmethod
    def _embedder_for(settings: Settings):
        """An embedder built from ``settings`` (an extra model of an evaluation).

        Raises:
            SettingsError / EmbedError: it cannot be built."""
        from engine.embed import make_embedder

        return make_embedder(settings)

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
