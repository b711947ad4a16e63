"""``pip install .`` as a user does it: build the wheel, install it into a fresh
venv (no system site-packages, no checkout on ``sys.path``), and use the
``chunknav`` command from a directory outside the repository.

* the wheel holds every ``engine``/``explorer`` module, the pages as
  ``explorer/_pages``, the sample corpus as ``explorer/_assets`` and the
  Streamlit settings as ``explorer/_config``; no tests, no bench;
* ``chunknav --version`` prints the package metadata's version;
* ``collections add``, ``index``, ``search-chunks`` work on an index in the
  working directory, with the default local model (all-MiniLM-L6-v2, its
  tokenizer inside the wheel);
* ``chunknav gui`` started from another directory answers Streamlit's health
  endpoint, and the installed app runs (``AppTest`` on the installed
  ``explorer/app.py``, pages and samples found inside the package).

pip resolves the dependencies from its configured index (PyPI in CI; its
cache and local wheel folders make it quick). The source is copied to a
temporary folder first, so building writes nothing into the checkout.
About 40-60 s here with pip's cache warm (installing the ~700 MB of
dependencies dominates), so it is not slow-marked: every ``make test`` runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from tests.conftest import ALLOWED_ROOTS

pytestmark = pytest.mark.install

REPO = Path(__file__).resolve().parents[2]

#: What a source build needs (setup.py maps pages/, assets/ and streamlit_config.toml).
SOURCE = [
    "engine",
    "explorer",
    "pages",
    "assets",
    "setup.py",
    "pyproject.toml",
    "README.md",
    "streamlit_config.toml",
    "requirements.txt",
    "requirements-postgres.txt",
    "requirements-dev.txt",
]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), EMBED_PROVIDER="local", CHUNKNAV_ALLOWED_ROOTS=ALLOWED_ROOTS)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(venv bin dir, wheel path, env)`` of a fresh venv with the built wheel installed."""
    root = tmp_path_factory.mktemp("install")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", ".streamlit", "*.so")
    for name in SOURCE:
        p = REPO / name
        (shutil.copytree(p, src / name, ignore=ignore) if p.is_dir() else shutil.copy2(p, src / name))
    home = root / "home"
    home.mkdir()
    env = _env(home)
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(src)],
        check=True,
        env=env,
        cwd=root,
    )
    (wheel,) = dist.glob("chunknav-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    bin_dir = venv / "bin"
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True, env=env, cwd=root
    )
    return bin_dir, wheel, env


def test_wheel_contents(installed):
    _, wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("engine", "explorer"):
        for path in (REPO / package).rglob("*.py"):
            if "__pycache__" not in path.parts:
                assert path.relative_to(REPO).as_posix() in names, path
    for path in (REPO / "pages").glob("*.py"):
        assert f"explorer/_pages/{path.name}" in names, path
    for path in (REPO / "assets").rglob("*"):
        if path.is_file():
            assert f"explorer/_assets/{path.relative_to(REPO / 'assets').as_posix()}" in names, path
    assert "explorer/_config/streamlit_config.toml" in names
    for path in (REPO / "engine" / "embed" / "models").rglob("*"):  # the default model's tokenizer and licence
        if path.is_file():
            assert path.relative_to(REPO).as_posix() in names, path
    if list((REPO / "engine" / "extract").glob("_pdfwords*.so")):  # built here, so the wheel builds it too
        assert [n for n in names if n.startswith("engine/extract/_pdfwords") and n.endswith(".so")]
    assert not [n for n in names if n.startswith(("tests/", "bench/", "pages/", "assets/"))]
    meta = zipfile.ZipFile(wheel).read(f"chunknav-{VERSION}.dist-info/METADATA").decode()
    assert "Provides-Extra: postgres" in meta and "Provides-Extra: dev" in meta
    assert "Requires-Dist: psycopg" in meta and 'extra == "postgres"' in meta


def test_cli_from_another_directory(installed, tmp_path):
    bin_dir, _, env = installed
    work = tmp_path / "work"
    work.mkdir()
    chunknav = str(bin_dir / "chunknav")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([chunknav, *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)

    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"chunknav {VERSION}", r
    r = run("collections", "add", "Samples", str(REPO / "assets" / "samples"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["collectionPath"] == "Samples"
    r = run("index")
    assert r.returncode == 0, r.stderr
    assert (work / ".chunknav" / "index.db").is_file()  # the working directory's index
    r = run("search-chunks", "EU countries population capital", "--scope", "Samples", "--limit", "3")
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    assert found["searched"] is True and found["count"] >= 1 and found["mode"] in ("hybrid", "vector")
    assert found["hits"][0]["filePath"] == "multicolumn.pdf"
    # the installed package carries no pip check complaint
    r = subprocess.run([str(bin_dir / "python"), "-m", "pip", "check"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_gui_from_another_directory_is_healthy(installed, tmp_path):
    bin_dir, _, env = installed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = _free_port()
    proc = subprocess.Popen(
        [str(bin_dir / "chunknav"), "gui", "--port", str(port), "--headless"],
        cwd=elsewhere,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    body, deadline = "", time.monotonic() + 90
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    body = r.read().decode()
                    break
            except OSError:
                time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out = proc.communicate(timeout=20)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out = proc.communicate()[0].decode(errors="replace")
    assert body == "ok", out
    assert "Traceback" not in out, out

    # the installed app itself: pages and samples come from inside the package
    code = (
        "import pathlib, explorer\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file(str(pathlib.Path(explorer.__file__).parent / 'app.py'), default_timeout=120)\n"
        "at.run()\n"
        "assert not at.exception, at.exception\n"
        "from explorer import state\n"
        "assert state.PAGES_DIR.parent.name == 'explorer' and state.SAMPLES.is_dir(), state.PAGES_DIR\n"
        "print('titles', [t.value for t in at.title])\n"
    )
    r = subprocess.run(
        [str(bin_dir / "python"), "-c", code],
        cwd=elsewhere,
        env={**env, "EMBED_PROVIDER": "none"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "titles ['Status']" in r.stdout, r.stdout
