"""BLAS threads for vector scans: one thread, pinned; both cores only where that measures faster.

Owns: the process's BLAS thread count while the engine scans vectors. On
the first scan the BLAS pool (OpenBLAS under numpy) is pinned to one thread
(threadpoolctl): a small or scoped ``M @ q`` is 10-30x slower with two
threads when another process holds a core (the second thread waits for a
core it cannot get). A full scan of at least ``LARGE_SCAN_ROWS`` rows is
timed with one and with both cores as it runs: an exponentially weighted
mean of seconds per row for each, both tried first, the slower one tried
again every ``EXPLORE_EVERY`` scans (load changes), the faster one used
otherwise. So an idle machine gets both cores for a 1M scan (56 ms instead
of 104 ms measured here) and a loaded one keeps one thread. A two-thread
scan leaves BLAS at two; every other scan sets one again on entry
(``scan_threads``, ``int8_threads``, ``one_thread``), so back-to-back large
scans set nothing (setting one after a two-thread call took ~17 us).

The int8 scan of large full searches (``engine.store.sqlite.int8``) splits
its rows over one or two Python threads, not BLAS: ``int8_threads`` makes
the same timed choice for it with a ``ThreadChoice`` of its own (idle here:
1M rows 12 ms on two threads, 24 ms on one), and keeps BLAS pinned to one
thread for the float32 rescoring that follows.

Imports ``threadpoolctl`` lazily, on the first scan; without it (a broken
install) scans run with BLAS's own default, logged once. Imports no other
engine module and no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = [
    "scan_threads",
    "int8_threads",
    "one_thread",
    "LARGE_SCAN_ROWS",
    "EXPLORE_EVERY",
    "ThreadChoice",
    "FixedChoice",
]

log = logging.getLogger(__name__)

#: Rows of a full scan from which two BLAS threads are considered.
LARGE_SCAN_ROWS = 65_536
#: Every this many large scans, the currently slower thread count is timed again.
EXPLORE_EVERY = 16
_EWMA = 0.3  # weight of the newest timing

_lock = threading.Lock()
_controller: Any = None
_pinned = False
#: BLAS threads as this module last set them (1 once pinned): a large full scan on two threads
#: leaves them at two, and every other scan (``scan_threads``, ``_pin``) sets one again first,
#: so back-to-back large scans set nothing (setting one after a two-thread call took ~17 us).
_threads = 0


def _controller_once() -> Any:
    """The ThreadpoolController, made once, BLAS pinned to one thread then (None without
    threadpoolctl)."""
    global _controller, _pinned, _threads
    if _pinned:
        return _controller
    with _lock:
        if not _pinned:
            try:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
                _controller.limit(limits=1, user_api="blas")  # kept: restored never
                _threads = 1
            except Exception as e:  # pragma: no cover - pinned dependency
                log.warning("BLAS threads not controlled (threadpoolctl: %s: %s)", type(e).__name__, e)
                _controller = None
            _pinned = True
    return _controller


def _pin() -> Any:
    """The ThreadpoolController with BLAS at one thread (None without threadpoolctl): set back
    to one here when a large full scan left it at two (``scan_threads``)."""
    ctl = _controller_once()
    if ctl is not None and _threads != 1:
        _set_threads(ctl, 1)
    return ctl


def _set_threads(ctl: Any, n: int) -> None:
    """BLAS at ``n`` threads (raw setters: ~1 us, where ctl.limit() took ~6 us), remembered in
    ``_threads``."""
    global _threads
    for lib in _blas_libraries(ctl):
        lib.set_num_threads(n)
    _threads = n


class ThreadChoice:
    """Which BLAS thread count a large scan uses, from timings of past scans.

    Attributes:
        cores: thread counts considered, ``(1, 2)`` on a machine with >= 2 cores.
        per_row_s: thread count -> weighted mean seconds per scanned row (None: untimed).
    """

    def __init__(self, cores: int | None = None):
        n = cores if cores is not None else (os.cpu_count() or 1)
        self.cores = (1, 2) if n >= 2 else (1,)
        self.per_row_s: dict[int, float | None] = {c: None for c in self.cores}
        self._scans = 0

    def pick(self) -> int:
        """The thread count for the next large scan."""
        self._scans += 1
        untimed = [c for c in self.cores if self.per_row_s[c] is None]
        if untimed:
            return untimed[0]
        ranked = sorted(self.cores, key=lambda c: self.per_row_s[c])  # type: ignore[arg-type, return-value]
        if len(ranked) > 1 and self._scans % EXPLORE_EVERY == 0:
            return ranked[1]
        return ranked[0]

    def record(self, threads: int, seconds: float, rows: int) -> None:
        """Fold one scan's timing (``seconds`` for ``rows`` rows) into ``per_row_s``."""
        if rows <= 0 or threads not in self.per_row_s:
            return
        x = seconds / rows
        old = self.per_row_s[threads]
        self.per_row_s[threads] = x if old is None else (1 - _EWMA) * old + _EWMA * x


