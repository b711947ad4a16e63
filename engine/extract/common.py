"""What every extractor shares: the text layout separators and plain word spans.

Owns: ``PAGE_SEPARATOR``, ``BLOCK_SEPARATOR``, ``LINE_SEPARATOR``,
``WORD_SEPARATOR`` (the layout rules in ``engine.extract``'s docstring),
``PAGE_FORMATS`` (the paged formats besides PDF), ``words_of``
(whitespace-separated spans without page or box, for formats that carry no
geometry), ``gc_paused``, and the stop point of a long read (``checkpoint``,
``interruptible``: a reader calls ``checkpoint`` between pages; the indexer,
reading in its own process, passes a check that raises once the run is
cancelled). Imports ``engine.values`` only.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.values import WordArray

__all__ = [
    "PAGE_SEPARATOR",
    "BLOCK_SEPARATOR",
    "LINE_SEPARATOR",
    "WORD_SEPARATOR",
    "words_of",
    "PAGE_FORMATS",
    "gc_paused",
    "place_headings",
    "markdown_headings",
    "checkpoint",
    "interruptible",
]

PAGE_SEPARATOR = "\f"
BLOCK_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
WORD_SEPARATOR = " "

_WORD_RE = re.compile(r"\S+")

#: The paged formats besides PDF: suffix -> PyMuPDF filetype. Read like a PDF
#: (``engine.extract.pages``) and drawn page by page (``engine.render``).
PAGE_FORMATS: dict[str, str] = {
    ".epub": "epub",
    ".xps": "xps",
    ".oxps": "xps",
    ".fb2": "fb2",
    ".mobi": "mobi",
    ".cbz": "cbz",
}


#: Longest text (characters) whose word spans are kept. Spans without a page
#: or box carry no provenance (chunking cuts by offsets and ignores them), and
#: for a huge plain-text file they would cost ~16 bytes a word: above this a
#: text gets no spans, so memory stays bounded (a 200 MB text file).
WORD_SPANS_MAX_CHARS = 16_000_000


def words_of(text: str) -> WordArray:
    """Whitespace-separated spans of ``text`` as a ``WordArray`` without pages.

    Returns:
        n words in text order: ``starts``/``ends`` character offsets into
        ``text`` (end exclusive), pages 0, boxes NaN (shape (n, 4); one
        shared read-only row, no memory per word). A text longer than
        ``WORD_SPANS_MAX_CHARS`` gives no words (``WordArray.empty()``).
    """
    if len(text) > WORD_SPANS_MAX_CHARS:
        return WordArray.empty()
    flat = np.fromiter(itertools.chain.from_iterable(m.span() for m in _WORD_RE.finditer(text)), dtype=np.int64)
    if not len(flat):
        return WordArray.empty()
    cols = flat.reshape(-1, 2)
    n = len(cols)
    return WordArray(
        cols[:, 0], cols[:, 1], np.broadcast_to(np.int32(0), (n,)), np.broadcast_to(np.full(4, np.nan), (n, 4))
    )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block that builds many
    acyclic objects (a PDF's word tuples, chunk windows and boxes, chunk rows):
    the collector's passes over them were ~3-5% of the work (measured on the
    test corpus) and find nothing. Re-enabled on exit only if it was enabled on
    entry, so blocks nest. Raises whatever the block raises."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def place_headings(text: str, headings: list[tuple[int, str]], starts: list[int] | None = None) -> list[list[Any]]:
    """Where each heading's title stands in the extracted text: ``[[start, level, title], ...]``.

    Args:
        text: the extracted text (NFKC), where ``start`` points.
        headings: ``(level, title)`` in text order; level 1 = top.
        starts: where to look for each title from (a PDF outline entry's page start);
            None: after the previous heading found.

    Returns:
        One row per heading found (NFKC title, whitespace folded); a title not found is
        placed at its ``starts`` entry when given, else left out.
    """
    import unicodedata

    out: list[list[Any]] = []
    pos = 0
    for i, (level, title) in enumerate(headings):
        t = " ".join(unicodedata.normalize("NFKC", title).split())
        if not t:
            continue
        lo = starts[i] if starts is not None else pos
        at = text.find(t, lo)
        if starts is not None and (at < 0 or (i + 1 < len(starts) and at > max(starts[i + 1], lo))):
            at = lo  # not on its page: the page start
        if at < 0:
            continue
        out.append([at, int(level), t])
        pos = at + len(t) if starts is None else pos
    return out


_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.M)
_SETEXT = re.compile(r"^(?! {4})(\S[^\n]*)\n {0,3}(=+|-+)[ \t]*$", re.M)


def markdown_headings(text: str) -> list[list[Any]]:
    """``[[start, level, title], ...]`` of a Markdown text: ATX (``# Title``) and setext
    (``Title`` over ``===`` or ``---``) headings outside fenced code blocks, in text order."""
    fenced: list[tuple[int, int]] = []
    marks = [m.start() for m in _FENCE.finditer(text)]
    for a, b in zip(marks[::2], marks[1::2] + [len(text)] * (len(marks) % 2)):
        fenced.append((a, b))

    def outside(i: int) -> bool:
        return not any(a <= i < b for a, b in fenced)

    rows = [[m.start(), len(m.group(1)), m.group(2).strip()] for m in _ATX.finditer(text) if outside(m.start())]
    rows += [
        [m.start(1), 1 if m.group(2)[0] == "=" else 2, m.group(1).strip()]
        for m in _SETEXT.finditer(text)
        if outside(m.start()) and not m.group(1).lstrip().startswith(("#", "-", "*", "|", ">"))
    ]
    return sorted(r for r in rows if r[2])


_checks = threading.local()  # this thread's check while a read is interruptible


@contextmanager
def interruptible(check: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``checkpoint`` in this thread calls ``check`` (which raises to
    abandon the read: the indexer's cancel). Only in this process: a worker forked
    meanwhile never calls it."""
    before = getattr(_checks, "check", None)
    _checks.check = (os.getpid(), check)
    try:
        yield
    finally:
        _checks.check = before


def checkpoint() -> None:
    """Where a long read may stop: between pages. Calls the check of ``interruptible``
    (nothing outside it); whatever it raises ends the read."""
    held = getattr(_checks, "check", None)
    if held is not None and held[0] == os.getpid():
        held[1]()
