"""Shared pytest setup. Fixtures live in per-area plugin modules so that
several people can work on them at once:

* ``tests/fixtures_corpus.py``: ``shared_corpus`` (../shared/corpus), ``expected``,
  ``built_pdfs`` (real PDFs built with PyMuPDF: multi-page, rotated, CropBox,
  encrypted, image-only), ``samples_dir``.
* ``tests/fixtures_embed.py``: ``embed_stub`` (loopback server speaking the
  Ollama and OpenAI wire formats).
* ``tests/fixtures_store.py``: ``store`` (SQLite, plus Postgres when
  available), ``settings``.
* ``tests/fixtures_engine.py``: ``sample_index`` (a real index of assets/samples,
  collection ``Samples``, local model), ``sample_engine``.
"""

import os

import pytest

pytest_plugins = [
    "tests.fixtures_corpus",
    "tests.fixtures_embed",
    "tests.fixtures_store",
    "tests.fixtures_engine",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Drop EMBED_* / CHUNKNAV_* so the developer's shell never leaks into a test."""
    for key in list(os.environ):
        if key.startswith(("EMBED_", "CHUNKNAV_")):
            monkeypatch.delenv(key, raising=False)
    yield
