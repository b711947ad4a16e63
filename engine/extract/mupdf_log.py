"""MuPDF's own messages: never on stdout, collected per thread for the document's notes.

Owns: ``mupdf()`` (PyMuPDF, imported with its message stream replaced once per
process: MuPDF's errors and warnings, which PyMuPDF prints on stdout by default,
go to a per-thread collector; any other PyMuPDF message goes to the
``engine.mupdf`` logger at DEBUG), ``collect()`` (start collecting for one
document on this thread) and ``said()`` (what MuPDF said since), and
``damage_note`` (those messages as one bounded note). Imports ``pymupdf``
lazily; nothing from the engine.

Why: ``chunknav index --json`` prints one JSON envelope on stdout, and a
damaged PDF made MuPDF print ``MuPDF error: ...`` lines there (in the indexing
process and in the extraction workers alike), so the JSON could not be
parsed; and what MuPDF said about a file it repaired was lost, while the
repaired file silently lacked the text of its missing objects.

PyMuPDF calls its message stream on the thread that called MuPDF, so each
thread's collector holds only the messages of the document that thread reads.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from typing import Any, Iterator

__all__ = ["mupdf", "collect", "opening", "said", "damage_note"]

log = logging.getLogger("engine.mupdf")

#: Distinct messages a note quotes at most (the rest are counted).
NOTE_MESSAGES = 3
#: Characters of one quoted message at most.
MESSAGE_CHARS = 160
#: Messages kept per document at most (a damaged file can make thousands).
_KEEP = 1000

_local = threading.local()
_installed = False
_install_lock = threading.Lock()


class _Collector:
    """PyMuPDF's message stream (``pymupdf.set_messages(stream=...)``): ``MuPDF
    error: ...`` / ``MuPDF warning: ...`` lines into this thread's lists, anything
    else to the log. ``print`` writes the text and the line end separately."""

    def write(self, text: str) -> int:
        line = text.strip()
        if not line:
            return len(text)
        for prefix, kind in (("MuPDF error: ", "errors"), ("MuPDF warning: ", "warnings")):
            if line.startswith(prefix):
                kept = _kept(kind)
                if len(kept) < _KEEP:
                    kept.append(line[len(prefix) :])
                return len(text)
        log.debug("%s", line)
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""


def mupdf() -> Any:
    """The ``pymupdf`` module, its messages kept off stdout (installed once per process).

    Errors and warnings display stays on in PyMuPDF (so they reach the collector)
    but its stream is ``_Collector``, never ``sys.stdout``."""
    global _installed
    import pymupdf

    if not _installed:
        with _install_lock:
            if not _installed:
                pymupdf.set_messages(stream=_Collector())
                pymupdf.TOOLS.mupdf_display_errors(True)
                pymupdf.TOOLS.mupdf_display_warnings(True)
                _installed = True
    return pymupdf


def collect() -> None:
    """Start collecting MuPDF's messages for one document on this thread (drops earlier ones)."""
    mupdf()
    _local.errors, _local.warnings = [], []


def _kept(kind: str) -> list[str]:
    kept = getattr(_local, kind, None)
    if kept is None:
        kept = []
        setattr(_local, kind, kept)
    return kept


@contextlib.contextmanager
def opening(pymupdf: Any) -> Iterator[None]:
    """Around ``pymupdf.open``: PyMuPDF hides MuPDF's *errors* while it builds a
    document (they reach only its process-wide store, not the stream), and those
    are what a damaged file's repair is about. So the store is emptied before the
    open (it only ever grows otherwise) and what it gained, less the warnings the
    collector saw meanwhile, is kept as this thread's errors. (The store is
    process-wide: two threads opening files at the same instant may each see
    the other's open-time errors; nothing is ever printed either way.)"""
    try:
        pymupdf.TOOLS.reset_mupdf_warnings()
    except Exception:  # a PyMuPDF without the store: the stream alone
        yield
        return
    seen = len(_kept("warnings"))
    try:
        yield
    finally:
        try:
            stored = pymupdf.TOOLS.mupdf_warnings(reset=True).splitlines()
        except Exception:
            stored = []
        shown = Counter(_kept("warnings")[seen:])
        errors = _kept("errors")
        for m in stored:
            if shown[m]:
                shown[m] -= 1
            elif len(errors) < _KEEP:
                errors.append(m)


def said() -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` MuPDF reported on this thread since ``collect()``
    (at most ``_KEEP`` of each, in order; errors met while a document was being
    opened first, see ``opening``)."""
    return list(_kept("errors")), list(_kept("warnings"))


def damage_note(prefix: str, messages: list[str]) -> str:
    """``prefix`` and the messages as one bounded note: the first ``NOTE_MESSAGES``
    distinct messages in the order MuPDF said them (repeats, and MuPDF's own
    ``... repeated N times...`` lines, left out), then how many other distinct
    ones there were. Distinct messages only, so the note is the same whether the
    file was read whole or in page ranges (each range opens the file again).

    ``damage_note("damaged PDF repaired by MuPDF", ["cannot find startxref"] + ["object out of range (10 0 R)"] * 84)``
    -> ``"damaged PDF repaired by MuPDF: cannot find startxref; object out of range (10 0 R)"``."""
    distinct = list(
        dict.fromkeys(m.strip() for m in messages if m.strip() and not m.strip().startswith("... repeated"))
    )
    if not distinct:
        return prefix
    shown = [m if len(m) <= MESSAGE_CHARS else m[: MESSAGE_CHARS - 3] + "..." for m in distinct[:NOTE_MESSAGES]]
    more = len(distinct) - len(shown)
    tail = f"; and {more} other message{'s' if more != 1 else ''}" if more else ""
    return f"{prefix}: {'; '.join(shown)}{tail}"
