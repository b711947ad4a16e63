"""A file's chunks as ready store rows, built once: in an extract worker process or here.

Owns: ``ReadyText`` (an extraction outcome whose chunk rows are already
built: the ``ExtractedText`` without its word columns, plus one compact row
per chunk), ``ready_text`` (``ExtractedText`` -> ``ReadyText``: chunking
(``engine.chunk.chunk_text``), chunk ids, page labels, OCR metadata and the
SQLite row JSON (``engine.store.sqlite.rows.chunk_params``), what a worker of
``engine.index.pool`` does after reading a file, so the indexer's process
only writes), ``RowChunks`` (the ``Sequence[Chunk]`` the indexer hands to
``replace_document`` for rows made in a worker: the SQLite store takes its
INSERT parameters as they are; any other reader gets ``Chunk`` values decoded
from the same rows). A file chunked in the indexer's process from its windows
is handed over as ``engine.index.files.LazyChunks``.

The rows are made by the very functions the in-process path uses (``chunk_text``,
``LazyChunks``, ``chunk_params``), so a file indexed from a worker stores
byte-identical rows to one indexed here. A row leaves out what the parent
knows or can slice cheaply (collection and file path, content hash, the
window's text, last modified): a few short strings per chunk cross the
process boundary, not thousands of ``Bbox`` / ``Region`` objects.

Imports ``engine.chunk``, ``engine.values``, ``engine.index.files``,
``engine.extract.common`` and ``engine.store.sqlite.rows`` / ``engine.store.fts``
(row formats only: no connection); no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from engine.chunk import PlainWindow, chunk_id, chunk_plain, chunk_text
from engine.extract.common import gc_paused
from engine.values import Chunk, Collection, ExtractedText, WordArray
from engine.index.files import HashedFile, LazyChunks
from engine.store.fts import is_cjk
from engine.store.sqlite.rows import box_json, chunk_of, chunk_params

__all__ = ["ReadyText", "ready_text", "chunk_rows", "RowChunks", "wants_rows"]

#: A chunk row: (chunk_index, chunk_id, start, end, page, page_label, bbox JSON,
#: regions JSON, metadata JSON), the ``CHUNK_COLUMNS`` a file's chunks differ in.
Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ReadyText:
    """An extraction outcome with its chunk rows built (picklable, compact).

    Attributes:
        extracted: the ``ExtractedText`` with ``words`` emptied (text, pages,
            file type, notes and metadata as extracted).
        content_hash: the hash the chunk ids were made with (the file's hash at scan time).
        size, overlap: the window settings (characters) the rows were cut with.
        rows: one ``Row`` per chunk, in ``chunk_index`` order; () when the
            text is blank (the indexer stores no chunk then).
    """

    extracted: ExtractedText
    content_hash: str
    size: int
    overlap: int
    rows: tuple[Row, ...]


def wants_rows(ex: ExtractedText) -> bool:
    """True when the indexer would chunk ``ex`` (it is not blank and not an
    empty-by-repair PDF, which ``TextPass._prepared`` reports instead)."""
    if ex.file_type == "pdf" and not ex.pages and ex.metadata.get("repaired"):
        return False
    return bool(ex.text.strip())


_NOWHERE = Collection("", "")


def ready_text(ex: ExtractedText, content_hash: str, size: int, overlap: int) -> ReadyText:
    """Chunk ``ex`` and build its chunk rows (in a worker, or here for one process).

    Args:
        ex: one file's extraction, word columns included.
        content_hash: the file's content hash (chunk ids are made from it).
        size, overlap: window size and overlap in characters (``settings.chunk_size``/``chunk_overlap``).

    Returns:
        A ``ReadyText`` (rows () when ``wants_rows(ex)`` is False).

    Raises:
        ValueError: size/overlap out of range (``engine.chunk``).
    """
    rows = chunk_rows(ex, content_hash, size, overlap) if wants_rows(ex) else ()
    bare = dataclasses.replace(ex, words=WordArray.empty()) if len(ex.words) else ex
    return ReadyText(bare, content_hash, size, overlap, rows)


def chunk_rows(ex: ExtractedText, content_hash: str, size: int, overlap: int) -> tuple[Row, ...]:
    """The chunk ``Row``s of ``ex`` (``ready_text``'s rows; the indexer's process calls it for
    the SQLite store too): windows of ``size``/``overlap`` characters, chunk ids made from
    ``content_hash``. Without OCR'd pages no ``Chunk``/``Region``/``Bbox`` object is made
    (``engine.chunk.chunk_plain``); with them, from ``LazyChunks`` (their metadata names the pages).

    Raises:
        ValueError: size/overlap out of range (``engine.chunk``).
    """
    labels = {p.number: p.label for p in ex.pages if p.label}
    ocr_pages = {int(k): v for k, v in (ex.metadata.get("ocrPages") or {}).items()}
    with gc_paused():  # thousands of acyclic tuples: nothing for the collector
        if ocr_pages:  # chunk metadata names the OCR'd pages: from the Chunk values
            f = HashedFile(_NOWHERE, "", "", content_hash, 0, 0)
            windows = chunk_text(ex, size, overlap)
            return tuple(_row(chunk_params(c)) for c in LazyChunks(f, ex.text, windows, labels, ocr_pages))
        return _plain_rows(ex.text, chunk_plain(ex, size, overlap), content_hash, labels)


def _plain_rows(text: str, plain: list[PlainWindow], content_hash: str, labels: dict[int, str]) -> tuple[Row, ...]:
    """``chunk_plain`` windows -> ``Row``s, byte-identical to ``_row(chunk_params(c))`` of the
    ``LazyChunks`` chunk of each window without OCR'd pages (no ``Chunk``, ``Region`` or
    ``Bbox`` made: tests/index/test_index_rows.py compares both)."""
    rows: list[Row] = []
    for index, start, end, page, box, regions in plain:
        if box is None:
            rows.append((index, chunk_id(content_hash, text[start:end]), start, end, None, None, None, None, None))
            continue
        bj = box_json(*box)
        parts = ",".join(
            f'{{"page":{p},"bbox":{bj if b is box else box_json(*b)}' + (f',"r":"{code}"' if code else "") + "}"
            for p, b, code in regions
        )
        rows.append(
            (
                index,
                chunk_id(content_hash, text[start:end]),
                start,
                end,
                page,
                labels.get(page) if page is not None else None,
                bj,
                "[" + parts + "]",
                None,
            )
        )
    return tuple(rows)


def _row(p: tuple) -> Row:
    """``chunk_params`` (``CHUNK_COLUMNS`` order) -> the ``Row`` kept: index, id, start, end, page, label, JSONs."""
    return (p[2], p[3], p[5], p[6], p[8], p[9], p[10], p[11], p[12])


class RowChunks(Sequence[Chunk]):
    """One file's chunks from ready rows: what the indexer stores.

    ``sqlite_params(key)`` yields the SQLite INSERT parameters (``CHUNK_COLUMNS``
    order) straight from the rows; indexing or iterating gives ``Chunk`` values
    (decoded from the same rows, as the SQLite store reads them back).

    Args:
        f: the file (collection and file path, content hash, mtime).
        text: the file's extracted text (each chunk's text is a slice of it).
        rows: ``ReadyText.rows``.
    """

    def __init__(self, f: HashedFile, text: str, rows: tuple[Row, ...]):
        self._f, self._text, self._rows = f, text, rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> Chunk: ...

    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...

    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return chunk_of(self._params(self._rows[i]))

    def __iter__(self) -> Iterator[Chunk]:
        for r in self._rows:
            yield chunk_of(self._params(r))

    def _params(self, r: Row) -> tuple:
        f = self._f
        return (
            f.collection.collection_path,
            f.file_path,
            r[0],
            r[1],
            f.content_hash,
            r[2],
            r[3],
            self._text[r[2] : r[3]],
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            f.last_modified,
        )

    def sqlite_params(self, key: tuple[str, str]) -> Iterator[tuple]:
        """INSERT parameters for the SQLite ``chunks`` table, in ``CHUNK_COLUMNS`` order.

        Raises:
            ValueError: the rows belong to another (collection, file) than ``key``.
        """
        f = self._f
        if (f.collection.collection_path, f.file_path) != key:
            raise ValueError(f"chunks of {f.file_path!r} given for {key[1]!r}")
        cp, fp, ch, lm, text = f.collection.collection_path, f.file_path, f.content_hash, f.last_modified, self._text
        for r in self._rows:
            yield (cp, fp, r[0], r[1], ch, r[2], r[3], text[r[2] : r[3]], r[4], r[5], r[6], r[7], r[8], lm)

    def has_cjk(self) -> bool:
        """True when a chunk holds a CJK character (the windows cover the whole text)."""
        return bool(self._rows) and is_cjk(self._text)
