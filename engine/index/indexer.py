"""The indexing service: walk collection roots, hash-gate, extract, chunk, store, embed.

Owns: one index run (DESIGN.md "Indexing"): every entry the walk reports
ends indexed, unchanged, failed or skipped with a reason code
(``engine.errors.ReasonCode``); documents whose file cannot be read this
time kept and marked stale, only files really gone (ENOENT) removed; cancel
at a file boundary; the run record saved at the start and at the end
(``engine.index.runs``); and ``repair_orphans``.

``Indexer.run`` builds a ``RunContext`` (``engine.index.context``: store,
settings, summary, cancel flag, progress) and hands it to three passes, each
an object with its own state: ``WalkPass`` (``engine.index.walk_pass``: walk,
classify, hash, settle the documents not indexed this time), ``TextPass``
(``engine.index.text_pass``: the hash gate, extraction once per duplicate
content and extractor, the re-check after extraction, chunking, commits in
groups retried while the writer lock is busy) and ``EmbedPass``
(``engine.index.embed_pass``: chunks without a vector for the current
model). The per-file seam is ``Indexer.prepare(f)`` (one hashed file -> a
``Prepared`` outcome, no store write) and ``Indexer.commit(group)`` (a group
of outcomes in one store batch). The summary's shape is documented in
``engine.index.runs``. Imports ``engine.index.*``, ``engine.extract``,
``engine.paths`` and ``engine.values``; never a face (streamlit, mcp,
argparse). The embedder is passed in.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from engine.config import Settings
from engine.errors import DiskFullError, RunCancelled, StoreBusyError, StoreFaultError
from engine.extract.limits import Limits
from engine.extract.ocr import OcrSettings
from engine.index.context import RunContext
from engine.index.progress import RunProgress
from engine.index.embed_pass import EmbedPass
from engine.index.files import HashedFile, Prepared
from engine.index.gate import file_hash
from engine.index.runs import kept_phrase, new_summary, running_here, space_needed
from engine.index.text_pass import SUMMARY_CHARS, TextPass
from engine.index.walk_pass import WalkPass, walk
from engine.paths import document_path, resolve_inside
from engine.values import Collection

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
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.limits = Limits.of(settings)
        self._ocr = OcrSettings(settings.ocr, settings.ocr_languages, settings.ocr_dpi)

    def run(
        self,
        collections: list[str] | None = None,
        force: bool = False,
        on_progress: Callable[[dict], None] | None = None,
        cancel: threading.Event | None = None,
        keep_missing: bool | None = None,
    ) -> dict:
        """Index the given collections (None: all) and return the summary.

        Args:
            collections: collection paths to walk; None walks every collection.
            force: re-extract and re-store every file, ignoring the hash gate.
            on_progress: called with ``{"phase": "walk"|"hash"|"extract"|"embed"|"done",
                "done", "total", "file", "elapsedS"}``: files found (walk, total 0),
                files hashed (hash, also ``bytesHashed``/``bytesTotal``), files
                (extract, also ``bytesDone``/``bytesTotal``), chunks (embed, after every
                model batch, also ``chunksPerS``, ``leftS`` and ``model``; see
                ``engine.index.embed_pass.embed_pass``); each with what
                ``engine.index.progress`` adds (``phases``, ``fraction``, ``inFlight``,
                ``etaS``). Every chunk is committed, and found by keyword search, before
                the first embed event.
            cancel: when set, the run stops within seconds: the files being read
                are abandoned (a read here stops at its next page, the workers
                are killed), what was committed stays, and the run ends
                ``cancelled``. Set once nothing is left to abandon (the last
                commit or embedding batch), the run ends ``finished`` with
                ``cancelRequested: true`` and a ``message`` saying so.
            keep_missing: keep documents whose file is gone, marked ``missing``
                (None: ``settings.keep_missing``).

        Returns:
            The summary dict (``engine.index.runs``), saved with ``store.save_run``
            at the start (``running``) and at the end. Per-file outcomes, the
            embedding failure and a writer lock that stayed busy are data in it.

        Raises:
            IndexBusyError: another run holds the index lock.
            ValueError: a named collection does not exist.
        """
        started = time.time()
        keep = self.settings.keep_missing if keep_missing is None else keep_missing
        cancel = cancel if cancel is not None else threading.Event()

        def sink(snapshot: dict) -> None:
            if on_progress is not None:
                on_progress(snapshot)
            ctx.save_progress(snapshot)

        progress = RunProgress(sink)
        ctx = RunContext(
            self.store, self.settings, emit=progress.update, cancel=cancel, progress=progress, keep_missing=keep
        )
        emit = progress.update
        with self.store.index_lock():
            targets = self._targets(collections)
            summary = ctx.summary = new_summary(force, [c.collection_path for c in targets], _iso(started))
            try:
                ctx.retrying(lambda: self.store.save_run(summary))
                with running_here(summary["runId"], cancel):
                    self._passes(ctx, targets, force)
                summary["status"] = "finished"
                if ctx.cancelled():  # asked during the last commit: nothing was left to abandon
                    summary["cancelRequested"] = True
                    summary["message"] = (
                        "a stop was requested while the last file was being read or "
                        "written (or the last embedding batch ran): nothing was left to "
                        "abandon, so the run finished and is recorded finished"
                    )
            except RunCancelled:
                summary["status"] = "cancelled"
                summary["cancelRequested"] = True
                summary["message"] = (
                    "cancelled: the files being read were abandoned; everything counted here is "
                    "committed; run again to finish"
                )
                log.info("index run cancelled; committed work is kept")
            except StoreFaultError as e:  # disk full, database lost, lock held too long: one classified line
                summary["status"] = "stopped"
                summary["error"] = {"error": e.code, "message": f"{e}; {kept_phrase(summary)}"}
                # -v shows it (with where it came from, but for a lock that stayed busy); the face says it once
                log.info("index run stopped: %s", e, exc_info=not isinstance(e, StoreBusyError))
            except BaseException as e:  # a bug, a second Ctrl-C: record how it ended, then raise
                summary["status"] = "cancelled" if isinstance(e, KeyboardInterrupt) else "stopped"
                summary["message"] = f"the run ended on {type(e).__name__}: {e}"
                self._finish(ctx)
                raise
            self._finish(ctx)
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

    def plan(self, collections: list[str] | None = None, force: bool = False, keep_missing: bool | None = None) -> dict:
        """What ``run`` with the same arguments would do now, with nothing written.

        The walk, the classification, the hash (and stat pre-gate), the settling of
        stored documents (stale, moved, missing, removed) and the text pass's gate run
        as in a run, on a ``RunContext`` with ``dry_run``: no mark, removal, move,
        extraction, embedding or run record; no index lock is taken (a run may hold it).

        Returns:
            A summary (``engine.index.runs``) with ``status: "planned"`` and, besides its
            lists, ``added`` and ``changed`` (files the run would read) and
            ``unchangedFiles``. A file listed added or changed may still end failed,
            empty or skipped in the run: only reading it tells.

        Raises:
            ValueError: a named collection does not exist.
        """
        started = time.time()
        keep = self.settings.keep_missing if keep_missing is None else keep_missing
        ctx = RunContext(self.store, self.settings, dry_run=True, keep_missing=keep)
        targets = self._targets(collections)
        summary = ctx.summary = new_summary(force, [c.collection_path for c in targets], _iso(started))
        summary.update(status="planned", keepMissing=keep, added=[], changed=[], unchangedFiles=[])
        walker = WalkPass(ctx, self.limits)
        files = walker.scan(targets)
        TextPass(ctx, self.limits, self._ocr).plan(files, force, walker.current)
        summary["seconds"] = ctx.elapsed_s()
        return summary

    def _passes(self, ctx: RunContext, targets: list[Collection], force: bool) -> None:
        """Walk, text and embed passes of one run (``RunCancelled`` ends them)."""
        ctx.summary["orphansRemoved"] = repair_orphans(self.store)
        walker = WalkPass(ctx, self.limits)
        files = walker.scan(targets)
        self._check_space(files, walker.current, force)
        TextPass(ctx, self.limits, self._ocr).run(files, force, walker.current)
        self._tidy_keywords(ctx)
        if self.embedder is not None:
            EmbedPass(ctx, self.embedder).run()

    # -- the per-file seam, outside a run --------------------------------------------
    def prepare(self, f: HashedFile, cache: dict | None = None, remaining: dict | None = None) -> Prepared:
        """One hashed file -> its ``Prepared`` outcome, with no store write
        (``TextPass.prepare``: limits, extraction, re-check, chunks; ``cache`` and
        ``remaining`` share one extraction among duplicate files)."""
        return self._text_pass(RunContext(self.store, self.settings)).prepare(f, cache, remaining)

    def commit(self, group: list[Prepared], summary: dict) -> None:
        """Write a group of outcomes in one store batch and count them in ``summary``
        (``TextPass.commit``).

        Raises:
            StoreBusyError: the writer lock stayed busy for ``lock_wait_s``.
        """
        self._text_pass(RunContext(self.store, self.settings, summary)).commit(group)

    def _text_pass(self, ctx: RunContext) -> TextPass:
        return TextPass(ctx, self.limits, self._ocr)

    # -- helpers -------------------------------------------------------------------
    def _finish(self, ctx: RunContext) -> None:
        """Stamp the end of the run and save its record (a longer wait than one write)."""
        summary = ctx.summary
        summary["seconds"] = ctx.elapsed_s()
        summary["finishedAt"] = _iso(time.time())
        try:
            ctx.retrying(lambda: self.store.save_run(summary), ctx.lock_wait_s() + 10.0)
        except StoreFaultError as e:  # the first cause stays the run's error; the record is said unsaved
            summary["summarySaved"] = False
            note = f"this run's summary was not saved ({e.code}: {e})"
            if summary["error"]:
                summary["error"]["message"] += f"; {note}"
            else:
                summary["error"] = {"error": e.code, "message": note}
            log.info("the run summary could not be saved: %s", e)
        except Exception:  # the store itself is broken: the original outcome matters more
            summary["summarySaved"] = False
            log.exception("the run summary could not be saved")

    def _check_space(self, files: list[HashedFile], current: set[tuple[str, str]], force: bool) -> None:
        """Before any file is read: stop when the disk holding the index has less room than the
        run may need at its peak (``runs.space_needed`` of the files the hash gate will not pass
        over); a store that cannot say (Postgres: the server's disk) is not checked.

        Raises:
            DiskFullError: not enough room; the message says how much is free and needed.
        """
        free = self.store.free_bytes()
        if free is None:
            return
        todo = [
            (f.suffix, f.size_bytes)
            for f in files
            if force or (f.collection.collection_path, f.file_path) not in current
        ]
        need = space_needed(todo)
        if need > free:
            raise DiskFullError(
                f"the disk holding the index has {_mb(free)} free and this run may need about {_mb(need)} "
                f"at its peak for {len(todo)} files to read ({_mb(sum(s for _, s in todo))}; "
                "docs/operations.md): free space there first"
            )

    def _tidy_keywords(self, ctx: RunContext) -> None:
        """After a text pass that wrote chunks, let the store merge its keyword index
        (``tidy_keyword_index``, SQLite only: FTS5 segments; cheaper keyword searches).
        A busy writer lock only skips it (logged): the next run tries again."""
        tidy = self.store.tidy_keyword_index
        written = int(ctx.summary.get("chunksWritten") or 0)
        if written <= 0:
            return
        try:
            ctx.retrying(lambda: tidy(written))
        except StoreBusyError as e:
            log.warning("keyword index not merged this run: %s", e)

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


def _mb(n: int) -> str:
    """``n`` bytes for people: ``"12.3 MB"``."""
    return f"{n / 1e6:,.1f} MB"


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat(timespec="seconds")
