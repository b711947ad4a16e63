"""The ``Engine``: the engine objects every face shares (settings, store, search, indexer).

Owns: opening the store and the embedder lazily, the operator actions that
are not agent tools (add/remove a collection, run the indexer, the provider
probe). The tool functions in ``engine.tools.registry`` take an ``Engine``. Imports no
face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

from engine.config import Settings, load_settings
from engine.errors import ChunknavError, CollectionBoundError, EmbedError, IndexBusyError, StoreUnavailableError
from engine.values import Collection, Document
from engine.config import register_settings
from engine.secrets import register as register_secrets

if TYPE_CHECKING:
    from engine.search.searcher import ContentChunkSearch

__all__ = ["Engine"]

log = logging.getLogger(__name__)

#: ``engine.embed.LOCAL_MODELS`` and its default (tests/project/test_perf.py checks they agree),
#: named here so that ``run_index`` can defer the local provider without importing ``engine.embed``.
_LOCAL_MODELS = ("all-MiniLM-L6-v2", "l2_supercat_256")
_DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"


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

            self._search = ContentChunkSearch(self.store, self._make_embedder, self._make_bridge)
        return self._search

    def _make_embedder(self):
        # engine.embed (and requests with it) only when a search or an index run needs
        # a provider: a chunk or document read never imports it.
        from engine.embed import make_embedder

        return make_embedder(self.settings)

    def _make_bridge(self, model: str):
        """An in-process embedder of ``model`` (a local model whose stored vectors serve
        until the configured model covers the collection), or None."""
        from engine.embed import make_local_embedder

        return make_local_embedder(self.settings, model)

    def embedder(self):
        """The configured Embedder or None (provider ``none``). Raises EmbedError."""
        return self.search.embedder()

    def auto_mode(self) -> str:
        """Which ranking ``mode="auto"`` runs now (as ``ContentChunkSearch.search`` decides):
        ``keyword`` without a provider or without vectors for its model, else ``hybrid``
        (also when the provider cannot be built: the search then reports that failure)."""
        from engine.errors import EmbedError

        try:
            emb, _ = self.search.serving_embedder()
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
        keep_missing: bool | None = None,
    ) -> dict:
        """Run the indexer (hash-gated, or forced: Rebuild) and return its summary.

        A provider that cannot be set up is reported in ``embedError`` and the
        text is indexed anyway. ``cancel`` set: the run stops at the next file
        boundary and ends ``cancelled``. ``keep_missing`` (None: the setting) keeps
        documents whose file is gone, marked ``missing``. Raises IndexBusyError when a
        run is active.
        """
        from engine.index.indexer import Indexer

        embedder = None
        setup_error = None
        if embed and self.settings.embed_provider == "auto" and self.settings.embed_model:
            from engine.index.embed_pass import DeferredEmbedder

            # auto-detection probes the server: only do it when something needs embedding
            embedder = DeferredEmbedder(self.settings.embed_model, self.embedder)
        elif embed and self.settings.embed_provider == "local" and self.settings.embed_model in ("", *_LOCAL_MODELS):
            from engine.index.embed_pass import DeferredEmbedder

            # the local model's name is known without engine.embed: a run with nothing
            # to embed imports no provider code at all
            embedder = DeferredEmbedder(self.settings.embed_model or _DEFAULT_LOCAL_MODEL, self.embedder)
        elif embed:
            try:
                embedder = self.embedder()
            except EmbedError as e:
                setup_error = e.failure.to_fields()
        summary = Indexer(self.store, self.settings, embedder).run(
            collections, force, on_progress, cancel=cancel, keep_missing=keep_missing
        )
        if setup_error and not summary.get("embedError"):
            summary["embedError"] = setup_error
        return summary

    def plan_index(
        self, collections: list[str] | None = None, force: bool = False, keep_missing: bool | None = None
    ) -> dict:
        """What ``run_index`` with the same arguments would do now, writing nothing
        (``Indexer.plan``). Raises ValueError for an unknown collection."""
        from engine.index.indexer import Indexer

        return Indexer(self.store, self.settings).plan(collections, force, keep_missing)

    def configured_model(self) -> str:
        """The embedding model name this index embeds queries with, from the settings alone
        (no model loaded): "" when ``EMBED_PROVIDER=none``."""
        s = self.settings
        if s.embed_provider == "none":
            return ""
        if s.embed_provider == "local":
            return s.embed_model or _DEFAULT_LOCAL_MODEL
        return s.embed_model

    def export_archive(self, path: str, collections: list[str] | None = None) -> dict[str, Any]:
        """Write the collections (None: all), their documents, chunks, regions and the
        vectors of their chunks, with the model identity and settings key, to one archive
        file (``engine.store.archive``), through the store-to-store copy.

        Returns:
            ``{"archive", "collections", "documents", "chunks", "vectors", "models",
            "bytes", "seconds"}``.

        Raises:
            ArchiveError: a named collection does not exist (code ``not-found``).
        """
        from engine.errors import ArchiveError
        from engine.index.gate import settings_key
        from engine.store.archive import ArchiveWriter
        from engine.store.copy import migrate

        known = [c.collection_path for c in self.store.collections()]
        names = known if not collections else [c.strip("/") for c in collections]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ArchiveError(
                f"unknown collection {unknown[0]!r}; known: {', '.join(sorted(known)) or 'none'}", "not-found"
            )
        model = self.configured_model()
        extra = {
            "embedding": {
                "provider": self.settings.embed_provider,
                "model": model,
                "dim": int(self.store.vector_dim(model) or self.settings.embed_dim) if model else 0,
            },
            "settingsKey": settings_key(self.settings),
        }
        writer = ArchiveWriter(path, extra)
        try:
            counts = migrate(self.store, writer, collections=names)
        except BaseException:
            writer.close(ok=False)
            raise
        manifest = writer.close()
        return {
            "archive": os.path.abspath(path),
            "collections": names,
            "documents": counts["documents"],
            "chunks": counts["chunks"],
            "vectors": counts["vectors"],
            "models": [{"model": m["model"], "dim": m["dim"], "vectors": m["vectors"]} for m in manifest["models"]],
            "bytes": os.path.getsize(path),
            "seconds": counts["seconds"],
        }

    def import_archive(
        self, path: str, collections: list[str] | None = None, roots: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Restore an archive into this index: nothing extracted, nothing embedded.

        All or nothing: the whole archive is checked first (checksums, the model and
        dimension against this index's, the roots of new collections); then every row is
        written in one batch (one transaction on SQLite), and on any failure the documents
        it wrote are removed and those it replaced put back.

        Args:
            path: the archive file.
            collections: only these archived collections (None: all).
            roots: ``{collectionPath: directory}`` binding an archived collection to
                another root here; a collection this index already has keeps its root.

        Returns:
            ``{"archive", "collections", "documents", "chunks", "vectors",
            "vectorsAdded", "models", "settingsKeyMatches", "seconds"}`` (and ``message``
            when the settings key differs: the next index run reads those files again).

        Raises:
            ArchiveError: refused (``archive-corrupt``, ``archive-model-mismatch``,
                ``not-found``); nothing was written.
            RootRefusedError: a new collection's root is ``/`` or a system directory.
            IndexBusyError: an index run is active.
        """
        import dataclasses

        from engine.errors import RootRefusedError
        from engine.index.gate import settings_key
        from engine.paths import system_dir
        from engine.store.archive import ArchiveReader
        from engine.store.copy import migrate

        reader = ArchiveReader(path, collections)
        try:
            reader.verify()
            self._check_models(reader)
            store = self.store
            existing = {c.collection_path: c for c in store.collections()}
            rebound = dict(roots or {})
            created: list[Collection] = []
            for c in reader.collections():
                if c.collection_path in existing:  # a collection here keeps its own root
                    rebound[c.collection_path] = existing[c.collection_path].root
                    continue
                root = rebound.get(c.collection_path, c.root)
                bad = system_dir(root)
                if bad or os.path.realpath(root) == "/":
                    raise RootRefusedError(f"collection root {root!r} is {bad or '/'}: refused, nothing written")
                created.append(dataclasses.replace(c, root=root))
            reader.roots = rebound
            written: list[tuple[str, str]] = []
            backups: list[tuple[Document, str, list]] = []

            def note(doc: Document) -> None:
                key = (doc.collection_path, doc.file_path)
                old = store.get_document(*key)
                if old is not None:
                    backups.append((old, store.document_text(*key) or "", store.chunks(*key)))
                written.append(key)

            try:
                with store.batch():
                    counts = migrate(reader, store, on_document=note)
            except BaseException:
                self._undo_import(written, backups, created)
                raise
            key = settings_key(self.settings)
            archived_key = (reader.manifest.get("extra") or {}).get("settingsKey")
            out: dict[str, Any] = {
                "archive": os.path.abspath(path),
                "collections": [c.collection_path for c in reader.collections()],
                "documents": counts["documents"],
                "chunks": counts["chunks"],
                "vectors": counts["vectors"],
                "vectorsAdded": counts["vectorsAdded"],
                "models": [{"model": m, "dim": d} for m, d in reader.models().items()],
                "settingsKeyMatches": archived_key == key,
                "seconds": counts["seconds"],
            }
            if archived_key != key:
                out["message"] = (
                    f"the archive was made with other chunking or extractor settings ({archived_key}; here {key}): "
                    "searches use the imported chunks; the next index run reads their files again"
                )
            return out
        finally:
            reader.close()

    def _check_models(self, reader: Any) -> None:
        """Refuse an archive whose vectors this index could not search with or store.

        Raises:
            ArchiveError: ``archive-model-mismatch`` naming the model and both dimensions.
        """
        from engine.errors import ArchiveError

        models: dict[str, int] = reader.models()
        made = (reader.manifest.get("extra") or {}).get("embedding") or {}
        theirs, mine = str(made.get("model") or ""), self.configured_model()
        if theirs and mine and theirs != mine:
            raise ArchiveError(
                f"the archive's vectors were made by {theirs!r}; this index embeds with {mine!r} "
                "(EMBED_PROVIDER / EMBED_MODEL): its searches could not use them. Refused, nothing written",
                "archive-model-mismatch",
            )
        for model, dim in models.items():
            here = self.store.vector_dim(model)
            if here is not None and here != dim:
                raise ArchiveError(
                    f"the archive's {model!r} vectors have {dim} dimensions; this index stores {here} for that "
                    "model: refused, nothing written",
                    "archive-model-mismatch",
                )
        want = self.settings.embed_dim
        if theirs and theirs == mine and want and models.get(theirs, want) != want:
            raise ArchiveError(
                f"the archive's {theirs!r} vectors have {models[theirs]} dimensions; EMBED_DIM is {want}: "
                "refused, nothing written",
                "archive-model-mismatch",
            )

    def _undo_import(
        self,
        written: list[tuple[str, str]],
        backups: list[tuple[Document, str, list]],
        created: list[Collection],
    ) -> None:
        """Take back a failed import: remove the documents it wrote, put back those it
        replaced, drop the collections it created (vectors it added stay, stale)."""
        store = self.store
        for cp, fp in written:
            try:
                store.remove_document(cp, fp)
            except Exception:  # the store itself failed: log and go on putting back
                log.exception("undoing an import: %s/%s", cp, fp)
        for doc, text, chunks in backups:
            store.replace_document(doc, text, chunks)
        for c in created:
            store.remove_collection(c.collection_path)

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
