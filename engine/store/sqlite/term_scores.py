"""The any-term keyword pass from per-term BM25 lists: exact scores, each term scored once per index state.

Owns: ``TermLists`` (a bounded, least-recently-used store of one term's
``(chunks rowid, BM25 contribution)`` arrays for one ``chunks_gen``) and
``any_term_refs``, which ranks an any-term porter query from those lists
instead of asking FTS5 to score the OR query, when the lists are cached (or
cheap to fetch). ``engine.store.sqlite.keyword.keyword_refs`` calls it and
runs the OR query itself when this returns None.

Why: FTS5's ``bm25()`` costs ~0.7 us per matched row (the document-size
lookup and the phrase position lists; ``count(*)`` of the same MATCH is
~0.06 us per row), and the any-term pass of a paraphrased question matches
~2,300 of 100k chunks (p50), so it takes ~1.7 ms, most of a hybrid search's
keyword list. A common term recurs across questions
(and across the modes of one question, e.g. Explore's side-by-side run), so
its list is worth keeping; a term seen once is not fetched.

Exactness (the rule these lists rely on, from FTS5's ``fts5Bm25Function``):
the OR query's score of a row is ``0.0 + sum over the query's phrases, in
their order, of idf(phrase) * f*(k1+1) / (f + k1*(1-b+b*D/avgdl))``, and
``bm25()`` returns ``-1.0 * score``; a phrase absent from the row adds
exactly 0.0. idf depends on the phrase's own document count and the index's
row count, avgdl on the index, never on the other phrases. So the
single-term query ``MATCH '<term>'`` gives that term's contribution to any
OR query, bit for bit, and adding the contributions in phrase order
reproduces FTS5's sum exactly (tested against the OR query's scores, bit
for bit, on the evaluation questions and random term sets:
tests/store/test_term_scores.py). Ties keep the SQL order: score descending, then
rowid ascending.

Consistency: lists belong to one ``chunks_gen`` (the counter every chunk
write moves); the counter is read before and after a fetch, and the lists
are dropped when it moved. Inside a transaction on the reading connection
(a ``batch()``) nothing is cached or used.

Imports numpy on first use (``engine.lazy``) and the standard library; no
other engine module, no face.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from typing import Any, Callable, ContextManager

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = [
    "TermLists",
    "any_term_refs",
    "keyword_state",
    "document_counts",
    "TERM_POSTINGS_BUDGET",
    "NEW_TERMS_SHARE",
    "NEW_TERMS_FLOOR",
]

#: Most postings (rows of term lists, 16 bytes each) one store keeps: ~16 MB.
TERM_POSTINGS_BUDGET = 1_000_000
#: The lists are used when the postings of the query's terms never seen before (in this
#: ``chunks_gen``) are at most this share of the query's postings, or at most ``NEW_TERMS_FLOOR``:
#: fetching a list (packed) costs ~1.2x scoring its rows inside the OR query (~0.7 us a row), so a
#: question made mostly of terms seen for the first time is scored by the OR query (and its terms
#: are remembered as seen), and a term's list is fetched the second time the term is asked for.
NEW_TERMS_SHARE = 0.25
NEW_TERMS_FLOOR = 256
_SEEN_MAX = 100_000  # terms remembered as seen (then forgotten all at once)

_TERM_SQL = "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?"
_GEN_SQL = "SELECT value FROM meta WHERE key = 'chunks_gen'"


class TermLists:
    """Per-term BM25 lists of one ``chunks_gen``, least recently used dropped past a budget.

    A list is ``(rowids, contributions)``: int64 (n,) ascending chunks rowids of
    the rows matching the term in ``chunks_fts``, float64 (n,) each row's
    ``-bm25()`` of the single-term query (its exact share of any OR query's score).
    Thread-safe (one lock around the dict).

    Attributes:
        gen: the ``chunks_gen`` value (as stored in ``meta``) the lists belong to.
        budget: most postings kept.
        size: postings kept now.
        fetched / used: lists fetched, and any-term passes answered from lists (counters).
    """

    def __init__(self, gen: object, budget: int = TERM_POSTINGS_BUDGET) -> None:
        self.gen = gen
        self.budget = budget
        self.size = 0
        self.fetched = 0
        self.used = 0
        self._lists: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.scratch = _Scratch()

    def get(self, term: str) -> tuple[Any, Any] | None:
        """The term's list (marked recently used), or None."""
        with self._lock:
            got = self._lists.get(term)
            if got is not None:
                self._lists.move_to_end(term)
            return got

    def put(self, term: str, rowids: Any, contributions: Any) -> None:
        """Keep a term's list, dropping the least recently used past ``budget`` (a list
        larger than the whole budget is not kept)."""
        n = len(rowids)
        if n > self.budget:
            return
        with self._lock:
            old = self._lists.pop(term, None)
            if old is not None:
                self.size -= len(old[0])
            self._lists[term] = (rowids, contributions)
            self.size += n
            while self.size > self.budget:
                _t, (r, _c) = self._lists.popitem(last=False)
                self.size -= len(r)

    def seen(self, term: str) -> bool:
        """True when ``term`` was asked for before in this ``chunks_gen``."""
        return term in self._seen

    def mark_seen(self, terms: list[str]) -> None:
        """Remember ``terms`` as asked for (bounded: past ``_SEEN_MAX`` the memory restarts)."""
        with self._lock:
            if len(self._seen) > _SEEN_MAX:
                self._seen.clear()
            self._seen.update(terms)


def keyword_state(conn: sqlite3.Connection, cache: dict[str, Any]) -> object:
    """The ``chunks_gen`` value now; when it is not the one ``cache`` holds, the cache is
    set for it (``n`` = chunk count, ``df`` = {}, no term lists, then ``gen``). The keys are
    replaced, never cleared, and ``gen`` last: a reader on another thread of the same store
    finds ``df`` and ``n`` at every moment (clearing the dict instead would let such a
    reader fail with ``KeyError: 'df'`` during a write)."""
    gen = conn.execute(_GEN_SQL).fetchone()
    if cache.get("gen") != gen:
        n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        cache["df"] = {}
        cache["n"] = n
        cache.pop("term_lists", None)
        cache["gen"] = gen
    return gen


def document_counts(
    conn: sqlite3.Connection, cache: dict[str, Any], terms: list[str], gen: object = None
) -> dict[str, int]:
    """``cache["df"]`` with each of ``terms`` in it: the chunks matching the term in
    ``chunks_fts`` (``count(*)`` of its MATCH, no scoring: ~0.06 us per row), kept per
    ``chunks_gen`` (``keyword_state`` first); past 50,000 terms the counts restart. With
    ``gen`` (what ``keyword_state`` returned on ``conn``) and a cache another thread has
    since set for another state, the counts are computed into a dict of their own, not kept."""
    df: dict[str, int] = cache["df"] if gen is None or cache.get("gen") == gen else {}
    for t in terms:
        if t not in df:
            if len(df) > 50_000:
                df.clear()
            df[t] = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (t,)).fetchone()[0]
    return df


