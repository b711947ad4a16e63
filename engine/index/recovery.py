"""Crash recovery of ``engine.index.pool``: a worker that dies fails only the file that killed it.

Owns: ``CrashRecovery`` (a mixin of ``ExtractPool``: its ``_executor``,
``_inflight``, ``_queue``, ``_queued``, ``_order``, ``_suspects``, ``_failed``,
``_restarts``, ``_submit``, ``_give_up``, ``_ahead_weight``), ``MAX_RESTARTS``.
When a worker process dies (a segfault in the PDF library, a kill by the
kernel), ``ProcessPoolExecutor`` sets ``BrokenProcessPool`` on every task not
finished. ``_crashed`` then starts a fresh pool and queues those files again
at their place; each is handed out alone (no other task running), so the one
that kills its worker again is known, and fails with the crash named
(``_how_they_died``: signal or exit code). A file is read again at most once
(a file alone in flight, or already read again, is not), so a storm of crashes
costs at most two pool starts per crashing file, linear in the run.

Imports ``engine.errors`` only; no store, no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Iterable

from engine.errors import ExtractError

__all__ = ["CrashRecovery", "MAX_RESTARTS"]

log = logging.getLogger("engine.index.pool")

#: Pools started again after a worker died, per run, with the files in flight read again one
#: at a time; after this many, the files in flight at a crash fail without a second read.
MAX_RESTARTS = 100

_Key = tuple[str, Any]


def _how_they_died(procs: list[Any]) -> str:
    """``"killed by signal SIGSEGV"`` / ``"exit code 139"`` for the workers of a broken
    pool that ended on their own (the pool terminates the others: SIGTERM), or
    ``"cause unknown"``."""
    codes = [p.exitcode for p in procs if getattr(p, "exitcode", None) not in (None, 0)]
    own = [c for c in codes if c != -signal.SIGTERM] or codes
    said = []
    for c in dict.fromkeys(own):
        if c < 0:
            try:
                said.append(f"killed by signal {signal.Signals(-c).name}")
            except ValueError:
                said.append(f"killed by signal {-c}")
        else:
            said.append(f"exit code {c}")
    return ", ".join(said) or "cause unknown"


class CrashRecovery:
    """What ``ExtractPool`` does when a worker dies (see the module docstring); a mixin."""

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
        ``BrokenProcessPool``) are the ones in flight. One alone (or one already
        read again: a suspect), or any after ``MAX_RESTARTS`` restarts, fails with
        the crash named; the others become suspects, queued again at their place,
        each to be handed out alone (``_top_up``, ``_alone``). A fresh pool is
        started; if it cannot start, ``_give_up``."""
        executor, self._executor = self._executor, None
        procs = list((getattr(executor, "_processes", None) or {}).values())
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)  # the broken pool's thread ends, every future set
        how = _how_they_died(procs)
        hit = sorted(
            (
                k
                for k, fs in self._inflight.items()
                if any(f.done() and not f.cancelled() and isinstance(f.exception(), BrokenProcessPool) for f in fs)
            ),
            key=lambda k: self._order.get(k, 0),
        )
        self._restarts += 1
        retry = []
        for k in hit:
            self._inflight.pop(k)
            self._ahead_bytes -= self._ahead_weight(k)
            if len(hit) == 1 or k in self._suspects:
                self._suspects.discard(k)
                self._failed[k] = ExtractError(
                    f"extractor error: worker process died ({how}) while reading this file alone"
                )
            elif self._restarts > MAX_RESTARTS:
                self._failed[k] = ExtractError(
                    f"extractor error: worker process died ({how}) with {len(hit)} files in flight, this one "
                    f"among them; not read again: more than {MAX_RESTARTS} worker crashes in this run"
                )
            else:
                self._suspects.add(k)
                retry.append(k)
        log.warning(
            "an extraction worker died (%s) with %d files in flight: %d read again one at a time",
            how,
            len(hit),
            len(retry),
        )
        self._requeue(retry)
        try:
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("fork")
            )
        except (OSError, ValueError, RuntimeError) as e:
            self._give_up(e)

    def _alone(self, key: _Key) -> None:
        """Hand out the suspect ``key`` (queued, asked now) alone: wait until no task is
        running (a crash meanwhile is handled: ``_crashed``), then submit it."""
        while self._executor is not None and key in self._queued:
            running = [f for k in self._running() for f in self._inflight[k]]
            if running:
                wait(running, return_when=FIRST_EXCEPTION)
                if any(
                    f.done() and not f.cancelled() and isinstance(f.exception(), BrokenProcessPool) for f in running
                ):
                    self._crashed()
                continue
            self._queue.remove(key)
            self._queued.discard(key)
            self._submit(key)
