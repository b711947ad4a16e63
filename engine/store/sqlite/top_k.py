"""Which of a vector scan's scores can be among the best k, and their final order.

Owns: ``top_candidates`` (every score within a margin of the k-th best: a set that
holds the best k whatever the rounding of the scan), ``exact_scores`` (the scores of
chosen rows computed the same way wherever a row sits) and ``ranked`` (the best k of
those, equal scores in a tie key's order). Used by
``engine.store.sqlite.vectors.top_occurrences`` after every scan. Imports ``numpy``
(``engine.lazy``) only; never a store, extract/embed or a face (streamlit, mcp, argparse).

Why rescoring: a float32 matrix-vector product rounds a row's dot product
differently depending on where the row sits in the matrix (BLAS kernels treat the
last rows of a block apart), so two equal vectors can score one unit in the last
place apart, and which one scores higher depends on the order the vectors were
stored in. The scan's scores only choose candidates; the answer is ranked by
``exact_scores``, which depend on the row and the query alone.
"""

from __future__ import annotations

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = ["top_candidates", "exact_scores", "scan_margin", "ranked", "TOP_K_MIN_ROWS"]

#: Scores from which ``top_candidates`` first bounds the k-th best by block maxima (fewer: a partition).
TOP_K_MIN_ROWS = 16_384
_TOP_K_BLOCKS = 64  # blocks whose maxima bound the k-th best score from below
_TOP_K_MAX = 32  # the bound is tried for k up to this (half the blocks)
_UNIT = 2.0**-24  # float32 unit roundoff


def scan_margin(dim: int, q: np.ndarray) -> float:
    """How far a float32 scan's score of a unit-length row can be from its exact dot product
    with ``q``, doubled (the scan's k-th best is itself rounded), with a factor 2 to spare:
    a float32 sum of ``dim`` products errs by at most ``dim * 2**-24 * sum|a_i q_i|``
    <= ``dim * 2**-24 * |q|`` (about 6e-5 at 256 dimensions for a unit query)."""
    return 4.0 * (dim + 2) * _UNIT * float(np.linalg.norm(np.asarray(q, np.float64)))


def top_candidates(scores: np.ndarray, limit: int, margin: float = 0.0) -> np.ndarray:
    """Ascending indices of every score at least the ``limit``-th best minus ``margin``.

    With ``margin`` the scan's error bound (``scan_margin``), the result holds every
    row whose exact score can reach the best ``limit``, and every row tied with the
    ``limit``-th: the cut depends on the scores alone, never on which of equal scores a
    partition happens to keep. On a large array with a small ``limit`` the k-th largest
    of ``_TOP_K_BLOCKS`` block maxima (a lower bound of the k-th best score: those k
    maxima are k distinct scores at least that large) first narrows the scores to
    compare, so no partition of the whole array runs (~0.08 instead of ~0.3 ms at 100k
    scores). NaN scores rank below every number: they are returned only when fewer
    than ``limit`` scores are numbers (then every index is).

    Returns:
        int64 indices into ``scores`` (1-D float32), at least ``min(limit, len(scores))``.
    """
    n = len(scores)
    k = min(limit, n)
    if k < 1:
        return np.empty(0, np.int64)
    if k == n:
        return np.arange(n, dtype=np.int64)
    if k <= _TOP_K_MAX and n >= TOP_K_MIN_ROWS and scores.ndim == 1:
        b = _TOP_K_BLOCKS
        maxima = scores[: n - n % b].reshape(b, -1).max(axis=1)
        maxima.partition(b - k)
        bound = maxima[b - k]
        if not np.isnan(bound):
            cand = np.flatnonzero(scores >= bound - margin)
            if len(cand) >= k:
                best = scores[cand]
                kth = np.partition(best, len(best) - k)[len(best) - k]
                if not np.isnan(kth):
                    return cand[best >= kth - margin]
    return _candidates_partition(scores, k, margin)


def _candidates_partition(scores: np.ndarray, k: int, margin: float) -> np.ndarray:
    """``top_candidates`` through a partition of the whole array (1 <= k < len)."""
    n = len(scores)
    # ndarray methods: np.partition's C code without its wrapper (~4 us on cold caches)
    neg = -scores
    neg.partition(k - 1)  # NaN sorts last: the k-th is a number unless fewer than k are
    kth = -neg[k - 1]
    if np.isnan(kth):
        return np.arange(n, dtype=np.int64)
    return np.flatnonzero(scores >= kth - margin)


def exact_scores(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float32 dot products of ``matrix[rows]`` with ``q``, each the same for the same row
    values wherever the row sits: float64 products summed along the row (numpy's pairwise
    sum runs alike on every row), rounded once to float32 (~7 us for 12 rows, ~65 us for
    200 at 256 dimensions)."""
    a = np.asarray(matrix[rows], np.float64)
    a *= np.asarray(q, np.float64)
    return a.sum(axis=1).astype(np.float32)


def ranked(scores: np.ndarray, tie: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the best ``limit`` of ``scores``, best first, equal scores by ``tie`` ascending
    (NaN last)."""
    return np.lexsort((tie, -scores))[:limit]