def _lists_for(cache: dict[str, Any], gen: object) -> TermLists:
    """The cache's ``TermLists`` for ``gen`` (a new, empty one when the counter moved)."""
    lists = cache.get("term_lists")
    if lists is None or lists.gen != gen:
        lists = TermLists(gen, int(cache.get("term_budget", TERM_POSTINGS_BUDGET)))
        cache["term_lists"] = lists
    return lists


#: 2**52: a contribution x >= 1 times this is an integer below 2**63 (its 53-bit mantissa
#: shifted), so the integer carries every bit of x; the fetch checks it and reads rows otherwise.
_SCALE = 4503599627370496.0
_TERM_PACKED_SQL = (
    f"SELECT group_concat(r), group_concat(CAST(s * {_SCALE} AS INTEGER)), "
    f"min(CAST(s * {_SCALE} AS INTEGER) = s * {_SCALE}), count(*) "
    f"FROM (SELECT rowid r, -bm25(chunks_fts) s FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT -1)"
)


def _fetch(conn: sqlite3.Connection, term: str) -> tuple[Any, Any]:
    """One term's list from FTS5: rowids ascending (int64), ``-bm25`` of the single-term
    query (float64, bit for bit).

    Read packed: one row of two comma-joined texts (the rowids, and each score times
    ``_SCALE`` as an integer), ~0.3 us per row less than a Python row each. When a score
    is not carried exactly that way (one below 1.0), the rows are read one by one."""
    r, v, exact, n = conn.execute(_TERM_PACKED_SQL, (term,)).fetchone()
    if not n:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    if exact == 1:
        rowids = np.array(r.split(","), dtype=np.int64) if n < 8 else np.fromstring(r, dtype=np.int64, sep=",")
        scaled = np.array(v.split(","), dtype=np.int64) if n < 8 else np.fromstring(v, dtype=np.int64, sep=",")
        contrib = scaled / _SCALE  # exact: a power-of-two division of an integer below 2**63
    else:
        a = np.array(conn.execute(_TERM_SQL, (term,)).fetchall(), dtype=np.float64)
        rowids = a[:, 0].astype(np.int64)  # rowids < 2**53 are exact in float64
        contrib = np.negative(a[:, 1])  # -(-1.0 * x) == x: exact
    if len(rowids) != n or len(contrib) != n:
        raise RuntimeError(f"term list of {term!r}: {len(rowids)} rowids, {len(contrib)} scores, {n} rows")
    if n > 1 and not bool(np.all(rowids[1:] > rowids[:-1])):
        order = np.argsort(rowids, kind="stable")
        rowids, contrib = rowids[order], contrib[order]
    return rowids, contrib


