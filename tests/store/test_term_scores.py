"""The any-term keyword pass answered from per-term BM25 lists (engine/store/sqlite/term_scores.py).

Real SQLite files with real FTS5 indexes of the real corpus text (the
evaluation questions' files cut into windows); the reference is FTS5's own
OR query, asked directly in SQL. The lists must give the same rows, in the
same order, with bit-identical scores, for every question, random term sets,
every limit and ties; they must never answer for another index state, inside
a transaction, for a scoped or CJK pass; a one-shot process must never fetch.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from engine.values import Chunk, Document
from engine.store.sqlite import term_scores
from engine.store.sqlite.store import SqliteStore
from engine.store.sqlite.keyword import selective_any
from engine.store.sqlite.rows import fts_queries
from engine.store.sqlite.term_scores import TermLists, any_term_refs
from tests.fixtures.eval_text import corpus_windows, load_questions

QUERIES = [q["query"] for q in load_questions()] + [
    q["query"]
    for q in json.loads((Path(__file__).resolve().parents[1] / "data" / "search_queries.json").read_text("utf-8"))[
        "queries"
    ]
]

_OR_SQL = "SELECT rowid, -bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s DESC, rowid LIMIT ?"


def _store(path: str, files: int = 300, per_file: int = 8, extra: str = "") -> SqliteStore:
    store = SqliteStore(path)
    windows = corpus_windows()
    made = 0
    with store.batch():
        for f in range(files):
            texts = [
                f"{windows[(made + k) % len(windows)]} u{made + k}{extra if (made + k) % 5 else ''}"
                for k in range(per_file)
            ]
            _put(store, f"C{f % 3}", f"f{f:04d}.txt", texts)
            made += per_file
    return store


def _put(store: SqliteStore, coll: str, fp: str, texts: list[str]) -> None:
    h = f"{abs(hash((coll, fp, tuple(texts)))):064x}"[:64]
    chunks, pos = [], 0
    for k, t in enumerate(texts):
        chunks.append(Chunk(coll, fp, k, f"id-{coll}-{fp}-{k}-{h[:8]}", h, pos, pos + len(t), t))
        pos += len(t)
    store.replace_document(
        Document(coll, fp, h, "t", "txt", "indexed", chunk_count=len(texts), text_length=pos), "".join(texts), chunks
    )


def _any_queries(store: SqliteStore) -> list[str]:
    """The porter any-term pass of every query that has one and no CJK part, as keyword_refs cuts it."""
    out = []
    for q in QUERIES:
        parts = fts_queries(q)
        if parts is None:
            continue
        porter, tri = parts[1]
        if porter and not tri:
            out.append(selective_any(store._read, store._df_cache, porter))
    return out


def _sql(store: SqliteStore, porter_any: str, limit: int) -> list[tuple[int, float]]:
    with store._read() as conn:
        return [(r, float(s)) for r, s in conn.execute(_OR_SQL, (porter_any, limit)).fetchall()]


def _lists(store: SqliteStore) -> TermLists:
    return store._df_cache["term_lists"]


def _same_bits(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    return [r for r, _ in got] == [r for r, _ in want] and np.array(
        [s for _, s in got], np.float64
    ).tobytes() == np.array([s for _, s in want], np.float64).tobytes()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = _store(str(tmp_path_factory.mktemp("terms") / "i.db"))
    yield s
    s.close()


@pytest.mark.slow
def test_the_lists_give_the_or_querys_rows_order_and_score_bits(store):
    queries = _any_queries(store)
    assert len(queries) > 100
    for rep in range(3):  # first sight (the OR query), second (the lists fetched), third (kept)
        answered = _lists(store).used if "term_lists" in store._df_cache else 0
        for porter_any in queries:
            for limit in (1, 7, 50, 100_000):
                got = any_term_refs(store._read, store._df_cache, porter_any, limit)
                if got is not None:
                    assert _same_bits(got, _sql(store, porter_any, limit)), (porter_any, limit)
        if rep == 2:  # by the third round every pass is answered from the lists
            assert _lists(store).used - answered == 4 * len(queries)
    assert _lists(store).fetched > 0 and _lists(store).size <= term_scores.TERM_POSTINGS_BUDGET


def test_random_term_sets_in_any_order(store):
    rng = random.Random(5)
    vocab = sorted({t for q in _any_queries(store) for t in q.split(" OR ")})
    assert len(vocab) > 200
    checked = 0
    for _ in range(300):
        terms = rng.sample(vocab, rng.randint(1, 6))
        porter_any = " OR ".join(terms)  # phrase order as given: the sum's order follows it
        for _rep in range(3):
            got = any_term_refs(store._read, store._df_cache, porter_any, 40)
        assert got is not None
        assert _same_bits(got, _sql(store, porter_any, 40)), porter_any
        checked += 1
    assert checked == 300


def test_ties_go_by_rowid_and_a_limit_can_cut_through_them(tmp_path):
    s = SqliteStore(str(tmp_path / "t.db"))
    same = "the quarterly turbine inspection found corrosion on the blade root"
    with s.batch():
        _put(s, "A", "a.txt", [same] * 6 + ["turbine blade maintenance schedule"] * 3)
        _put(s, "B", "b.txt", ["corrosion report"] * 4 + [same] * 5)
        _put(s, "C", "c.txt", [f"unrelated filler text number {i}" for i in range(40)])
    q = '"turbine" OR "corrosion" OR "blade"'
    for limit in (1, 3, 6, 8, 11, 14, 100):
        for _rep in range(3):
            got = any_term_refs(s._read, s._df_cache, q, limit)
        assert got is not None and _same_bits(got, _sql(s, q, limit)), limit
    full = _sql(s, q, 100)
    scores = [sc for _, sc in full]
    assert len(set(scores)) < len(scores)  # the data really has ties
    s.close()


def test_a_write_moves_the_state_and_the_old_lists_are_never_used(tmp_path):
    s = _store(str(tmp_path / "w.db"), files=60)
    queries = _any_queries(s)[:40]
    for _rep in range(3):
        for q in queries:
            any_term_refs(s._read, s._df_cache, q, 20)
    old = _lists(s)
    assert old.size > 0
    _put(s, "C0", "f0001.txt", ["the turbine blade root corrosion inspection was repeated"] * 3)
    for q in queries:
        got = any_term_refs(s._read, s._df_cache, q, 20)
        assert got is None or _same_bits(got, _sql(s, q, 20)), q
    assert _lists(s) is not old and _lists(s).gen != old.gen
    for _rep in range(2):
        for q in queries:
            got = any_term_refs(s._read, s._df_cache, q, 20)
            assert got is None or _same_bits(got, _sql(s, q, 20)), q
    s.close()


def test_one_question_per_process_fetches_only_tiny_lists(tmp_path):
    s = _store(str(tmp_path / "o.db"))
    s.close()
    untouched = 0
    for q in QUERIES[:40]:  # each a fresh store, as one `chunknav search` process is
        fresh = SqliteStore(str(tmp_path / "o.db"))
        want = fresh.search_keyword_refs(q, None, 10)
        lists = fresh._df_cache.get("term_lists")
        # a question seen for the first time is scored by the OR query, unless all its
        # terms together match at most NEW_TERMS_FLOOR rows (then fetching costs nothing)
        assert lists is None or lists.size <= term_scores.NEW_TERMS_FLOOR, (q, lists.size)
        untouched += lists is None or lists.fetched == 0
        assert fresh.search_keyword_refs(q, None, 10) == want  # a second time: the same answer
        fresh.close()
    assert untouched >= 5  # questions matching more rows than that were scored by the OR query


def test_a_small_budget_keeps_few_lists_and_the_same_answers(store, tmp_path):
    s = _store(str(tmp_path / "b.db"), files=60)
    s._df_cache.clear()
    queries = _any_queries(s)
    s._df_cache["term_budget"] = 300
    for _rep in range(3):
        for q in queries:
            got = any_term_refs(s._read, s._df_cache, q, 25)
            s._df_cache.setdefault("term_budget", 300)  # kept across a state change by the test only
            assert got is None or _same_bits(got, _sql(s, q, 25)), q
            assert _lists(s).size <= 300
    s.close()


def test_inside_a_transaction_the_or_query_answers(store):
    q = _any_queries(store)[0]
    for _rep in range(3):
        any_term_refs(store._read, store._df_cache, q, 10)
    with store.batch():
        assert any_term_refs(store._read, store._df_cache, q, 10) is None
        assert store.search_keyword_refs(q.replace('"', "").replace(" OR ", " "), None, 10) is not None


def test_scoped_and_cjk_passes_go_to_fts5(store):
    lists = _lists(store)
    used = lists.used
    for q in QUERIES[:60]:
        for _rep in range(2):
            store.search_keyword_refs(q, ["C0", "C2"], 10)
    store.search_keyword_refs("东北电气 turbine corrosion", None, 10)
    assert _lists(store).used == used


def test_a_score_below_one_is_read_row_by_row_with_the_same_bits(tmp_path):
    s = _store(str(tmp_path / "c.db"), files=40, extra=" zzcommonword")  # in 80% of the chunks: idf clamped
    with s._read() as conn:
        packed = term_scores._fetch(conn, '"zzcommonword"')
        rows = conn.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", ('"zzcommonword"',)
        ).fetchall()
    assert len(packed[0]) == len(rows) > 200
    assert float(packed[1].max()) < 1.0  # the case the packed read cannot carry
    assert packed[0].tolist() == [r for r, _ in rows]
    assert packed[1].tobytes() == np.array([-b for _, b in rows], np.float64).tobytes()
    q = '"zzcommonword" OR "turbine"'
    for _rep in range(3):
        got = any_term_refs(s._read, s._df_cache, q, 30)
    assert got is not None and _same_bits(got, _sql(s, q, 30))
    s.close()


def test_keyword_search_through_the_store_is_unchanged_by_the_lists(store, monkeypatch):
    import engine.store.sqlite.keyword as sk

    for _rep in range(2):
        for q in QUERIES:
            store.search_keyword_refs(q, None, 30)
    with_lists = [store.search_keyword_refs(q, None, 30) for q in QUERIES]
    assert _lists(store).used > 0
    monkeypatch.setattr(sk, "any_term_refs", lambda *a, **k: None)  # the OR query every time
    without = [store.search_keyword_refs(q, None, 30) for q in QUERIES]
    assert with_lists == without


def test_readers_during_a_write_answer_for_one_state_or_the_other(tmp_path):
    """Two threads ask keyword questions (their lists fetched and kept as they go) while another
    store on the same file (as another process would) rewrites a file with the questions' words:
    every answer must be the OR query's answer in the state before the write or after it."""
    import shutil
    import threading

    path = str(tmp_path / "r.db")
    s = _store(path, files=80)
    queries = _any_queries(s)[:60]
    new_texts = [" ".join(q.replace('"', "").split(" OR ")) for q in queries[:8]]
    before = {q: _sql(s, q, 15) for q in queries}
    s.close()
    shutil.copy(path, str(tmp_path / "after.db"))
    after_store = SqliteStore(str(tmp_path / "after.db"))
    _put(after_store, "C1", "f0004.txt", new_texts)
    after = {q: _sql(after_store, q, 15) for q in queries}
    after_store.close()
    assert sum(before[q] != after[q] for q in queries) >= 5  # the write changes many answers

    reader = SqliteStore(path)
    bad: list = []
    answered = [0]
    go = threading.Event()

    def ask():
        go.wait()
        try:
            for _rep in range(6):
                for q in queries:
                    got = any_term_refs(reader._read, reader._df_cache, q, 15)
                    if got is None:
                        continue
                    answered[0] += 1
                    if not (_same_bits(got, before[q]) or _same_bits(got, after[q])):
                        bad.append(q)
        except Exception as e:  # a reader that fails is a wrong answer too (KeyError 'df', once in CI)
            bad.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    writer = SqliteStore(path)
    go.set()
    import time as _time

    _time.sleep(0.02)
    _put(writer, "C1", "f0004.txt", new_texts)
    writer.close()
    for t in threads:
        t.join()
    assert not bad, bad[:3]
    assert answered[0] > len(queries)  # the lists answered many of them
    # once the write is seen, only the new state's answers come back
    for _rep in range(3):
        for q in queries:
            got = any_term_refs(reader._read, reader._df_cache, q, 15)
            assert got is None or _same_bits(got, after[q]), q
    reader.close()


