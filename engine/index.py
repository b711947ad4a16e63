"""The indexing service: walk collection roots, hash-gate, extract, chunk, store, embed.

Owns: one index run (DESIGN.md "Indexing"): every entry the walk reports
ends indexed, unchanged, failed or skipped with a reason code
(``engine.errors.ReasonCode``); the content-hash gate, forced rebuilds;
documents whose file cannot be read this time kept and marked stale, only
files really gone (ENOENT) removed; size limits checked before extraction
(``engine.extract.limits``); extraction once per duplicate content *and*
extractor; the hash re-checked after extraction (``changed-during-read``);
commits in groups, retried with backoff while the writer lock is busy;
cancel at a file boundary; the run record saved at the start and at the
end (``engine.runs``); the embedding pass over chunks without a vector for
the current model. Imports ``engine.extract``, ``engine.chunk``,
``engine.store``, ``engine.walk``, ``engine.runs`` and ``engine.model``;
never a face (streamlit, mcp, argparse). The embedder is passed in.

The per-file pipeline has one seam: ``Indexer.prepare(f)`` turns one hashed
file into a ``Prepared`` outcome (guard, extract, re-check, chunk: no store
writes, so it may run elsewhere), and ``Indexer.commit(group)`` writes a
group of outcomes in one store batch. The summary's shape is documented in
``engine.runs``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import gc
import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engine.chunk import chunk_text
from engine.config import Settings
from engine.errors import (
    EmbedError, EncryptedError, ExtractError, RunCancelled, StoreBusyError, TooLargeError, UnsupportedFileError,
)
from engine.extract.reasons import reason_code
from engine.model import Collection, Document, ExtractedText
from engine.outcome import HashedFile, LazyChunks, Prepared, code_of, read_code
from engine.paths import document_path, os_name, resolve_inside
from engine.runs import new_summary, record
from engine.store.base import Store
from engine.walk import Entry, walk_entries

__all__ = ["Indexer", "Prepared", "repair_orphans", "walk", "file_hash", "document_path", "resolve_inside", "SUMMARY_CHARS"]

log = logging.getLogger(__name__)

#: Characters of text kept as a document's summary.
SUMMARY_CHARS = 300
_HASH_BLOCK_BYTES = 1 << 20
#: Seconds of extraction grouped into one store commit (other writers wait at
#: most about this long; readers are never blocked).
BATCH_SECONDS = 1.0
#: Seconds between two walk/hash progress events.
_PROGRESS_EVERY_S = 0.2


def file_hash(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of the file's bytes (the ``content_hash``).

    Opened non-blocking and checked to be a regular file first, so a FIFO put
    in a file's place after the walk fails instead of blocking the run.

    Raises:
        OSError: the file cannot be read, or is no longer a regular file.
    """
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "no longer a regular file", os.fspath(path))
        while block := f.read(_HASH_BLOCK_BYTES):
            h.update(block)
    return h.hexdigest()


def walk(root: str | Path) -> list[str]:
    """POSIX ``filePath``s of the regular files under ``root``, sorted (the
    entries ``engine.walk.walk_entries`` reports without a reason code)."""
    return sorted(e.file_path for e in walk_entries(root) if e.code is None)


def _password_key(password: str | None, content_hash: str) -> str:
    """Which password a failed encrypted file was tried with: a per-file salted
    digest (the password itself is never stored)."""
    return hashlib.sha256(f"{content_hash}\0{password or ''}".encode("utf-8")).hexdigest()[:16]


def repair_orphans(store: Store) -> int:
    """Drop documents and chunks whose collection is gone (a remove that raced a
    run in an older version). Uses the store's own ``repair_orphans`` when it
    has one (SQLite: one query), else the protocol (``documents`` of every
    collection path, ``remove_collection`` of the orphans).

    Returns:
        The number of collection paths whose rows were removed.
    """
    own = getattr(store, "repair_orphans", None)
    if own is not None:
        return int(own())
    known = {c.collection_path for c in store.collections()}
    gone = sorted({d.collection_path for d in store.documents()} - known)
    for cp in gone:
        store.remove_collection(cp)
    return len(gone)


