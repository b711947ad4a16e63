"""The explorer as an analyst reads it (AppTest, real index): hit lists drawn 50 at a time,
a read-only explorer's caps and its Rebuild page, the "Show as tool call" switch, position
in words, page breaks in the Chunk view, line numbers and file badges on hits.
"""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.config import Settings
from engine.tools.registry import Engine, call_tool
from explorer import retrieval, where, widgets
from tests.conftest import ALLOWED_ROOTS
from tests.explorer.test_gui import APP, PAGE, _env, _texts, app  # noqa: F401  (app: the fixture)
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION

pytestmark = pytest.mark.slow


def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    for k, v in params.items():
        at.query_params[k] = str(v)
    at.switch_page(PAGE[page]).run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def many(tmp_path, monkeypatch):
    """120 small text files, each holding the word 'harbour' (and 'café' in one)."""
    root = tmp_path / "docs"
    root.mkdir()
    for n in range(120):
        (root / f"f{n:03d}.txt").write_text(f"note {n}\nthe harbour at dawn, number {n}\n", encoding="utf-8")
    (root / "f000.txt").write_text("the harbour café\n" + "line\n" * 5 + "\x0c" + "after the break\n", encoding="utf-8")
    settings = Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate()
    eng = Engine(settings)
    eng.add_collection("Many", str(root))
    eng.run_index()
    eng.close()
    _env(monkeypatch, settings)
    yield settings, root
    st.cache_resource.clear()


def _hit_rows(at: AppTest) -> int:
    return sum(1 for b in at.button if b.label == "Open chunk")


def test_a_long_hit_list_is_drawn_50_at_a_time(many):
    at = _open("explore", q="harbour", scope="Many", limit=1000, mode="keyword")
    assert _hit_rows(at) == retrieval.HITS_PER_SCREEN
    more = next(b for b in at.button if b.label.startswith("Show more"))
    assert "50 of 120" in more.label
    more.click().run()
    assert _hit_rows(at) == 100
    next(b for b in at.button if b.label.startswith("Show more")).click().run()
    assert _hit_rows(at) == 120 and not [b for b in at.button if b.label.startswith("Show more")]


def test_a_deep_link_to_a_hit_past_the_first_screen_draws_down_to_it(many):
    at = _open("explore", q="harbour", scope="Many", limit=1000, mode="keyword", hit=77)
    assert _hit_rows(at) == 100


def test_a_read_only_explorer_caps_the_limit_and_hides_tool_calls(many, monkeypatch):
    monkeypatch.setenv("CHUNKNAV_READ_ONLY", "true")
    st.cache_resource.clear()
    at = _open("explore", q="harbour", scope="Many", limit=1000, mode="keyword")
    assert any(f"at most {retrieval.READ_ONLY_LIMIT} hits" in c.value for c in at.caption)
    assert not [c for c in at.code if c.language == "json"]  # "Show as tool call" is off here
    at.sidebar.toggle(key="show_calls").set_value(True).run()
    assert [c for c in at.code if c.language == "json"]


def test_text_hits_show_lines_and_the_query_word_folded(many):
    at = _open("explore", q="cafe", scope="Many", mode="keyword")
    md = _texts(at.markdown)
    assert ":blue-badge[line" in md and "<mark>café</mark>" in md


def test_a_changed_file_is_badged_on_its_hit(many):
    _settings, root = many
    (root / "f005.txt").write_text("the harbour, rewritten\n", encoding="utf-8")
    at = _open("explore", q="harbour", scope="Many", limit=1000, mode="keyword")
    assert _texts(at.markdown).count("file changed since indexing") == 1


def test_the_chunk_view_shows_a_page_break(many):
    at = _open("chunk", c="Many", f="f000.txt", i=0)
    md = _texts(at.markdown)
    assert widgets.PAGE_BREAK_HTML in md and "\x0c" not in md


def test_pdf_hits_say_where_in_words_and_keep_the_numbers_one_click_away(app, sample_engine):  # noqa: F811
    env = call_tool(
        sample_engine, "search_chunks", {"query": "Lorem ipsum", "scope": SAMPLE_COLLECTION, "maxTokens": 100_000}
    )
    hit = next(h for h in env["hits"] if h.get("bbox"))
    at = app("explore", q="Lorem ipsum", scope=SAMPLE_COLLECTION)
    words = where.position_words(hit["page"], hit["bbox"])
    assert words.startswith(f"page {hit['page']}, ") and any(words in c.value for c in at.caption)
    at = app("chunk", c=hit["collectionPath"], f=hit["filePath"], i=hit["chunkIndex"])
    header = [m.value for m in at.markdown if ":orange-badge[page" in m.value]
    assert header and "bbox" not in header[0] and words in header[0]  # words, not numbers
    assert any(m.value.startswith("bbox x=") for m in at.markdown)  # the numbers: in the popover


def test_position_words():
    assert where.position_words(3, {"x": 0.1, "y": 0.25, "w": 0.8, "h": 0.1}) == "page 3, upper half"
    assert where.position_words(3, {"x": 0.55, "y": 0.8, "w": 0.4, "h": 0.1}) == "page 3, bottom, right column"
    assert where.position_words(3, {"x": 0.1, "y": 0.05, "w": 0.8, "h": 0.9}) == "page 3, most of the page"
    assert where.position_words(3, None) == "page 3" and where.position_words(None, None) == ""
