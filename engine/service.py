"""The ``Engine``: the engine objects every face shares (settings, store, search, indexer).

Owns: opening the store and the embedder lazily, the operator actions that
are not agent tools (add/remove a collection, run the indexer, the provider
probe). The tool functions in ``engine.tools`` take an ``Engine``. Imports no
face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from engine.config import Settings, load_settings
from engine.errors import ChunknavError, EmbedError, StoreUnavailableError
from engine.model import Collection
from engine.search import ContentChunkSearch

__all__ = ["Engine"]


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

    @property
    def store(self):
        """The Store, opened on first use."""
        with self._lock:
            if self._store is None:
                from engine.store import open_store

                try:
                    self._store = open_store(self.settings)
                except ChunknavError:
                    raise
                except Exception as e:  # sqlite3 / psycopg / OSError: the index cannot be opened
                    where = self.settings.dsn.split("@")[-1] if self.settings.dsn else self.settings.db
                    raise StoreUnavailableError(
                        f"the index at {where} cannot be opened: {type(e).__name__}: {e}") from e
            return self._store

    @property
    def search(self) -> ContentChunkSearch:
        """The ContentChunkSearch over ``store`` with the configured provider."""
        if self._search is None:
            from engine.embed import make_embedder

            self._search = ContentChunkSearch(self.store, lambda: make_embedder(self.settings))
        return self._search

    def embedder(self):
        """The configured Embedder or None (provider ``none``). Raises EmbedError."""
        return self.search.embedder()

    # -- operator actions (not agent tools) -------------------------------
    def add_collection(self, collection_path: str, root: str, password_ref: str | None = None) -> Collection:
        """Bind ``collection_path`` (slash-separated) to the directory ``root``.

        Args:
            password_ref: where encrypted PDFs' password comes from: ``env:NAME``
                or ``file:/path`` (``engine.passwords``); never the password.

        Raises:
            ValueError: empty path, a path segment '..' or '_Documents', a
                root that is not a directory, or a ``password_ref`` that is not
                a reference (SettingsError).
        """
        import os

        path = collection_path.strip("/")
        if not path or any(p in ("", ".", "..", "_Documents") for p in path.split("/")):
            raise ValueError(f"bad collectionPath {collection_path!r}: use segments like 'ACME/Reports'")
        if not os.path.isdir(root):
            raise ValueError(f"collection root {root!r} is not a directory")
        from engine.passwords import check_password_ref

        c = Collection(path, os.path.abspath(root), check_password_ref(password_ref))
        self.store.add_collection(c)
        return c

    def remove_collection(self, collection_path: str) -> bool:
        """Drop a collection's documents and chunks (vectors stay, counted stale)."""
        return self.store.remove_collection(collection_path.strip("/"))

    def run_index(self, collections: list[str] | None = None, force: bool = False,
                  on_progress: Callable[[dict], None] | None = None, embed: bool = True) -> dict:
        """Run the indexer (hash-gated, or forced: Rebuild) and return its summary.

        A provider that cannot be set up is reported in ``embedError`` and the
        text is indexed anyway. Raises IndexBusyError when a run is active.
        """
        from engine.index import Indexer

        embedder = None
        setup_error = None
        if embed:
            try:
                embedder = self.embedder()
            except EmbedError as e:
                setup_error = e.failure.to_fields()
        summary = Indexer(self.store, self.settings, embedder).run(collections, force, on_progress)
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
            out["probe"] = {"ok": False, "error": "search-not-performed",
                            "message": "no embedding provider configured (EMBED_PROVIDER=none)"}
            return out
        out.update(provider=emb.provider, model=emb.model, dim=int(emb.dim or 0))
        if emb.endpoint:
            out["endpoint"] = emb.endpoint
        if probe:
            try:
                seconds = emb.probe()
                out["probe"] = {"ok": True, "seconds": round(float(seconds), 4)}
                out["dim"] = int(emb.dim)
            except EmbedError as e:
                out["probe"] = {"ok": False, **e.failure.to_fields()}
        return out

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
