"""Shared pytest setup. Fixtures live in per-area plugin modules so that
several people can work on them at once:

* ``tests/fixtures/fixtures_corpus.py``: ``real_corpus`` (tests/corpus), ``expected``,
  ``built_pdfs`` (real PDFs built with PyMuPDF: multi-page, rotated, CropBox,
  encrypted, image-only), ``samples_dir``.
* ``tests/fixtures/fixtures_embed.py``: ``embed_stub`` (loopback server speaking the
  Ollama and OpenAI wire formats).
* ``tests/fixtures/fixtures_store.py``: ``store`` (SQLite, plus Postgres when
  available), ``settings``.
* ``tests/fixtures/fixtures_engine.py``: ``sample_index`` (a real index of assets/samples,
  collection ``Samples``, local model), ``sample_engine``.

The local model of the suite is WordLlama (``FAST_LOCAL_MODEL``), set here
explicitly: the default model (all-MiniLM-L6-v2) costs ~100x its CPU per
chunk. ``clean_env`` puts ``EMBED_MODEL`` in every test's environment (and so
in every subprocess it starts); ``Settings`` built directly name the model.
A test that loads the default model must be marked ``minilm``
(``minilm_guard`` fails any other); those embed a few texts or a small
corpus once per session (``tests/embed/test_minilm.py``).
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: CHUNKNAV_ALLOWED_ROOTS of the suite: test roots live under the temp dir (and
#: tests/corpus in the repo). Tests that build ``Settings`` directly pass
#: ``allowed_roots=ALLOWED_ROOTS`` (tests/fixtures/fixtures_store.py re-exports it).
ALLOWED_ROOTS = os.pathsep.join([tempfile.gettempdir(), str(REPO)])
#: The local model every test uses unless it tests the default model (marker ``minilm``).
FAST_LOCAL_MODEL = "l2_supercat_256"

pytest_plugins = [
    "tests.fixtures.fixtures_corpus",
    "tests.fixtures.fixtures_embed",
    "tests.fixtures.fixtures_store",
    "tests.fixtures.fixtures_engine",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Drop EMBED_* / CHUNKNAV_* so the developer's shell never leaks into a test."""
    for key in list(os.environ):
        if key.startswith(("EMBED_", "CHUNKNAV_")):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("CHUNKNAV_ALLOWED_ROOTS", ALLOWED_ROOTS)  # explicit, never the developer's home
    monkeypatch.setenv("EMBED_MODEL", FAST_LOCAL_MODEL)  # the fast local model (see the module docstring)
    yield


@pytest.fixture(autouse=True)
def minilm_guard(request, monkeypatch):
    """Only tests marked ``minilm`` may load all-MiniLM-L6-v2 in this process."""
    if request.node.get_closest_marker("minilm") is not None:
        yield
        return
    from engine.embed import minilm

    def refuse(threads: int):
        pytest.fail(  # a BaseException: the provider's own error handling cannot turn it into data
            f"{request.node.nodeid} loads all-MiniLM-L6-v2 (~100x WordLlama's cost): name "
            f"EMBED_MODEL={FAST_LOCAL_MODEL} in its settings, or mark it minilm"
        )

    monkeypatch.setattr(minilm, "_shared", refuse)
    yield


@pytest.fixture(autouse=True)
def restore_main_module():
    """Streamlit's script runner (AppTest) installs the app as
    ``sys.modules["__main__"]`` and sets ``sys.argv[0]`` to it; a later
    ``multiprocessing`` spawn would then run explorer/app.py as the child's
    main module (and open the default index). Put both back after each test."""
    saved_argv, saved_main = list(sys.argv), sys.modules.get("__main__")
    yield
    sys.argv[:] = saved_argv
    if saved_main is not None:
        sys.modules["__main__"] = saved_main


@pytest.fixture(autouse=True)
def repo_stays_clean():
    """No test may create the default index (./.chunknav) inside the repo."""
    default = REPO / ".chunknav"
    before = default.exists()
    yield
    if not before:
        assert not default.exists(), "this test wrote the default index into the repo"
