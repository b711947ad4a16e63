"""Extraction in worker processes: files extracted ahead, on every core, while one writer stores.

Owns: ``ExtractPool``, a narrow seam between the indexer and ``engine.extract``:
the indexer names the files it will extract, in order (``prefetch``), then
asks for each outcome (``extract``), which is exactly what
``engine.extract.extract`` would return or raise in this process. Workers
are forked (``multiprocessing`` "fork": no re-import of ``__main__``, a few
milliseconds each), and only from a process running a single thread (the
CLI). A PDF of at least ``SPLIT_MIN_BYTES`` is read in ``workers`` page
ranges, one per worker (``engine.extract.pdf.extract_pdf_part``), so one large
file does not leave a core idle; the ranges are joined (``merge_pdf_parts``:
the same ``ExtractedText`` as one read) here, or, with ``chunking`` set, in the
worker that reads the last range (ranges pickled to a temp dir,
``_extract_part_in_worker``).

With ``chunking`` set (the indexer does, for a store that takes ready rows:
``engine.index.rows``), a file named with its content hash comes back chunked:
a ``ReadyText`` whose chunk rows (chunk ids, JSON of boxes and regions) were
built in the worker, so the indexer's process only writes the store.

Tasks are handed out ahead of the indexer, at most ``AHEAD_TASKS x workers``
not yet collected and ``MAX_AHEAD_BYTES`` of input (a slow file must not stall
the workers while outcomes behind it wait), so memory stays bounded by a few
documents; in the order they will be asked, except that a PDF to read in page
ranges among the next ``AHEAD_TASKS x workers`` is handed out before its turn
(its join is then not left to end the run on one core) while enough files in
their turn are already handed out (``_next_key``).

Falls back to extracting in this process, cleanly: with ``workers`` 1 (the
``extract_workers`` setting), for runs too small to repay a pool start
(fewer than ``MIN_FILES`` files or ``MIN_POOL_BYTES`` bytes), in a process
with other threads running (the explorer runs the indexer in a thread), when
the pool cannot start, for a file asked out of order, and for a file on which the
worker raised something other than ``ExtractError`` (re-run here, so the
caller sees the real exception).

A worker that dies (a crash inside the PDF library, a kill by the kernel)
breaks the whole ``ProcessPoolExecutor``: every file in flight loses its
answer. Those files are then read again in a fresh pool, one at a time
(``_crashed``): the one that kills its worker alone gets
``ExtractError("extractor-error", "extractor error: worker process died (killed
by signal SIGSEGV) ...")``, the others their usual outcome. A file is read
again at most once; a file alone in flight when its worker dies is not read
again; after ``MAX_RESTARTS`` pool restarts in one run, the files in flight at
a crash fail without a retry (the pool still restarts). Who is blamed is the
pool's ``Recovery`` (``engine.index.recovery``); the pool restarts and queues.
A file that broke a pool is never read in this process (it would kill the
indexer); if no new pool can start, such files fail and the others are read here.

A paged file read in this process while OCR is on goes to one child process
instead (``engine.index.child``: a page's OCR takes seconds and cannot stop
between pages; the child can be killed). A run that is cancelled does not wait for its workers: a wait on a worker
calls ``check`` (the run's ``RunContext.tick``) every ``WAIT_TICK_S``, and
what it raises (``RunCancelled``) ends the wait; ``abandon`` then kills the
workers (the files they were reading are dropped, their temp files removed).
``running`` names the files being read in the workers and since when (the
run's ``inFlight`` progress).

Workers die with this process however it ends (``kill -9`` included), so none
is left holding its memory (``_die_with_parent``): on Linux the kernel kills
them when it ends (a parent-death signal), elsewhere each watches its parent.

Imports ``engine.extract`` (in the workers and for the fallback), ``engine.index.recovery``,
``engine.index.rows`` (in the workers, with ``chunking``) and ``engine.errors``;
no store connection, no embedder, no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from engine.errors import ExtractError
from engine.index.recovery import Recovery, how_they_died
from engine.values import ExtractedText

if TYPE_CHECKING:
    from engine.index.rows import ReadyText

__all__ = ["ExtractPool", "MIN_FILES", "MIN_POOL_BYTES", "SPLIT_MIN_BYTES", "MAX_AHEAD_BYTES", "worker_count"]

log = logging.getLogger(__name__)

#: A run with fewer files to extract than this stays in this process.
MIN_FILES = 3
#: A run with fewer bytes to extract than this stays in this process (a pool starts in ~0.2 s).
MIN_POOL_BYTES = 2_000_000

#: A PDF at least this large is read in page ranges, one per worker.
SPLIT_MIN_BYTES = 256 * 1024
#: Tasks handed to the workers ahead of the indexer, per worker (with ``MAX_AHEAD_BYTES``).
AHEAD_TASKS = 8
#: Input bytes handed to the workers ahead of the indexer (at least one file).
MAX_AHEAD_BYTES = 64 * 1024 * 1024
#: A file that is not a PDF counts this many times its size against ``MAX_AHEAD_BYTES``:
#: its extracted text with per-character provenance, waiting in this process, is about
#: ten times its bytes (16 text files of 1.1 MB ahead held ~190 MB), a PDF's far less.
TEXT_AHEAD_WEIGHT = 8

#: Seconds between two calls of ``check`` while waiting on a worker.
WAIT_TICK_S = 0.1

#: Seconds between a worker's checks that its parent lives, where no parent-death signal is armed.
PARENT_CHECK_S = 0.5
#: ``prctl`` option (Linux): the signal this process gets when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1

_Key = tuple[str, Any]


def worker_count(setting: int) -> int:
    """Worker processes for the ``extract_workers`` setting.

    0 (auto): one per core while the cores are free (1-minute load average
    below cores - 0.5, this process included), else 1: on a loaded machine a
    second worker finds no free core and only adds its start-up and transfer
    costs (measured here: +30% CPU, no wall-time gain at load 3-9 on 2 cores).
    Any other value is taken as given.
    """
    if setting > 0:
        return setting
    cores = max(1, os.cpu_count() or 1)
    try:
        busy = os.getloadavg()[0] >= cores - 0.5
    except OSError:
        busy = False
    return 1 if busy else cores


def _extract_in_worker(
    path: str, password: str | None, ocr: Any = None, max_pages: int = 0, rows: tuple[str, int, int] | None = None
) -> tuple[str, Any]:
    """Runs in a worker: ("ok", ExtractedText or ReadyText) | ("error", ExtractError) | ("bug", text).

    ``rows``: ``(content_hash, size, overlap)``: also chunk the text and build its
    chunk rows here (``engine.index.rows.ready_text``), so the indexer only writes;
    if that raises, the plain ``ExtractedText`` goes back and the indexer chunks it
    (and meets the same exception where it reports it)."""
    from engine.extract import extract

    try:
        ex = extract(Path(path), password, ocr, **_pages_kw(path, max_pages))
    except ExtractError as e:
        return "error", e
    except Exception as e:  # re-run in the parent, where the indexer logs it with its traceback
        return "bug", f"{type(e).__name__}: {e}"
    if rows is None:
        return "ok", ex
    try:
        from engine.index.rows import ready_text

        return "ok", ready_text(ex, *rows)
    except Exception:
        return "ok", ex


def _pages_kw(path: str | os.PathLike[str], max_pages: int) -> dict[str, int]:
    """``max_pages`` for ``engine.extract.extract`` of a PDF (other formats take no page limit)."""
    return {"max_pages": max_pages} if max_pages and str(path).lower().endswith(".pdf") else {}


def _extract_part_in_worker(
    path: str,
    password: str | None,
    ocr: Any,
    part: int,
    parts: int,
    max_pages: int = 0,
    join: tuple[str, tuple[str, int, int]] | None = None,
) -> tuple[str, Any]:
    """Runs in a worker: one page range of a PDF, as ``_extract_in_worker`` answers.

    ``join``: ``(stem, (content_hash, size, overlap))``: the ranges are joined in a
    worker, not in the indexer's process. Each range is pickled to
    ``<stem>-<part>.pickle`` (written, then renamed); the worker that finds every
    range's file there after writing its own, and wins ``<stem>.claim`` (created
    exclusively: at most one), joins them (``merge_pdf_parts``), builds the chunk
    rows (``ready_text``) and answers ``("joined", ReadyText)`` (``ExtractedText``
    when the rows raise; ``("bug", text)`` when the ranges cannot be joined); the
    others answer ``("spilled", file)``. At least one range sees all files: the one
    renamed last. A range that cannot be written is answered as usual."""
    from engine.extract.pdf import extract_pdf_part

    try:
        value = extract_pdf_part(Path(path), password, ocr, part, parts, max_pages)
    except ExtractError as e:
        return "error", e
    except Exception as e:
        return "bug", f"{type(e).__name__}: {e}"
    if join is None:
        return "ok", value
    stem, rows = join
    names = [f"{stem}-{k}.pickle" for k in range(parts)]
    try:
        with open(names[part] + ".tmp", "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.rename(names[part] + ".tmp", names[part])
    except Exception:  # no room, say: send it the usual way
        with contextlib.suppress(OSError):
            os.unlink(names[part] + ".tmp")
        return "ok", value
    try:
        if not all(os.path.exists(n) for n in names):
            return "spilled", names[part]
        os.close(os.open(stem + ".claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # FileExistsError: another range joins them
        return "spilled", names[part]
    return _join_spilled(names, part, value, ocr, rows)


def _join_spilled(names: list[str], part: int, value: Any, ocr: Any, rows: tuple[str, int, int]) -> tuple[str, Any]:
    """The spilled ranges of one PDF (``value`` is range ``part``'s, in memory) joined and
    chunked into rows, as ``_extract_part_in_worker`` answers; the files are removed."""
    from engine.extract.pdf import merge_pdf_parts
    from engine.index.rows import ready_text

    try:
        with contextlib.suppress(OSError):
            os.unlink(names[part])
        ex = merge_pdf_parts([value if k == part else _unspill(n) for k, n in enumerate(names)], ocr)
    except Exception as e:
        for n in names:
            with contextlib.suppress(OSError):
                os.unlink(n)
        return "bug", f"{type(e).__name__}: {e}"
    try:
        return "joined", ready_text(ex, *rows)
    except Exception:
        return "joined", ex


def _unspill(spill: str) -> Any:
    """The ``PdfPart`` pickled into ``spill`` (the file is removed)."""
    try:
        with open(spill, "rb") as fh:
            return pickle.load(fh)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(spill)


def _new_executor(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes forked from this one, each ending when this process ends.

    Raises:
        OSError, ValueError, RuntimeError: the pool cannot start.
    """
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )


