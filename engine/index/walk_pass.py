"""The indexer's walk: list collection roots, classify and hash every entry, settle the rest.

Owns: ``hashes_in_order`` (the walk's content hashes, read ahead on two
threads for a large collection), ``walk``, and ``WalkPass``: it walks each
root (``engine.index.walk``), gives every entry that is not a supported,
readable regular file its reason code (skipped), hashes the others into
``HashedFile``s (``engine.index.gate.file_hash``), and settles the stored
documents the walk did not index this time: kept and marked stale with the
reason while the file exists, removed only when it is gone (ENOENT). While
it settles a collection it notes the files whose stored row already passes
the hash gate (``WalkPass.current``), so the text pass reads no row again
for them. Imports ``engine.index.walk``, ``engine.index.gate``,
``engine.index.files``, ``engine.index.context``, ``engine.paths``,
``engine.index.runs``, ``engine.values`` and ``engine.extract`` (on first
use); never a face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.extract.limits import Limits
from engine.index.context import RunContext
from engine.index.files import HashedFile, read_code
from engine.index.gate import file_hash, settings_key
from engine.values import Collection
from engine.paths import os_name
from engine.index.runs import record
from engine.index.walk import Entry, walk_entries

__all__ = ["WalkPass", "hashes_in_order", "walk", "HASH_THREADS"]

#: Seconds between two walk/hash progress events.
_PROGRESS_EVERY_S = 0.2


#: Threads hashing ahead of the walk's classification (the gate's sha256 runs at ~1.5 GB/s
#: per core and releases the GIL): one per core, at most two.
HASH_THREADS = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
#: Fewer bytes than this to hash in a collection: one thread (a pool costs more than it saves).
_PARALLEL_HASH_BYTES = 32 << 20
#: Files handed to a hashing thread at once: consecutive, up to this many or ~4 MiB.
_HASH_BATCH_FILES = 64
_HASH_BATCH_BYTES = 4 << 20


def _hash_batch(paths: list[str]) -> list[str | OSError]:
    """``file_hash`` of each path, in order; an ``OSError`` in place of a file that cannot be read."""
    out: list[str | OSError] = []
    for path in paths:
        try:
            out.append(file_hash(path))
        except OSError as e:  # the caller reports it for this file, as a sequential read would
            out.append(e)
    return out


def hashes_in_order(items: list[tuple[str, int]], threads: int = HASH_THREADS) -> Generator[str | OSError, None, None]:
    """``file_hash`` of each ``(path, size_bytes)`` in order, hashed ahead on ``threads``
    threads when there is enough to hash (the content hash stays the gate: every file
    is read in full).

    Yields:
        One hex digest per item, in order, or the ``OSError`` that reading that file
        raised (the caller reports it for that file, as a sequential read would). At most ``2 * threads``
        batches (up to 64 files or ~4 MiB each) run ahead; closing the generator (a cancelled scan) cancels
        the rest and waits only for the batches already being read.
    """
    if threads < 2 or len(items) < 2 or sum(size for _, size in items) < _PARALLEL_HASH_BYTES:
        for path, _size in items:
            yield _hash_batch([path])[0]
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    def batches() -> Iterator[list[str]]:
        batch: list[str] = []
        size = 0
        for path, n in items:
            if batch and (len(batch) >= _HASH_BATCH_FILES or size + n > _HASH_BATCH_BYTES):
                yield batch
                batch, size = [], 0
            batch.append(path)
            size += n
        if batch:
            yield batch

    todo = batches()
    with ThreadPoolExecutor(threads, thread_name_prefix="chunknav-hash") as pool:
        ahead = deque(pool.submit(_hash_batch, b) for _, b in zip(range(2 * threads), todo))
        try:
            while ahead:
                done = ahead.popleft().result()
                more = next(todo, None)
                if more is not None:
                    ahead.append(pool.submit(_hash_batch, more))
                yield from done
        finally:
            for f in ahead:
                f.cancel()


def _to_hash(entry: Entry, suffixes: tuple[str, ...], max_file_bytes: int) -> bool:
    """True when ``WalkPass._classify`` hashes ``entry``: a regular file the walk reported
    without a reason code, of a supported suffix, not over ``max_file_bytes`` (0: no limit)."""
    return (
        entry.code is None
        and os.path.splitext(entry.file_path)[1].lower() in suffixes
        and not (max_file_bytes and entry.size_bytes > max_file_bytes)
    )


def walk(root: str | Path) -> list[str]:
    """POSIX ``filePath``s of the regular files under ``root``, sorted (the
    entries ``engine.index.walk.walk_entries`` reports without a reason code)."""
    return sorted(e.file_path for e in walk_entries(root) if e.code is None)


@dataclass
class _Scan:
    """The walk of one collection: files to gate, and what became of the rest."""

    files: list[HashedFile] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    blocked: dict[str, tuple[str, str]] = field(default_factory=dict)  # dir filePath -> (code, message)
    stale: dict[str, tuple[str, str]] = field(default_factory=dict)  # filePath -> (code, message)


class WalkPass:
    """Walk, classify and hash, then settle unindexed documents.

    Args:
        ctx: the run (store, settings, summary, cancel flag, progress).
        limits: the run's file limits (``max_file_bytes`` is checked before hashing).

    Attributes:
        current: ``(collectionPath, filePath)`` of the files whose stored row passes
            the hash gate as it is (filled by ``scan``; the text pass reads no row for them).
    """

    def __init__(self, ctx: RunContext, limits: Limits):
        self._ctx = ctx
        self._limits = limits
        self.current: set[tuple[str, str]] = set()
        self._bytes_total = 0  # bytes to hash in the collections walked so far (hash progress)

    # -- walk and hash -------------------------------------------------------------
    def scan(self, targets: list[Collection]) -> list[HashedFile]:
        """Walk every root, classify every entry, hash regular files; keep (stale)
        or remove the documents the walk did not index this time.

        Returns:
            The hashed files of every collection, in walk order.

        Raises:
            RunCancelled: a cancel request reached a file boundary.
            StoreBusyError: the writer lock stayed busy for ``lock_wait_s``.
        """
        from engine.extract import SUPPORTED_SUFFIXES

        self.current = set()
        files: list[HashedFile] = []
        found = 0
        last = 0.0
        for coll in targets:
            scan = _Scan()
            try:
                entries = list(self._walk(coll.root, found))
            except OSError as e:
                self._root_unlisted(coll, e)
                continue
            found += len(entries)
            mfb = self._limits.max_file_bytes
            picked = [(e.os_path, e.size_bytes) for e in entries if _to_hash(e, SUPPORTED_SUFFIXES, mfb)]
            self._bytes_total += sum(size for _, size in picked)
            hashes = hashes_in_order(picked)
            try:  # each digest travels with its path: _classify checks it hashes the entry it is at
                last = self._classify(coll, entries, zip((p for p, _ in picked), hashes), scan, found, len(files), last)
            finally:
                hashes.close()  # a cancelled scan: no more files are read ahead
            self._settle(coll, scan)
            files.extend(scan.files)
        return files

    def _classify(
        self,
        coll: Collection,
        entries: list[Entry],
        hashes: Iterator[tuple[Any, str | OSError]],
        scan: _Scan,
        found: int,
        before: int,
        last: float,
    ) -> float:
        """Each walk entry of ``coll`` -> skipped (with its reason) or hashed into ``scan.files``;
        ``hashes`` yields ``(os_path, digest or read error)`` of each entry ``_to_hash`` picks, in
        order (a path that is not the entry's raises RuntimeError: the two selections drifted).
        ``before``: files hashed in earlier collections; ``last``: the last hash progress event
        (``perf_counter``), returned updated."""
        from engine.extract import SUPPORTED_SUFFIXES

        ctx = self._ctx
        summary = ctx.summary
        cp = coll.collection_path
        for entry in entries:
            summary["filesSeen"] += 1
            ctx.check_cancel()
            if entry.code is not None:
                if entry.is_dir:
                    scan.blocked[entry.file_path] = (entry.code, entry.message)
                scan.stale[entry.file_path] = (entry.code, entry.message)
                ctx.add("skipped", record(cp, entry.file_path, entry.code, entry.message))
                continue
            suffix = os.path.splitext(entry.file_path)[1].lower()
            if suffix not in SUPPORTED_SUFFIXES:
                why = f"unsupported file type: {suffix or '(no suffix)'}"
                ctx.add("skipped", record(cp, entry.file_path, "unsupported-type", why))
                scan.seen.add(entry.file_path)
                continue
            mfb = self._limits.max_file_bytes
            if mfb and entry.size_bytes > mfb:
                from engine.extract.limits import human_bytes

                msg = (
                    f"too-large: {human_bytes(entry.size_bytes)} is over max_file_bytes "
                    f"(CHUNKNAV_MAX_FILE_BYTES) = {human_bytes(mfb)}"
                )
                scan.stale[entry.file_path] = ("too-large", msg)
                ctx.add("skipped", record(cp, entry.file_path, "too-large", msg))
                continue
            path, digest = next(hashes, (None, None))
            if path != entry.os_path:  # _to_hash and the checks above disagree: never pair a wrong hash
                raise RuntimeError(f"walk and hash out of step at {cp}/{entry.file_path}")
            if not isinstance(digest, str):
                e = digest if isinstance(digest, OSError) else OSError(errno.EIO, "no hash")
                code = read_code(e)
                msg = f"cannot read: {e.strerror or e}"
                if code == "unreadable":
                    scan.stale[entry.file_path] = (code, msg)
                ctx.add("skipped", record(cp, entry.file_path, code, msg))
                continue
            scan.seen.add(entry.file_path)
            scan.files.append(
                HashedFile(
                    coll, entry.file_path, entry.os_path, digest, entry.size_bytes, entry.mtime_ns, entry.ctime_ns
                )
            )
            summary["bytesHashed"] = summary.get("bytesHashed", 0) + entry.size_bytes
            now = time.perf_counter()
            if now - last >= _PROGRESS_EVERY_S:
                last = now
                ctx.emit(
                    {
                        "phase": "hash",
                        "done": before + len(scan.files),
                        "total": found,
                        "file": f"{cp}/{entry.file_path}",
                        "bytesHashed": summary["bytesHashed"],
                        "bytesTotal": self._bytes_total,
                        "elapsedS": round(now - ctx.t0, 3),
                    }
                )
        return last

    def _walk(self, root: str, before: int) -> Iterator[Entry]:
        """``walk_entries`` with walk progress events (files found so far)."""
        ctx = self._ctx
        last = 0.0
        for n, entry in enumerate(walk_entries(root), 1):
            now = time.perf_counter()
            if now - last >= _PROGRESS_EVERY_S:
                last = now
                ctx.emit(
                    {
                        "phase": "walk",
                        "done": before + n,
                        "total": 0,
                        "file": entry.file_path,
                        "elapsedS": round(now - ctx.t0, 3),
                    }
                )
                ctx.check_cancel()
            yield entry

    def _root_unlisted(self, coll: Collection, error: OSError) -> None:
        """A collection root that cannot be listed this time (vanished, unmounted, not a
        folder: ``root-missing``; permission denied, I/O error: ``unreadable``): one
        ``rootErrors`` entry ``{collectionPath, root, code, reason}`` for the root, and
        every stored document of the collection kept (text, chunks, vectors) and listed
        ``stale`` with the root's code and reason. Nothing is removed."""
        ctx = self._ctx
        cp = coll.collection_path
        code = "root-missing" if error.errno in (errno.ENOENT, errno.ENOTDIR) else "unreadable"
        docs = ctx.store.documents(cp)
        why = f"collection root {coll.root} cannot be listed: {error.strerror or error}"
        ctx.summary.setdefault("rootErrors", []).append(
            {
                "collectionPath": cp,
                "root": coll.root,
                "code": code,
                "reason": f"{why}; its {len(docs)} document{'' if len(docs) == 1 else 's'} kept (stale)",
            }
        )
        for doc in docs:
            ctx.check_cancel()
            ctx.mark_stale(doc, code, why)
            ctx.add("stale", record(cp, doc.file_path, code, why))

    def _settle(self, coll: Collection, scan: _Scan) -> None:
        """Stored documents not (re)indexed from this walk: stale with the reason
        when the file exists but cannot be read; removed only when it is gone (ENOENT,
        or a folder now stands at its path: the file it was is gone)."""
        ctx = self._ctx
        store = ctx.store
        cp = coll.collection_path
        hashed = {f.file_path: f for f in scan.files}
        key = settings_key(ctx.settings)
        for doc in store.documents(cp):
            fp = doc.file_path
            if fp in scan.seen:
                f = hashed.get(fp)
                meta = doc.metadata or {}
                if (
                    f is not None
                    and doc.content_hash == f.content_hash
                    and doc.settings_key == key
                    and not (doc.status == "failed" and meta.get("encrypted"))
                    and not meta.get("stale")
                ):
                    # the hash gate's answer from this row: the text pass reads no row again
                    self.current.add((cp, f.file_path))
                    if doc.status == "failed":  # unchanged and still failing: counted, not forgotten
                        ctx.kept_failed(doc)
                continue
            why = (
                None
                if fp in scan.blocked
                else scan.stale.get(fp) or next((v for d, v in scan.blocked.items() if fp.startswith(d + "/")), None)
            )
            gone = fp in scan.blocked  # a folder now stands where the file was (one it cannot enter)
            if why is None and not gone:
                try:  # lstat: the entry itself, no symlink followed
                    gone = stat.S_ISDIR(os.lstat(os.path.join(coll.root, os_name(fp))).st_mode)  # now a folder
                    why = ("unreadable", "the file exists but the walk did not reach it")
                except OSError as e:
                    gone = read_code(e) == "gone"
                    why = ("unreadable", f"cannot stat: {e.strerror or e}")
            if gone or why is None:  # the file is gone (ENOENT, or a folder of the same name replaced it)
                ctx.retrying(lambda: store.remove_document(cp, fp))
                ctx.summary["removed"] += 1
                ctx.summary["counts"]["removed"] += 1
                continue
            ctx.mark_stale(doc, *why)
            if fp in scan.stale:  # the walk counted it skipped: a kept document is stale only (one class)
                ctx.unskip(cp, fp)
            ctx.add("stale", record(cp, fp, why[0], why[1]))
