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


def test_words_the_keyword_index_finds_are_marked_where_they_are_printed():
    from engine.search.snippets import term_spans

    def marked(text: str, term: str) -> list[str]:
        return [text[a:b] for a, b in term_spans(text, (term,))]

    assert marked("قال كَتَبَ الولد", "كتب") == ["كَتَبَ"]  # harakat folded, the whole word marked
    assert marked("אמר שָׁלוֹם לכם", "שלום") == ["שָׁלוֹם"]  # niqqud folded
    assert marked("das Ge\u00adsamt\u00adkon\u00adzept steht", "Gesamtkonzept") == ["Ge\u00adsamt\u00adkon\u00adzept"]
    assert marked("it was acknowl-\nedged by all", "acknowledged") == ["acknowl-\nedged"]  # split at a line end
    assert marked("the n-\ntridecanal and", "tridecanal") == ["tridecanal"]  # a real hyphen's part stays a word
    snippet = make_snippet("x " * 300 + "قال كَتَبَ الولد" + " y" * 300, ("كتب",))
    assert "كَتَبَ" in snippet and snippet.startswith("…"), snippet


def test_a_pdf_page_marks_both_halves_of_a_word_split_at_a_line_end():
    import pymupdf

    from engine.render import query_word_boxes

    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_text((40, 60), "The claim was acknowl-", fontsize=12)
    page.insert_text((40, 80), "edged by the board and", fontsize=12)
    boxes = query_word_boxes(page, ["acknowledged"])
    assert len(boxes) == 2, boxes
    assert boxes[0].y < boxes[1].y  # the line's last word, then the next line's first
    assert query_word_boxes(page, ["board"]) and len(query_word_boxes(page, ["board"])) == 1
    assert query_word_boxes(page, ["claimant"]) == []
    doc.close()
