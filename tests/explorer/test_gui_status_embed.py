"""The Status page shows what the embed pass could not do: chunks without a vector
with their reason, truncated counts per model, and a probe that is not ok when
the server's dimension differs from the stored vectors (the real app through
``streamlit.testing``, on an index built against the loopback stub)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.config import Settings
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.stub import ERRORS, Reply

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "explorer" / "app.py")


@pytest.fixture
def status_page(monkeypatch, tmp_path, embed_stub):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.txt").write_text("plain words about rockets and skates\n", encoding="utf-8")
    (docs / "bad.txt").write_text("zzpoisonzz this window is refused by the server\n", encoding="utf-8")
    embed_stub.dim = 16
    embed_stub.refuse = lambda path, p: (
        Reply(400, ERRORS[("ollama", 400)]) if any("zzpoisonzz" in t for t in p.get("input", [])) else None
    )
    s = Settings(
        allowed_roots=ALLOWED_ROOTS,
        db=str(tmp_path / "index.db"),
        embed_provider="ollama",
        embed_url=embed_stub.url,
        embed_model="stub-embed",
        embed_retries=0,
    ).validate()
    eng = Engine(s)
    eng.add_collection("C", str(docs))
    summary = eng.run_index()
    assert summary["embedFailed"] == 1
    eng.close()
    for k, v in {
        "CHUNKNAV_DB": s.db,
        "EMBED_PROVIDER": "ollama",
        "EMBED_URL": embed_stub.url,
        "EMBED_MODEL": "stub-embed",
        "EMBED_RETRIES": "0",
    }.items():
        monkeypatch.setenv(k, v)
    st.cache_resource.clear()
    st.cache_data.clear()

    def open_status() -> AppTest:
        at = AppTest.from_file(APP, default_timeout=90)
        at.run()
        at.switch_page("../pages/status.py").run()
        at.button(key="status_probe").click().run()  # the probe runs on demand
        assert not at.exception, at.exception
        return at

    yield open_status, embed_stub
    st.cache_resource.clear()


def test_status_lists_chunks_without_a_vector_and_a_changed_dimension(status_page):
    open_status, stub = status_page
    at = open_status()
    tables = [re.sub(r"\\(.)", r"\1", m.value) for m in at.markdown if m.value.lstrip().startswith("|")]
    failed = next(t for t in tables if "chunkIndex" in t and "reason" in t)
    rows = [r for r in failed.splitlines()[2:] if r.strip()]
    assert len(rows) == 1 and "bad.txt" in rows[0] and "context length" in rows[0]
    vectors = next(t for t in tables if "truncated" in t)
    header = [c.strip() for c in vectors.splitlines()[0].strip("|").split("|")]
    cells = [c.strip() for c in vectors.splitlines()[2].strip("|").split("|")]
    assert (cells[header.index("failed")], cells[header.index("truncated")]) == ("1", "0")
    assert any("Probe ok" in s.value for s in at.success)
    stub.dim = 8  # the model behind the name changed
    at = open_status()
    text = "\n".join(e.value for e in [*at.error, *at.warning, *at.markdown, *at.caption])
    assert "embedding-dimension-changed" in text and not any("Probe ok" in s.value for s in at.success)