def _die_with_parent(parent: int) -> None:
    """Runs first in each worker: end it when ``parent`` (the pool's process) ends, however that ends.

    On Linux the kernel sends the worker SIGKILL when the thread that forked it
    ends (``prctl(PR_SET_PDEATHSIG)``): the pool is started, and started again
    after a crash, by the indexer's thread, the only one running when the pool
    first starts, which lives as long as its process. A parent that died before
    the signal was armed is seen right after: the worker has then been given
    another parent, and exits. Where no signal can be armed, a daemon thread
    checks the parent every ``PARENT_CHECK_S`` (``_watch_parent``).
    """
    if not _arm_parent_death_signal():
        threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def _arm_parent_death_signal() -> bool:
    """Ask the kernel to SIGKILL this process when its parent ends; False where it cannot (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    """End this process once ``parent`` is no longer its parent (it died and the worker was given another)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _preload(paths: Iterable[str]) -> None:
    """Import here, once, what every worker needs (numpy, the chunker and row builder; PyMuPDF
    and the PDF reader when a PDF is among ``paths``) before the workers are forked: they
    share it, instead of each importing it again (~130 ms of CPU per worker for PyMuPDF and
    numpy, measured on this machine). Import errors are left to the workers, which report them."""
    try:
        from engine.lazy import np

        np.ndarray  # noqa: B018 (the lazy module imports numpy on its first attribute)
        import engine.index.rows  # noqa: F401

        if any(str(p).lower().endswith(".pdf") for p in paths):
            import pymupdf  # noqa: F401

            import engine.extract.pdf  # noqa: F401
    except Exception:  # the workers meet the same error and report it per file
        log.debug("preloading the readers failed", exc_info=True)


