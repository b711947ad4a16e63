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

Capabilities: the protocol also declares what only some backends do well
(row-id searches, an orphan repair, a keyword-index tidy, a metadata-only
update, a one-statement vector coverage). ``StoreBase`` gives each a slow,
correct default built on the methods above, and says by ``row_refs`` and
``takes_chunk_rows`` whether a backend's own versions are worth a caller's
choosing them; callers call the methods, they never probe with ``hasattr``.
A new backend subclasses ``StoreBase`` and implements the rest.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable, ClassVar, Hashable, Iterable, Iterator, Protocol, Sequence, cast, runtime_checkable

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.values import Chunk, Collection, Document, KeywordHit, VectorHit

__all__ = ["Store", "StoreBase", "ChunkRef", "as_vector_rows"]

#: A store's handle on one chunk row, as its ``*_refs`` searches return it: SQLite's
#: ``chunks`` rowid; ``StoreBase``'s defaults use ``(collection_path, file_path, chunk_index)``.
ChunkRef = Hashable


@runtime_checkable
class Store(Protocol):
    """Storage backend contract; see the module docstring for the rules."""

    #: True when ``replace_document`` takes ``engine.index.rows.RowChunks`` (rows built ahead).
    takes_chunk_rows: ClassVar[bool]
    #: True when the ``*_refs`` searches, ``chunks_at`` and ``chunk_files`` answer without
    #: reading chunk rows (cheaper than ``search_vectors`` / ``search_keyword``).
    row_refs: ClassVar[bool]
    #: True when this store was opened for reading only (SQLite: a file this process cannot
    #: write, or one on a full disk): searches and reads work and write nothing; a write raises
    #: ``StoreUnavailableError`` (``DiskFullError`` on a full disk).
    read_only: bool
    #: Why it was opened read-only (for people), or None.
    read_only_reason: str | None

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

    def set_document_metadata(self, collection_path: str, file_path: str, metadata: dict[str, Any]) -> bool:
        """Replace one document's ``metadata`` only (text, chunks and vectors stay).
        False: no such document."""

    def repair_orphans(self) -> int:
        """Drop documents and chunks whose collection is gone; the number of collection
        paths repaired."""

    def move_document(self, old_file_path: str, document: Document) -> bool:
        """Move the document at ``(document.collection_path, old_file_path)`` to
        ``document.file_path`` (a renamed file of the same bytes): its text and chunks go
        with it (chunk ids, and so vectors, unchanged), the row becomes ``document``, in one
        ``batch`` (one transaction where the backend groups writes). False: no document at the old path."""

    # -- embedding notes (engine/store/sqlite/notes.py, engine/store/postgres/notes.py) ----
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

    def backfill_vector_texts(self, model: str, text_hash: Callable[[str], str]) -> int:
        """Once per model: note the window-text hash (``text_hash(chunk_text)``) of vectors
        stored without one (e.g. copied by ``migrate``); rows added."""

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

    def vectors_per_file(self, model: str) -> dict[tuple[str, str], int]:
        """``{(collection_path, file_path): chunks of the file that have a vector of model}``
        (files with none are absent)."""

    def vector_coverage(self, model: str) -> tuple[int, int]:
        """``(live, missing)`` for ``model``: its vectors whose chunk_id is in some chunk
        (``vector_counts``' vectors - stale) and distinct chunk ids without its vector."""

    def iter_vectors(
        self, model: str | None = None, batch: int = 10_000
    ) -> Iterator[tuple[str, list[str], np.ndarray]]:
        """Every stored vector (stale ones too) of ``model`` (None: all), in batches of at
        most ``batch``: ``(model, chunk_ids, vectors float32 (n, dim))``, one model and dim each."""

    def purge_stale_vectors(self) -> dict[str, int]:
        """Delete every stale vector in one transaction; ``{model: vectors deleted}``."""

    # -- row-id searches (cheap when ``row_refs``) ---------------------------------
    def search_vector_refs(
        self, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> Sequence[tuple[ChunkRef, str, float]]:
        """``search_vectors`` as ``(ref, chunk_id, score)``, best first, the same ranking."""

    def search_keyword_refs(
        self, query: str, collection_paths: Iterable[str] | None, limit: int
    ) -> Sequence[tuple[ChunkRef, float]]:
        """``search_keyword`` as ``(ref, score)``, best first, the same ranking."""

    def chunks_at(self, refs: Iterable[ChunkRef]) -> dict[ChunkRef, Chunk]:
        """ref -> Chunk for the refs whose row still exists."""

    def chunk_files(self, refs: Iterable[ChunkRef]) -> dict[ChunkRef, tuple[str, str, str]]:
        """ref -> ``(collection_path, file_path, chunk_id)`` for the refs whose row still exists."""

    def file_count(self, collection_paths: Iterable[str] | None) -> int:
        """Documents holding at least one chunk in ``collection_paths`` (None: every collection)."""

    def free_bytes(self) -> int | None:
        """Bytes free on the disk that holds the index, or None (not known here)."""

    def tidy_keyword_index(self, written: int) -> bool:
        """After an index run that wrote ``written`` chunks: compact the keyword index when
        that pays; True when it did."""

    # -- runs and locks ------------------------------------------------------
    def index_lock(self) -> AbstractContextManager[None]:
        """Exclusive indexer lock; raises ``IndexBusyError`` when held elsewhere
        (``StoreUnavailableError`` on a read-only store)."""

    def batch(self) -> AbstractContextManager[None]:
        """Group the writes of the block into one commit where the backend gains
        from it (SQLite: one WAL commit for several files). Each
        ``replace_document`` stays atomic on its own; an exception inside the
        block rolls back the block's writes. A backend may make this a no-op."""

    def save_run(self, summary: dict[str, Any]) -> None:
        """Remember an index run's summary (JSON-able): a summary with the ``runId`` of the
        last saved one replaces it (a run saves at its start, its progress, its end), keeping
        its ``cancelRequested`` (``merge_run``); otherwise it is added. The last 20 are kept."""

    def last_run(self) -> dict[str, Any] | None:
        """The last saved run summary, or None."""

    def close(self) -> None:
        """Release connections and files."""


class StoreBase:
    """Slow, correct defaults of the ``Store`` capabilities, over the protocol's core methods.

    A backend subclasses this, implements the core (collections, documents, chunks,
    vectors, searches, runs and locks) and overrides what it does better. Every
    default uses public ``Store`` methods only.
    """

    takes_chunk_rows: ClassVar[bool] = False
    row_refs: ClassVar[bool] = False
    read_only: bool = False
    read_only_reason: str | None = None

    def free_bytes(self) -> int | None:
        """Bytes free on the disk that holds the index, or None when this store cannot say
        (a database server's disk)."""
        return None

    def set_document_metadata(self: Store, collection_path: str, file_path: str, metadata: dict[str, Any]) -> bool:
        """Rewrite the document with its text and chunks unchanged and ``metadata`` replaced."""
        import dataclasses

        doc = self.get_document(collection_path, file_path)
        if doc is None:
            return False
        text = self.document_text(collection_path, file_path) or ""
        chunks = self.chunks(collection_path, file_path)
        self.replace_document(dataclasses.replace(doc, metadata=dict(metadata or {})), text, chunks)
        return True

    def move_document(self: Store, old_file_path: str, document: Document) -> bool:
        """Store the row, text and chunks again at the new path (chunks re-pathed, not
        re-cut), then remove the old path, in one ``batch``."""
        import dataclasses

        cp = document.collection_path
        old = self.get_document(cp, old_file_path)
        if old is None:
            return False
        text = self.document_text(cp, old_file_path) or ""
        fp, lm = document.file_path, document.last_modified
        chunks = [dataclasses.replace(c, file_path=fp, last_modified=lm) for c in self.chunks(cp, old_file_path)]
        with self.batch():
            self.replace_document(document, text, chunks)
            self.remove_document(cp, old_file_path)
        return True

    def repair_orphans(self: Store) -> int:
        """Remove the documents of every collection path that is not a collection any more."""
        known = {c.collection_path for c in self.collections()}
        gone = sorted({d.collection_path for d in self.documents()} - known)
        for cp in gone:
            self.remove_collection(cp)
        return len(gone)

    def vector_coverage(self: Store, model: str) -> tuple[int, int]:
        """From ``vector_counts`` (several reads, not one snapshot)."""
        counts = self.vector_counts().get(model)
        if counts is None:
            missing = len({c.chunk_id for d in self.documents() for c in self.chunks(d.collection_path, d.file_path)})
            return 0, missing
        return counts["vectors"] - counts["stale"], counts["missing"]

    def vectors_per_file(self: Store, model: str) -> dict[tuple[str, str], int]:
        """From ``chunks_missing_vectors`` and each document's ``chunks``."""
        missing = {cid for cid, _text in self.chunks_missing_vectors(model)}
        out: dict[tuple[str, str], int] = {}
        for d in self.documents():
            n = sum(1 for c in self.chunks(d.collection_path, d.file_path) if c.chunk_id not in missing)
            if n:
                out[(d.collection_path, d.file_path)] = n
        return out

    def tidy_keyword_index(self, written: int) -> bool:
        """Nothing to tidy."""
        return False

    def search_vector_refs(
        self: Store, model: str, query: np.ndarray, collection_paths: Iterable[str] | None, limit: int
    ) -> Sequence[tuple[ChunkRef, str, float]]:
        """``search_vectors``, each hit named by its chunk's key."""
        return [
            (_key(h.chunk), h.chunk.chunk_id, h.score)
            for h in self.search_vectors(model, query, collection_paths, limit)
        ]

    def search_keyword_refs(
        self: Store, query: str, collection_paths: Iterable[str] | None, limit: int
    ) -> Sequence[tuple[ChunkRef, float]]:
        """``search_keyword``, each hit named by its chunk's key."""
        return [(_key(h.chunk), h.score) for h in self.search_keyword(query, collection_paths, limit)]

    def chunks_at(self: Store, refs: Iterable[ChunkRef]) -> dict[ChunkRef, Chunk]:
        """One ``get_chunk`` per key."""
        out: dict[ChunkRef, Chunk] = {}
        for ref in refs:
            cp, fp, index = cast("tuple[str, str, int]", ref)
            chunk = self.get_chunk(cp, fp, index)
            if chunk is not None:
                out[ref] = chunk
        return out

    def chunk_files(self: Store, refs: Iterable[ChunkRef]) -> dict[ChunkRef, tuple[str, str, str]]:
        """From ``chunks_at``."""
        return {ref: (c.collection_path, c.file_path, c.chunk_id) for ref, c in self.chunks_at(refs).items()}

    def file_count(self: Store, collection_paths: Iterable[str] | None) -> int:
        """From ``documents``."""
        wanted = None if collection_paths is None else set(collection_paths)
        return sum(1 for d in self.documents() if d.chunk_count > 0 and (wanted is None or d.collection_path in wanted))


def _key(chunk: Chunk) -> tuple[str, str, int]:
    """``StoreBase``'s ref of a chunk: its key."""
    return (chunk.collection_path, chunk.file_path, chunk.chunk_index)


def as_vector_rows(chunk_ids: list[str], vectors) -> np.ndarray:
    """Validate vectors for ``add_vectors``: float32, C-contiguous, shape (len(chunk_ids), dim).

    Raises:
        ValueError: not 2-D, or a row count other than ``len(chunk_ids)``.
    """
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != len(chunk_ids):
        raise ValueError(f"vectors must have shape ({len(chunk_ids)}, dim), got {arr.shape}")
    return arr


def merge_run(last: dict[str, Any] | None, summary: dict[str, Any]) -> dict[str, Any] | None:
    """The record that replaces ``last`` when ``summary`` is a later save of the same run
        (same ``runId``), else None (``summary`` is a new row). A cancel request written into
        the record by another process (``cancelRequested``) stays whatever the run saves next,
    and a ``running`` save never replaces the record of a run that has ended."""
    if not last or not summary.get("runId") or last.get("runId") != summary.get("runId"):
        return None
    if last.get("status", "finished") != "running" and summary.get("status") == "running":
        return last  # the run has ended: a late request (or copy) does not reopen it
    if last.get("cancelRequested") and not summary.get("cancelRequested"):
        return {**summary, "cancelRequested": True}
    return summary
