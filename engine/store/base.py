"""The ``Store`` protocol every backend implements (SQLite default, Postgres at scale).

Owns: the storage contract. A store holds collections, documents (with the
full extracted text), chunks, and vectors keyed by ``(chunk_id, model)``.
It knows nothing of extraction, embedding providers or envelopes. Must not
import streamlit, mcp or argparse.

Contract rules (tested by ``tests/store/test_store.py`` against every backend):
    * ``replace_document`` swaps a file's document row and all its chunks in
      one transaction: a reader sees the old set or the new set, never a mix.
    * vectors are only added (``add_vectors`` ignores an existing
      ``(chunk_id, model)``); removing chunks leaves their vectors, which are
      then counted as stale.
    * ``search_vectors`` returns the real cosine similarity of L2-normalised
      float32 vectors, best first, only within the given collections.
    * ``index_lock`` is exclusive across processes: a second holder gets
      ``IndexBusyError`` at once (no waiting).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Iterable, Protocol, runtime_checkable

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.values import Chunk, Collection, Document, KeywordHit, VectorHit

__all__ = ["Store", "as_vector_rows"]


@runtime_checkable
class Store(Protocol):
    """Storage backend contract; see the module docstring for the rules."""

    # -- collections -------------------------------------------------------
    def add_collection(self, collection: Collection) -> None:
        """Insert or update a collection (path -> root directory, password)."""

    def remove_collection(self, collection_path: str) -> bool:
        """Drop a collection with its documents and chunks (vectors stay, stale).
        Returns False when it did not exist."""

    def collections(self) -> list[Collection]:
        """All collections, sorted by ``collection_path``."""

    def get_collection(self, collection_path: str) -> Collection | None:
        """One collection or None."""

    # -- documents and chunks ---------------------------------------------
    def get_document(self, collection_path: str, file_path: str) -> Document | None:
        """One document row (no text) or None."""

    def documents(self, collection_path: str | None = None) -> list[Document]:
        """Document rows (no text), all or of one collection, sorted by key."""

    def document_text(self, collection_path: str, file_path: str) -> str | None:
        """The full extracted text of an indexed document, or None."""

    def replace_document(self, document: Document, text: str, chunks: list[Chunk]) -> None:
        """Store the document row, its text and its chunks, replacing any
        previous ones for the same key, in one transaction."""

    def remove_document(self, collection_path: str, file_path: str) -> None:
        """Delete the document row, its text and its chunks (vectors stay)."""

    def get_chunk(self, collection_path: str, file_path: str, chunk_index: int) -> Chunk | None:
        """One chunk by key, or None."""

    def chunk_count(self, collection_path: str, file_path: str) -> int:
        """Number of chunks stored for the file (0 when never indexed)."""

    def chunks(self, collection_path: str, file_path: str) -> list[Chunk]:
        """All chunks of one file by ``chunk_index``."""

    # -- vectors -------------------------------------------------------------
    def chunks_missing_vectors(
        self, model: str, limit: int | None = None, after: str | None = None
    ) -> list[tuple[str, str]]:
        """``(chunk_id, chunk_text)`` for distinct chunk ids that have no vector
        for ``model``, ordered by chunk_id, only ids greater than ``after``
        (None: from the start), at most ``limit`` (None: all)."""

    def add_vectors(self, model: str, chunk_ids: list[str], vectors: np.ndarray) -> int:
        """Add float32 vectors, shape (n, dim), L2-normalised, for ``model``.
        Existing ``(chunk_id, model)`` rows are kept. Returns rows added."""

    def has_vectors(self, model: str) -> bool:
        """True when at least one vector is stored for ``model`` (cheap: one lookup)."""

    def vector_counts(self) -> dict[str, dict[str, int]]:
        """Per model: ``{"vectors", "dim", "stale", "missing"}`` where stale =
        vectors whose chunk_id is in no chunk, missing = chunk ids without a
        vector for that model."""

    # -- embedding notes (engine/store/sqlite/notes.py, postgres_notes.py) ----
    def vector_dim(self, model: str) -> int | None:
        """Dimension of ``model``'s stored vectors, or None when it has none."""

    def vectors_by_text(self, model: str, text_hashes: list[str]) -> dict[str, tuple[np.ndarray, int | None]]:
        """``{text_hash: (vector float32 (dim,), truncated_chars | None)}`` for the
        window-text sha256s that already have a vector of ``model`` (stale ones too)."""

    def note_vectors(
        self, model: str, chunk_ids: list[str], text_hashes: list[str], truncated_chars: list[int | None]
    ) -> None:
        """Remember the window-text hash of vectors just added and which were made
        from a cut text (clears those chunks' failure notes)."""

    def record_embed_failures(self, model: str, failures: list[tuple[str, str, str]]) -> None:
        """Record ``(chunk_id, error code, reason)`` of chunks that got no vector."""

    def backfill_vector_texts(self, model: str, text_hash: Any) -> int:
        """Once per model, hash the texts of chunks embedded before text hashes were kept."""

    def embed_notes(self, limit: int = 50) -> dict[str, dict[str, Any]]:
        """Per model ``{"truncated": n, "failed": n, "failures": [{collectionPath,
        filePath, chunkIndex, chunkId, error, reason}, ...]}`` over live chunks."""

    def search_vectors(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> list[VectorHit]:
        """Top ``limit`` chunks by cosine similarity to ``query`` (float32,
        shape (dim,), L2-normalised) among chunks of the given collections
        (None: all). Best first. A chunk_id stored at several paths yields one
        hit per path."""

    def search_keyword(self, query: str, collection_paths: Iterable[str] | None, limit: int) -> list[KeywordHit]:
        """BM25 keyword hits (FTS5 on SQLite, full-text on Postgres), best first.
        ``query`` is plain words; the store quotes them (no query syntax)."""

    # -- runs and locks ------------------------------------------------------
    def index_lock(self) -> AbstractContextManager[None]:
        """Exclusive indexer lock; raises ``IndexBusyError`` when held elsewhere."""

    def batch(self) -> AbstractContextManager[None]:
        """Group the writes of the block into one commit where the backend gains
        from it (SQLite: one WAL commit for several files). Each
        ``replace_document`` stays atomic on its own; an exception inside the
        block rolls back the block's writes. A backend may make this a no-op."""

    def save_run(self, summary: dict[str, Any]) -> None:
        """Remember the last index run's summary (JSON-able)."""

    def last_run(self) -> dict[str, Any] | None:
        """The last saved run summary, or None."""

    def close(self) -> None:
        """Release connections and files."""


def as_vector_rows(chunk_ids: list[str], vectors) -> np.ndarray:
    """Validate vectors for ``add_vectors``: float32, C-contiguous, shape (len(chunk_ids), dim).

    Raises:
        ValueError: not 2-D, or a row count other than ``len(chunk_ids)``.
    """
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != len(chunk_ids):
        raise ValueError(f"vectors must have shape ({len(chunk_ids)}, dim), got {arr.shape}")
    return arr
