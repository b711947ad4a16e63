"""A full vector scan shared, block by block, with a thread that has finished its own work.

Owns: how a hybrid search's keyword thread helps the vector scan once its
keyword list is ranked. The thread that runs the scan registers a
``ScanShare`` (``with share.active():``); the store's full float32 scan asks
``full_scores(matrix, q)``, which, while a share is active on this thread and
the matrix has at least ``MIN_ROWS`` rows, scores the matrix in blocks of
``block_rows(dim)`` consecutive rows (``np.matmul`` on views, one BLAS thread
each) taken from a shared counter by the scanning thread and by any helper
that called ``share.help()``. Without an active share (or for a small
matrix) it returns None and the store scans as before. The int8 scan
(``engine.store.sqlite.int8``) asks ``block_runner(rows)`` instead and hands
its own blocks (each keeping its best rows) to ``ScanShare.run``.

Why: on two cores a two-thread BLAS scan beside a keyword thread oversubscribes
the cores, and one-thread scan + keyword thread leaves a core idle once the
keyword list is done. Blocks let the keyword thread pick up the rest of the
scan: wall time ~ (scan + keyword CPU) / 2 when a core is free.

Exactness: blocks are multiples of 64 rows, and OpenBLAS's one-thread gemv
gives each row's dot product the same bits whatever rows surround it in the
call (tested against ``matrix @ q`` on one thread, tests/store/test_scan_share.py),
so the scores, hence the ranking, equal a one-thread full scan's.

Imports numpy and ``engine.store.threads`` only; no store, no face.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.store.threads import LARGE_SCAN_ROWS, scan_threads

__all__ = ["ScanShare", "full_scores", "block_runner", "block_rows", "MIN_ROWS"]

#: Smallest matrix (rows) whose full scan is shared; smaller scans run as before.
MIN_ROWS = LARGE_SCAN_ROWS
_BLOCK_BYTES = 1 << 23  # ~8 MB of float32 rows per block (8,192 rows at 256-d)

_local = threading.local()


def block_rows(dim: int) -> int:
    """Rows per block for ``dim``-wide float32 rows: about 8 MB, a multiple of 64, at least 64."""
    return max(64, _BLOCK_BYTES // (4 * max(1, dim)) // 64 * 64)


class ScanShare:
    """One search's full scan, open to helper threads.

    Lifecycle: the scanning thread enters ``active()``; a helper thread calls
    ``help()`` when its own work is done (it waits until the scan starts or the
    share is closed, then scores blocks until none is left); leaving
    ``active()`` closes the share, so a helper never waits after the scan.

    Attributes:
        rows: rows of the last full scan run under this share (0: none ran;
            also set when the matrix was too small to share).
        shared: True when that scan was split into blocks.
        helped: blocks a helper thread scored.
    """

    def __init__(self, helpers: bool = True) -> None:
        """``helpers``: False = only record ``rows`` (the scan runs as usual, unshared)."""
        self.helpers = helpers
        self.rows = 0
        self.shared = False
        self.helped = 0
        self._cond = threading.Condition()
        self._job: Callable[[int], object] | None = None
        self._next = 0
        self._blocks = 0
        self._done = 0
        self._failed: list[int] = []
        self._closed = False

    @contextmanager
    def active(self) -> Iterator["ScanShare"]:
        """Register this share on the calling thread for the block; closes it on exit."""
        prev = getattr(_local, "share", None)
        _local.share = self
        try:
            yield self
        finally:
            _local.share = prev
            self.close()

    def close(self) -> None:
        """No more scans under this share: a waiting helper returns."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def help(self) -> None:
        """Score blocks of the running scan until none is left (called by a helper thread).

        Returns at once when the share is closed; waits while the scan has not started.
        """
        with self._cond:
            while self._job is None and not self._closed:
                self._cond.wait()
            if self._job is None:
                return
        self.helped += self._work(helper=True)

    # -- scanning thread -------------------------------------------------------------
    def scan(self, matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``matrix @ q`` (float32, shape (rows,)) in shared blocks; returns when every block is scored."""
        n = len(matrix)
        b = block_rows(matrix.shape[1])
        out = np.empty(n, np.float32)

        def block(i: int) -> None:
            np.matmul(matrix[i * b : (i + 1) * b], q, out=out[i * b : (i + 1) * b])

        self.run(-(-n // b), block, n)
        return out

    def run(self, blocks: int, block: Callable[[int], object], rows: int) -> None:
        """Call ``block(i)`` for every ``i`` in ``range(blocks)``, on this thread and any helper.

        Returns when every block is done. A block that raised on a helper is run
        again here (and raises here if it must). ``rows``: the rows the job scans
        (recorded in ``rows``). Used for the float32 scan (``scan``) and the int8
        candidate scan (``engine.store.sqlite.int8.int8_candidates``, ``run=``).
        """
        with self._cond:
            self._job = block
            self._next, self._done, self._failed = 0, 0, []
            self._blocks = blocks
            self.rows, self.shared = rows, True
            self._cond.notify_all()
        try:
            self._work(helper=False)
            with self._cond:
                while self._done < self._blocks:
                    self._cond.wait()
                failed, self._failed = self._failed, []
        finally:
            with self._cond:
                self._job = None
                self._next = self._blocks  # a late helper takes nothing
        for i in failed:  # a helper's block that raised: run it here (raises here if it must)
            block(i)

    def _work(self, helper: bool) -> int:
        """Take and run blocks until none is left; returns how many this thread ran."""
        job = self._job
        if job is None:
            return 0
        count = 0
        while True:
            with self._cond:
                if self._job is not job or self._next >= self._blocks:
                    return count
                i = self._next
                self._next += 1
            try:
                job(i)
            except Exception:
                with self._cond:
                    self._done += 1
                    if helper:  # the scanning thread runs it again (and raises there if it must)
                        self._failed.append(i)
                    self._cond.notify_all()
                if helper:
                    return count
                raise
            count += 1
            with self._cond:
                self._done += 1
                if self._done >= self._blocks:
                    self._cond.notify_all()


def full_scores(matrix: np.ndarray, q: np.ndarray) -> np.ndarray | None:
    """``matrix @ q`` shared with the active share's helper, or None (scan as usual).

    None when no ``ScanShare`` is active on this thread, the active one takes
    no helpers, or ``matrix`` has fewer than ``MIN_ROWS`` rows (the share
    still records ``rows``). The
    blocks run with BLAS pinned to one thread (``engine.store.threads.scan_threads``).
    """
    share: ScanShare | None = getattr(_local, "share", None)
    if share is None:
        return None
    if not share.helpers or len(matrix) < MIN_ROWS or matrix.ndim != 2:
        share.rows, share.shared = len(matrix), False
        return None
    with scan_threads(len(matrix), full=False):  # pins BLAS to one thread per block
        return share.scan(matrix, q)


def block_runner(rows: int) -> Callable[[int, Callable[[int], object], int], None] | None:
    """The active share's ``run`` for a full int8 candidate scan of ``rows`` rows, or None.

    None (scan as usual) when no ``ScanShare`` is active on this thread, the
    active one takes no helpers, or ``rows < MIN_ROWS`` (the share still
    records ``rows``, so a hybrid search times its choice for int8 scans too).
    """
    share: ScanShare | None = getattr(_local, "share", None)
    if share is None:
        return None
    if not share.helpers or rows < MIN_ROWS:
        share.rows, share.shared = rows, False
        return None
    return share.run
