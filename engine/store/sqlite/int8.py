"""The int8 scan of large full vector searches: quantised dot products (simsimd), then float32 rescoring.

Owns: how float32 vectors become int8 codes, and the candidate search over
those codes. A stored vector is L2-normalised, so its components have a
root mean square of exactly ``1/sqrt(dim)``; every model's codes use one
global scale fixed by the dimension alone, ``int8_scale(dim) = 127 *
sqrt(dim) / CLIP_SIGMAS`` (components beyond ``CLIP_SIGMAS`` RMS, |x| >
0.375 at 256-d, saturate at +-127; none of 256M components of the bench's
1M WordLlama vectors reaches that). Because the scale depends on nothing
but ``dim``, a row's codes are the same whether the row is appended during
the embed pass or rebuilt from SQL (the files compare byte for byte), and
no rescan is needed when vectors are added. A query is quantised with its
own scale (``127 / max|q|``): a positive factor per query does not change
the order of its dot products.

``int8_candidates`` computes the int8 dot product of the query with every
row (simsimd's ``cdist``: SIMD kernels, AVX512-VNNI where the CPU has it;
int32-exact sums returned as float32, exact below 2**24) in one or two
parts on threads (``cdist`` releases the GIL; its own ``threads=`` does not
split a single query row), masks rows without a live chunk, and keeps the
best ``r`` of each part with ``argpartition`` inside the worker. The caller
rescores those rows in float32 (``candidate_entries`` gives their entries), so
the scores it returns are the exact float32 cosines; only the choice of which
rows to rescore is approximate (measured by bench/vector_scan.py).

Imports ``simsimd`` lazily (``kernel()``); without it the caller scans
exactly in float32 (the reason is logged once). Imports numpy and the
standard library only; no other engine module, no face.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from engine.lazy import np  # numpy on first use (engine.lazy)

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "CLIP_SIGMAS",
    "RESCORE",
    "int8_scale",
    "quantise",
    "kernel",
    "int8_candidates",
    "RowIndex",
    "row_index",
    "candidate_entries",
    "share_rows",
]

log = logging.getLogger(__name__)

#: Components are clipped at this many RMS (1/sqrt(dim)) of an L2-normalised vector.
CLIP_SIGMAS = 6.0
#: Rows rescored in float32 per query (at least 4x the hits asked for). The bench's 77 real
#: questions at 1M need 20 for recall@10 = 1.0 (10 gives 0.97); 200 leaves a 10x margin for 0.1 ms.
RESCORE = 200
_BLOCK = 16_384  # rows quantised at a time (bounded temporaries)
_SHARE_BYTES = 1 << 21  # ~2 MB of int8 codes per shared block (8,192 rows at 256-d)

_lock = threading.Lock()
_kernel: Callable[..., Any] | None = None
_kernel_tried = False
_pool: ThreadPoolExecutor | None = None


def int8_scale(dim: int) -> float:
    """The float32 -> int8 factor of every ``dim``-dimensional model: 127 * sqrt(dim) / CLIP_SIGMAS."""
    return 127.0 * math.sqrt(dim) / CLIP_SIGMAS


def share_rows(dim: int, r: int) -> int:
    """Rows per block of a shared int8 scan: ~2 MB of ``dim``-wide codes, at least ``2 * r``."""
    return max(2 * r, _SHARE_BYTES // max(1, dim))


def quantise(rows: np.ndarray, scale: float) -> np.ndarray:
    """int8 codes of float32 rows: ``clip(rint(rows * scale), -127, 127)``.

    Args:
        rows: float32 (n, dim) (or (dim,)); read a block at a time (a memmap is fine).
        scale: ``int8_scale(dim)``, applied in float32 (the same bytes on every path).

    Returns:
        int8 array of the same shape, C-contiguous.
    """
    a = np.asarray(rows, np.float32)
    if a.ndim == 1:
        return quantise(a[None, :], scale)[0]
    out = np.empty(a.shape, np.int8)
    s = np.float32(scale)
    for i in range(0, len(a), _BLOCK):
        x = a[i : i + _BLOCK] * s
        np.rint(x, out=x)
        np.clip(x, -127, 127, out=x)
        out[i : i + _BLOCK] = x
    return out


def kernel() -> Callable[..., Any] | None:
    """``simsimd.cdist``, or None when simsimd cannot be imported (logged once with the reason)."""
    global _kernel, _kernel_tried
    if not _kernel_tried:
        with _lock:
            if not _kernel_tried:
                try:
                    import simsimd

                    _kernel = simsimd.cdist
                except Exception as e:  # ImportError, or a wheel without a kernel for this CPU
                    log.warning(
                        "int8 vector scan off, exact float32 scans instead (simsimd: %s: %s)", type(e).__name__, e
                    )
                    _kernel = None
                _kernel_tried = True
    return _kernel


def _worker() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                from concurrent.futures import ThreadPoolExecutor  # on first use (~0.8 ms at import)

                _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunknav-int8")
    return _pool


def _part_top(
    cdist: Callable[..., Any], codes: np.ndarray, q8: np.ndarray, a: int, b: int, dead: np.ndarray | None, r: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``a:b``: the best ``r`` (global row numbers, their int8 dot products), unordered."""
    s = np.asarray(cdist(q8, codes[a:b], metric="dot", out_dtype="float32")).reshape(-1)
    if dead is not None and len(dead):
        lo, hi = np.searchsorted(dead, (a, b))
        if hi > lo:
            s[dead[lo:hi] - a] = -np.inf
    n = b - a
    if r >= n:
        top = np.arange(n)
    else:
        top = np.argpartition(s, n - r)[n - r :]  # the r largest, without a negated copy
    return top + a, s[top]