def test_a_write_between_the_state_read_and_a_fetch_is_not_kept(tmp_path, monkeypatch):
    """Another store on the file commits right before a term's list is read (the fetch then
    reads the new state): the pass must not answer from, nor keep, that mixed list."""
    path = str(tmp_path / "m.db")
    s = _store(path, files=80)
    monkeypatch.setattr(term_scores, "NEW_TERMS_FLOOR", 0)  # a small index: every first ask would fetch
    q = next(x for x in _any_queries(s) if len(x.split(" OR ")) >= 3)
    assert any_term_refs(s._read, s._df_cache, q, 15) is None  # first ask: the OR query
    lists = s._df_cache["term_lists"]
    assert lists.size == 0 and all(lists.seen(t) for t in q.split(" OR "))  # the next ask fetches
    writer = SqliteStore(path)
    real = term_scores._fetch
    wrote = []

    def write_then_fetch(conn, term):
        if not wrote:
            _put(writer, "C1", "f0004.txt", [" ".join(q.replace('"', "").split(" OR "))] * 4)
            wrote.append(term)
        return real(conn, term)

    monkeypatch.setattr(term_scores, "_fetch", write_then_fetch)
    assert any_term_refs(s._read, s._df_cache, q, 15) is None  # the state moved under the fetch
    assert wrote and lists.size == 0  # nothing read across the write was kept
    monkeypatch.setattr(term_scores, "_fetch", real)
    for _rep in range(3):
        got = any_term_refs(s._read, s._df_cache, q, 15)
        assert got is None or _same_bits(got, _sql(s, q, 15))
    assert s.search_keyword_refs(q.replace('"', "").replace(" OR ", " "), None, 15)
    writer.close()
    s.close()