def _ranked(lists: list[tuple[Any, Any]], limit: int, scratch: "_Scratch") -> list[tuple[int, float]]:
    """The best ``limit`` of the rows in ``lists`` (phrase order), summed as FTS5 sums them,
    ordered by score descending then rowid ascending (the OR query's ORDER BY)."""
    lists = [x for x in lists if len(x[0])]
    if not lists:
        return []
    if len(lists) == 1:
        return _top(*lists[0], limit)
    with scratch.lock:
        acc, mark = scratch.arrays(max(int(r[-1]) for r, _ in lists) + 1)
        for r, c in lists:  # phrase by phrase, each row once per list: the same additions as FTS5
            acc[r] += c
            mark[r] = True
        rowids = np.flatnonzero(mark)
        sums = acc[rowids]
        acc[rowids] = 0.0
        mark[rowids] = False
    return _top(rowids, sums, limit)


def _top(rowids: Any, scores: Any, limit: int) -> list[tuple[int, float]]:
    """``(rowid, score)`` of the best ``limit``: score descending, ties by rowid ascending."""
    k = min(limit, len(rowids))
    if k < len(rowids):
        kth = scores[np.argpartition(scores, len(scores) - k)[len(scores) - k :]].min()
        sel = np.flatnonzero(scores >= kth)  # every row tied with the k-th too: ties go by rowid
    else:
        sel = np.arange(len(rowids))
    order = sel[np.lexsort((rowids[sel], -scores[sel]))[:k]]
    return list(zip(rowids[order].tolist(), scores[order].tolist()))


class _Scratch:
    """A zeroed float64 accumulator and bool mark array indexed by chunks rowid, reused by
    every any-term pass of one ``TermLists`` (the pass leaves them zeroed; under ``lock``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._acc: Any = None  # float64 (n,) or None before the first pass
        self._mark: Any = None  # bool (n,)

    def arrays(self, n: int) -> tuple[Any, Any]:
        """The two arrays, at least ``n`` long (grown, zeroed, when shorter)."""
        if self._acc is None or len(self._acc) < n:
            self._acc = np.zeros(n + n // 8, np.float64)
            self._mark = np.zeros(len(self._acc), bool)
        return self._acc, self._mark


def any_term_refs(
    read: Callable[[], ContextManager[sqlite3.Connection]], cache: dict[str, Any], porter_any: str, limit: int
) -> list[tuple[int, float]] | None:
    """The any-term porter pass over every collection from per-term lists, or None (run the OR query).

    Args:
        read: the store's reading connection factory.
        cache: the store's keyword cache dict (``keyword_state``; the lists are kept under
            ``term_lists``, the document counts under ``df``).
        porter_any: the pass's FTS5 query, quoted terms joined by `` OR `` (phrase order).
        limit: rows wanted (>= 1).

    Returns:
        ``(chunks rowid, -bm25)`` best first, bit for bit the OR query's
        ``ORDER BY -bm25 DESC, rowid LIMIT limit``; None when the query's terms
        are mostly new here (``NEW_TERMS_SHARE``: they are then remembered as
        seen), inside a transaction, or when the index changed during the fetch.
    """
    terms = porter_any.split(" OR ")
    with read() as conn:
        if conn.in_transaction:
            return None
        gen = keyword_state(conn, cache)
        lists = _lists_for(cache, gen)
        kept = {t: lists.get(t) for t in terms}
        have = {t: v for t, v in kept.items() if v is not None}
        missing = [t for t, v in kept.items() if v is None]
        if missing:
            df = document_counts(conn, cache, terms, gen)
            new = sum(df[t] for t in missing if not lists.seen(t))
            total = sum(df[t] for t in terms)
            if new > max(NEW_TERMS_FLOOR, NEW_TERMS_SHARE * total):
                lists.mark_seen(missing)
                return None
            for t in missing:
                have[t] = _fetch(conn, t)
            if conn.execute(_GEN_SQL).fetchone() != gen:  # a writer committed meanwhile
                return None
            for t in missing:
                lists.put(t, *have[t])
            lists.fetched += len(missing)
    lists.used += 1
    return _ranked([have[t] for t in terms], limit, lists.scratch)
