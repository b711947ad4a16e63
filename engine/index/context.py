"""What one index run shares: settings, store, summary, cancel flag and progress.

Owns: ``RunContext``, handed by ``engine.index.indexer.Indexer`` to each pass
(``engine.index.walk_pass.WalkPass``, ``engine.index.text_pass.TextPass``,
``engine.index.embed_pass.EmbedPass``): the cancel check at a file boundary,
store writes retried while the writer lock is busy, the count of each file
outcome in the summary, progress events, and the stale mark a stored
document carries while its file cannot be read. Cancel comes from the run's
own event (a face in this process) or from a request written into the
running run record by another process (``engine.index.runs.request_cancel``:
the ``cancel_index`` tool), read at most every ``POLL_S``; ``tick`` is the
check a long wait or a long read calls (a worker's file, a PDF's pages), and
it also saves the run's progress into its record every ``SAVE_PROGRESS_S``
(what ``chunknav status`` of another process shows). Imports
``engine.errors``, ``engine.values``, ``engine.config`` and
``engine.index.progress`` only; no face, no extractor.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from engine.config import Settings
from engine.errors import RunCancelled, StoreBusyError
from engine.index.progress import RunProgress
from engine.values import Document

if TYPE_CHECKING:
    from engine.store.base import Store

__all__ = ["RunContext", "Progress"]

log = logging.getLogger(__name__)

#: A progress callback: one event dict (``Indexer.run`` documents the keys).
Progress = Callable[[dict[str, Any]], None]

_T = TypeVar("_T")

#: Seconds between two reads of the run record for a cancel request from another process.
POLL_S = 0.5
#: Seconds between two saves of the run's progress into its record.
SAVE_PROGRESS_S = 2.0
#: Seconds between two progress snapshots handed on while a long file is read.
TICK_S = 0.5
#: Entries of each file list kept in a progress save (the final save keeps all).
_LISTED_IN_PROGRESS = 20


def _no_progress(_event: dict[str, Any]) -> None:
    return None


@dataclass
class RunContext:
    """One run's shared state; each pass keeps its own state beside it.

    Attributes:
        store: the index (any ``Store``).
        settings: the validated settings of the run.
        summary: the run summary (``engine.index.runs``), updated in place.
        emit: progress callback.
        t0: ``time.perf_counter()`` at the start of the run (for ``elapsedS``).
        cancel: when set, the run stops at the next file boundary.
        dry_run: plan only (``Indexer.plan``): every decision is made and counted as in
            a run, and nothing is written (no mark, no removal, no move, no run record).
        keep_missing: documents whose file is gone are kept, marked ``missing``,
            instead of removed.
        cancel: when set, the run stops at the next file boundary (or, with
            ``tick``, inside a long read).
        progress: the run's one progress (``engine.index.progress``), or None.
    """

    store: Store
    settings: Settings
    summary: dict[str, Any] = field(default_factory=dict)
    emit: Progress = _no_progress
    t0: float = field(default_factory=time.perf_counter)
    cancel: threading.Event | None = None
    dry_run: bool = False
    keep_missing: bool = False
    progress: RunProgress | None = None
    _polled: float = 0.0
    _saved: float = 0.0
    _ticked: float = 0.0

    def elapsed_s(self) -> float:
        """Seconds since ``t0``, rounded to ms (the ``elapsedS`` of progress events)."""
        return round(time.perf_counter() - self.t0, 3)

    def check_cancel(self) -> None:
        """Raise ``RunCancelled`` when a cancel was requested (called at file boundaries):
        the run's event, or a request in its run record (read at most every ``POLL_S``)."""
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled("cancel requested")
        now = time.monotonic()
        if now - self._polled >= POLL_S and self.summary.get("status") == "running":
            self._polled = now
            if self._requested_elsewhere():
                self.summary["cancelRequested"] = True
                if self.cancel is None:
                    self.cancel = threading.Event()
                self.cancel.set()
                raise RunCancelled("cancel requested by another process")

    def cancelled(self) -> bool:
        """True once a cancel was requested (without raising, without reading the store)."""
        return self.cancel is not None and self.cancel.is_set()

    def tick(self) -> None:
        """The check of a long wait or read: ``check_cancel``, then fresh progress
        (``inFlight`` seconds) at most every ``TICK_S`` and a progress save."""
        self.check_cancel()
        now = time.monotonic()
        if self.progress is not None and now - self._ticked >= TICK_S:
            self._ticked = now
            self.progress.tick()

    def _requested_elsewhere(self) -> bool:
        """True when this run's record carries ``cancelRequested`` (written by another process)."""
        try:
            run = self.store.last_run()
        except Exception:  # the store is busy or broken: the next poll asks again
            log.debug("cancel poll failed", exc_info=True)
            return False
        return bool(run and run.get("runId") == self.summary.get("runId") and run.get("cancelRequested"))

    def save_progress(self, snapshot: dict[str, Any], force: bool = False) -> None:
        """Save the running record with ``progress`` (at most every ``SAVE_PROGRESS_S``; its
        file lists cut to their first entries). A busy or broken store skips one save."""
        now = time.monotonic()
        if self.summary.get("status") != "running" or (not force and now - self._saved < SAVE_PROGRESS_S):
            return
        self._saved = now
        record = {
            k: (v[:_LISTED_IN_PROGRESS] if isinstance(v, list) and k != "collections" else v)
            for k, v in self.summary.items()
        }
        record["progress"] = {k: v for k, v in snapshot.items() if k != "status"}
        try:
            self.store.save_run(record)
        except Exception:  # progress is a courtesy: the run goes on
            log.debug("progress not saved", exc_info=True)

    def lock_wait_s(self) -> float:
        """Seconds a busy writer lock is retried (``settings.lock_wait_s``)."""
        return float(getattr(self.settings, "lock_wait_s", 0.0))

    def retrying(self, write: Callable[[], _T], wait_s: float | None = None) -> _T:
        """Run ``write``; while the store says its writer lock is busy, retry
        with exponential backoff (0.05 s doubling to 5 s) for up to ``wait_s``
        (default ``settings.lock_wait_s``) seconds.

        Raises:
            StoreBusyError: the lock stayed busy for ``wait_s``; the message names the setting.
        """
        wait_s = self.lock_wait_s() if wait_s is None else wait_s
        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:
            try:
                return write()
            except StoreBusyError as e:
                if time.monotonic() + delay > deadline:
                    raise StoreBusyError(
                        f"{e}; gave up after {wait_s:g} s (lock_wait_s, CHUNKNAV_LOCK_WAIT_S = "
                        f"{self.lock_wait_s():g} s)"
                    ) from None
                log.info("writer lock busy, retrying in %.2f s", delay)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def add(self, kind: str, entry: dict[str, Any]) -> None:
        """Count one file outcome (``kind``: indexed/empty/unchanged/failed/skipped/stale/removed/missing)
        and list ``entry`` (``engine.index.runs.record``) where the summary lists that kind."""
        summary = self.summary
        summary["counts"][kind] += 1
        key = {
            "failed": "failed",
            "skipped": "skippedFiles",
            "empty": "empty",
            "stale": "stale",
            "removed": "removedFiles",
            "missing": "missing",
        }.get(kind)
        if key:
            summary[key].append(entry)
            if kind == "skipped" and entry.get("code") == "unsupported-type":
                summary["unsupported"].append(entry)

    def kept_failed(self, doc: Document) -> None:
        """List a failed document an earlier run left, unchanged since (``failedKept``:
        the file still fails; the run's exit code stays non-zero for it)."""
        meta = doc.metadata or {}
        self.summary.setdefault("failedKept", []).append(
            {
                "collectionPath": doc.collection_path,
                "filePath": doc.file_path,
                "code": meta.get("code") or meta.get("reasonCode"),
                "reason": doc.reason or "",
            }
        )

    def unskip(self, collection_path: str, file_path: str) -> None:
        """Take back the ``skipped`` count of one file (it is counted ``stale`` instead)."""
        summary = self.summary
        for key in ("skippedFiles", "unsupported"):
            kept = [e for e in summary[key] if (e["collectionPath"], e["filePath"]) != (collection_path, file_path)]
            if key == "skippedFiles":
                summary["counts"]["skipped"] -= len(summary[key]) - len(kept)
            summary[key] = kept

    def mark_stale(self, doc: Document, code: str, message: str) -> None:
        """Keep the document, its chunks and vectors; note why its file was not read
        (``metadata.stale``: code, reason, since). A mark with the same code is kept as is."""
        if (doc.metadata or {}).get("stale", {}).get("code") == code:
            return  # already marked: no rewrite
        stale = {"code": code, "reason": message, "since": time.time()}
        self._set_metadata(doc, {**(doc.metadata or {}), "stale": stale})

    def clear_stale(self, doc: Document) -> None:
        """Drop the stale mark of a document whose file is readable again and unchanged."""
        self._set_metadata(doc, {k: v for k, v in (doc.metadata or {}).items() if k != "stale"})

    def write(self, action: Callable[[], _T]) -> _T | None:
        """Run a store write with ``retrying``; in a dry run, nothing (None)."""
        if self.dry_run:
            return None
        return self.retrying(action)

    def _set_metadata(self, doc: Document, meta: dict[str, Any]) -> None:
        """Write ``doc``'s new metadata with the store's ``set_document_metadata`` (one row on
        SQLite and Postgres; ``StoreBase`` rewrites the document for a store without it). See
        docs/decisions/stale-marks.md for why one row is written, not the document."""
        cp, fp = doc.collection_path, doc.file_path
        self.write(lambda: self.store.set_document_metadata(cp, fp, meta))
