"""The hash gate: the content hash, the settings key, and the stale-file check.

Owns: ``file_hash`` (the one reader of a file's ``content_hash``, used by the
walk, the re-check after extraction and ``check_file``), ``settings_key``
(what the gate compares besides the hash), ``check_file`` (is the file on disk
still the one that was indexed? stat first; the content hash only when size or
mtime differ) and a small cache of hashes keyed by ``(path, size, mtime_ns)``
so a touched-but-unchanged file is hashed once, not on every ``get_chunk``;
and the stat pre-gate of a run (``stat_mark``, ``stat_unchanged``): a file whose
size, mtime and ctime are those recorded when its row was stored keeps that
row's hash without being read (ctime moves on every write and cannot be set
back, so bytes rewritten under a restored size and mtime are still read).
Imports ``engine.config``, ``engine.errors``, ``engine.values`` and
``engine.paths``; no face, no store, no PyMuPDF.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.config import EXTRACTOR_VERSION, Settings
from engine.errors import ChunknavError
from engine.values import Document
from engine.paths import resolve_inside

__all__ = [
    "FileState",
    "Freshness",
    "check_file",
    "file_hash",
    "HASH_CACHE_ENTRIES",
    "settings_key",
    "STAT_KEY",
    "stat_mark",
    "stat_unchanged",
]

#: The document metadata key holding the file's stat when its row was stored:
#: ``[size_bytes, mtime_ns, ctime_ns]``.
STAT_KEY = "fileStat"

#: What the check found: ``same`` (size and mtime as indexed), ``same-content``
#: (size or mtime differ, bytes hash equal: touched or copied back), ``changed``
#: (other bytes), ``missing`` (no file, or not a regular file, or unreadable).
FileState = Literal["same", "same-content", "changed", "missing"]
#: Hashes remembered per (path, size, mtime_ns).
HASH_CACHE_ENTRIES = 256
_MTIME_TOLERANCE_S = 1e-6
_HASH_BLOCK_BYTES = 1 << 18
#: One read buffer per thread, reused by every ``file_hash`` call of that thread
#: (docs/decisions/hash-buffers.md).
_BUFFERS = threading.local()

_cache: OrderedDict[tuple[str, int, int], str] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Freshness:
    """Outcome of ``check_file``.

    Attributes:
        state: a ``FileState``.
        indexed_at: when the indexed version was read, epoch seconds (0.0 unknown).
        size_bytes, last_modified: the file now (bytes, epoch seconds); 0 when missing.
    """

    state: FileState
    indexed_at: float = 0.0
    size_bytes: int = 0
    last_modified: float = 0.0

    @property
    def stale(self) -> bool:
        """True when the indexed chunks no longer describe the file (changed or missing)."""
        return self.state in ("changed", "missing")


def file_hash(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of the file's bytes (the ``content_hash``).

    Opened non-blocking and checked to be a regular file first, so a FIFO put
    in a file's place after the walk fails instead of blocking the run.

    Raises:
        OSError: the file cannot be read, or is no longer a regular file.
    """
    h = hashlib.sha256()
    buf = getattr(_BUFFERS, "view", None)
    if buf is None:
        buf = _BUFFERS.view = memoryview(bytearray(_HASH_BLOCK_BYTES))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb", buffering=0) as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "no longer a regular file", os.fspath(path))
        while n := f.readinto(buf):
            h.update(buf[:n])
    return h.hexdigest()


def _cached_hash(path: Path, size: int, mtime_ns: int) -> str:
    """``file_hash`` of ``path``, remembered per (path, size, mtime_ns)."""
    key = (str(path), size, mtime_ns)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    digest = file_hash(path)
    with _lock:
        _cache[key] = digest
        while len(_cache) > HASH_CACHE_ENTRIES:
            _cache.popitem(last=False)
    return digest


def check_file(root: str | os.PathLike[str], doc: Document) -> Freshness:
    """Compare the file of ``doc`` under ``root`` with what was indexed.

    Stat first: size and mtime equal to the stored ``size_bytes`` /
    ``last_modified`` -> ``same`` without reading a byte. Otherwise the file's
    sha256 is compared with ``doc.content_hash`` (cached per path, size and
    mtime), so ``touch`` alone is not "changed".

    Args:
        root: the collection root directory.
        doc: the stored document row (``file_path`` relative to ``root``).

    Returns:
        ``Freshness``; never raises for a missing, unreadable or escaping path
        (all ``missing``).
    """
    try:
        path = resolve_inside(os.fspath(root), doc.file_path)
        st = path.stat()
    except (OSError, ChunknavError):
        return Freshness("missing", doc.indexed_at)
    if not path.is_file():
        return Freshness("missing", doc.indexed_at)
    if st.st_size == doc.size_bytes and abs(st.st_mtime - doc.last_modified) <= _MTIME_TOLERANCE_S:
        return Freshness("same", doc.indexed_at, st.st_size, st.st_mtime)
    try:
        digest = _cached_hash(path, st.st_size, st.st_mtime_ns)
    except OSError:
        return Freshness("missing", doc.indexed_at)
    state: FileState = "same-content" if digest == doc.content_hash else "changed"
    return Freshness(state, doc.indexed_at, st.st_size, st.st_mtime)


def stat_mark(size_bytes: int, mtime_ns: int, ctime_ns: int) -> list[int]:
    """The ``metadata[STAT_KEY]`` value of a file read with this stat (bytes, ns, ns)."""
    return [int(size_bytes), int(mtime_ns), int(ctime_ns)]


def stat_unchanged(doc: Document, size_bytes: int, mtime_ns: int, ctime_ns: int) -> bool:
    """True when the file's stat now equals the one recorded with ``doc`` (``STAT_KEY``),
    so its stored ``content_hash`` stands without reading the file. False when no stat
    was recorded, when ctime is unknown (0), or the row carries a stale mark."""
    meta = doc.metadata or {}
    mark = meta.get(STAT_KEY)
    if not ctime_ns or not isinstance(mark, list) or meta.get("stale"):
        return False
    return mark == stat_mark(size_bytes, mtime_ns, ctime_ns)


def settings_key(settings: Settings) -> str:
    """What the hash gate compares besides the content hash.

    Chunk size and overlap, the extractor version, and with OCR on: its languages,
    DPI, the Tesseract version and the languages it has no data for (installing one
    re-reads the scans). Tesseract's answers are kept beside a SQLite index file
    (``engine.extract.ocr``: fingerprinted, a day at most).
    """
    key = f"size={settings.chunk_size};overlap={settings.chunk_overlap};extractor={EXTRACTOR_VERSION}"
    if settings.ocr == "off":
        return key + ";ocr=off"
    from engine.extract.ocr import languages_without_data, tesseract_version

    db, dsn = settings.db, settings.dsn
    cache = f"{db}.tesseract.json" if db and db != ":memory:" and not dsn else None
    version = tesseract_version(cache)
    key += f";ocr={settings.ocr},{settings.ocr_languages},{settings.ocr_dpi},tesseract={version or 'none'}"
    missing = languages_without_data(settings.ocr_languages, cache) if version else ()
    return key + (f",without={'+'.join(missing)}" if missing else "")
