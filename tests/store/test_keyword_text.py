"""The keyword text beside the printed text: an index in the kept format gains it on
its first open with write access, and ``chunks_fts`` stays exact through writes,
re-indexing and removal (no token left behind)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from engine.config import Settings
from engine.store.fts import KEYWORD_TEXT_VERSION
from engine.store.sqlite.store import SqliteStore
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "base_index" / "index.db"
WORD = "Ge\u00adsamt\u00adkon\u00adzept"


def _terms(db: str) -> set[str]:
    """Every term ``chunks_fts`` holds (fts5vocab over the index itself)."""
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, chunks_fts, 'row')")
        return {r[0] for r in conn.execute("SELECT term FROM temp.v")}


def _engine(db: str) -> Engine:
    return Engine(Settings(db=db, allowed_roots=ALLOWED_ROOTS, embed_provider="none", ocr="off").validate())


def test_the_kept_format_gains_keyword_text_and_stays_exact(tmp_path):
    db = str(tmp_path / "index.db")
    shutil.copyfile(FIXTURE, db)
    with sqlite3.connect(db) as conn:
        assert not conn.execute("SELECT 1 FROM pragma_table_info('chunks') WHERE name = 'search_text'").fetchone()
    before = _terms(db)
    store = SqliteStore(db)
    try:
        assert store.search_keyword("Molière", None, 5)[0].chunk.file_path == "sample-french-1.txt"
    finally:
        store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'keyword_text'").fetchone()[0] == str(
            KEYWORD_TEXT_VERSION
        )
    opened = _terms(db)  # the kept PDF's "taki-" / "mata" line-end split is now one word
    assert "takimata" in opened and before - opened == {"taki", "mata"} and opened <= before

    root = tmp_path / "t"
    root.mkdir()
    (root / "plan.txt").write_text(f"Das {WORD} der Stadt, acknowl-\nedged.", "utf-8")
    eng = _engine(db)
    try:
        eng.add_collection("T", str(root))
        eng.run_index(["T"])
        assert [h.chunk.file_path for h in eng.store.search_keyword("gesamtkonzept acknowledged", ["T"], 5)] == [
            "plan.txt"
        ]
        (root / "plan.txt").write_text("Nur noch ein Plan.", "utf-8")
        eng.run_index(["T"])
        assert "gesamtkonzept" not in _terms(db) and "acknowledg" not in _terms(db)
        eng.remove_collection("T")
    finally:
        eng.close()
    assert _terms(db) == opened  # every token written and removed again: none left over


def test_rows_written_under_other_rules_are_refreshed_at_open(tmp_path):
    db = str(tmp_path / "index.db")
    root = tmp_path / "r"
    root.mkdir()
    (root / "he.txt").write_text("אָמַר לָהֶם שָׁלוֹם", "utf-8")
    eng = _engine(db)
    try:
        eng.add_collection("C", str(root))
        eng.run_index()
    finally:
        eng.close()
    with sqlite3.connect(db) as conn:  # as an index written without keyword text holds it
        conn.execute("UPDATE chunks SET search_text = NULL")
        conn.execute("DELETE FROM meta WHERE key = 'keyword_text'")
    assert "שלום" not in _terms(db)
    store = SqliteStore(db)
    try:
        assert [h.chunk.file_path for h in store.search_keyword("שלום", None, 5)] == ["he.txt"]
    finally:
        store.close()
    assert "שלום" in _terms(db) and "ש" not in _terms(db)


def test_the_line_end_rule_joins_split_words_and_keeps_real_hyphens():
    from engine.store.fts import keyword_text

    doc = (
        "We acknowl-\nedged the n-\ntridecanal yield. A self-\nevident self-evident rule. "
        "Co-\noperation means cooperation. Anglo-\nSaxon. Soft\u00ad\nhyphen. Long-\nterm plans, long term."
    )
    fold = keyword_text(doc)
    assert fold(doc) == (
        "We acknowledged the n-\ntridecanal yield. A self-\nevident self-evident rule. "
        "Cooperation means cooperation. Anglo-\nSaxon. Softhyphen. Long-\nterm plans, long term."
    )
    assert keyword_text("plain ascii, nothing to fold")("plain ascii") is None


TEXTS = {
    "he.txt": "אָמַר לָהֶם שָׁלוֹם",
    "ar.txt": "قَالَ إِنَّهُ كَتَبَ الرِّسَالَةَ",
    "tatweel.txt": "عنوان: كـتـب جديدة",
    "de.txt": f"Das {WORD} der Stadt",
    "en.txt": "The committee acknowl-\nedged the yield of n-\ntridecanal",
}


def test_both_stores_match_the_same_words(store):
    """SQLite and Postgres index the same keyword text and fold the query the same way."""
    from engine.values import Chunk, Collection, Document

    store.add_collection(Collection("C", "/srv/c", None))
    for name, text in TEXTS.items():
        chunk = Chunk("C", name, 0, f"id-{name}", f"h-{name}", 0, len(text), text)
        store.replace_document(Document("C", name, f"h-{name}", "k", "txt", "indexed", chunk_count=1), text, [chunk])

    def found(query: str) -> set[str]:
        return {h.chunk.file_path for h in store.search_keyword(query, ["C"], 10)}

    assert found("שלום") == {"he.txt"}
    assert found("كتب") == {"ar.txt", "tatweel.txt"}
    assert found("كَتَبَ") == {"ar.txt", "tatweel.txt"}
    assert found("Gesamtkonzept") == {"de.txt"}
    assert found("acknowledged") == {"en.txt"}
    assert found("tridecanal") == {"en.txt"} and found("ntridecanal") == set()
    assert store.get_chunk("C", "he.txt", 0).chunk_text == TEXTS["he.txt"]  # stored as printed
