"""What one file becomes in an index run: the hashed file, its outcome, its chunks made on demand.

Owns: ``HashedFile`` (a regular file the walk found, with the hash read at
scan time and the stat fields re-checked after extraction), ``Prepared``
(the outcome ``Indexer.prepare`` makes of one file: kind, reason code,
what to store), ``LazyChunks`` (a re-iterable sequence of a file's chunks
built from its windows on demand, so a huge file's chunk texts are never all
held at once) and ``read_code`` (the reason code of an ``OSError`` met while
reading a file). Imports ``engine.chunk``, ``engine.extract.ocr`` (chunk
metadata of OCR'd pages) and ``engine.values``; no face, no store.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from engine.chunk import chunk_id
from engine.extract.ocr import ocr_chunk_metadata
from engine.values import Chunk, Collection, Document, Window

__all__ = ["HashedFile", "Prepared", "LazyChunks", "read_code"]


@dataclass
class HashedFile:
    """A regular file found by the walk, with the hash read at scan time."""

    collection: Collection
    file_path: str
    path: str  # OS path to open (bad bytes as surrogate escapes)
    content_hash: str
    size_bytes: int
    mtime_ns: int
    ctime_ns: int = 0  # inode change time: moves on every write, cannot be set back
    aliases: tuple[str, ...] = ()  # filePaths of symlinks in the same root to this file (engine.index.walk.aliases)

    @property
    def last_modified(self) -> float:
        """mtime, epoch seconds."""
        return self.mtime_ns / 1e9

    @property
    def suffix(self) -> str:
        """Lower-case suffix with the dot."""
        return os.path.splitext(self.file_path)[1].lower()


class LazyChunks(Sequence[Chunk]):
    """A file's chunks made on demand from its windows: iterating twice is
    fine, and no list of every chunk text is held (bounded memory for big files)."""

    def __init__(
        self,
        f: HashedFile,
        text: str,
        windows: list[Window],
        labels: dict[int, str],
        ocr_pages: dict[int, float | None] | None = None,
    ):
        self._f, self._text, self._windows, self._labels = f, text, windows, labels
        self._ocr_pages = ocr_pages or {}  # OCR'd page -> mean word confidence

    def __len__(self) -> int:
        return len(self._windows)

    @overload
    def __getitem__(self, i: int) -> Chunk: ...

    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...

    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        w = self._windows[i]
        f = self._f
        body = self._text[w.start : w.end]
        return Chunk(
            f.collection.collection_path,
            f.file_path,
            w.chunk_index,
            chunk_id(f.content_hash, body),
            f.content_hash,
            w.start,
            w.end,
            body,
            w.page,
            self._labels.get(w.page) if w.page is not None else None,
            w.bbox,
            w.regions,
            ocr_chunk_metadata(w.regions, self._ocr_pages),
            f.last_modified,
        )

    def __iter__(self) -> Iterator[Chunk]:
        for i in range(len(self._windows)):
            yield self[i]


@dataclass
class Prepared:
    """What ``Indexer.prepare`` made of one file: the outcome and what to store.

    Attributes:
        file: the file (its ``content_hash`` is the one of the bytes extracted).
        kind: ``indexed`` | ``empty`` | ``failed`` | ``skipped`` | ``stale`` (the stored document kept).
        code: reason code for failed/skipped (``engine.errors.ReasonCode``), else None.
        reason: message for people (None for a clean ``indexed``).
        document: the row to store (None: store nothing, e.g. skipped).
        text: the full extracted text ("" unless indexed).
        chunks: the chunks to store (a re-iterable sequence).
        drop: remove the stored document (unsupported type).
    """

    file: HashedFile
    kind: str
    code: str | None = None
    reason: str | None = None
    document: Document | None = None
    text: str = ""
    chunks: Sequence[Chunk] = ()
    drop: bool = False


def read_code(e: OSError) -> str:
    """``gone`` for ENOENT/ENOTDIR (really gone), else ``unreadable`` (kept stale)."""
    return "gone" if e.errno in (errno.ENOENT, errno.ENOTDIR) else "unreadable"
