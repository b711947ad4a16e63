"""``chunknav gui`` as an operator runs it: the real launcher as a
subprocess on a free loopback port, the startup line with the real address,
SIGTERM/SIGINT forwarded to Streamlit and waited for (the port is closed
afterwards), and every page opened directly by URL in headless Chromium with
hostile query parameters: no traceback, no "Page not found", the right page.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def _chunknav() -> list[str]:
    script = Path(sys.executable).parent / "chunknav"
    return [str(script)] if script.exists() else [sys.executable, "-m", "engine"]


def _start(db: str, port: int, log: Path, cwd: Path, **extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_", "STREAMLIT_"))}
    env.update(
        {
            "EMBED_PROVIDER": "local",
            "EMBED_MODEL": "l2_supercat_256",
            "CHUNKNAV_ALLOWED_ROOTS": os.environ["CHUNKNAV_ALLOWED_ROOTS"],
        },
        **extra,
    )
    proc = subprocess.Popen(
        [*_chunknav(), "--db", db, "gui", "--port", str(port), "--headless"],
        cwd=cwd,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 60
    while not _listening(port):
        assert proc.poll() is None, log.read_text()
        assert time.time() < deadline, log.read_text()
        time.sleep(0.2)
    # Streamlit binds its socket a few ms before its server has started; a signal in
    # that window makes Streamlit itself fail ('Server' object has no attribute
    # 'servers'). Wait for its own "started" line (the launch is what is tested here).
    while "Uvicorn server started" not in log.read_text() and "You can now view" not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.time() < deadline, log.read_text()
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_killing_chunknav_gui_stops_streamlit_and_closes_the_port(sample_index, tmp_path, sig):
    port = _free_port()
    log = tmp_path / "gui.log"
    proc = _start(sample_index.db, port, log, cwd=tmp_path)
    try:
        assert f"chunknav explorer: http://127.0.0.1:{port}/ (bound to 127.0.0.1, loopback only)" in log.read_text()
        proc.send_signal(sig)
        code = proc.wait(30)
        assert code in (0, 128 + sig), (code, log.read_text())
        assert not _listening(port), "Streamlit still listens after chunknav gui ended"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_streamlit_server_port_env_is_not_overridden_by_the_config(sample_index, tmp_path):
    port = _free_port()
    log = tmp_path / "gui.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_", "STREAMLIT_"))}
    env.update(
        EMBED_PROVIDER="local",
        EMBED_MODEL="l2_supercat_256",
        STREAMLIT_SERVER_PORT=str(port),
        CHUNKNAV_DB=sample_index.db,
        CHUNKNAV_ALLOWED_ROOTS=os.environ["CHUNKNAV_ALLOWED_ROOTS"],
    )
    proc = subprocess.Popen(
        [*_chunknav(), "gui", "--headless"], cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT
    )
    try:
        deadline = time.time() + 60
        while not _listening(port):
            assert proc.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.2)
        assert f"http://127.0.0.1:{port}/" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(30)
    assert not _listening(port)


def test_a_busy_port_is_refused_before_streamlit_starts(sample_index, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_", "STREAMLIT_"))}
        env.update(
            EMBED_PROVIDER="local",
            EMBED_MODEL="l2_supercat_256",
            CHUNKNAV_ALLOWED_ROOTS=os.environ["CHUNKNAV_ALLOWED_ROOTS"],
        )
        r = subprocess.run(
            [*_chunknav(), "--db", sample_index.db, "gui", "--port", str(port), "--headless"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert f"port {port} is in use; pass --port" in r.stderr
    assert "bound to" not in r.stderr + r.stdout  # no claim it listens
    assert "not available" not in r.stderr + r.stdout  # Streamlit never ran


HOSTILE = {
    "status": {"q": "x", "bogus": "1"},
    "rebuild": {"kind": "xyz"},
    "explore": {"q": "lorem ipsum", "kind": "xyz", "mode": "bogus", "limit": "-5", "scope": "Nope"},
    "chunk": {"c": "Samples", "f": "../../etc/passwd", "i": "abc"},
    "source": {"c": "Samples", "f": "multicolumn.pdf", "i": "1", "p": "5000", "zoom": "nan"},
}
TITLES = {"status": "Status", "rebuild": "Rebuild", "explore": "Explore index", "chunk": "Chunk", "source": "Source"}


@pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"{CHROMIUM} not installed (make chromium)")
def test_every_page_opens_directly_with_hostile_parameters_in_chromium(sample_index, tmp_path, request):
    sync_api = pytest.importorskip("playwright.sync_api")
    port = _free_port()
    proc = _start(sample_index.db, port, tmp_path / "gui.log", cwd=tmp_path)
    shots = Path(os.environ.get("SHOTS_DIR") or tmp_path)  # SHOTS_DIR=... keeps the screenshots
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            for name, params in HOSTILE.items():
                for query in ("", urlencode(params) + "&nul=%00"):
                    url = f"http://127.0.0.1:{port}/{name}" + (f"?{query}" if query else "")
                    page.goto(url)
                    page.get_by_role("heading", name=TITLES[name]).first.wait_for(timeout=60_000)
                    page.wait_for_timeout(800)
                    body = page.inner_text("body")
                    assert "Page not found" not in body, url
                    assert "Traceback" not in body and 'File "/' not in body, url
                    if query and name in ("explore", "source", "chunk"):
                        assert "This link had parameters that were changed" in body, url
                    if query and name == "explore":
                        page.screenshot(path=str(shots / "hostile-explore.png"), full_page=False)
            # the app root shows Status under its own URL
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_role("heading", name="Status").first.wait_for(timeout=60_000)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(30)