def _extract_here(
    path: str | os.PathLike[str], password: str | None, ocr: Any = None, max_pages: int = 0
) -> ExtractedText:
    from engine.extract import extract

    return extract(Path(path), password, ocr, **_pages_kw(path, max_pages))


class ExtractPool:
    """Outcomes of ``engine.extract.extract`` computed ahead in worker processes.

    Use as a context manager (``close`` ends the workers)::

        with ExtractPool(workers) as pool:
            pool.prefetch([(path, password, size_bytes), ...])   # the order they will be asked
            for ...:
                text = pool.extract(path, password)              # ExtractedText, or raises ExtractError

    Args:
        workers: worker processes (``worker_count(settings.extract_workers)``);
            1 means no pool, everything in this process.
        ocr: ``engine.extract.ocr.OcrSettings`` for every extraction; None = off.
    """

    def __init__(self, workers: int, ocr: Any = None):
        self.workers = max(1, int(workers))
        self.ocr = ocr
        self.max_pages = 0  # a PDF over this many pages raises TooLargeError (0 = unchecked)
        #: (chunk size, overlap): a file named with its content hash comes back as
        #: ``engine.index.rows.ReadyText`` (chunk rows built in the worker); None: ExtractedText.
        self.chunking: tuple[int, int] | None = None
        self._hashes: dict[_Key, str] = {}
        self._early: set[_Key] = set()  # handed out before their turn (_next_key)
        self._spill_dir: str | None = None  # a split PDF's ranges, with chunking set (_extract_part_in_worker)
        self._spills = 0
        self._executor: ProcessPoolExecutor | None = None
        self._queue: deque[_Key] = deque()
        self._queued: set[_Key] = set()
        self._sizes: dict[_Key, int] = {}
        self._inflight: dict[_Key, list[Future]] = {}  # a split PDF: one future per page range
        self._ahead_bytes = 0
        self._broken = False
        self._order: dict[_Key, int] = {}  # the order the files will be asked (prefetch)
        self._recovery = Recovery()  # who is blamed when a worker dies (_crashed)
        self._seq = 0
        #: Files extracted by a worker / in this process / by the extract child (tests, bench).
        self.in_workers = 0
        self.here = 0
        self.in_child = 0
        #: Called every ``WAIT_TICK_S`` while waiting on a worker (the run's cancel check); None: wait.
        self.check: Callable[[], None] | None = None
        self._started: dict[_Key, float] = {}  # first seen running in a worker (time.monotonic)
        self._child: Any = None  # engine.index.child.ExtractChild, started on first use
        self._child_reading: tuple[str, float] | None = None

    @property
    def restarts(self) -> int:
        """Pools started again after a worker died, in this pool's life (for tests and the bench)."""
        return self._recovery.restarts

    def __enter__(self) -> ExtractPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prefetch(self, files: Iterable[tuple]) -> None:
        """Name the files that will be asked for, in order: ``(path, password, size_bytes)``,
        or ``(path, password, size_bytes, content_hash)``: with ``chunking`` set, such a
        file is also chunked into rows in the worker (``extract`` gives a ``ReadyText``).

        Starts the workers when there is enough to do (``MIN_FILES``,
        ``MIN_POOL_BYTES``) and ``workers`` > 1; otherwise every ``extract``
        runs in this process.
        """
        items = []
        for p, pw, size, *rest in files:
            items.append((str(p), pw, int(size)))
            if rest and rest[0]:
                self._hashes[(str(p), pw)] = str(rest[0])
        if (
            self.workers < 2
            or self._broken
            or len(items) < MIN_FILES
            or sum(s for _p, _pw, s in items) < MIN_POOL_BYTES
        ):
            return
        if threading.active_count() > 1:
            # Forking copies only this thread: a lock another thread holds (MuPDF,
            # logging) would stay locked in the worker. The "spawn"/"forkserver"
            # starts re-import __main__ in each worker, which under the explorer
            # may be a Streamlit script. So a threaded process extracts here.
            log.debug("extraction stays in this process: %d threads running", threading.active_count())
            return
        if self._executor is None:
            _preload(p for p, _pw, _s in items)
            try:
                self._executor = _new_executor(self.workers)
            except (OSError, ValueError, RuntimeError) as e:
                log.warning("extraction stays in this process: worker pool did not start (%s)", e)
                self._broken = True
                return
        for p, pw, size in items:
            key = (p, pw)
            if key not in self._queued and key not in self._inflight:
                self._queue.append(key)
                self._queued.add(key)
                self._sizes[key] = size
                self._seq += 1
                self._order.setdefault(key, self._seq)
        self._top_up()

    def _ahead_weight(self, key: _Key) -> int:
        """Bytes ``key`` counts against ``MAX_AHEAD_BYTES``: its size, x ``TEXT_AHEAD_WEIGHT`` unless a PDF."""
        size = self._sizes.get(key, 0)
        return size if key[0].lower().endswith(".pdf") else size * TEXT_AHEAD_WEIGHT

    def _parts(self, key: _Key) -> int:
        """Page ranges to read ``key`` in: ``workers`` for a large PDF, else 1 (the whole file)."""
        if self._sizes.get(key, 0) >= SPLIT_MIN_BYTES and key[0].lower().endswith(".pdf"):
            return self.workers
        return 1

    def _top_up(self) -> None:
        while self._executor is not None and self._queue:
            tasks = sum(len(f) for f in self._inflight.values())
            if self._inflight and (tasks >= AHEAD_TASKS * self.workers or self._ahead_bytes >= MAX_AHEAD_BYTES):
                return
            key = self._next_key()
            suspects = self._recovery.suspects
            running = self._running() if suspects else set()
            if running and (key in suspects or running & suspects):
                return  # a file read again after a crash runs alone (_crashed)
            self._queue.remove(key)
            self._queued.discard(key)
            if not self._submit(key):
                return

    def _submit(self, key: _Key) -> bool:
        """Hand ``key`` (taken off the queue) to the workers; False when the pool broke
        meanwhile (``key`` is queued again, the pool restarted: ``_crashed``) or failed."""
        parts = self._parts(key)
        executor = self._executor
        if executor is None:
            self._requeue([key])
            return False
        try:
            if parts == 1:
                h = self._hashes.get(key)
                rows = (h, *self.chunking) if h and self.chunking else None
                futures = [executor.submit(_extract_in_worker, *key, self.ocr, self.max_pages, rows)]
            else:
                join = self._join_for(key)
                futures = [
                    executor.submit(_extract_part_in_worker, *key, self.ocr, k, parts, self.max_pages, join)
                    for k in range(parts)
                ]
        except BrokenProcessPool as e:  # a worker died before this file was handed out
            self._requeue([key])
            if self._recovery.too_many_restarts():  # pools that break with nothing in flight: stop
                self._give_up(e)
            else:
                self._crashed()
            return False
        except RuntimeError as e:
            self._give_up(e)
            return False
        self._inflight[key] = futures
        self._ahead_bytes += self._ahead_weight(key)
        return True

    def _next_key(self) -> _Key:
        """The next file to hand out: the queue's first, or a PDF to read in page ranges
        among the next ``AHEAD_TASKS x workers`` (handed out before its turn, so its join and
        rows are done while the files before it keep both cores busy, instead of ending the
        run on one core), while at least ``workers`` files handed out in their turn are
        still to be collected (the indexer's next file is always among them)."""
        head = self._queue[0]
        if self._parts(head) > 1 or self._recovery.suspects:
            return head
        early = sum(1 for k in self._inflight if k in self._early)
        if len(self._inflight) - early < self.workers:
            return head
        for i in range(1, min(len(self._queue), AHEAD_TASKS * self.workers)):
            key = self._queue[i]
            if self._parts(key) > 1:
                self._early.add(key)
                return key
        return head

    def _join_for(self, key: _Key) -> tuple[str, tuple[str, int, int]] | None:
        """``join`` for the ranges of ``key`` (joined and chunked in a worker), or None
        (no chunking asked, or no temp dir: joined here)."""
        h = self._hashes.get(key)
        if not (self.chunking and h):
            return None
        if self._spill_dir is None:
            try:
                self._spill_dir = tempfile.mkdtemp(prefix="chunknav-ranges-")
            except OSError:
                return None
        self._spills += 1
        return os.path.join(self._spill_dir, str(self._spills)), (h, *self.chunking)

    def _give_up(self, e: BaseException) -> None:
        log.warning("extraction continues in this process: the worker pool failed (%s)", e)
        self._broken = True
        self._queue.clear()
        self._queued.clear()
        self._recovery.give_up(e)  # in flight when a worker died: never read in this process
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def would_wait(self, path: str | os.PathLike[str], password: str | None = None) -> bool:
        """True when ``extract(path, password)`` would block on a worker or the extract
        child now (the indexer commits what it holds meanwhile, so its writes overlap the
        reading and a long read holds nothing back)."""
        key = (str(path), password)
        futures = self._inflight.get(key)
        if futures is None:  # read again alone after a crash: waits for the running tasks
            return (key in self._recovery.suspects and key in self._queued) or self._for_child(key)
        return not all(f.done() for f in futures)

    def extract(
        self, path: str | os.PathLike[str], password: str | None = None, content_hash: str | None = None
    ) -> ExtractedText | ReadyText:
        """The file's ``ExtractedText``, as ``engine.extract.extract(path, password)`` gives it;
        a ``ReadyText`` (the same, chunked into rows) when it was named with this
        ``content_hash`` and ``chunking`` is set, and a worker read it whole.

        Raises:
            ExtractError: the file cannot be extracted (the same error, reason
                and subclass as in this process; the file whose worker died
                when it was read alone: ``ExtractError("extractor error: worker
                process died (killed by signal SIGSEGV) while reading this file alone")``;
                the other files in flight then are read again, alone).
            Exception: whatever ``engine.extract.extract`` raises beyond
                ``ExtractError`` (from the re-run in this process).
        """
        key = (str(path), password)
        if key in self._recovery.suspects and key in self._queued and key not in self._inflight:
            self._alone(key)  # in flight when a worker died: read again alone, never here
        failure = self._recovery.take_failure(key)
        if failure is not None:  # it killed its worker
            self._forget(key)
            self.in_workers += 1
            self._top_up()
            raise failure
        futures = self._inflight.get(key)
        if futures is None and self._queue and self._queue[0] == key and self._executor is not None:
            self._top_up()  # its turn, held back while a file read again after a crash ran alone
            futures = self._inflight.get(key)
        if futures is None:
            if key in self._queued:  # asked before its turn: do it here, never twice
                self._queued.discard(key)
                self._queue.remove(key)
            if not self._for_child(key):
                self.here += 1
                return _extract_here(path, password, self.ocr, self.max_pages)
            kind, value = self._in_child(key, content_hash)
            if kind in ("ok", "error"):
                self.in_child += 1
                if kind == "error":
                    raise value
                if getattr(value, "content_hash", content_hash) == content_hash:
                    return value
                kind = "bug"  # rows built for other bytes: read again here
        else:
            try:
                answers = self._results(futures)
            except BrokenProcessPool:  # a worker died: this file fails only if it killed it
                self._crashed()
                return self.extract(path, password, content_hash)  # at most twice: a suspect, then failed
            self._inflight.pop(key)
            self._ahead_bytes -= self._ahead_weight(key)
            self._forget(key)
            self._top_up()
            kind, value = answers[0] if len(answers) == 1 else self._joined(answers)
        if kind == "ok" and getattr(value, "content_hash", content_hash) != content_hash:
            kind = "bug"  # rows built for other bytes (never asked so by the indexer): read again here
        if kind == "ok":
            self.in_workers += 1
            return value
        if kind == "error":
            self.in_workers += 1
            raise value
        self.here += 1
        return _extract_here(path, password, self.ocr, self.max_pages)  # "bug": raise the real exception here

    def _for_child(self, key: _Key) -> bool:
        """True when ``key``, read in this process, goes to the extract child instead: a run
        that can be cancelled (``check``), OCR on, a paged file (a page's OCR cannot stop)."""
        from engine.extract.common import PAGE_FORMATS

        suffix = os.path.splitext(key[0])[1].lower()
        return (
            self.check is not None
            and self.ocr is not None
            and getattr(self.ocr, "mode", "off") != "off"
            and (suffix == ".pdf" or suffix in PAGE_FORMATS)
        )

    def _in_child(self, key: _Key, content_hash: str | None) -> tuple[str, Any]:
        """``key`` read by the extract child (``engine.index.child``), as a worker answers;
        its time is named in ``running``; a cancel (``check`` raising) kills the child."""
        from engine.index.child import ExtractChild

        if self._child is None:
            self._child = ExtractChild()
            self._child.call(_die_with_parent, (os.getpid(),), None)
        rows = (content_hash, *self.chunking) if content_hash and self.chunking else None
        self._child_reading = (key[0], time.monotonic())
        try:
            answer: tuple[str, Any] = self._child.call(
                _extract_in_worker, (*key, self.ocr, self.max_pages, rows), self.check
            )
            return answer
        finally:
            self._child_reading = None

    def _results(self, futures: list[Future]) -> list[Any]:
        """The answers of ``futures``, calling ``check`` every ``WAIT_TICK_S`` while any runs
        (whatever ``check`` raises ends the wait; the tasks are left to ``abandon``)."""
        while self.check is not None:
            _done, pending = wait(futures, timeout=WAIT_TICK_S)
            if not pending:
                break
            self.check()
        return [fut.result() for fut in futures]

    def running(self) -> list[tuple[str, float]]:
        """``(path, since)`` of each file a worker is reading now (``since``: ``time.monotonic()``
        when it was first seen running)."""
        now = time.monotonic()
        out = []
        for key, futures in self._inflight.items():
            if all(f.done() for f in futures) or not any(f.running() or f.done() for f in futures):
                continue
            out.append((key[0], self._started.setdefault(key, now)))
        if self._child_reading is not None:
            out.append(self._child_reading)
        return out

    def _forget(self, key: _Key) -> None:
        """Drop what the pool kept about ``key`` (asked now)."""
        self._started.pop(key, None)
        self._sizes.pop(key, None)
        self._hashes.pop(key, None)
        self._early.discard(key)
        self._recovery.forget(key)
        self._order.pop(key, None)

    def _joined(self, answers: list[tuple[str, Any]]) -> tuple[str, Any]:
        """The page ranges' answers of one split PDF -> one answer: their merge when every
        range was read, the error when every range failed alike, else ``("bug", ...)``
        (the file is then read again here, whole)."""
        from engine.extract.pdf import PdfPart, merge_pdf_parts

        joined = [a for a in answers if a[0] == "joined"]
        if joined:  # a worker joined the spilled ranges (and removed their files)
            return "ok", joined[0][1]
        if any(k == "bug" for k, _v in answers):
            self._drop_spills(answers)
            return "bug", "page ranges answered differently"
        answers = [("ok", _unspill(v)) if k == "spilled" else (k, v) for k, v in answers]
        kinds = {k for k, _v in answers}
        if kinds == {"ok"} and all(isinstance(v, PdfPart) for _k, v in answers):
            return "ok", merge_pdf_parts([v for _k, v in answers], self.ocr)
        if kinds == {"error"} and len({(type(v), v.reason) for _k, v in answers}) == 1:
            return answers[0]
        return "bug", "page ranges answered differently"

    @staticmethod
    def _drop_spills(answers: list[tuple[str, Any]]) -> None:
        for kind, v in answers:
            if kind == "spilled":
                with contextlib.suppress(OSError):
                    os.unlink(v)

    # -- a worker died ------------------------------------------------------------------
    def _running(self) -> set[_Key]:
        """Files with a task not finished in a worker."""
        return {k for k, fs in self._inflight.items() if not all(f.done() for f in fs)}

    def _requeue(self, keys: Iterable[_Key]) -> None:
        """Put ``keys`` back in the queue, at their place in the order they will be asked."""
        order = self._order.get
        back = sorted((k for k in keys if k not in self._queued), key=lambda k: order(k, 0))
        if not back:
            return
        head = []  # only the queue's first files can come before them: a crash costs no pass over the queue
        while self._queue and order(self._queue[0], 0) < order(back[-1], 0):
            head.append(self._queue.popleft())
        self._queue.extendleft(reversed(sorted(head + back, key=lambda k: order(k, 0))))
        self._queued.update(back)

    def _crashed(self) -> None:
        """A worker died and the pool broke: blame, restart, and hand the files again.

        The files whose tasks were not finished (their futures hold
        ``BrokenProcessPool``) are the ones in flight; ``Recovery.blame`` says
        which fail now and which are queued again at their place, each to be
        handed out alone (``_top_up``, ``_alone``). A fresh pool is started; if
        it cannot start, ``_give_up``."""
        executor, self._executor = self._executor, None
        procs = list((getattr(executor, "_processes", None) or {}).values())
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)  # the broken pool's thread ends, every future set
        hit = sorted(
            (k for k, fs in self._inflight.items() if any(_broke(f) for f in fs)),
            key=lambda k: self._order.get(k, 0),
        )
        for k in hit:
            self._inflight.pop(k)
            self._ahead_bytes -= self._ahead_weight(k)
        self._requeue(self._recovery.blame(hit, how_they_died(procs)))
        try:
            self._executor = _new_executor(self.workers)
        except (OSError, ValueError, RuntimeError) as e:
            self._give_up(e)

    def _alone(self, key: _Key) -> None:
        """Hand out the suspect ``key`` (queued, asked now) alone: wait until no task is
        running (a crash meanwhile is handled: ``_crashed``), then submit it."""
        while self._executor is not None and key in self._queued:
            running = [f for k in self._running() for f in self._inflight[k]]
            if running:
                wait(running, timeout=WAIT_TICK_S if self.check else None, return_when=FIRST_EXCEPTION)
                if any(_broke(f) for f in running):
                    self._crashed()
                elif self.check is not None:
                    self.check()
                continue
            self._queue.remove(key)
            self._queued.discard(key)
            self._submit(key)

    def abandon(self) -> None:
        """End the workers now, killing them in the middle of their files (a cancelled run),
        then ``close``."""
        executor = self._executor
        procs = list((getattr(executor, "_processes", None) or {}).values()) if executor is not None else []
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.kill()
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.join(5.0)
        if procs and executor is not None:
            # A worker killed while writing its result leaves half a message in the result
            # pipe, and the executor's manager thread waits for the rest forever (so would
            # shutdown and the interpreter's exit). With every worker dead, closing this
            # process's end of the pipe turns that wait into end-of-file: the pool breaks, and
            # shutdown returns.
            with contextlib.suppress(Exception):
                executor._result_queue._writer.close()  # type: ignore[attr-defined]
        self.close()

    def close(self) -> None:
        """End the workers and the extract child (outcomes not asked for are dropped)."""
        child, self._child = self._child, None
        if child is not None:
            child.close()
        self._started.clear()
        executor, self._executor = self._executor, None
        self._inflight.clear()
        self._queue.clear()
        self._queued.clear()
        self._sizes.clear()
        self._hashes.clear()
        self._early.clear()
        self._recovery.clear()
        self._order.clear()
        self._ahead_bytes = 0
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        spill_dir, self._spill_dir = self._spill_dir, None
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)


def _broke(f: Future) -> bool:
    """True when ``f`` ended with ``BrokenProcessPool`` (its worker died)."""
    return f.done() and not f.cancelled() and isinstance(f.exception(), BrokenProcessPool)