def int8_candidates(
    codes: np.ndarray,
    q: np.ndarray,
    r: int,
    dead: np.ndarray | None = None,
    threads: int = 1,
    run: Callable[[int, Callable[[int], object], int], None] | None = None,
) -> np.ndarray:
    """Matrix rows with the ``r`` highest int8 dot products with ``q``, ascending row order.

    Args:
        codes: int8 (n, dim), ``quantise(matrix, int8_scale(dim))`` (a memmap is fine).
        q: float32 (dim,), the query (any positive scale).
        r: candidates wanted (>= 1); all live rows when n <= r.
        dead: sorted int64 matrix rows that must not be returned (no live chunk), or None.
        threads: 1, or 2 to score the two halves of ``codes`` at once.
        run: ``run(blocks, block, rows)`` calls ``block(i)`` for every ``i < blocks``
            (``engine.store.scan_share.ScanShare.run``: on this thread and a hybrid search's
            keyword thread once its list is ranked); then ``codes`` is scored in
            ``share_rows(dim, r)``-row blocks, each keeping its best ``r`` (``threads``
            is ignored). The same candidates as one scan (up to ties of the r-th score).

    Returns:
        int64 (<= r,) sorted matrix rows (rows in ``dead`` excluded).

    Raises:
        RuntimeError: simsimd is not available (check ``kernel()`` first).
    """
    cdist = kernel()
    if cdist is None:
        raise RuntimeError("simsimd is not available")
    qf = np.asarray(q, np.float32).reshape(-1)
    peak = float(np.abs(qf).max()) or 1.0
    q8 = quantise(qf, 127.0 / peak)[None, :]
    n = len(codes)
    if run is not None:
        b = share_rows(codes.shape[1], r)
        blocks = -(-n // b)
        parts: list = [None] * blocks

        def block(i: int) -> None:
            parts[i] = _part_top(cdist, codes, q8, i * b, min(n, (i + 1) * b), dead, r)

        run(blocks, block, n)
        rows = np.concatenate([p[0] for p in parts])
        s = np.concatenate([p[1] for p in parts])
        if len(rows) > r:
            keep = np.argpartition(s, len(s) - r)[len(s) - r :]
            rows, s = rows[keep], s[keep]
    elif threads > 1 and n >= 2 * r:
        mid = n // 2
        fut = _worker().submit(_part_top, cdist, codes, q8, mid, n, dead, r)
        parts = [_part_top(cdist, codes, q8, 0, mid, dead, r), fut.result()]
        rows = np.concatenate([p[0] for p in parts])
        s = np.concatenate([p[1] for p in parts])
        if len(rows) > r:
            keep = np.argpartition(s, len(s) - r)[len(s) - r :]
            rows, s = rows[keep], s[keep]
    else:
        rows, s = _part_top(cdist, codes, q8, 0, n, dead, r)
    rows = rows[np.isfinite(s)]  # dead rows that only filled a short part
    rows.sort()
    return rows.astype(np.int64, copy=False)


@dataclass(frozen=True)
class RowIndex:
    """Entries (e.g. chunk occurrences) grouped by the matrix row that scores them.

    Attributes:
        order: int64 (m,): entry indices sorted by matrix row (stable).
        sorted_rows: int64 (m,): ``matrix_row[order]``, ascending.
        dead: int64 sorted matrix rows no entry points to (their vector's chunk is gone).
        n: matrix rows this was built for.
    """

    order: np.ndarray
    sorted_rows: np.ndarray
    dead: np.ndarray
    n: int


def row_index(matrix_row: np.ndarray, n: int) -> RowIndex:
    """The ``RowIndex`` of entries whose matrix rows are ``matrix_row`` (int64 (m,), each < n)."""
    order = np.argsort(matrix_row, kind="stable")
    live = np.zeros(n, bool)
    live[matrix_row] = True
    return RowIndex(order, matrix_row[order], np.flatnonzero(~live), n)


def candidate_entries(
    codes: np.ndarray,
    q: np.ndarray,
    index: RowIndex,
    limit: int,
    r: int = RESCORE,
    threads: int = 1,
    run: Callable[[int, Callable[[int], object], int], None] | None = None,
) -> np.ndarray:
    """Every entry of the ``max(r, 4 * limit)`` live rows with the highest int8 dot products.

    The caller scores these entries in float32 and ranks them
    (``engine.store.sqlite.vectors.top_occurrences``): an entry's score is its row's.

    Args:
        codes: int8 (n, dim) codes of the L2-normalised vectors.
        q: float32 (dim,) query; index: ``row_index`` of the entries over these n rows.
        limit: entries the caller will keep (>= 1); r: rows chosen at least; threads: 1 or 2
            for the scan; run: the scan in shared blocks instead (``int8_candidates``).

    Returns:
        int64 entry indices, grouped by ascending matrix row.

    Raises:
        RuntimeError: simsimd is not available.
    """
    rows = int8_candidates(codes, q, max(r, 4 * limit), index.dead, threads, run)
    lo = np.searchsorted(index.sorted_rows, rows, "left")
    cnt = np.searchsorted(index.sorted_rows, rows, "right") - lo
    first = np.cumsum(cnt) - cnt  # where each row's entries start in the expanded list
    pos = np.repeat(lo - first, cnt) + np.arange(int(cnt.sum()))
    return index.order[pos]
