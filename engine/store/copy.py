"""Copy an index from one store to another (``chunknav migrate --from sqlite:PATH --to postgresql://...``).

Owns: the store-to-store copy: collections, documents with their text,
chunks, vectors (as stored: nothing is re-embedded) and the last run summary.
Imports ``engine.store`` and ``engine.values`` only; never a face (streamlit,
mcp, argparse) and never an embedding provider.

Vectors come from the source's ``iter_vectors`` (one snapshot on SQLite, a
server-side cursor on Postgres). Either end may be a portable archive
(``engine.store.archive``: ``ArchiveWriter`` as the target of ``chunknav
export``, ``ArchiveReader`` as the source of ``chunknav import``): the copy
needs only the methods of ``CopySource`` and ``CopyTarget``.
"""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager
from typing import Any, Callable, Iterable, Iterator, Protocol

from engine.lazy import np
from engine.store.base import Store
from engine.values import Chunk, Collection, Document

__all__ = ["migrate", "open_location", "CopySource", "CopyTarget"]


class CopySource(Protocol):
    """What ``migrate`` reads (a ``Store``, or ``engine.store.archive.ArchiveReader``)."""

    def collections(self) -> list[Collection]: ...

    def documents(self) -> Iterable[Document]: ...

    def document_text(self, collection_path: str, file_path: str) -> str | None: ...

    def chunks(self, collection_path: str, file_path: str) -> list[Chunk]: ...

    def iter_vectors(
        self, model: str | None = None, batch: int = 10_000
    ) -> Iterator[tuple[str, list[str], np.ndarray]]: ...

    def last_run(self) -> dict[str, Any] | None: ...


class CopyTarget(Protocol):
    """What ``migrate`` writes (a ``Store``, or ``engine.store.archive.ArchiveWriter``)."""

    def index_lock(self) -> AbstractContextManager[None]: ...

    def add_collection(self, collection: Collection) -> None: ...

    def replace_document(self, document: Document, text: str, chunks: list[Chunk]) -> None: ...

    def add_vectors(self, model: str, chunk_ids: list[str], vectors: np.ndarray) -> int: ...

    def save_run(self, summary: dict[str, Any]) -> None: ...


log = logging.getLogger(__name__)

#: Vectors per ``add_vectors`` call while copying.
VECTOR_BATCH = 10_000


def open_location(location: str) -> Store:
    """Open a store from a ``migrate`` argument.

    Args:
        location: ``sqlite:PATH`` (or a bare path) for the SQLite store,
            ``postgresql://...`` / ``postgres://...`` for Postgres.

    Raises:
        ValueError: an empty location.
    """
    if not location:
        raise ValueError("a store location is required: sqlite:PATH or postgresql://...")
    if location.startswith(("postgresql://", "postgres://")):
        from engine.store.postgres.store import PostgresStore

        return PostgresStore(location)
    from engine.store.sqlite.store import SqliteStore

    return SqliteStore(location.removeprefix("sqlite:"))


def migrate(
    src: CopySource,
    dst: CopyTarget,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    collections: list[str] | None = None,
    on_document: Callable[[Document], None] | None = None,
) -> dict[str, Any]:
    """Copy every collection, document, chunk and vector of ``src`` into ``dst``.

    Idempotent: documents are replaced per file (``replace_document``, one
    transaction each) and vectors are only added, so running it again copies
    nothing twice. Holds ``dst.index_lock()`` for the whole copy (no indexer
    may write meanwhile; on Postgres the HNSW index of a new model is then
    built once, in bulk, at the end). Nothing is embedded.

    Args:
        src: the store to read (not modified).
        dst: the store to write; existing rows of other files stay.
        on_progress: called with ``{"phase": "documents"|"vectors", "done": n}``.
        collections: only these collection paths, their documents and the vectors of
            their chunks (None: everything, stale vectors and the last run record too).
        on_document: called with each document before it is written (an import notes
            what it is about to replace).

    Returns:
        Counts: ``{"collections", "documents", "chunks", "vectors" (rows read),
        "vectorsAdded", "models": {model: rows read}, "seconds"}``.

    Raises:
        IndexBusyError: an index run holds ``dst``'s lock.
    """
    t0 = time.perf_counter()
    emit = on_progress or (lambda _event: None)
    counts: dict[str, Any] = {
        "collections": 0,
        "documents": 0,
        "chunks": 0,
        "vectors": 0,
        "vectorsAdded": 0,
        "models": {},
    }
    wanted = None if collections is None else {c.strip("/") for c in collections}
    ids: set[str] = set()  # chunk ids copied, when only some collections are
    with dst.index_lock():
        for coll in src.collections():
            if wanted is not None and coll.collection_path not in wanted:
                continue
            dst.add_collection(coll)
            counts["collections"] += 1
        for doc in src.documents():
            if wanted is not None and doc.collection_path not in wanted:
                continue
            text = src.document_text(doc.collection_path, doc.file_path) or ""
            chunks = src.chunks(doc.collection_path, doc.file_path)
            if on_document is not None:
                on_document(doc)
            dst.replace_document(doc, text, chunks)
            if wanted is not None:
                ids.update(c.chunk_id for c in chunks)
            counts["documents"] += 1
            counts["chunks"] += len(chunks)
            if counts["documents"] % 100 == 0:
                emit({"phase": "documents", "done": counts["documents"]})
        for model, batch_ids, vectors in src.iter_vectors(batch=VECTOR_BATCH):
            if wanted is not None:
                keep = [i for i, cid in enumerate(batch_ids) if cid in ids]
                if len(keep) < len(batch_ids):
                    batch_ids, vectors = [batch_ids[i] for i in keep], vectors[keep]
                if not batch_ids:
                    continue
            counts["vectorsAdded"] += dst.add_vectors(model, batch_ids, vectors)
            counts["vectors"] += len(batch_ids)
            counts["models"][model] = counts["models"].get(model, 0) + len(batch_ids)
            emit({"phase": "vectors", "done": counts["vectors"]})
        run = src.last_run() if wanted is None else None
        if run is not None:
            dst.save_run(run)
    counts["seconds"] = round(time.perf_counter() - t0, 3)
    log.info("migrated %s", counts)
    return counts
