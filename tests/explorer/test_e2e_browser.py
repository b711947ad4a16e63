"""End to end in a real headless Chromium (Debian's /usr/bin/chromium via Playwright).

Starts ``python -m streamlit run explorer/app.py`` from the repo root with the
``streamlit_config.toml`` flags (as ``chunknav gui`` does) on a free loopback
port over the sample index, searches, opens a hit's source, and checks that
the rendered page shows the highlight and no Streamlit exception box.
Screenshots go to tests/output/ (git-ignored).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.faces.gui import streamlit_flags


REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "tests" / "output"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not shutil.which(CHROMIUM) and not Path(CHROMIUM).is_file(), reason=f"{CHROMIUM} not installed (make chromium)"
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(db: str, log_path: Path, provider: str):
    """A real ``streamlit run explorer/app.py`` on a free loopback port, with
    the launcher's flags; yields its base URL and stops it after."""
    port = _free_port()
    env = dict(os.environ, CHUNKNAV_DB=db, EMBED_PROVIDER=provider)
    log = open(log_path, "w")
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "explorer/app.py",
        *streamlit_flags(),
        f"--server.port={port}",
        "--server.headless=true",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert proc.poll() is None, log_path.read_text()
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def server(sample_index, tmp_path):
    with streamlit_server(sample_index.db, tmp_path / "streamlit.log", "local") as url:
        yield url


def _highlight_pixels(png: bytes) -> int:
    """Pixels of the translucent yellow fill over white paper (engine.render.HIGHLIGHT_FILL)."""
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return int(((r > 245) & (g > 225) & (g < 250) & (b > 130) & (b < 190)).sum())


def test_search_open_hit_see_highlighted_page(server, request):
    sync_api = playwright
    out = OUTPUT / request.node.name
    out.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS[1:], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(f"{server}/explore", wait_until="domcontentloaded")
            query = page.get_by_label("Query")
            query.wait_for(timeout=60_000)
            query.fill("Copenhagen Table 1: EU Countries Information")
            page.get_by_role("button", name="Search").click()
            source = page.get_by_role("button", name="Source").first
            source.wait_for(timeout=60_000)
            # the hit's snippet may be drawn after its buttons: wait for its marked words
            page.locator("mark").first.wait_for(timeout=60_000)
            page.screenshot(path=str(out / "1-results.png"))
            assert page.locator("mark").count() > 0, "query words not marked"

            t0 = time.perf_counter()
            source.click()
            img = page.locator("[data-testid='stImage'] img").first
            img.wait_for(timeout=60_000)
            page.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=img.element_handle(), timeout=60_000
            )
            click_to_highlight_s = time.perf_counter() - t0
            assert "/source" in page.url and "c=Samples" in page.url and "i=" in page.url
            page.get_by_text("lines of the chunk").first.wait_for(timeout=10_000)  # line rectangles

            img.scroll_into_view_if_needed()
            shot = img.screenshot(path=str(out / "3-highlight.png"))
            page.screenshot(path=str(out / "2-source.png"))
            highlighted = _highlight_pixels(shot)
            assert highlighted > 500, f"no highlight visible on the page image ({highlighted} px)"
            assert page.locator("[data-testid='stException']").count() == 0
            assert page.get_by_text("Traceback").count() == 0

            # the URL is a deep link: a fresh tab on it shows the same highlighted page
            deep = page.url
            page2 = browser.new_page(viewport={"width": 1400, "height": 2400})
            page2.goto(deep, wait_until="domcontentloaded")
            img2 = page2.locator("[data-testid='stImage'] img").first
            img2.wait_for(timeout=60_000)
            page2.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=img2.element_handle(), timeout=60_000
            )
            img2.scroll_into_view_if_needed()
            assert _highlight_pixels(img2.screenshot(path=str(out / "4-deep-link.png"))) > 500
            (out / "timing.txt").write_text(f"click to rendered highlight: {click_to_highlight_s:.3f} s\n")
            print(f"click to rendered highlight: {click_to_highlight_s:.3f} s")
        finally:
            browser.close()


def test_the_explorer_makes_no_outside_request(server):
    """Every request the browser makes while the Status page loads goes to the
    explorer itself; the tab icon is the local assets/icon.png, not a web font."""
    from urllib.parse import urlsplit

    sync_api = playwright
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS[1:], headless=True)
        try:
            page = browser.new_page()
            urls: list[str] = []
            page.on("request", lambda r: urls.append(r.url))
            page.goto(f"{server}/status", wait_until="domcontentloaded")
            page.get_by_text("documents").first.wait_for(timeout=60_000)
            icon = page.locator("link[rel~='icon']").first
            page.wait_for_function(
                "() => [...document.querySelectorAll(\"link[rel~='icon']\")].some(l => l.href.includes('/media/'))",
                timeout=30_000,
            )
            href = icon.get_attribute("href") or ""
            page.wait_for_load_state("networkidle", timeout=30_000)
        finally:
            browser.close()
    assert "/media/" in href and href.endswith(".png"), href
    outside = sorted(
        {
            u
            for u in urls
            if urlsplit(u).scheme in ("http", "https") and urlsplit(u).hostname not in ("127.0.0.1", "localhost")
        }
    )
    assert not outside, outside
