"""The Source view in a real headless Chromium (Debian /usr/bin/chromium via Playwright), 1280x800.

Builds a two-page PDF of tall pages (612 x 1800 pt) whose lines fill each page,
indexes it, and opens a deep link to a chunk that begins near the bottom of
page 1 and continues on page 2. Without scrolling, the highlight of both pages
must be inside the viewport; zoom 3x must make the highlighted lines about 3x
taller on screen with the highlight still in view (the page in a box that pans); replacing the file on disk
must give the stale warning and no drawn rectangles. Screenshots go to
tests/output/ (git-ignored).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.config import Settings
from tests.conftest import ALLOWED_ROOTS
from engine.tools.registry import Engine, call_tool
from tests.explorer.test_e2e_browser import CHROMIUM, FLAGS, OUTPUT, REPO, streamlit_server


playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which(CHROMIUM) and not Path(CHROMIUM).is_file(), reason=f"{CHROMIUM} not installed (make chromium)"
    ),
]
WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega"
).split()


def _tall_pdf(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    n = 0
    for _ in range(2):
        page = doc.new_page(width=612, height=1800)
        y = 60.0
        while y < 1760:
            line = " ".join(WORDS[(n + k) % len(WORDS)] + str(n) for k in range(9))
            page.insert_text((54, y), line, fontsize=10)
            n += 1
            y += 14.0
    doc.save(path)
    doc.close()


def _yellow(png: bytes) -> np.ndarray:
    """Mask of the translucent yellow fill over white paper (engine.render.HIGHLIGHT_FILL)."""
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return (r > 245) & (g > 225) & (g < 250) & (b > 130) & (b < 190)


def _row_runs(mask: np.ndarray) -> list[int]:
    """Heights (pixels) of the runs of rows holding yellow: one per drawn line."""
    rows = mask.sum(axis=1) > 20
    runs, k = [], 0
    for v in rows.tolist() + [False]:
        if v:
            k += 1
        elif k:
            runs.append(k)
            k = 0
    return runs


@pytest.fixture
def tall_index(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    _tall_pdf(root / "tall.pdf")
    settings = Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate()
    engine = Engine(settings)
    engine.add_collection("Tall", str(root))
    engine.run_index()
    chunk = None
    for i in range(engine.store.get_document("Tall", "tall.pdf").chunk_count):
        env = call_tool(engine, "get_chunk", {"collectionPath": "Tall", "filePath": "tall.pdf", "chunkIndex": i})
        if len(env["regions"]) == 2:
            chunk = env
            break
    engine.close()
    assert chunk is not None and chunk["regions"][0]["rects"][0]["y"] > 0.7, "no page-crossing chunk"
    return settings, root, chunk


@pytest.fixture
def server(tall_index, tmp_path):
    settings, root, chunk = tall_index
    with streamlit_server(settings.db, tmp_path / "streamlit.log", "none") as url:
        yield url, root, chunk


def _wait_images(page, n: int) -> None:
    imgs = page.locator("[data-testid='stImage'] img")
    imgs.nth(n - 1).wait_for(timeout=60_000)
    for k in range(n):
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=imgs.nth(k).element_handle(), timeout=60_000
        )


def test_source_deep_link_zoom_and_stale(server, request):
    base, root, chunk = server
    out = OUTPUT / request.node.name
    out.mkdir(parents=True, exist_ok=True)
    link = f"{base}/source?c=Tall&f=tall.pdf&i={chunk['chunkIndex']}"
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS[1:], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(link, wait_until="domcontentloaded")
            _wait_images(page, 2)
            page.wait_for_timeout(500)
            assert page.evaluate("window.scrollY") == 0
            shot = page.screenshot(path=str(out / "1-open.png"))  # the viewport only: no scrolling
            assert page.locator("[data-testid='stException']").count() == 0
            imgs = page.locator("[data-testid='stImage'] img")
            for k in range(2):  # page 1 (bottom of a tall page) and page 2: both highlights in view
                box = imgs.nth(k).bounding_box()
                assert box["y"] >= 0 and box["y"] + box["height"] <= 800, (k, box)
                crop = Image.open(io.BytesIO(shot)).crop(
                    (int(box["x"]), int(box["y"]), int(box["x"] + box["width"]), int(box["y"] + box["height"]))
                )
                buf = io.BytesIO()
                crop.save(buf, format="PNG")
                assert _yellow(buf.getvalue()).sum() > 500, f"no highlight visible on page {k + 1}"
            runs_1x = _row_runs(_yellow(imgs.nth(0).screenshot()))
            natural_1x = page.evaluate("img => img.naturalWidth * img.naturalHeight", imgs.nth(0).element_handle())

            # zoom 3x: the page pans in a box scrolled to the highlight; its lines are ~3x taller
            page.goto(link + "&zoom=3", wait_until="domcontentloaded")
            page.locator(".cn-pan[data-ready='1']").nth(1).wait_for(timeout=60_000)
            page.wait_for_timeout(500)
            shot3 = page.screenshot(path=str(out / "2-zoom3.png"))
            pan = page.locator(".cn-pan").first
            box = pan.bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 800
            runs_3x = _row_runs(_yellow(pan.screenshot()))
            assert runs_1x and runs_3x
            assert np.median(runs_3x) >= 2.5 * np.median(runs_1x), (runs_1x, runs_3x)
            assert _yellow(shot3).sum() > 2000
            img = pan.locator("img")
            natural_3x = page.evaluate("img => img.naturalWidth * img.naturalHeight", img.element_handle())
            assert natural_3x >= natural_1x  # the image shown did not shrink
            assert page.get_by_text("zoom 3×").count() >= 1

            # the file replaced on disk: the warning, no stale rectangles
            doc_path = root / "tall.pdf"
            shutil.copy(REPO / "tests" / "corpus" / "pdf" / "minimal-document.pdf", doc_path)
            page.goto(link, wait_until="domcontentloaded")
            page.get_by_text("this file changed after it was indexed", exact=False).wait_for(timeout=60_000)
            page.wait_for_timeout(1500)
            shot_stale = page.screenshot(path=str(out / "3-stale.png"))
            assert _yellow(shot_stale).sum() < 50, "stale rectangles drawn over the new file"
        finally:
            browser.close()
