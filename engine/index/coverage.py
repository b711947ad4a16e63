"""Coverage of the index: per collection and file type, what is on disk and what is indexed.

Owns: ``coverage``: it walks each collection root now (``engine.index.walk``:
no file is read or hashed) and sets what it finds beside the stored document
rows, counting per ``(collectionPath, fileType)``: files seen, indexed, empty,
failed, stale (kept while unreadable, or size/mtime moved since it was
indexed: the next run reads it), missing (a row whose file is gone), not
indexed yet (a supported file without a row), skipped by reason code, chunks,
and chunks with a vector per model. Imports ``engine.index.walk``,
``engine.extract`` (the supported suffixes) and ``engine.values``; no face,
nothing written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.index.walk import walk_entries
from engine.values import Collection, Document

if TYPE_CHECKING:
    from engine.store.base import Store

__all__ = ["CoverageRow", "coverage", "file_type", "ALL_TYPES"]

#: ``fileType`` of a collection's total row.
ALL_TYPES = "*"
#: Seconds of mtime difference still counted as the indexed file (float epoch seconds).
_MTIME_TOLERANCE_S = 1e-6


def file_type(file_path: str) -> str:
    """A file's type as coverage groups it: its suffix, lower case, without the dot
    (``""``: no suffix)."""
    return os.path.splitext(file_path)[1].lower().lstrip(".")


@dataclass
class CoverageRow:
    """Counts of one ``(collection_path, file_type)`` (``ALL_TYPES``: the collection).

    Attributes:
        files_seen: walk entries of this type under the root now (folders are typed "").
        indexed, empty, failed: stored rows by status whose file is on disk.
        stale: rows kept while their file cannot be read, or whose file's size or
            mtime moved since it was indexed.
        missing: rows whose file is gone (kept by ``keep_missing``, or no run since).
        not_indexed: supported files on disk without a row (no run since they came).
        skipped: ``{reason code: files}`` the walk passes over (hidden, unsupported-type,
            too-large, unreadable, ...).
        chunks: chunks stored for the rows.
        vectors: ``{model: chunks of the rows with a vector of that model}``.
    """

    collection_path: str
    file_type: str
    files_seen: int = 0
    indexed: int = 0
    empty: int = 0
    failed: int = 0
    stale: int = 0
    missing: int = 0
    not_indexed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    vectors: dict[str, int] = field(default_factory=dict)


def coverage(
    store: Store, collections: list[Collection], max_file_bytes: int = 0
) -> tuple[list[CoverageRow], list[dict[str, str]]]:
    """Coverage of ``collections`` now.

    Args:
        store: the index.
        collections: the collections to report, in order.
        max_file_bytes: files over this size are counted skipped ``too-large`` (0: no limit).

    Returns:
        ``(rows, root_errors)``: per collection its total row (``ALL_TYPES``) then one row
        per file type, sorted; ``root_errors`` ``{collectionPath, root, code, reason}`` of
        roots that cannot be listed (their rows count only what is stored, all missing
        from the walk's view but kept as their stale mark says).
    """
    from engine.extract import SUPPORTED_SUFFIXES

    models = sorted(store.vector_counts())
    per_file = {m: store.vectors_per_file(m) for m in models}
    rows: list[CoverageRow] = []
    errors: list[dict[str, str]] = []
    for coll in collections:
        cp = coll.collection_path
        by_type: dict[str, CoverageRow] = {}

        def row(kind: str) -> CoverageRow:
            return by_type.setdefault(kind, CoverageRow(cp, kind))

        docs: dict[str, Document] = {d.file_path: d for d in store.documents(cp)}
        on_disk: dict[str, tuple[int, int]] = {}  # filePath -> (size, mtime_ns)
        listed = True
        try:
            entries = list(walk_entries(coll.root))
        except OSError as e:
            listed = False
            entries = []
            code = "root-missing" if isinstance(e, (FileNotFoundError, NotADirectoryError)) else "unreadable"
            errors.append({"collectionPath": cp, "root": coll.root, "code": code, "reason": e.strerror or str(e)})
        for entry in entries:
            r = row("" if entry.is_dir else file_type(entry.file_path))
            r.files_seen += 1
            if entry.code is not None:
                if entry.file_path in docs:  # kept while it cannot be read: counted with its row
                    on_disk[entry.file_path] = (-1, -1)
                    continue
                r.skipped[entry.code] = r.skipped.get(entry.code, 0) + 1
                continue
            suffix = os.path.splitext(entry.file_path)[1].lower()
            if suffix not in SUPPORTED_SUFFIXES:
                r.skipped["unsupported-type"] = r.skipped.get("unsupported-type", 0) + 1
                continue
            if max_file_bytes and entry.size_bytes > max_file_bytes and entry.file_path not in docs:
                r.skipped["too-large"] = r.skipped.get("too-large", 0) + 1
                continue
            on_disk[entry.file_path] = (entry.size_bytes, entry.mtime_ns)
            if entry.file_path not in docs:
                r.not_indexed += 1
        for fp, d in docs.items():
            r = row(file_type(fp))
            r.chunks += d.chunk_count
            for m in models:
                n = per_file[m].get((cp, fp), 0)
                if n:
                    r.vectors[m] = r.vectors.get(m, 0) + n
            mark = (d.metadata or {}).get("stale") or {}
            stat = on_disk.get(fp)
            if stat is None and listed or mark.get("code") == "missing":
                r.missing += 1
            elif mark or stat is None or _moved(d, *stat):
                r.stale += 1
            elif d.status == "failed":
                r.failed += 1
            elif d.status == "empty":
                r.empty += 1
            else:
                r.indexed += 1
        total = CoverageRow(cp, ALL_TYPES)
        for r in by_type.values():
            _add(total, r)
        for m in models:  # every model shows in the total, 0 included
            total.vectors.setdefault(m, 0)
        rows.append(total)
        rows.extend(by_type[k] for k in sorted(by_type))
    return rows, errors


def _moved(doc: Document, size: int, mtime_ns: int) -> bool:
    """True when the file's size or mtime is not the indexed one (-1: unreadable now)."""
    if size < 0:
        return True
    return size != doc.size_bytes or abs(mtime_ns / 1e9 - doc.last_modified) > _MTIME_TOLERANCE_S


def _add(total: CoverageRow, r: CoverageRow) -> None:
    for name in ("files_seen", "indexed", "empty", "failed", "stale", "missing", "not_indexed", "chunks"):
        setattr(total, name, getattr(total, name) + getattr(r, name))
    for k, v in r.skipped.items():
        total.skipped[k] = total.skipped.get(k, 0) + v
    for k, v in r.vectors.items():
        total.vectors[k] = total.vectors.get(k, 0) + v
