"""Crash bookkeeping of ``engine.index.pool``: a worker that dies fails only the file that killed it.

Owns: ``Recovery`` (the crash state one ``ExtractPool`` owns: the files under
suspicion, the failures to give, the pool restarts of the run),
``how_they_died`` and ``MAX_RESTARTS``. When a worker process dies (a
segfault in the PDF library, a kill by the kernel), ``ProcessPoolExecutor``
sets ``BrokenProcessPool`` on every task not finished. The pool then asks
``Recovery.blame`` which of the files in flight fail now and which are read
again, each alone (no other task running), so the one that kills its worker
again is known and fails with the crash named (signal or exit code). A file
is read again at most once (a file alone in flight, or already read again,
is not), so a storm of crashes costs at most two pool starts per crashing
file, linear in the run.

Imports ``engine.errors`` only; no store, no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import logging
import signal
from typing import Any

from engine.errors import ExtractError

__all__ = ["Recovery", "MAX_RESTARTS", "MAX_POOL_STARTS", "how_they_died"]

log = logging.getLogger(__name__)

#: Pools started again after a worker died, per run, with the files in flight read again one
#: at a time; after this many, the files in flight at a crash fail without a second read.
MAX_RESTARTS = 100
#: Pool restarts in a run after which a pool that breaks before any file is handed out
#: is given up (extraction goes on in the indexer's process); a fixed number, not
#: lowered with ``MAX_RESTARTS``.
MAX_POOL_STARTS = 2 * MAX_RESTARTS

#: A file the pool reads: ``(path, password)``.
_Key = tuple[str, Any]


def how_they_died(procs: list[Any]) -> str:
    """``"killed by signal SIGSEGV"`` / ``"exit code 139"`` for the worker processes of a
    broken pool that ended on their own (the pool terminates the others: SIGTERM), or
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


class Recovery:
    """The crash state of one ``ExtractPool`` (see the module docstring).

    Attributes:
        suspects: files in flight when a worker died, to be read again alone.
        restarts: pools started again after a crash in this run.
    """

    def __init__(self) -> None:
        self.suspects: set[_Key] = set()
        self.restarts = 0
        self._failed: dict[_Key, ExtractError] = {}

    def blame(self, hit: list[_Key], how: str) -> list[_Key]:
        """A worker died with ``hit`` in flight (in the order they will be asked): count the
        restart and decide. One file alone (or one already read again), or any after
        ``MAX_RESTARTS`` restarts, fails with the crash named; the others become suspects.

        Returns:
            The suspects to queue again, each to be handed out alone.
        """
        self.restarts += 1
        retry = []
        for k in hit:
            if len(hit) == 1 or k in self.suspects:
                self.suspects.discard(k)
                self._failed[k] = ExtractError(
                    "extractor-error", f"extractor error: worker process died ({how}) while reading this file alone"
                )
            elif self.restarts > MAX_RESTARTS:
                self._failed[k] = ExtractError(
                    "extractor-error",
                    f"extractor error: worker process died ({how}) with {len(hit)} files in flight, this one "
                    f"among them; not read again: more than {MAX_RESTARTS} worker crashes in this run",
                )
            else:
                self.suspects.add(k)
                retry.append(k)
        log.warning(
            "an extraction worker died (%s) with %d files in flight: %d read again one at a time",
            how,
            len(hit),
            len(retry),
        )
        return retry

    def too_many_restarts(self) -> bool:
        """True when pools keep breaking with nothing in flight (over ``MAX_POOL_STARTS`` restarts)."""
        return self.restarts > MAX_POOL_STARTS

    def give_up(self, e: BaseException) -> None:
        """No new pool: every suspect fails (it is never read in the indexer's process)."""
        for k in self.suspects:
            self._failed[k] = ExtractError(
                "extractor-error",
                "extractor error: worker process died with this file in flight; "
                f"not read again: the worker pool could not start again ({e})",
            )
        self.suspects.clear()

    def take_failure(self, key: _Key) -> ExtractError | None:
        """The failure to give for ``key`` (it killed its worker), once; else None."""
        return self._failed.pop(key, None)

    def forget(self, key: _Key) -> None:
        """``key`` was answered: no longer a suspect."""
        self.suspects.discard(key)

    def clear(self) -> None:
        """Drop every suspect and failure (the pool closes); ``restarts`` stays counted."""
        self.suspects.clear()
        self._failed.clear()
