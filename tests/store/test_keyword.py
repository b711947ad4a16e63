"""Keyword search: stemming, CJK substrings, term caps, the FTS migration (every backend).

Real stores (SQLite, and Postgres when available via the ``store`` fixture),
real FTS indexes; no mocks.
"""

from __future__ import annotations

import sqlite3
import time

from engine.values import Chunk, Document
from engine.store.fts import MAX_TERMS, keyword_terms, trigrams
from engine.store.sqlite.store import SqliteStore

TEXTS = {
    "run.txt": "The engine runs every night and the runner logged the results.",
    "zh.txt": "东北电气发展股份有限公司2018年第一季度报告全文，患者血小板计数减少。",
    "de.txt": "Alle Menschen sind frei und gleich an Würde und Rechten geboren.",
    "other.txt": "Penguins and walruses share the cold water enclosure.",
}


def _put(store, cp: str, fp: str, text: str) -> None:
    c = Chunk(cp, fp, 0, f"id-{fp}", f"h-{fp}", 0, len(text), text)
    store.replace_document(
        Document(cp, fp, f"h-{fp}", "k", "txt", "indexed", chunk_count=1, text_length=len(text)), text, [c]
    )


def _files(store, query, limit=10):
    return [h.chunk.file_path for h in store.search_keyword(query, None, limit)]


def _fill(store):
    for fp, text in TEXTS.items():
        _put(store, "C", fp, text)


def test_latin_terms_are_stemmed(store):
    _fill(store)
    assert _files(store, "running") == ["run.txt"]
    assert _files(store, "logging results") == ["run.txt"]


def test_cjk_terms_are_found_inside_runs_of_characters(store):
    _fill(store)
    assert _files(store, "东北电气") == ["zh.txt"]
    assert _files(store, "血小板") == ["zh.txt"]
    assert set(_files(store, "血小板 night")) == {"zh.txt", "run.txt"}  # no chunk has both: any term
    assert _files(store, "季度报告") == ["zh.txt"]


def test_diacritics_fold(tmp_path):
    store = SqliteStore(str(tmp_path / "i.db"))  # SQLite's unicode61 folds them; Postgres 'english' does not
    _fill(store)
    assert _files(store, "wurde") == ["de.txt"] and _files(store, "Würde") == ["de.txt"]


def test_removing_a_cjk_document_leaves_the_indexes_consistent(store):
    _fill(store)
    store.remove_document("C", "zh.txt")
    assert _files(store, "血小板") == []
    _put(store, "C", "zh.txt", TEXTS["zh.txt"])
    _put(store, "C", "zh.txt", TEXTS["zh.txt"])  # replaced: old FTS rows deleted by the triggers
    assert _files(store, "血小板") == ["zh.txt"]
    if isinstance(store, SqliteStore):
        with store._read() as conn:
            conn.execute("INSERT INTO chunks_tri(chunks_tri) VALUES('integrity-check')")
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")


def test_terms_are_deduplicated_and_capped():
    t = keyword_terms(" ".join(["anvil", "Anvil", "ANVIL"] * 2000))
    assert t.latin == ("anvil",) and t.cjk == ()
    t = keyword_terms(" ".join(f"w{i}" for i in range(5000)))
    assert len(t.latin) == MAX_TERMS and t.latin[0] == "w0"
    assert keyword_terms('"; DROP -x* 血小板').cjk == ("血小板",)
    assert trigrams("东北电气") == ["东北电", "北电气"]


def test_a_query_of_5000_repeated_words_answers_at_once(store):
    _fill(store)
    for words in (["night"] * 5000, [f"w{i}x" for i in range(5000)]):
        t0 = time.perf_counter()
        store.search_keyword(" ".join(words), None, 10)
        assert time.perf_counter() - t0 < 2.0  # capped terms: ~15 ms in bench


def test_has_vectors_is_per_model(store):
    import numpy as np

    assert store.has_vectors("m") is False
    _put(store, "C", "a.txt", "alpha")
    store.add_vectors("m", ["id-a.txt"], np.ones((1, 4), np.float32) / 2)
    assert store.has_vectors("m") is True and store.has_vectors("other") is False


def test_opening_an_up_to_date_index_takes_no_write_lock(tmp_path):
    db = str(tmp_path / "i.db")
    SqliteStore(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    try:
        t0 = time.perf_counter()
        s = SqliteStore(db)  # must not wait for the writer (busy timeout is 30 s)
        assert time.perf_counter() - t0 < 5 and s.search_keyword("x", None, 1) == []
        s.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
