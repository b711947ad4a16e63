"""Reading hits in a real headless Chromium (Debian /usr/bin/chromium via Playwright), 1280x800.

A zoomed page pans: at 3x the whole page width is in a box that opens scrolled to the
highlight and can be panned further; the query's words are marked on the page image in
violet, apart from the chunk's yellow. A text hit's line numbers go through a deep link
(``lines=A-B``) and come back as the marked, scrolled-to gutter lines. Screenshots go to
tests/output/ (git-ignored) and, when ``CHUNKNAV_SHOTS`` names a folder, there too.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.config import Settings
from engine.tools.registry import Engine, call_tool
from explorer import retrieval
from tests.conftest import ALLOWED_ROOTS
from tests.explorer.test_e2e_browser import CHROMIUM, FLAGS, OUTPUT, streamlit_server
from tests.explorer.test_e2e_source import _tall_pdf, _yellow

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which(CHROMIUM) and not Path(CHROMIUM).is_file(), reason=f"{CHROMIUM} not installed (make chromium)"
    ),
]


def _violet(png: bytes) -> np.ndarray:
    """Mask of the query-word underline (engine.render.QUERY_WORD_LINE, 109/40/217)."""
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return (abs(r - 109) < 30) & (g < 90) & (abs(b - 217) < 35)


def _shot(page_or_el, name: str, out: Path) -> bytes:
    png = page_or_el.screenshot(path=str(out / name))
    extra = os.environ.get("CHUNKNAV_SHOTS")
    if extra:
        Path(extra, f"reading-{name}").write_bytes(png)
    return bytes(png)


@pytest.fixture
def reading_index(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    _tall_pdf(root / "tall.pdf")
    lines = [f"line {n} of the notes, nothing to see here" for n in range(1, 301)]
    lines[199] = "the café opens at nine on line 200"
    (root / "notes.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate()
    engine = Engine(settings)
    engine.add_collection("Docs", str(root))
    engine.run_index()
    chunk = None
    for i in range(engine.store.get_document("Docs", "tall.pdf").chunk_count):
        env = call_tool(engine, "get_chunk", {"collectionPath": "Docs", "filePath": "tall.pdf", "chunkIndex": i})
        if len(env["regions"]) == 2:
            chunk = env
            break
    hits = call_tool(engine, "search_chunks", {"query": "cafe", "scope": "Docs", "mode": "keyword"})["hits"]
    engine.close()
    assert chunk is not None
    return settings, chunk, hits


@pytest.fixture
def server(reading_index, tmp_path):
    settings, chunk, hits = reading_index
    with streamlit_server(settings.db, tmp_path / "streamlit.log", "none") as url:
        yield url, chunk, hits


def test_a_zoomed_page_pans_and_marks_the_query_words(server, request):
    base, chunk, _hits = server
    out = OUTPUT / request.node.name
    out.mkdir(parents=True, exist_ok=True)
    word = "Epsilon"  # every line holds epsilon<n>: a term of 3+ characters marks a word it begins
    link = f"{base}/source?c=Docs&f=tall.pdf&i={chunk['chunkIndex']}&zoom=3&q={word}"
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS[1:], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(link, wait_until="domcontentloaded")
            pan = page.locator(".cn-pan[data-ready='1']").first
            pan.wait_for(timeout=60_000)
            page.wait_for_timeout(500)
            assert page.locator("[data-testid='stException']").count() == 0
            size = pan.evaluate(
                "b => ({cw: b.clientWidth, sw: b.scrollWidth, sl: b.scrollLeft, st: b.scrollTop,"
                " iw: b.querySelector('img').naturalWidth})"
            )
            assert size["iw"] >= 2.9 * 880 and size["sw"] > 2 * size["cw"], size  # the whole width, pannable
            opened = _shot(pan, "pan-open.png", out)
            assert _yellow(opened).sum() > 500, "the highlight is not in the view at 3x"
            assert _violet(opened).sum() > 50, "the query's words are not marked on the page"
            # pan right by half a view: the box scrolls (the page is wider than the view)
            pan.hover()
            page.mouse.wheel(size["cw"] // 2, 0)
            page.wait_for_function(
                "([b, x]) => b.scrollLeft !== x", arg=[pan.element_handle(), size["sl"]], timeout=10_000
            )
            _shot(page, "pan-page.png", out)
        finally:
            browser.close()


def test_line_numbers_round_trip_through_a_deep_link(server, request):
    base, _chunk, hits = server
    out = OUTPUT / request.node.name
    out.mkdir(parents=True, exist_ok=True)
    hit = next(h for h in hits if h["filePath"] == "notes.txt")
    assert hit["lineStart"] <= 200 <= hit["lineEnd"] and hit["fileState"] == "current"
    lines = retrieval.lines_param(hit)
    link = f"{base}/source?c=Docs&f=notes.txt&i={hit['chunkIndex']}&q=cafe&lines={lines}"
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS[1:], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(link, wait_until="domcontentloaded")
            first = page.locator(f"#cn-L{hit['lineStart']}")
            first.wait_for(timeout=60_000)
            page.wait_for_timeout(1500)
            assert "cn-lsel" in first.get_attribute("class")
            assert page.locator(".cn-lsel").count() == hit["lineEnd"] - hit["lineStart"] + 1
            # scrolled to: the first marked line is inside the text box's visible part and the viewport
            box = first.evaluate(
                "el => { const b = el.closest('.cn-text').getBoundingClientRect(); const r = el.getBoundingClientRect();"
                " return {top: r.top, btop: b.top, bbottom: b.bottom}; }"
            )
            assert box["btop"] - 2 <= box["top"] <= box["bbottom"] and 0 <= box["top"] <= 800, box
            assert page.locator(".cn-text mark", has_text="café").count() >= 1  # cafe marks café
            assert page.get_by_text(f"lines {hit['lineStart']}–{hit['lineEnd']}").count() >= 1
            _shot(page, "lines-deep-link.png", out)
        finally:
            browser.close()
