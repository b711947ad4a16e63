"""Heading paths: the section a chunk sits in, from the headings its document recorded.

Owns: ``HEADINGS_KEY`` (the document metadata key the extractors fill: a list of
``[start, level, title]``, ``start`` a character offset into the extracted text,
``level`` 1 = top, in text order), ``heading_path`` (the titles in effect at an offset,
outermost first), ``chunk_heading_path`` (a chunk's: the section holding most of it), ``headings_within`` (the titles starting inside a span) and
``heading_matches`` (the ``heading:`` scope rule). Computed on read: a document indexed
without headings has an empty path until its next index run. Pure: imports nothing
from the engine.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

__all__ = ["HEADINGS_KEY", "heading_path", "chunk_heading_path", "headings_within", "heading_matches"]

#: Document metadata key of the recorded headings.
HEADINGS_KEY = "headings"


def _rows(headings: Any) -> list[tuple[int, int, str]]:
    """``[start, level, title]`` rows as tuples; rows of another shape are skipped."""
    out: list[tuple[int, int, str]] = []
    for row in headings or ():
        if isinstance(row, (list, tuple)) and len(row) == 3:
            start, level, title = row
            if isinstance(start, int) and isinstance(level, int) and isinstance(title, str) and title.strip():
                out.append((start, level, title.strip()))
    return out


def heading_path(headings: Any, position: int) -> list[str]:
    """The titles in effect at ``position`` (characters into the text), outermost first.

    A heading is in effect from its start until the next heading of the same or a
    higher level (a smaller ``level`` number); [] before the first heading or with none.
    """
    rows = _rows(headings)
    stack: list[tuple[int, str]] = []
    for start, level, title in rows[: bisect_right([r[0] for r in rows], position)]:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
    return [t for _, t in stack]


def chunk_heading_path(headings: Any, start: int, end: int) -> list[str]:
    """A chunk's heading path: the path of the section holding most of ``[start, end)``
    (the headings starting inside the chunk cut it into sections; the earliest wins a tie)."""
    rows = _rows(headings)
    cuts = [start] + [s for s, _, _ in rows if start < s < end] + [end]
    best = max(range(len(cuts) - 1), key=lambda i: (cuts[i + 1] - cuts[i], -i))
    return heading_path(rows, cuts[best])


def headings_within(headings: Any, start: int, end: int) -> list[str]:
    """Titles of the headings starting inside ``[start, end)`` (characters), in text order."""
    return [t for s, _, t in _rows(headings) if start <= s < end]


def heading_matches(titles: Sequence[str], wanted: Sequence[str]) -> bool:
    """The ``heading:`` rule: every wanted phrase is found (case-folded, spaces folded)
    inside one of ``titles``."""
    folded = [" ".join(t.casefold().split()) for t in titles]
    return all(any(" ".join(w.casefold().split()) in t for t in folded) for w in wanted)
