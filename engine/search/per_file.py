"""One hit per file: the deepening loop every per-file search runs (the ``search`` tool).

Owns ``one_per_file``: rank at a depth, keep each file's first (best) item, and go
4x deeper until enough files are reached, the ranking ran out, or every file of the
scope is reached. Vector, keyword and hybrid searches (over chunks or over store row
ids) all run this one loop (``engine.search.searcher``, ``engine.search.hybrid``).
Pure: imports nothing from the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

__all__ = ["one_per_file"]

T = TypeVar("T")


def one_per_file(
    rank: Callable[[int], Sequence[T]],
    depth: int,
    want_files: int,
    file_of: Callable[[T], Hashable],
    score_of: Callable[[T], float],
    min_score: float | None,
    files_in_scope: Callable[[], int],
) -> list[T]:
    """Each file's best item, best first, from the shallowest ranking that holds enough files.

    Args:
        rank: ``rank(depth)``, the ranking at that depth, best first; fewer than
            ``depth`` items means it holds everything there is.
        depth: the first depth tried; each further pass is 4x deeper.
        want_files: files that are enough (after ``min_score``).
        file_of: the file an item belongs to (any hashable key).
        score_of: an item's score, compared with ``min_score``.
        min_score: items scoring below it are dropped; None keeps all.
        files_in_scope: the number of files in the searched scope, -1 when unknown;
            asked at most once, only when a first pass falls short.

    Returns:
        Each file's first item whose score passes, in ranking order (possibly
        more than ``want_files``: the caller cuts to its limit).
    """
    in_scope: int | None = None
    while True:
        ranked = rank(depth)
        reached: set[Hashable] = set()
        best: dict[Hashable, T] = {}
        for item in ranked:
            file = file_of(item)
            reached.add(file)
            if min_score is None or score_of(item) >= min_score:
                best.setdefault(file, item)
        kept = list(best.values())
        if len(kept) >= want_files or len(ranked) < depth:
            return kept  # enough files, or the ranking ran out
        if in_scope is None:
            in_scope = files_in_scope()
        if 0 <= in_scope <= len(reached):
            return kept  # every file of the scope is reached
        depth *= 4
