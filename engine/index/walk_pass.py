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

import dataclasses
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
from engine.index.gate import STAT_KEY, file_hash, settings_key, stat_mark, stat_unchanged
from engine.values import Collection, Document
from engine.paths import os_name
from engine.index.runs import record
from engine.index.walk import Entry, aliases, walk_entries

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


def _to_hash(entry: Entry, suffixes: tuple[str, ...], max_file_bytes: int, binary: set[str]) -> bool:
    """True when ``WalkPass._classify`` hashes ``entry``: a regular file the walk reported
    without a reason code, of a supported suffix, not over ``max_file_bytes`` (0: no limit),
    and not a file without a suffix whose bytes are not text (``binary``: their filePaths)."""
    return (
        entry.code is None
        and os.path.splitext(entry.file_path)[1].lower() in suffixes
        and not (max_file_bytes and entry.size_bytes > max_file_bytes)
        and entry.file_path not in binary
    )


def _not_text(entries: list[Entry], max_file_bytes: int) -> set[str]:
    """filePaths of the regular files without a suffix whose first bytes are not text
    (``engine.extract.text.sniff_text``: one bounded read each); judged once, so the
    hashing and the classification agree."""
    from engine.extract.text import sniff_text

    return {
        e.file_path
        for e in entries
        if e.code is None
        and not os.path.splitext(e.file_path)[1]
        and not (max_file_bytes and e.size_bytes > max_file_bytes)
        and not sniff_text(e.os_path)
    }


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
    known: dict[str, str] = field(default_factory=dict)  # filePath -> stored hash (stat pre-gate)
    alias_of: dict[str, str] = field(default_factory=dict)  # symlink filePath -> the indexed file's filePath


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

        ctx = self._ctx
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
            entries, scan.alias_of = aliases(entries)
            self._note_aliases(coll, scan)
            mfb = self._limits.max_file_bytes
            stored = {d.file_path: d for d in ctx.store.documents(coll.collection_path)}
            scan.known = self._stat_gated(entries, stored) if ctx.settings.stat_gate else {}
            binary = _not_text(entries, mfb)
            picked = [
                (e.os_path, e.size_bytes)
                for e in entries
                if _to_hash(e, SUPPORTED_SUFFIXES, mfb, binary) and e.file_path not in scan.known
            ]
            self._bytes_total += sum(size for _, size in picked)
            hashes = hashes_in_order(picked)
            try:  # each digest travels with its path: _classify checks it hashes the entry it is at
                pairs = zip((p for p, _ in picked), hashes)
                last = self._classify(coll, entries, pairs, scan, found, len(files), last, binary)
            finally:
                hashes.close()  # a cancelled scan: no more files are read ahead
            self._settle(coll, scan, stored)
            files.extend(scan.files)
        return files

    @staticmethod
    def _stat_gated(entries: list[Entry], stored: dict[str, Document]) -> dict[str, str]:
        """``{filePath: content_hash}`` of the entries whose stat (size, mtime, ctime) is the
        one recorded with their stored row (``engine.index.gate.stat_unchanged``): their
        hash is that row's, and they are not read. Every other file is hashed."""
        known: dict[str, str] = {}
        for e in entries:
            doc = stored.get(e.file_path)
            if e.code is None and doc is not None and stat_unchanged(doc, e.size_bytes, e.mtime_ns, e.ctime_ns):
                known[e.file_path] = doc.content_hash
        return known

    def _classify(
        self,
        coll: Collection,
        entries: list[Entry],
        hashes: Iterator[tuple[Any, str | OSError]],
        scan: _Scan,
        found: int,
        before: int,
        last: float,
        binary: set[str],
    ) -> float:
        """Each walk entry of ``coll`` -> skipped (with its reason) or hashed into ``scan.files``;
        ``hashes`` yields ``(os_path, digest or read error)`` of each entry ``_to_hash`` picks, in
        order (a path that is not the entry's raises RuntimeError: the two selections drifted).
        ``before``: files hashed in earlier collections; ``last``: the last hash progress event
        (``perf_counter``), returned updated; ``binary``: the files without a suffix whose
        bytes are not text (skipped ``unsupported-type``)."""
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
            if suffix not in SUPPORTED_SUFFIXES or entry.file_path in binary:
                why = f"unsupported file type: {suffix}" if suffix else "no suffix, and the bytes are not text"
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
            known = scan.known.get(entry.file_path)
            path: Any
            digest: str | OSError | None
            if known is not None:  # size, mtime and ctime as stored: the stored hash stands
                path, digest = entry.os_path, known
                summary["statGated"] = summary.get("statGated", 0) + 1
            else:
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
            links = tuple(a for a, t in scan.alias_of.items() if t == entry.file_path) if scan.alias_of else ()
            scan.files.append(
                HashedFile(
                    coll,
                    entry.file_path,
                    entry.os_path,
                    digest,
                    entry.size_bytes,
                    entry.mtime_ns,
                    entry.ctime_ns,
                    links,
                )
            )
            if known is None:
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
                        "bytesHashed": summary.get("bytesHashed", 0),
                        "bytesTotal": self._bytes_total,
                        "elapsedS": round(now - ctx.t0, 3),
                    }
                )
        return last

    def _note_aliases(self, coll: Collection, scan: _Scan) -> None:
        """Each symlink to a file of the same walk counted once (``skipped``, reason ``alias``,
        naming its target): the file is indexed once, at its own path, and lists the link
        in its ``aliases``."""
        ctx = self._ctx
        for link, target in scan.alias_of.items():
            ctx.summary["filesSeen"] += 1
            ctx.add(
                "skipped",
                record(
                    coll.collection_path, link, "alias", f"symlink to {target}: indexed once there, listed as its alias"
                ),
            )

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

    def _settle(self, coll: Collection, scan: _Scan, stored: dict[str, Document]) -> None:
        """Stored documents not (re)indexed from this walk: stale with the reason
        when the file exists but cannot be read; when it is gone (ENOENT, or a folder
        now stands at its path: the file it was is gone), moved to a new file of the
        same bytes (a rename or move inside the root: chunks and vectors kept), else
        kept marked ``missing`` (``keep_missing``) or removed. A file that passes the
        gate with a new stat (touched, copied back) gets its stat recorded."""
        ctx = self._ctx
        store = ctx.store
        cp = coll.collection_path
        hashed = {f.file_path: f for f in scan.files}
        key = settings_key(ctx.settings)
        gone: list[Document] = []
        restat: dict[str, dict] = {}  # filePath -> metadata with the stat recorded now
        for doc in stored.values():
            fp = doc.file_path
            if fp in scan.alias_of:  # now an alias of another document: not a document of its own
                ctx.retrying(lambda: store.remove_document(cp, fp))
                ctx.summary["removed"] += 1
                ctx.summary["counts"]["removed"] += 1
                continue
            if fp in scan.seen:
                f = hashed.get(fp)
                meta = doc.metadata or {}
                links = list(f.aliases) if f is not None else []
                if f is not None and doc.status == "indexed" and list(meta.get("aliases") or []) != links:
                    meta = {k: v for k, v in meta.items() if k != "aliases"} | ({"aliases": links} if links else {})
                    new_meta = meta
                    ctx.retrying(lambda: store.set_document_metadata(cp, fp, new_meta))
                if (
                    f is not None
                    and doc.content_hash == f.content_hash
                    and doc.settings_key == key
                    and not (doc.status == "failed" and meta.get("encrypted"))
                    and not meta.get("stale")
                ):
                    # the hash gate's answer from this row: the text pass reads no row again
                    self.current.add((cp, f.file_path))
                    if fp not in scan.known and ctx.settings.stat_gate:  # read: its stat moved
                        restat[fp] = {**meta, STAT_KEY: stat_mark(f.size_bytes, f.mtime_ns, f.ctime_ns)}
                    if doc.status == "failed":  # unchanged and still failing: counted, not forgotten
                        ctx.kept_failed(doc)
                continue
            why = (
                None
                if fp in scan.blocked
                else scan.stale.get(fp) or next((v for d, v in scan.blocked.items() if fp.startswith(d + "/")), None)
            )
            is_gone = fp in scan.blocked  # a folder now stands where the file was (one it cannot enter)
            if why is None and not is_gone:
                try:  # lstat: the entry itself, no symlink followed
                    is_gone = stat.S_ISDIR(os.lstat(os.path.join(coll.root, os_name(fp))).st_mode)  # now a folder
                    why = ("unreadable", "the file exists but the walk did not reach it")
                except OSError as e:
                    is_gone = read_code(e) == "gone"
                    why = ("unreadable", f"cannot stat: {e.strerror or e}")
            if is_gone or why is None:  # the file is gone (ENOENT, or a folder of the same name replaced it)
                gone.append(doc)
                continue
            ctx.mark_stale(doc, *why)
            if fp in scan.stale:  # the walk counted it skipped: a kept document is stale only (one class)
                ctx.unskip(cp, fp)
            ctx.add("stale", record(cp, fp, why[0], why[1]))
        if restat:

            def record_stats() -> None:
                with store.batch():
                    for fp, meta in restat.items():
                        store.set_document_metadata(cp, fp, meta)

            ctx.write(record_stats)
        gone = self._moved(cp, gone, [f for f in scan.files if f.file_path not in stored], key)
        for doc in gone:
            fp = doc.file_path
            if ctx.keep_missing:
                kept = "the file is gone; kept with its chunks and vectors (keep_missing)"
                ctx.mark_stale(doc, "missing", kept)
                ctx.add("missing", record(cp, fp, "missing", kept))
                continue
            ctx.write(lambda fp=fp: store.remove_document(cp, fp))  # type: ignore[misc]
            ctx.summary["removed"] += 1
            ctx.add("removed", record(cp, fp, "gone", "the file is gone"))

    def _moved(self, cp: str, gone: list[Document], new: list[HashedFile], key: str) -> list[Document]:
        """Move each gone document to a new file (no stored row at its path) with the same
        content hash, under the same settings (a rename or move inside the root): its row,
        text, chunks and so its vectors go with it, nothing is read or embedded again.
        Pairs by hash in path order; returns the gone documents no new file took."""
        ctx = self._ctx
        by_hash: dict[str, list[HashedFile]] = {}
        for f in sorted(new, key=lambda f: f.file_path):
            by_hash.setdefault(f.content_hash, []).append(f)
        left: list[Document] = []
        for doc in sorted(gone, key=lambda d: d.file_path):
            targets = by_hash.get(doc.content_hash)
            if not targets or doc.settings_key != key or doc.status not in ("indexed", "empty"):
                left.append(doc)
                continue
            f = targets.pop(0)
            meta = {k: v for k, v in (doc.metadata or {}).items() if k != "stale"}
            if ctx.settings.stat_gate:
                meta[STAT_KEY] = stat_mark(f.size_bytes, f.mtime_ns, f.ctime_ns)
            moved = dataclasses.replace(
                doc, file_path=f.file_path, size_bytes=f.size_bytes, last_modified=f.last_modified, metadata=meta
            )
            ctx.write(lambda d=doc, m=moved: ctx.store.move_document(d.file_path, m))  # type: ignore[misc]
            self.current.add((cp, f.file_path))
            ctx.summary["counts"]["renamed"] += 1
            ctx.summary["renamed"].append({"collectionPath": cp, "from": doc.file_path, "to": f.file_path})
        return left
