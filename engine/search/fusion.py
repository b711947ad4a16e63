"""The fusion of a hybrid search: how the keyword and vector lists become one ranking.

Owns the formula, its constants and its tie rules; the one file to open to change
how a hybrid search ranks. Pure: ranked lists in, one ranked list out; imports
nothing from the engine (``engine.search.hybrid`` feeds it chunks or store row ids).

The formula is weighted reciprocal-rank fusion (Cormack et al. 2009). With
``w = vectorWeight`` and 0-based ranks ``rv`` (vector list) and ``rk`` (keyword
list), an item's fused score is::

    2w / (RRF_K + rv + 1) + 2(1 - w) / (RRF_K + rk + 1)

a term absent when that list did not return the item (``w = 0.5``: the classic
unweighted RRF sum). Each list contributes at least its top ``FUSION_DEPTH`` items.
The constants were chosen on the evaluation set (``tests/data/eval_questions.json``,
``docs/retrieval.md``).

Exact words win: each item may carry its ``coverage``, the share of the query's
content words its text holds (``engine.search.words.coverage``, measured by
``engine.search.hybrid`` on the fused candidates). An item holding every one of
them (coverage ``EXACT_COVERAGE``) ranks above every item that does not, whatever
their fused scores; inside each of the two tiers the fused score orders. So a chunk
holding both rare words of ``Erdgasleitung Vreden`` ranks above a chunk holding
neither that only the vector list returned, while a question that shares no word
with any chunk (a paraphrase) is ranked by the fused score alone.

A tie in the fused score between a chunk holding every query word and a chunk only
the vector list returned (both first in their list: 1/61 each) thus goes to the chunk
holding the words. Ties inside a tier do not prefer the keyword list: with
all-MiniLM-L6-v2 that preference cost three paraphrased questions of the evaluation
set their top-5 answer (docs/decisions/exact-words-win.md).

Tie rules: an item listed twice in one list keeps its best (first) rank there;
items with equal fused scores in one tier are ordered by a stable key of the item (a chunk's
collection path, file path and chunk index: ``tie`` of ``fuse``, or
``in_tie_order`` once the keys of fused row ids are read), so the order never
depends on how the index was built; without a key they keep the order in which
they were first met, walking the vector list and then the keyword list.
``tie_span`` says how far past a cut the items tied with the last one kept reach.
``rank_key`` is the order before the tie key: tier, then fused score.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = [
    "RRF_K",
    "FUSION_DEPTH",
    "VECTOR_WEIGHT_DEFAULT",
    "EXACT_COVERAGE",
    "Fused",
    "fuse",
    "with_coverage",
    "rank_key",
    "in_tie_order",
    "tie_span",
]

#: Reciprocal-rank-fusion constant k (score = sum of 1/(k + rank + 1)).
RRF_K = 60
#: Candidates each ranked list contributes to a hybrid fusion (at least).
FUSION_DEPTH = 20
#: Weight of the vector list in hybrid fusion when ``vectorWeight`` is not given.
VECTOR_WEIGHT_DEFAULT = 0.5
#: Coverage (share of the query's content words a chunk holds) that puts an item in the
#: exact-word tier, above every item below it (docs/decisions/exact-words-win.md).
EXACT_COVERAGE = 1.0

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Fused(Generic[T]):
    """One fused item and what ranked it.

    Attributes:
        item: the item as the lists gave it (a chunk, or a store row id).
        score: the fused score (see the module docstring).
        vector_score / vector_rank: its score and 0-based rank in the vector list,
            None when that list did not return it.
        keyword_score / keyword_rank: likewise for the keyword list.
        coverage: the share (0..1) of the query's content words the item's text holds,
            None when not measured (the item then stays out of the exact-word tier).
    """

    item: T
    score: float
    vector_score: float | None = None
    vector_rank: int | None = None
    keyword_score: float | None = None
    keyword_rank: int | None = None
    coverage: float | None = None


def rank_key(f: Fused[Any]) -> tuple[int, float]:
    """The order of fused items before their tie key, ascending: the exact-word tier first,
    then the higher fused score."""
    exact = f.coverage is not None and f.coverage >= EXACT_COVERAGE
    return (0 if exact else 1, -f.score)


def _same(item: Hashable) -> Hashable:
    """The default key: the item itself (row ids, strings, numbers)."""
    return item  # an unhashable item fails in the dict of ``fuse``


def fuse(
    vector: Sequence[tuple[T, float]],
    keyword: Sequence[tuple[T, float]],
    vector_weight: float = VECTOR_WEIGHT_DEFAULT,
    key: Callable[[T], Hashable] = _same,
    k: int = RRF_K,
    tie: Callable[[T], Any] | None = None,
    coverage: Callable[[T], float | None] | None = None,
) -> list[Fused[T]]:
    """Weighted reciprocal-rank fusion of two ranked lists, best first.

    Args:
        vector: ``(item, cosine)`` best first.
        keyword: ``(item, -bm25)`` best first.
        vector_weight: w in 0..1 (1: vector order, 0: keyword order).
        key: what makes two items the same (default: the item itself).
        k: the RRF constant.
        tie: the order of items with equal fused scores (a sortable key of the item);
            None: the order first met.
        coverage: the share (0..1) of the query's content words an item holds (the
            exact-word tier); None: not measured (no tier).

    Returns:
        One ``Fused`` per distinct key, best first (``rank_key``), with the tie rules of
        the module docstring. The item kept for a key is the first one met.
    """
    order: dict[Hashable, int] = {}
    items: list[T] = []
    scores: list[float] = []
    found: list[list[tuple[float, int] | None]] = []  # per item: [vector (score, rank), keyword (score, rank)]
    for side, (ranking, weight) in enumerate(((vector, vector_weight), (keyword, 1.0 - vector_weight))):
        for rank, (item, score) in enumerate(ranking):
            at = order.setdefault(key(item), len(items))
            if at == len(items):
                items.append(item)
                scores.append(0.0)
                found.append([None, None])
            if found[at][side] is not None:
                continue  # listed twice: the best rank stays
            found[at][side] = (float(score), rank)
            scores[at] += 2.0 * weight / (k + rank + 1)
    out: list[Fused[T]] = []
    for at in range(len(items)):
        v, kw = found[at]
        out.append(
            Fused(
                items[at],
                scores[at],
                None if v is None else v[0],
                None if v is None else v[1],
                None if kw is None else kw[0],
                None if kw is None else kw[1],
                None if coverage is None else coverage(items[at]),
            )
        )
    out.sort(key=rank_key)  # stable: equal keys stay in the order first met
    return out if tie is None else in_tie_order(out, tie)


def with_coverage(fused: Iterable[Fused[T]], coverage: Callable[[T], float | None]) -> list[Fused[T]]:
    """``fused`` with each item's ``coverage`` measured, ranked again (``rank_key``; equal keys
    keep their order): the exact-word tier for a fusion whose items' texts were read after it ran."""
    out = [
        Fused(f.item, f.score, f.vector_score, f.vector_rank, f.keyword_score, f.keyword_rank, coverage(f.item))
        for f in fused
    ]
    out.sort(key=rank_key)
    return out


def in_tie_order(fused: Iterable[Fused[T]], tie: Callable[[T], Any]) -> list[Fused[T]]:
    """``fused`` best first (``rank_key``), equal keys in ``tie(item)`` order (ascending)."""
    return sorted(fused, key=lambda f: (rank_key(f), tie(f.item)))


def tie_span(fused: Sequence[Fused[Any]], n: int) -> int:
    """The length of the shortest head of ``fused`` (best first) that holds its first ``n``
    items and every item whose ``rank_key`` equals the ``n``-th's: what must be put in tie
    order before the first ``n`` are cut."""
    if n <= 0:
        return 0
    end = min(n, len(fused))
    while end < len(fused) and rank_key(fused[end]) == rank_key(fused[end - 1]):
        end += 1
    return end
