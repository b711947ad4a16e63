"""One child process a cancel can kill, running calls on request: for reads that cannot stop between pages.

Owns: ``ExtractChild``, used by ``engine.index.pool.ExtractPool`` for a
paged file (PDF and the ``PAGE_FORMATS``) read while OCR is on and no worker
pool runs (one core busy, a small run, or a process with other threads: the
explorer). A page's OCR is one call into MuPDF and Tesseract that takes
seconds and cannot stop halfway; in a child process it is simply killed
when the run is cancelled. The child is started once per extract pool
(``python -m engine.index.child``: a fresh interpreter, safe from any
thread, no ``__main__`` re-imported), reads one pickled call ``(function,
args)`` at a time on stdin (the function pickled by reference, as a process
pool sends it: the pool sends ``_die_with_parent`` first, then
``_extract_in_worker`` per file) and answers on stdout with what it
returned. It ends when its stdin closes (this process ended) or when killed.
Imports nothing from the engine; no store, no face.
"""

from __future__ import annotations

import contextlib
import pickle
import selectors
import struct
import subprocess
import sys
from typing import Any, Callable

__all__ = ["ExtractChild", "WAIT_TICK_S"]

#: Seconds between two calls of ``check`` while the child reads a file.
WAIT_TICK_S = 0.1

_HEADER = struct.Struct("!Q")


class ExtractChild:
    """One child process extracting files on request (started on first use)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def call(self, function: Callable[..., Any], args: tuple[Any, ...], check: Callable[[], None] | None) -> Any:
        """``function(*args)`` in the child, calling ``check`` every ``WAIT_TICK_S``
        meanwhile: whatever ``check`` raises kills the child (the next call starts
        another) and goes up.

        Returns:
            What ``function`` returned; ``("bug", text)`` when the child died, could not
            start, or the call raised (``_extract_in_worker``'s answer for "read it yourself").
        """
        try:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            body = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.write(_HEADER.pack(len(body)) + body)
            proc.stdin.flush()
        except (OSError, ValueError, pickle.PicklingError) as e:
            self.close()
            return "bug", f"extract child: {e}"
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                while not sel.select(WAIT_TICK_S if check is not None else None):
                    if check is not None:
                        check()
            head = _read_exactly(proc.stdout, _HEADER.size)
            return pickle.loads(_read_exactly(proc.stdout, _HEADER.unpack(head)[0]))
        except BaseException as e:
            self.close()
            if isinstance(e, (OSError, EOFError, pickle.UnpicklingError)):
                return "bug", f"extract child died: {e}"
            raise

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "engine.index.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        return self._proc

    def close(self) -> None:
        """Kill the child (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(Exception):
            proc.wait(5.0)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()


def _read_exactly(stream: Any, n: int) -> bytes:
    parts = []
    while n:
        part = stream.read(n)
        if not part:
            raise EOFError("the extract child closed its output")
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def _serve() -> None:
    """The child's loop: a pickled call on stdin -> its pickled result on stdout, until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a reader prints may corrupt the answers
    while True:
        try:
            head = _read_exactly(stdin, _HEADER.size)
            function, args = pickle.loads(_read_exactly(stdin, _HEADER.unpack(head)[0]))
        except EOFError:
            return
        try:
            body = pickle.dumps(function(*args), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # the caller reads the file itself
            body = pickle.dumps(("bug", f"{type(e).__name__}: {e}"))
        stdout.write(_HEADER.pack(len(body)) + body)
        stdout.flush()


if __name__ == "__main__":
    _serve()
