"""Snippets are placed, and the explorer marks words, by the query's content words.

A question asked the way an analyst asks it ("how are the pages of a document
numbered") holds stop words; a snippet placed at its first "the" would show the
start of nearly every chunk, and the explorer would mark "a" at the start of
"attribute". Real index (a text file, the real indexer and registry); the
explorer's own ``mark_terms``.
"""

from __future__ import annotations

from engine.config import Settings
from engine.search.searcher import make_snippet, shown_terms
from engine.tools.registry import Engine, call_tool

FILLER = "The report of the year is in the archive and the notes of the team are with it. " * 6
TAIL = "Pagination: every folio is numbered in the lower margin, roman for the front matter."


def test_stop_words_are_left_out_unless_nothing_else_is_left():
    assert shown_terms(("how", "are", "the", "pages", "of", "a", "document")) == ("pages", "document")
    assert shown_terms(("the", "of", "a")) == ("the", "of", "a")  # a query of stop words still shows
    assert shown_terms(()) == ()


def test_a_hit_snippet_sits_at_the_content_words_not_at_the_first_stop_word(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text(FILLER + TAIL + "\n", "utf-8")
    engine = Engine(Settings(db=str(tmp_path / "i.db"), embed_provider="none").validate())
    engine.add_collection("C", str(root), allow_any_root=True)
    engine.run_index()
    env = call_tool(
        engine,
        "search_chunks",
        {"query": "how is the folio of a page numbered", "scope": "C", "mode": "keyword", "limit": 3},
    )
    assert env["count"] >= 1
    snippet = env["hits"][0]["snippet"]
    assert "folio" in snippet and snippet.startswith("…"), snippet
    # the old placement (every term, stop words included) put it at the text's start
    assert not make_snippet(FILLER + TAIL, ("how", "is", "the", "folio", "of", "a", "page", "numbered")).startswith("…")
    engine.close()


def test_the_explorer_marks_content_words_and_short_words_only_whole():
    from explorer.widgets import mark_terms

    text = "A Pages attribute of the document; a page numbered at pages' end"
    html = mark_terms(text, "how are the pages of a document numbered")
    assert "<mark>Pages</mark>" in html and "<mark>document</mark>" in html and "<mark>numbered</mark>" in html
    assert "<mark>the</mark>" not in html and "<mark>of</mark>" not in html and "<mark>A</mark>" not in html
    html = mark_terms(text, "page")  # 3+ characters: a word's beginning too (page, Pages)
    assert html.count("<mark>") == 3, html
    html = mark_terms("a attribute at A", "a")  # a stop-word-only query still marks, whole words only
    assert html == "<mark>a</mark> attribute at <mark>A</mark>", html


def test_a_snippet_is_centred_on_the_word_folded_as_the_keyword_index_folds_it():
    from engine.search.snippets import term_spans

    text = "x " * 300 + "Le Café est ouvert." + " y" * 300
    snippet = make_snippet(text, ("cafe",))
    assert "Café" in snippet
    at = snippet.index("Café")
    assert abs(at - (len(snippet) - at - len("Café"))) < 40  # about as much text on each side
    assert term_spans("Un CAFÉ, des cafés, caf", ("cafe",)) == [(3, 7), (13, 17)]
    assert term_spans("a attribute a", ("a",)) == [(0, 1), (12, 13)]  # a short term: whole words only
