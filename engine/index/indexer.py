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
end (``engine.index.runs``); the embedding pass over chunks without a vector for
the current model. Imports ``engine.extract``, ``engine.chunk``,
``engine.store``, ``engine.index.walk``, ``engine.index.runs`` and ``engine.values``;
never a face (streamlit, mcp, argparse). The embedder is passed in.

The per-file pipeline has one seam: ``Indexer.prepare(f)`` turns one hashed
file into a ``Prepared`` outcome (guard, extract, re-check, chunk: no store
writes, so it may run elsewhere), and ``Indexer.commit(group)`` writes a
group of outcomes in one store batch. The summary's shape is documented in
``engine.index.runs``.

Split by noun (STYLE.md: modules under ~600 lines): the walk, hash and
settling of unindexed documents live in ``engine.index.walk_pass`` (``WalkPass``,
``file_hash``, ``walk``), the text pass (gate, ``prepare``, ``commit``) in
``engine.index.text_pass`` (``TextPass``, ``SUMMARY_CHARS``, ``BATCH_SECONDS``),
the embedding pass in ``engine.index.embed_pass``. ``Indexer`` combines them; this
module keeps the run itself (``Indexer.run``, targets, retries, the run
record) and ``repair_orphans``, and re-exports the public moved names
(``walk``, ``file_hash``, ``SUMMARY_CHARS``).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from engine.config import Settings
from engine.errors import RunCancelled, StoreBusyError
from engine.index.text_pass import SUMMARY_CHARS, TextPass
from engine.index.walk_pass import WalkPass, file_hash, walk
from engine.values import Collection
from engine.index.files import Prepared
from engine.paths import document_path, resolve_inside
from engine.index.runs import new_summary

if TYPE_CHECKING:
    from engine.store.base import Store

__all__ = [
    "Indexer",
    "Prepared",
    "repair_orphans",
    "walk",
    "file_hash",
    "document_path",
    "resolve_inside",
    "SUMMARY_CHARS",
]

log = logging.getLogger(__name__)


def repair_orphans(store: Store) -> int:
    """Drop documents and chunks whose collection is gone (a remove that raced a
    run): the store's ``repair_orphans``.

    Returns:
        The number of collection paths whose rows were removed.
    """
    return int(store.repair_orphans())


class Indexer(WalkPass, TextPass):
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
        self._current: set[tuple[str, str]] = set()  # files the walk found unchanged, this run only (WalkPass)
        self._cancel: threading.Event | None = None

    def run(
        self,
        collections: list[str] | None = None,
        force: bool = False,
        on_progress: Callable[[dict], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> dict:
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
                Set while the last file is read or written (or the last batch runs), no boundary is left:
                the run ends ``finished`` with ``cancelRequested: true`` and a
                ``message`` saying so.

        Returns:
            The summary dict (``engine.index.runs``), saved with ``store.save_run``
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
                self._tidy_keywords(summary)
                if self.embedder is not None:
                    self._embed_pass(summary, emit, t0)
                summary["status"] = "finished"
                if cancel is not None and cancel.is_set():  # asked during the last file: nothing was left
                    summary["cancelRequested"] = True
                    summary["message"] = (
                        "a stop was requested while the last file was being read or "
                        "written (or the last embedding batch ran): no file boundary was "
                        "left to stop at, so the run finished and is recorded finished"
                    )
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
            emit(
                {
                    "phase": "done",
                    "done": summary["filesSeen"],
                    "total": summary["filesSeen"],
                    "file": "",
                    "elapsedS": summary["seconds"],
                    "status": summary["status"],
                }
            )
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

    def _tidy_keywords(self, summary: dict) -> None:
        """After a text pass that wrote chunks, let the store merge its keyword index
        (``tidy_keyword_index``, SQLite only: FTS5 segments; cheaper keyword searches).
        A busy writer lock only skips it (logged): the next run tries again."""
        tidy = self.store.tidy_keyword_index
        written = int(summary.get("chunksWritten") or 0)
        if written <= 0:
            return
        try:
            self._retrying(lambda: tidy(written))
        except StoreBusyError as e:
            log.warning("keyword index not merged this run: %s", e)

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
                        f"{self._lock_wait_s():g} s)"
                    ) from None
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

    # -- the embedding pass ---------------------------------------------------------------
    def _embed_pass(self, summary: dict, emit: Callable[[dict], None], t0: float) -> None:
        """Embed chunks without a vector for the embedder's model; failures become data
        (``engine.index.embed_pass.embed_pass``: length order, reuse by window text,
        one bad input isolated, a changed dimension classified; the cancel check
        runs before each batch and store writes retry while the writer lock is busy)."""
        from engine.index.embed_pass import embed_pass

        embed_pass(
            self.store,
            self.embedder,
            self.settings.embed_batch,
            summary,
            emit,
            t0,
            check=self._check_cancel,
            write=self._retrying,
        )


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat(timespec="seconds")