def test_a_state_change_never_leaves_the_cache_without_its_counts(tmp_path):
    """The store's cache is shared by the threads of one store: while ``keyword_state`` sets
    it for a new ``chunks_gen``, a reader on another thread must find ``df`` and ``n`` at
    every moment (``cache.clear()`` first let one fail with ``KeyError: 'df'`` in CI). Every
    change the function makes to the dict is watched."""

    class Watched(dict):
        missing: list[str] = []

        def _check(self, what: str) -> None:
            if "gen" in self and not ("df" in self and "n" in self):
                Watched.missing.append(what)

        def __setitem__(self, k, v):
            super().__setitem__(k, v)
            self._check(f"set {k}")

        def __delitem__(self, k):
            super().__delitem__(k)
            self._check(f"del {k}")

        def pop(self, *a):
            out = super().pop(*a)
            self._check(f"pop {a[0]}")
            return out

        def clear(self):
            super().clear()
            Watched.missing.append("clear")  # every key gone at once

    path = str(tmp_path / "w.db")
    s = _store(path, files=10)
    cache = Watched()
    with s._read() as conn:
        first = term_scores.keyword_state(conn, cache)
        term_scores.document_counts(conn, cache, ["the"])
    _put(s, "C1", "f0001.txt", ["a write moves chunks_gen"])
    with s._read() as conn:
        second = term_scores.keyword_state(conn, cache)
    assert second != first and cache["gen"] == second and cache["df"] == {}
    assert Watched.missing == [], Watched.missing
    with s._read() as conn:  # a reader still on the first state: its counts are its own, not kept
        mine = term_scores.document_counts(conn, cache, ["write"], first)
    assert "write" in mine and "write" not in cache["df"]
    s.close()
