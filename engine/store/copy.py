"""Copy an index from one store to another (``chunknav migrate --from sqlite:PATH --to postgresql://...``).

Owns: the store-to-store copy: collections, documents with their text,
chunks, vectors (as stored: nothing is re-embedded) and the last run summary.
Imports ``engine.store`` and ``engine.values`` only; never a face (streamlit,
mcp, argparse) and never an embedding provider.

Vectors come from the source's ``iter_vectors`` (one snapshot on SQLite, a
server-side cursor on Postgres).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from engine.store.base import Store

__all__ = ["migrate", "open_location"]

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


def migrate(src: Store, dst: Store, on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
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
    with dst.index_lock():
        for coll in src.collections():
            dst.add_collection(coll)
            counts["collections"] += 1
        for doc in src.documents():
            text = src.document_text(doc.collection_path, doc.file_path) or ""
            chunks = src.chunks(doc.collection_path, doc.file_path)
            dst.replace_document(doc, text, chunks)
            counts["documents"] += 1
            counts["chunks"] += len(chunks)
            if counts["documents"] % 100 == 0:
                emit({"phase": "documents", "done": counts["documents"]})
        for model, ids, vectors in src.iter_vectors(batch=VECTOR_BATCH):
            counts["vectorsAdded"] += dst.add_vectors(model, ids, vectors)
            counts["vectors"] += len(ids)
            counts["models"][model] = counts["models"].get(model, 0) + len(ids)
            emit({"phase": "vectors", "done": counts["vectors"]})
        run = src.last_run()
        if run is not None:
            dst.save_run(run)
    counts["seconds"] = round(time.perf_counter() - t0, 3)
    log.info("migrated %s", counts)
    return counts
