"""The indexer's text pass: hash-gate, extract, re-check, chunk and commit each file.

Owns: ``TextPass``: it skips files whose content hash, settings and (for
encrypted PDFs) password are unchanged, extracts the rest once per duplicate
content *and* extractor (``engine.index.pool`` reads ahead in worker
processes), re-checks the hash after extraction (``changed-during-read``),
chunks (``engine.chunk``), and writes outcomes in groups of about
``BATCH_SECONDS`` of work (``prepare`` / ``commit``, the per-file seam);
``SUMMARY_CHARS``. A cancelled run abandons the files being read: a read
in this process stops at its next page (``engine.extract.common.checkpoint``
calls the run's ``tick``), the workers are killed (``ExtractPool.abandon``),
and the outcomes already prepared are committed. Progress counts files and
bytes (``bytesDone``/``bytesTotal``: the bar's weight) and names the files
in flight (``engine.index.progress``). Reason codes come from the ``ExtractError`` raised
(``code``, ``run_code``), never from its message. Imports ``engine.extract``
(on first use), ``engine.chunk``, ``engine.index.files``,
``engine.index.gate``, ``engine.index.context``, ``engine.index.runs`` and
``engine.values``; never a face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from engine.chunk import chunk_text
from engine.errors import EncryptedError, ExtractError, RunCancelled, StoreFaultError, UnsupportedFileError
from engine.extract.common import gc_paused, interruptible
from engine.extract.limits import Limits
from engine.extract.ocr import OcrSettings
from engine.index.context import RunContext
from engine.index.files import HashedFile, LazyChunks, Prepared, read_code
from engine.index.gate import STAT_KEY, file_hash, settings_key, stat_mark
from engine.index.runs import record
from engine.values import Chunk, Document, ExtractedText

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.index.pool import ExtractPool
    from engine.index.rows import ReadyText

__all__ = ["TextPass", "SUMMARY_CHARS", "BATCH_SECONDS", "BATCH_CHARS"]

log = logging.getLogger(__name__)

#: Characters of text kept as a document's summary.
SUMMARY_CHARS = 300
#: Seconds of extraction grouped into one store commit (other writers wait at
#: most about this long; readers are never blocked).
BATCH_SECONDS = 1.0
#: Characters of extracted text after which a group is committed even sooner: the write-ahead
#: log grows by about 7 bytes per character of one group before the store checkpoints it
#: (docs/decisions/wal-checkpoints.md).
BATCH_CHARS = 1_000_000

#: Duplicate key of a file: its bytes, its extractor (suffix) and the password it is read with.
_Key = tuple[str, str, str | None]


class TextPass:
    """Gate, extract, chunk and commit each hashed file of one run.

    Args:
        ctx: the run (store, settings, summary, cancel flag, progress).
        limits: the file limits, checked before a file is extracted.
        ocr: OCR settings for every extraction.

    Its own state: the collections' resolved passwords (this run only, in
    memory) and, while ``run`` reads files, the extract pool.
    """

    def __init__(self, ctx: RunContext, limits: Limits, ocr: OcrSettings):
        self._ctx = ctx
        self._limits = limits
        self._ocr = ocr
        self._key = settings_key(ctx.settings)
        self._passwords: dict[str, str | None] = {}  # collectionPath -> resolved password
        self._pool: ExtractPool | None = None
        self._labels: dict[str, str] = {}  # os path -> "collection/file" (progress)
        self._reading: tuple[str, float] | None = None  # the file read in this process now, since

    # -- the gate ----------------------------------------------------------------------
    def _is_current(self, f: HashedFile, current: set[tuple[str, str]]) -> bool:
        """True when the stored row of ``f`` passes the hash gate (``current``: rows the
        walk already found passing, read no more)."""
        cp = f.collection.collection_path
        if (cp, f.file_path) in current:
            return True
        doc = self._ctx.store.get_document(cp, f.file_path)
        if doc is None or doc.content_hash != f.content_hash or doc.settings_key != self._key:
            return False
        # An encrypted file is retried once its collection's password changes.
        if doc.status == "failed" and doc.metadata.get("encrypted"):
            same = bool(doc.metadata.get("passwordKey") == _password_key(self._password(f), f.content_hash))
            if same:
                self._ctx.kept_failed(doc)
            return same
        if doc.status == "failed":
            self._ctx.kept_failed(doc)
        if (doc.metadata or {}).get("stale"):
            self._ctx.clear_stale(doc)  # readable again and unchanged
        return True

    def _password(self, f: HashedFile) -> str | None:
        """The PDF password of ``f``'s collection, read from its reference
        (``engine.passwords``) once per run and kept in memory only."""
        cp = f.collection.collection_path
        if cp not in self._passwords:
            from engine.passwords import resolve_password

            self._passwords[cp] = resolve_password(f.collection.password_ref)
        return self._passwords[cp]

    def _cache_key(self, f: HashedFile) -> _Key:
        """Duplicate cache key: the bytes, the extractor (by suffix) and the password it is read with."""
        return (f.content_hash, f.suffix, self._password(f) if f.suffix == ".pdf" else None)

    # -- the pass ------------------------------------------------------------------------
    def run(self, files: list[HashedFile], force: bool, current: set[tuple[str, str]]) -> None:
        """Gate, extract, chunk and store ``files`` (in order), counting each outcome.

        Args:
            files: the walk's hashed files.
            force: re-extract every file, ignoring the gate.
            current: files the walk found passing the gate (``WalkPass.current``).

        Raises:
            RunCancelled: a cancel request reached a file boundary (what was committed stays).
            StoreBusyError: the writer lock stayed busy for ``lock_wait_s``.
        """
        ctx = self._ctx
        summary = ctx.summary
        remaining: dict[_Key, int] = {}
        todo = []
        for f in files:
            if not force and self._is_current(f, current):
                summary["unchanged"] += 1
                summary["counts"]["unchanged"] += 1
                continue
            todo.append(f)
            key = self._cache_key(f)
            remaining[key] = remaining.get(key, 0) + 1
        if not todo:  # nothing to read: no pool, and the pool's modules stay unimported
            return
        cache: dict[_Key, ExtractedText | ReadyText | ExtractError] = {}
        total = len(files)
        done = summary["unchanged"]
        bytes_total = sum(f.size_bytes for f in todo)
        bytes_done = 0
        group: list[Prepared] = []
        chars = 0  # characters of text in the group
        started = time.perf_counter()
        self._labels = {str(Path(f.path)): f"{f.collection.collection_path}/{f.file_path}" for f in todo}
        pool = self._pool = self._extract_pool(todo)  # worker processes extract ahead; this process stores
        pool.check = ctx.tick  # a wait on a worker stops for a cancel
        if ctx.progress is not None:
            ctx.progress.in_flight = self._in_flight
        ended = False
        try:
            for f in todo:
                ctx.check_cancel()
                if group and pool.would_wait(str(Path(f.path)), self._password(f)):
                    # the next file is still being read by a worker: write the group now
                    self.commit(group)
                    group, chars = [], 0
                    started = time.perf_counter()
                group.append(self.prepare(f, cache, remaining))
                done += 1
                bytes_done += f.size_bytes
                ctx.emit(
                    {
                        "phase": "extract",
                        "done": done,
                        "total": total,
                        "file": f"{f.collection.collection_path}/{f.file_path}",
                        "bytesDone": bytes_done,
                        "bytesTotal": bytes_total,
                        "elapsedS": ctx.elapsed_s(),
                    }
                )
                # Files are committed in groups of up to BATCH_SECONDS of work or BATCH_CHARS
                # of text: one commit per group instead of per file (each file is still
                # atomic), and a write-ahead log that holds at most about one group.
                chars += len(group[-1].text or "")
                if time.perf_counter() - started >= BATCH_SECONDS or chars >= BATCH_CHARS:
                    chars = 0
                    self.commit(group)
                    group = []
                    started = time.perf_counter()
            ended = True
        except StoreFaultError:  # the store failed: no second write to hide the first cause
            group = []
            raise
        finally:
            if ended:
                pool.close()
            else:  # cancelled (or failed): the files in the workers are dropped, not waited for
                pool.abandon()
            self._pool = None
            if ctx.progress is not None:
                ctx.progress.in_flight = lambda: []
            if group:
                self.commit(group)

    def plan(self, files: list[HashedFile], force: bool, current: set[tuple[str, str]]) -> None:
        """The gate of ``run`` with nothing read or written (a dry run): each file is counted
        ``unchanged`` or listed in the summary's ``added`` (no stored row) or ``changed``
        (a stored row the gate does not pass: other bytes, other settings, a stale mark,
        a new password for an encrypted file, or ``force``)."""
        summary = self._ctx.summary
        for f in files:
            self._ctx.check_cancel()
            cp = f.collection.collection_path
            if not force and self._is_current(f, current):
                summary["unchanged"] += 1
                summary["counts"]["unchanged"] += 1
                summary["unchangedFiles"].append(record(cp, f.file_path, None, ""))
                continue
            doc = self._ctx.store.get_document(cp, f.file_path)
            if doc is None:
                summary["added"].append(record(cp, f.file_path, None, "new file"))
                continue
            why = (
                "forced (Rebuild)"
                if force
                else "other bytes"
                if doc.content_hash != f.content_hash
                else "other chunking or extractor settings"
                if doc.settings_key != self._key
                else "marked stale: read again"
                if (doc.metadata or {}).get("stale")
                else "encrypted: tried again with the collection's password"
            )
            summary["changed"].append(record(cp, f.file_path, None, why))

    def _in_flight(self) -> list[tuple[str, float]]:
        """The files being read now (in the workers and in this process) and since when."""
        out: dict[str, float] = {}
        pool = self._pool
        for path, since in pool.running() if pool is not None else []:
            label = self._labels.get(path, path)
            out[label] = min(since, out.get(label, since))
        if self._reading is not None:
            label, since = self._reading
            out[label] = min(since, out.get(label, since))
        return list(out.items())

    def _extract_pool(self, todo: list[HashedFile]) -> ExtractPool:
        """An ``ExtractPool`` told to extract ahead the first file of each duplicate key
        that passes the limits (a file over a limit is never extracted)."""
        from engine.extract.limits import check_limits
        from engine.index.pool import ExtractPool, worker_count

        settings = self._ctx.settings

        def admitted(f: HashedFile) -> bool:
            try:
                check_limits(f.path, f.size_bytes, f.suffix, self._limits, pdf_pages=False)
            except Exception:  # refused or unreadable: _extract reports it, in this process
                return False
            return True

        pool = ExtractPool(worker_count(settings.extract_workers), self._ocr)
        pool.max_pages = self._limits.max_pages  # checked on the document each worker opens
        if self._takes_rows():  # workers chunk and build the rows too: this process only writes
            pool.chunking = (settings.chunk_size, settings.chunk_overlap)
        if pool.workers > 1:
            firsts = {id(f) for f in {self._cache_key(f): f for f in reversed(todo)}.values()}
            pool.prefetch(
                (str(Path(f.path)), self._password(f), f.size_bytes, f.content_hash)
                for f in todo
                if id(f) in firsts and admitted(f)
            )
        return pool

    def prepare(
        self,
        f: HashedFile,
        cache: dict[_Key, ExtractedText | ReadyText | ExtractError] | None = None,
        remaining: dict[_Key, int] | None = None,
    ) -> Prepared:
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
                same = (st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (
                    f.size_bytes,
                    f.mtime_ns,
                    f.ctime_ns,
                ) and file_hash(f.path) == f.content_hash
                if same:
                    return self._prepared(f, outcome)
                if attempt == 1:
                    break
                # changed since it was hashed: extract once more from the new bytes
                f = dataclasses.replace(
                    f,
                    content_hash=file_hash(f.path),
                    size_bytes=st.st_size,
                    mtime_ns=st.st_mtime_ns,
                    ctime_ns=st.st_ctime_ns,
                )
            except OSError as e:
                return Prepared(f, "skipped", read_code(e), f"cannot read after extraction: {e.strerror or e}")
            outcome = self._extract(f)
        return Prepared(
            f,
            "skipped",
            "changed-during-read",
            "the file changed while it was read (size, mtime or hash moved); the next run retries",
        )

    def _extract(self, f: HashedFile) -> ExtractedText | ReadyText | ExtractError:
        """``_read`` of ``f``, named in flight meanwhile; a read in this process stops at a
        page once the run is cancelled (``RunCancelled`` goes up)."""
        ctx = self._ctx
        self._reading = (f"{f.collection.collection_path}/{f.file_path}", time.monotonic())
        try:
            if ctx.progress is not None:
                ctx.progress.tick()  # the file is named in flight from its start
            with interruptible(ctx.tick):
                return self._read(f)
        finally:
            self._reading = None

    def _read(self, f: HashedFile) -> ExtractedText | ReadyText | ExtractError:
        from engine.extract import extract
        from engine.extract.limits import check_limits

        try:
            # a PDF's page count is checked by the extractor on the document it opens (one open)
            check_limits(f.path, f.size_bytes, f.suffix, self._limits, pdf_pages=False)
            if self._pool is not None:  # engine.index.pool: the same outcome, maybe from a worker
                # the pool carries OCR, max_pages and the chunk settings
                return self._pool.extract(Path(f.path), self._password(f), f.content_hash)
            max_pages = self._limits.max_pages if f.suffix == ".pdf" else 0
            return extract(Path(f.path), self._password(f), self._ocr, max_pages=max_pages)
        except ExtractError as e:
            return e
        except RunCancelled:
            raise
        except OSError as e:
            return ExtractError("unreadable", f"cannot read: {e.strerror or e}")
        except Exception as e:  # a library bug on one file must not stop the run
            log.exception("extracting %s failed", f.path)
            return ExtractError("extractor-error", f"extractor error: {type(e).__name__}: {e}")

    def _prepared(self, f: HashedFile, outcome: ExtractedText | ReadyText | ExtractError) -> Prepared:
        # the row builders only once a file was read: an unchanged run never imports them
        from engine.index.rows import ReadyText, RowChunks, chunk_rows

        settings = self._ctx.settings
        size, overlap = settings.chunk_size, settings.chunk_overlap
        ready = None
        if isinstance(outcome, ReadyText):  # chunk rows built by an extract worker
            ready, outcome = outcome, outcome.extracted
            if (ready.content_hash, ready.size, ready.overlap) != (f.content_hash, size, overlap):
                raise ValueError(f"chunk rows of {f.file_path!r} were built for other bytes or settings")
        cp = f.collection.collection_path
        base: dict[str, Any] = dict(
            collection_path=cp,
            file_path=f.file_path,
            content_hash=f.content_hash,
            settings_key=self._key,
            size_bytes=f.size_bytes,
            last_modified=f.last_modified,
            indexed_at=time.time(),
        )
        if (
            isinstance(outcome, ExtractedText)
            and outcome.file_type == "pdf"
            and not outcome.pages
            and outcome.metadata.get("repaired")
        ):
            outcome = ExtractError("corrupt", "corrupt: truncated or damaged PDF (MuPDF repaired it to 0 pages)")
        if isinstance(outcome, ExtractedText) and outcome.metadata.get("ocrUnavailable"):
            # OCR could not run (no language data): OCR text stored before for these
            # bytes is kept, stale with the reason, rather than replaced by less
            old = self._ctx.store.get_document(cp, f.file_path)
            if old is not None and old.content_hash == f.content_hash and (old.metadata or {}).get("ocrPages"):
                return Prepared(f, "stale", "ocr-unavailable", outcome.metadata["ocrUnavailable"]["reason"])
        if isinstance(outcome, UnsupportedFileError):
            return Prepared(f, "skipped", outcome.run_code, outcome.reason, drop=True)
        if isinstance(outcome, ExtractError) and outcome.run_code in ("too-large", "unreadable"):
            return Prepared(f, "skipped", outcome.run_code, outcome.reason)
        if isinstance(outcome, ExtractError):
            meta: dict[str, Any] = {"code": outcome.run_code, "reasonCode": outcome.code}
            if isinstance(outcome, EncryptedError):
                meta.update(encrypted=True, passwordKey=_password_key(self._password(f), f.content_hash))
            doc = Document(
                **base, file_type=f.suffix.lstrip("."), status="failed", reason=outcome.reason, metadata=meta
            )
            return Prepared(f, "failed", outcome.run_code, outcome.reason, doc)
        ex = outcome
        meta = dict(ex.metadata)
        if f.aliases:
            meta["aliases"] = list(f.aliases)
        if ex.notes:
            meta["notes"] = list(ex.notes)
        if not ex.text.strip():  # empty means empty: no chunk for whitespace
            reason = "; ".join(ex.notes) or "no text"
            meta["reasonCode"] = ex.metadata.get("reasonCode") or "no-text"
            doc = Document(
                **base, file_type=ex.file_type, status="empty", reason=reason, page_count=len(ex.pages), metadata=meta
            )
            return Prepared(f, "empty", None, reason, doc)
        meta.pop("reasonCode", None)  # a document with text has no reason code
        text = ex.text
        chunks: Sequence[Chunk]
        if ready is not None:  # rows built by a worker
            chunks = RowChunks(f, text, ready.rows)
        elif self._takes_rows() and ex.file_type == "pdf" and not ex.metadata.get("ocrPages"):
            # the SQLite store: a PDF's rows made here without a Bbox/Region per line (smaller
            # than its windows); other files stream their rows from the windows below
            chunks = RowChunks(f, text, chunk_rows(ex, f.content_hash, size, overlap))
        else:  # read here (or joined from page ranges): Chunk values made on demand
            labels = {p.number: p.label for p in ex.pages if p.label}
            with gc_paused():  # thousands of acyclic boxes and windows: nothing for the collector
                windows = chunk_text(ex, size, overlap)
            ocr_pages = {int(k): v for k, v in (ex.metadata.get("ocrPages") or {}).items()}
            chunks = LazyChunks(f, text, windows, labels, ocr_pages)
        doc = Document(
            **base,
            file_type=ex.file_type,
            status="indexed",
            reason="; ".join(ex.notes) or None,
            page_count=len(ex.pages),
            chunk_count=len(chunks),
            text_length=len(text),
            summary=text[:SUMMARY_CHARS],
            metadata=meta,
        )
        return Prepared(f, "indexed", None, doc.reason, doc, text, chunks)

    def _takes_rows(self) -> bool:
        """True when the store takes ready chunk rows (``engine.index.rows``; the SQLite store)."""
        return bool(self._ctx.store.takes_chunk_rows)

    # -- the store ---------------------------------------------------------------------
    def commit(self, group: list[Prepared]) -> None:
        """Write a group of outcomes in one store batch (retried while the writer
        lock is busy), then count them in the run's summary.

        Raises:
            StoreBusyError: the writer lock stayed busy for ``lock_wait_s``.
        """
        ctx = self._ctx

        def write() -> None:
            with ctx.store.batch(), gc_paused():  # chunk rows are acyclic: no collector passes
                for p in group:
                    self._store_one(p)

        ctx.retrying(write)
        for p in group:
            cp, fp = p.file.collection.collection_path, p.file.file_path
            ctx.add(p.kind, record(cp, fp, p.code, p.reason or ""))
            if p.kind == "indexed":
                ctx.summary["indexed"] += 1
                ctx.summary["chunksWritten"] += len(p.chunks)

    def _store_one(self, p: Prepared) -> None:
        store = self._ctx.store
        cp, fp = p.file.collection.collection_path, p.file.file_path
        if p.drop:
            if store.get_document(cp, fp) is not None:
                store.remove_document(cp, fp)
            return
        if p.document is None:
            old = store.get_document(cp, fp)
            if old is not None and p.code == "gone":  # vanished since the walk: really gone
                store.remove_document(cp, fp)
            elif old is not None and p.code:  # kept, marked stale with the reason
                self._ctx.mark_stale(old, p.code, p.reason or "")
            return
        doc = p.document
        if self._ctx.settings.stat_gate:  # the stat pre-gate's record (engine.index.gate.stat_unchanged)
            f = p.file
            doc = dataclasses.replace(
                doc, metadata={**(doc.metadata or {}), STAT_KEY: stat_mark(f.size_bytes, f.mtime_ns, f.ctime_ns)}
            )
        store.replace_document(doc, p.text, cast("list[Chunk]", p.chunks))  # a Sequence the stores iterate


def _password_key(password: str | None, content_hash: str) -> str:
    """Which password a failed encrypted file was tried with: a per-file salted
    digest (the password itself is never stored)."""
    return hashlib.sha256(f"{content_hash}\0{password or ''}".encode("utf-8")).hexdigest()[:16]