class FixedChoice(ThreadChoice):
    """A ``ThreadChoice`` that always picks ``use`` and learns nothing from timings: a forced
    path (the tests and benches that run one way of a timed choice, e.g. hybrid search's
    ``engine.search.hybrid._HYBRID_CHOICE``: 1 = one list after the other, 2 = shared scan)."""

    def __init__(self, use: int):
        super().__init__()
        self.use = use

    def pick(self) -> int:
        """Always ``use``."""
        return self.use

    def record(self, threads: int, seconds: float, rows: int) -> None:
        """Ignored: a fixed choice keeps no timings."""


_choice = ThreadChoice()


@contextmanager
def scan_threads(rows: int, full: bool) -> Iterator[int]:
    """Run one vector scan of ``rows`` rows with the BLAS threads it should use.

    Args:
        rows: matrix rows the scan multiplies.
        full: True for a scan of the whole matrix (only those may get two threads).

    Yields:
        The thread count used (1, or 2 for a large full scan where that has
        been measured faster).
    """
    ctl = _controller_once()
    if ctl is None or not full or rows < LARGE_SCAN_ROWS or len(_choice.cores) < 2:
        if ctl is not None and _threads != 1:
            _set_threads(ctl, 1)  # after a large two-thread scan (left at two)
        yield 1
        return
    threads = _choice.pick()
    t = time.perf_counter()
    if _threads != threads:
        _set_threads(ctl, threads)  # left as it is after the scan: the next one sets what it needs
    yield threads
    _choice.record(threads, time.perf_counter() - t, rows)


_libraries: list[Any] = []


def _blas_libraries(ctl: Any) -> list[Any]:
    """The BLAS library controllers of ``ctl`` (listed once)."""
    if not _libraries:
        _libraries.extend(c for c in ctl.lib_controllers if c.user_api == "blas")
    return _libraries


def one_thread() -> None:
    """BLAS at one thread from here on (a float32 product outside ``scan_threads``, e.g. the
    rescoring of an int8 scan that a hybrid search shares): a large full scan may have left two."""
    _pin()


_int8_choice = ThreadChoice()


@contextmanager
def int8_threads(rows: int) -> Iterator[int]:
    """Run one int8 candidate scan of ``rows`` rows with the thread count it should use.

    Args:
        rows: matrix rows the scan reads.

    Yields:
        1 or 2: the threads to split the rows over (both tried first, then the
        one measured faster per row, the other again every ``EXPLORE_EVERY`` scans).
    """
    _pin()  # the float32 rescoring after the scan stays on one BLAS thread
    if len(_int8_choice.cores) < 2:
        yield 1
        return
    threads = _int8_choice.pick()
    t = time.perf_counter()
    yield threads
    _int8_choice.record(threads, time.perf_counter() - t, rows)