@dataclass
class _Scan:
    """The walk of one collection: files to gate, and what became of the rest."""

    files: list[HashedFile] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    blocked: dict[str, tuple[str, str]] = field(default_factory=dict)  # dir filePath -> (code, message)
    stale: dict[str, tuple[str, str]] = field(default_factory=dict)  # filePath -> (code, message)


class Indexer:
    """One index run over a store; hold no state between runs.

    Args:
        store: any ``Store`` backend.
        settings: chunk size/overlap (``settings_key`` gates re-chunking),
            ``embed_batch`` (texts per ``embed`` call), the file limits
            (``max_file_bytes``, ``max_docx_part_bytes``, ``max_pages``) and
            ``lock_wait_s`` (how long a busy writer lock is retried).
        embedder: an object with ``model``, ``probe()`` and ``embed(texts)``
            (float32, shape (n, dim), L2-normalised), or None: text only.
    """

    def __init__(self, store: Store, settings: Settings, embedder: Any | None = None):
        from engine.extract.limits import Limits

        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.limits = Limits.of(settings)
        from engine.extract.ocr import OcrSettings

        self._ocr = OcrSettings(settings.ocr, settings.ocr_languages, settings.ocr_dpi)
        self._passwords: dict[str, str | None] = {}  # collectionPath -> resolved password, this run only
        self._cancel: threading.Event | None = None

    def run(self, collections: list[str] | None = None, force: bool = False,
            on_progress: Callable[[dict], None] | None = None,
            cancel: threading.Event | None = None) -> dict:
        """Index the given collections (None: all) and return the summary.

        Args:
            collections: collection paths to walk; None walks every collection.
            force: re-extract and re-store every file, ignoring the hash gate.
            on_progress: called with ``{"phase": "walk"|"hash"|"extract"|"embed"|"done",
                "done", "total", "file", "elapsedS"}``: files found (walk, total 0),
                files hashed (hash, also ``bytesHashed``/``bytesTotal``), files
                (extract), chunks (embed).
            cancel: when set, the run stops at the next file boundary (or
                embedding batch), keeps what it committed, and ends ``cancelled``.

        Returns:
            The summary dict (``engine.runs``), saved with ``store.save_run``
            at the start (``running``) and at the end. Per-file outcomes, the
            embedding failure and a writer lock that stayed busy are data in it.

        Raises:
            IndexBusyError: another run holds the index lock.
            ValueError: a named collection does not exist.
        """
        started = time.time()
        t0 = time.perf_counter()
        self._cancel = cancel
        emit = on_progress or (lambda _e: None)
        with self.store.index_lock():
            targets = self._targets(collections)
            summary = new_summary(force, [c.collection_path for c in targets], _iso(started))
            try:
                self._retrying(lambda: self.store.save_run(summary))
                summary["orphansRemoved"] = repair_orphans(self.store)
                files = self._scan(targets, summary, emit, t0)
                self._text_pass(files, force, summary, emit, t0)
                if self.embedder is not None:
                    self._embed_pass(summary, emit, t0)
                summary["status"] = "finished"
            except RunCancelled:
                summary["status"] = "cancelled"
                log.warning("index run cancelled at a file boundary; committed work is kept")
            except StoreBusyError as e:
                summary["status"] = "stopped"
                summary["error"] = {"error": "store-busy", "message": str(e)}
                log.warning("index run stopped: %s", e)
            except BaseException as e:  # a bug, a second Ctrl-C: record how it ended, then raise
                summary["status"] = "cancelled" if isinstance(e, KeyboardInterrupt) else "stopped"
                summary["message"] = f"the run ended on {type(e).__name__}: {e}"
                self._finish(summary, t0)
                raise
            self._finish(summary, t0)
            emit({"phase": "done", "done": summary["filesSeen"], "total": summary["filesSeen"],
                  "file": "", "elapsedS": summary["seconds"], "status": summary["status"]})
        return summary

    # -- helpers -------------------------------------------------------------------
    def _finish(self, summary: dict, t0: float) -> None:
        """Stamp the end of the run and save its record (a longer wait than one write)."""
        summary["seconds"] = round(time.perf_counter() - t0, 3)
        summary["finishedAt"] = _iso(time.time())
        try:
            self._retrying(lambda: self.store.save_run(summary), self._lock_wait_s() + 10.0)
        except StoreBusyError as e:
            summary["error"] = summary["error"] or {"error": "store-busy", "message": str(e)}
            log.warning("the run summary could not be saved: %s", e)
        except Exception:  # the store itself is broken: the original outcome matters more
            log.exception("the run summary could not be saved")

    def _check_cancel(self) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise RunCancelled("cancel requested")

    def _lock_wait_s(self) -> float:
        return float(getattr(self.settings, "lock_wait_s", 0.0))

    def _retrying(self, write: Callable[[], Any], wait_s: float | None = None) -> Any:
        """Run ``write``; while the store says its writer lock is busy, retry
        with exponential backoff (0.05 s doubling to 5 s) for up to ``wait_s``
        (default ``settings.lock_wait_s``) seconds, then re-raise ``StoreBusyError``."""
        wait_s = self._lock_wait_s() if wait_s is None else wait_s
        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:
            try:
                return write()
            except StoreBusyError as e:
                if time.monotonic() + delay > deadline:
                    raise StoreBusyError(
                        f"{e}; gave up after {wait_s:g} s (lock_wait_s, CHUNKNAV_LOCK_WAIT_S = "
                        f"{self._lock_wait_s():g} s)") from None
                log.info("writer lock busy, retrying in %.2f s", delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _targets(self, names: list[str] | None) -> list[Collection]:
        known = {c.collection_path: c for c in self.store.collections()}
        if names is None:
            return [known[k] for k in sorted(known)]
        out = []
        for name in names:
            c = known.get(name.strip("/"))
            if c is None:
                raise ValueError(f"unknown collection {name!r}; known: {', '.join(sorted(known)) or 'none'}")
            out.append(c)
        return out

    @staticmethod
    def _add(summary: dict, kind: str, entry: dict) -> None:
        """Count one file outcome (``kind``: indexed/empty/unchanged/failed/skipped/stale/removed)."""
        summary["counts"][kind] += 1
        key = {"failed": "failed", "skipped": "skippedFiles", "empty": "empty", "stale": "stale"}.get(kind)
        if key:
            summary[key].append(entry)
            if kind == "skipped" and entry.get("code") == "unsupported-type":
                summary["unsupported"].append(entry)

    # -- walk and hash -------------------------------------------------------------
    def _scan(self, targets: list[Collection], summary: dict, emit: Callable[[dict], None],
              t0: float) -> list[HashedFile]:
        """Walk every root, classify every entry, hash regular files; keep (stale)
        or remove the documents the walk did not index this time."""
        from engine.extract import SUPPORTED_SUFFIXES

        files: list[HashedFile] = []
        found = 0
        last = 0.0
        for coll in targets:
            cp = coll.collection_path
            scan = _Scan()
            try:
                entries = list(self._walk(coll.root, emit, t0, found))
            except OSError as e:
                code = "root-missing" if e.errno in (errno.ENOENT, errno.ENOTDIR) else "unreadable"
                self._add(summary, "failed", record(cp, "", code, f"collection root {coll.root} cannot be "
                                                    f"listed: {e.strerror or e}; its documents are kept"))
                continue
            found += len(entries)
            for entry in entries:
                summary["filesSeen"] += 1
                self._check_cancel()
                if entry.code is not None:
                    if entry.is_dir:
                        scan.blocked[entry.file_path] = (entry.code, entry.message)
                    scan.stale[entry.file_path] = (entry.code, entry.message)
                    self._add(summary, "skipped", record(cp, entry.file_path, entry.code, entry.message))
                    continue
                suffix = os.path.splitext(entry.file_path)[1].lower()
                if suffix not in SUPPORTED_SUFFIXES:
                    self._add(summary, "skipped", record(cp, entry.file_path, "unsupported-type",
                                                         f"unsupported file type: {suffix or '(no suffix)'}"))
                    scan.seen.add(entry.file_path)
                    continue
                mfb = self.limits.max_file_bytes
                if mfb and entry.size_bytes > mfb:
                    from engine.extract.limits import human_bytes

                    msg = (f"too-large: {human_bytes(entry.size_bytes)} is over max_file_bytes "
                           f"(CHUNKNAV_MAX_FILE_BYTES) = {human_bytes(mfb)}")
                    scan.stale[entry.file_path] = ("too-large", msg)
                    self._add(summary, "skipped", record(cp, entry.file_path, "too-large", msg))
                    continue
                try:
                    digest = file_hash(entry.os_path)
                except OSError as e:
                    code = read_code(e)
                    msg = f"cannot read: {e.strerror or e}"
                    if code == "unreadable":
                        scan.stale[entry.file_path] = (code, msg)
                    self._add(summary, "skipped", record(cp, entry.file_path, code, msg))
                    continue
                scan.seen.add(entry.file_path)
                scan.files.append(HashedFile(coll, entry.file_path, entry.os_path, digest, entry.size_bytes,
                                        entry.mtime_ns, entry.ctime_ns))
                summary["bytesHashed"] = summary.get("bytesHashed", 0) + entry.size_bytes
                now = time.perf_counter()
                if now - last >= _PROGRESS_EVERY_S:
                    last = now
                    emit({"phase": "hash", "done": len(files) + len(scan.files), "total": found,
                          "file": f"{cp}/{entry.file_path}", "bytesHashed": summary["bytesHashed"],
                          "elapsedS": round(now - t0, 3)})
            self._settle(coll, scan, summary)
            files.extend(scan.files)
        return files

    def _walk(self, root: str, emit: Callable[[dict], None], t0: float, before: int) -> Iterator[Entry]:
        """``walk_entries`` with walk progress events (files found so far)."""
        last = 0.0
        for n, entry in enumerate(walk_entries(root), 1):
            now = time.perf_counter()
            if now - last >= _PROGRESS_EVERY_S:
                last = now
                emit({"phase": "walk", "done": before + n, "total": 0, "file": entry.file_path,
                      "elapsedS": round(now - t0, 3)})
                self._check_cancel()
            yield entry

    def _settle(self, coll: Collection, scan: _Scan, summary: dict) -> None:
        """Stored documents not (re)indexed from this walk: stale with the reason
        when the file exists but cannot be read; removed only when it is gone."""
        cp = coll.collection_path
        for doc in self.store.documents(cp):
            fp = doc.file_path
            if fp in scan.seen:
                continue
            why = scan.stale.get(fp) or next(
                (v for d, v in scan.blocked.items() if fp.startswith(d + "/")), None)
            if why is None:
                try:  # lstat: the entry itself, no symlink followed
                    os.lstat(os.path.join(coll.root, os_name(fp)))
                    why = ("unreadable", "the file exists but the walk did not reach it")
                except OSError as e:
                    if read_code(e) == "gone":
                        self._retrying(lambda: self.store.remove_document(cp, fp))
                        summary["removed"] += 1
                        summary["counts"]["removed"] += 1
                        continue
                    why = ("unreadable", f"cannot stat: {e.strerror or e}")
            self._mark_stale(doc, *why)
            if fp in scan.stale:  # the walk counted it skipped: a kept document is stale only (one class)
                self._unskip(summary, cp, fp)
            self._add(summary, "stale", record(cp, fp, why[0], why[1]))

    @staticmethod
    def _unskip(summary: dict, cp: str, fp: str) -> None:
        """Take back the ``skipped`` count of ``cp``/``fp`` (it is counted ``stale`` instead)."""
        for key in ("skippedFiles", "unsupported"):
            kept = [e for e in summary[key] if (e["collectionPath"], e["filePath"]) != (cp, fp)]
            if key == "skippedFiles":
                summary["counts"]["skipped"] -= len(summary[key]) - len(kept)
            summary[key] = kept

    def _mark_stale(self, doc: Document, code: str, message: str) -> None:
        """Keep the document, its chunks and vectors; note why its file was not read."""
        stale = {"code": code, "reason": message}
        if (doc.metadata or {}).get("stale", {}).get("code") == code:
            return  # already marked: no rewrite
        meta = {**(doc.metadata or {}), "stale": {**stale, "since": time.time()}}
        cp, fp = doc.collection_path, doc.file_path
        text = self.store.document_text(cp, fp) or ""
        chunks = self.store.chunks(cp, fp)
        self._retrying(lambda: self.store.replace_document(dataclasses.replace(doc, metadata=meta), text, chunks))

    def _clear_stale(self, doc: Document) -> None:
        meta = {k: v for k, v in (doc.metadata or {}).items() if k != "stale"}
        cp, fp = doc.collection_path, doc.file_path
        text = self.store.document_text(cp, fp) or ""
        chunks = self.store.chunks(cp, fp)
        self._retrying(lambda: self.store.replace_document(dataclasses.replace(doc, metadata=meta), text, chunks))

    # -- the text pass -----------------------------------------------------------------
    def _is_current(self, f: HashedFile) -> bool:
        doc = self.store.get_document(f.collection.collection_path, f.file_path)
        if doc is None or doc.content_hash != f.content_hash or doc.settings_key != self.settings.settings_key:
            return False
        # An encrypted file is retried once its collection's password changes.
        if doc.status == "failed" and doc.metadata.get("encrypted"):
            return doc.metadata.get("passwordKey") == _password_key(self._password(f), f.content_hash)
        if (doc.metadata or {}).get("stale"):
            self._clear_stale(doc)  # readable again and unchanged
        return True

    def _password(self, f: HashedFile) -> str | None:
        """The PDF password of ``f``'s collection, read from its reference
        (``engine.passwords``) once per run and kept in memory only."""
        cp = f.collection.collection_path
        if cp not in self._passwords:
            from engine.passwords import resolve_password

            self._passwords[cp] = resolve_password(f.collection.password_ref)
        return self._passwords[cp]

    def _cache_key(self, f: HashedFile) -> tuple[str, str, str | None]:
        """Duplicate cache key: the bytes, the extractor (by suffix) and the password it is read with."""
        return (f.content_hash, f.suffix, self._password(f) if f.suffix == ".pdf" else None)

    def _text_pass(self, files: list[HashedFile], force: bool, summary: dict,
                   emit: Callable[[dict], None], t0: float) -> None:
        remaining: dict[tuple, int] = {}
        todo = []
        for f in files:
            if not force and self._is_current(f):
                summary["unchanged"] += 1
                summary["counts"]["unchanged"] += 1
                continue
            todo.append(f)
            key = self._cache_key(f)
            remaining[key] = remaining.get(key, 0) + 1
        cache: dict[tuple, ExtractedText | ExtractError] = {}
        total = len(files)
        done = summary["unchanged"]
        group: list[Prepared] = []
        started = time.perf_counter()
        self._pool = self._extract_pool(todo)  # worker processes extract ahead; this process stores
        try:
            for f in todo:
                self._check_cancel()
                if group and self._pool.would_wait(str(Path(f.path)), self._password(f)):
                    # the next file is still being read by a worker: write the group now
                    self.commit(group, summary)
                    group = []
                    started = time.perf_counter()
                group.append(self.prepare(f, cache, remaining))
                done += 1
                emit({"phase": "extract", "done": done, "total": total,
                      "file": f"{f.collection.collection_path}/{f.file_path}",
                      "elapsedS": round(time.perf_counter() - t0, 3)})
                # Files are committed in groups of up to BATCH_SECONDS of work: one
                # commit per group instead of per file (each file is still atomic).
                if time.perf_counter() - started >= BATCH_SECONDS:
                    self.commit(group, summary)
                    group = []
                    started = time.perf_counter()
        finally:
            self._pool.close()
            self._pool = None
            if group:
                self.commit(group, summary)

    def _extract_pool(self, todo: list[HashedFile]):
        """An ``ExtractPool`` told to extract ahead the first file of each duplicate key
        that passes the limits (a file over a limit is never extracted)."""
        from engine.extract.limits import check_limits
        from engine.extract_pool import ExtractPool, worker_count

        def admitted(f: HashedFile) -> bool:
            try:
                return check_limits(f.path, f.size_bytes, f.suffix, self.limits, pdf_pages=False) is None
            except Exception:  # refused or unreadable: _extract reports it, in this process
                return False

        pool = ExtractPool(worker_count(self.settings.extract_workers), self._ocr)
        pool.max_pages = self.limits.max_pages  # checked on the document each worker opens
        if pool.workers > 1:
            firsts = {id(f) for f in {self._cache_key(f): f for f in reversed(todo)}.values()}
            pool.prefetch((str(Path(f.path)), self._password(f), f.size_bytes)
                          for f in todo if id(f) in firsts and admitted(f))
        return pool

    def prepare(self, f: HashedFile, cache: dict | None = None, remaining: dict | None = None) -> Prepared:
        """One hashed file -> its outcome, with no store write (the per-file seam).

        Checks the limits, extracts (once per duplicate key while ``cache``
        holds it), re-reads size, mtime and hash afterwards: a file that changed
        meanwhile is extracted once more from its new bytes, and a file that
        changes again is ``skipped`` as ``changed-during-read``. Then chunks.

        Returns:
            A ``Prepared``; never raises for a bad file (library bugs become
            ``extractor-error``).
        """
        key = self._cache_key(f)
        outcome = cache.get(key) if cache is not None else None
        if outcome is None:
            outcome = self._extract(f)
        if cache is not None and remaining is not None and key in remaining:
            remaining[key] -= 1
            if remaining[key] > 0:
                cache[key] = outcome
            else:
                cache.pop(key, None)
        for attempt in range(2):
            try:
                st = os.stat(f.path)
                same = ((st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (f.size_bytes, f.mtime_ns, f.ctime_ns)
                        and file_hash(f.path) == f.content_hash)
                if same:
                    return self._prepared(f, outcome)
                if attempt == 1:
                    break
                # changed since it was hashed: extract once more from the new bytes
                f = dataclasses.replace(f, content_hash=file_hash(f.path), size_bytes=st.st_size,
                                        mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)
            except OSError as e:
                return Prepared(f, "skipped", read_code(e), f"cannot read after extraction: {e.strerror or e}")
            outcome = self._extract(f)
        return Prepared(f, "skipped", "changed-during-read",
                        "the file changed while it was read (size, mtime or hash moved); the next run retries")

    def _extract(self, f: HashedFile) -> ExtractedText | ExtractError:
        from engine.extract import extract
        from engine.extract.limits import check_limits

        try:
            # a PDF's page count is checked by the extractor on the document it opens (one open)
            check_limits(f.path, f.size_bytes, f.suffix, self.limits, pdf_pages=False)
            pool = getattr(self, "_pool", None)  # engine.extract_pool: the same outcome, maybe from a worker
            if pool is not None:
                return pool.extract(Path(f.path), self._password(f))  # the pool carries OCR and max_pages
            pages = {"max_pages": self.limits.max_pages} if f.suffix == ".pdf" and self.limits.max_pages else {}
            return extract(Path(f.path), self._password(f), self._ocr, **pages)
        except ExtractError as e:
            return e
        except OSError as e:
            return ExtractError(f"cannot read: {e.strerror or e}")
        except Exception as e:  # a library bug on one file must not stop the run
            log.exception("extracting %s failed", f.path)
            return ExtractError(f"extractor error: {type(e).__name__}: {e}")

    def _prepared(self, f: HashedFile, outcome: ExtractedText | ExtractError) -> Prepared:
        cp = f.collection.collection_path
        base = dict(collection_path=cp, file_path=f.file_path, content_hash=f.content_hash,
                    settings_key=self.settings.settings_key, size_bytes=f.size_bytes,
                    last_modified=f.last_modified, indexed_at=time.time())
        if isinstance(outcome, ExtractedText) and outcome.file_type == "pdf" and not outcome.pages \
                and outcome.metadata.get("repaired"):
            outcome = ExtractError("corrupt: truncated or damaged PDF (MuPDF repaired it to 0 pages)")
        if isinstance(outcome, UnsupportedFileError):
            return Prepared(f, "skipped", "unsupported-type", outcome.reason, drop=True)
        if isinstance(outcome, (TooLargeError,)) or (isinstance(outcome, ExtractError)
                                                     and code_of(outcome) == "unreadable"):
            return Prepared(f, "skipped", code_of(outcome), outcome.reason)
        if isinstance(outcome, ExtractError):
            meta: dict[str, Any] = {"code": code_of(outcome), "reasonCode": reason_code("failed", outcome.reason)}
            if isinstance(outcome, EncryptedError):
                meta.update(encrypted=True, passwordKey=_password_key(self._password(f), f.content_hash))
            doc = Document(**base, file_type=f.suffix.lstrip("."), status="failed", reason=outcome.reason,
                           metadata=meta)
            return Prepared(f, "failed", meta["code"], outcome.reason, doc)
        ex = outcome
        meta = dict(ex.metadata)
        if ex.notes:
            meta["notes"] = list(ex.notes)
        if not ex.text.strip():  # empty means empty: no chunk for whitespace
            reason = "; ".join(ex.notes) or "no text"
            meta["reasonCode"] = reason_code("empty", reason)
            doc = Document(**base, file_type=ex.file_type, status="empty", reason=reason,
                           page_count=len(ex.pages), metadata=meta)
            return Prepared(f, "empty", None, reason, doc)
        labels = {p.number: p.label for p in ex.pages if p.label}
        with _gc_paused():  # thousands of acyclic boxes and windows: nothing for the collector
            windows = chunk_text(ex, self.settings.chunk_size, self.settings.chunk_overlap)
        text = ex.text
        doc = Document(**base, file_type=ex.file_type, status="indexed",
                       reason="; ".join(ex.notes) or None, page_count=len(ex.pages),
                       chunk_count=len(windows), text_length=len(text),
                       summary=text[:SUMMARY_CHARS], metadata=meta)
        ocr_pages = {int(k): v for k, v in (ex.metadata.get("ocrPages") or {}).items()}
        return Prepared(f, "indexed", None, doc.reason, doc, text, LazyChunks(f, text, windows, labels, ocr_pages))

    def commit(self, group: list[Prepared], summary: dict) -> None:
        """Write a group of outcomes in one store batch (retried while the writer
        lock is busy), then count them in ``summary``.

        Raises:
            StoreBusyError: the writer lock stayed busy for ``lock_wait_s``.
        """
        def write() -> None:
            with self.store.batch(), _gc_paused():  # chunk rows are acyclic: no collector passes
                for p in group:
                    self._store_one(p)

        self._retrying(write)
        for p in group:
            cp, fp = p.file.collection.collection_path, p.file.file_path
            entry = record(cp, fp, p.code, p.reason or "")
            self._add(summary, p.kind, entry)
            if p.kind == "indexed":
                summary["indexed"] += 1
                summary["chunksWritten"] += len(p.chunks)

    def _store_one(self, p: Prepared) -> None:
        cp, fp = p.file.collection.collection_path, p.file.file_path
        if p.drop:
            if self.store.get_document(cp, fp) is not None:
                self.store.remove_document(cp, fp)
            return
        if p.document is None:
            old = self.store.get_document(cp, fp)
            if old is not None and p.code == "gone":  # vanished since the walk: really gone
                self.store.remove_document(cp, fp)
            elif old is not None and p.code:  # kept, marked stale with the reason
                self._mark_stale(old, p.code, p.reason or "")
            return
        self.store.replace_document(p.document, p.text, p.chunks)  # type: ignore[arg-type]

    # -- the embedding pass ---------------------------------------------------------------
    def _embed_pass(self, summary: dict, emit: Callable[[dict], None], t0: float) -> None:
        """Embed chunks without a vector for the embedder's model; failures become data
        (``engine.index_embed.embed_pass``: length order, reuse by window text,
        one bad input isolated, a changed dimension classified; the cancel check
        runs before each batch and store writes retry while the writer lock is busy)."""
        from engine.index_embed import embed_pass

        embed_pass(self.store, self.embedder, self.settings.embed_batch, summary, emit, t0,
                   check=self._check_cancel, write=self._retrying)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a block that makes many acyclic objects
    (chunking, chunk rows: its passes were up to ~5% of an index run); re-enabled only
    if it was enabled on entry (as ``engine.extract.pdf`` does around a PDF's words)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat(timespec="seconds")
