"""The indexer's embed pass (engine/index/embed_pass.py) on real files and a real store:
one refused chunk never blocks the others, a changed dimension is a classified
failure everywhere (index, search, status), chunks are embedded in length
order with the right vectors, vectors are reused by window text (a re-saved
PDF is not embedded again, on SQLite and Postgres), and a run with nothing to
embed neither probes a server nor loads the local model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from engine.config import Settings
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.stub import ERRORS, Reply, stub_vector

REPO = Path(__file__).resolve().parents[2]
POISON = "zzpoisonzz"


def _ollama(tmp_path, stub, **kw) -> Settings:
    return Settings(
        allowed_roots=ALLOWED_ROOTS,
        db=str(tmp_path / "db" / "index.db"),
        embed_provider="ollama",
        embed_url=stub.url,
        embed_model="stub-embed",
        embed_retries=0,
        embed_batch=kw.pop("batch", 8),
        **kw,
    ).validate()


def _write_corpus(root: Path, n: int = 6, poison: int | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        words = " ".join(f"word{i}x{j}" for j in range(40 + 35 * i))  # files of different lengths
        if i == poison:
            words += f" {POISON}"
        (root / f"doc{i}.txt").write_text(f"Document {i}. {words}\n", encoding="utf-8")


def _inputs(payload):
    x = payload.get("input")
    return [x] if isinstance(x, str) else list(x)


def _engine(settings, store=None) -> Engine:
    return Engine(settings, store=store)


def _pdf(path: Path, pages: int = 6) -> None:
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        y = 72
        for line in range(30):
            page.insert_text((72, y), f"Page {p + 1} line {line}: the archive keeps words number {p * 30 + line}.")
            y += 20
    doc.save(path)
    doc.close()


# --------------------------------------------------------------------------- one bad input


@pytest.mark.slow
def test_one_refused_chunk_never_blocks_the_others(tmp_path, embed_stub):
    # a small-context Ollama model with "truncate": false refuses the poisoned chunk's whole batch,
    # and even its truncated retry (the poison is in the first characters the server keeps)
    embed_stub.refuse = lambda path, p: (
        Reply(400, ERRORS[("ollama", 400)]) if path == "/api/embed" and any(POISON in t for t in _inputs(p)) else None
    )
    _write_corpus(tmp_path / "docs", poison=0)
    s = _ollama(tmp_path, embed_stub, chunk_size=200, chunk_overlap=20)
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    summary = eng.run_index()
    assert summary["embedError"] is None and summary["embedFailed"] == 1
    counts = eng.store.vector_counts()["stub-embed"]
    assert counts["missing"] == 1  # every other chunk has its vector
    status = call_tool(eng, "index_status", {"probe": False})
    row = next(v for v in status["vectors"] if v["model"] == "stub-embed")
    assert row["failed"] == 1 and row["truncated"] == 0
    (bad,) = status["embedFailures"]
    assert bad["filePath"] == "doc0.txt" and bad["error"] == "embedding-request-rejected"
    assert "context length" in bad["reason"]
    text = eng.store.get_chunk("C", "doc0.txt", bad["chunkIndex"]).chunk_text
    assert POISON in text
    # the next run retries only that chunk, alone, and the pass still finishes
    embed_stub.refuse = None
    again = eng.run_index()
    assert again["embedded"] == 1 and again["embedFailed"] == 0
    assert call_tool(eng, "index_status", {"probe": False})["embedFailures"] == []
    eng.close()


@pytest.mark.slow
def test_an_over_long_chunk_is_embedded_truncated_and_counted(tmp_path, embed_stub):
    # refuses any text over 150 characters unless "truncate": true; chunks are 200 characters
    embed_stub.refuse = lambda path, p: (
        Reply(400, ERRORS[("ollama", 400)])
        if path == "/api/embed" and not p.get("truncate") and any(len(t) > 150 for t in _inputs(p))
        else None
    )
    _write_corpus(tmp_path / "docs", n=3)
    s = _ollama(tmp_path, embed_stub, chunk_size=200, chunk_overlap=20)
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    summary = eng.run_index()
    long_chunks = sum(
        1 for d in eng.store.documents("C") for c in eng.store.chunks("C", d.file_path) if len(c.chunk_text) > 150
    )
    assert long_chunks >= 3 and summary["embedError"] is None
    assert summary["truncated"] == long_chunks and summary["embedFailed"] == 0
    assert eng.store.vector_counts()["stub-embed"]["missing"] == 0
    status = call_tool(eng, "index_status", {"probe": False})
    assert next(v for v in status["vectors"] if v["model"] == "stub-embed")["truncated"] == long_chunks
    from engine.faces.cli import _human_status

    assert f"truncated {long_chunks}" in _human_status(status)
    eng.close()


# --------------------------------------------------------------------------- dimension change


def test_a_changed_dimension_is_a_classified_failure(tmp_path, embed_stub, capsys):
    embed_stub.dim = 64
    _write_corpus(tmp_path / "docs", n=3)
    s = _ollama(tmp_path, embed_stub)
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    assert eng.run_index()["embedError"] is None
    before = eng.store.vector_counts()["stub-embed"]
    assert before["dim"] == 64
    eng.close()

    embed_stub.dim = 32  # the same model name now answers 32-d vectors
    (tmp_path / "docs" / "new.txt").write_text("a new file about other things entirely\n", encoding="utf-8")
    eng = _engine(s)
    summary = eng.run_index()
    err = summary["embedError"]
    assert err["error"] == "embedding-dimension-changed"
    assert (err["storedDim"], err["serverDim"]) == (64, 32) and "64" in err["message"]
    after = eng.store.vector_counts()["stub-embed"]
    assert (after["vectors"], after["dim"]) == (before["vectors"], 64)  # stored vectors untouched
    assert eng.store.last_run()["embedError"]["error"] == "embedding-dimension-changed"
    for tool in ("search", "search_chunks"):
        for mode in ("vector", "hybrid", "auto"):
            env = call_tool(eng, tool, {"query": "word1x3", "scope": "C", "mode": mode})
            assert env["searched"] is False and env["error"] == "embedding-dimension-changed", (tool, mode, env)
            assert (env["storedDim"], env["serverDim"]) == (64, 32) and "count" not in env
    kw = call_tool(eng, "search_chunks", {"query": "word1x3", "scope": "C", "mode": "keyword"})
    assert kw["searched"] is True and kw["count"] >= 1  # keyword search still works
    probe = call_tool(eng, "index_status", {})["provider"]["probe"]
    assert probe["ok"] is False and probe["error"] == "embedding-dimension-changed"
    eng.close()

    from engine.faces.cli import main

    env = {
        "CHUNKNAV_DB": s.db,
        "EMBED_PROVIDER": "ollama",
        "EMBED_URL": embed_stub.url,
        "EMBED_MODEL": "stub-embed",
        "EMBED_RETRIES": "0",
    }
    import os

    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        code = main(["index", "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 1 and out["embedError"]["error"] == "embedding-dimension-changed"
        assert main(["status"]) in (0, 1)
        assert "embedding-dimension-changed" in capsys.readouterr().out
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --------------------------------------------------------------------------- length order


def test_chunks_are_embedded_in_length_order_with_the_right_vectors(tmp_path, embed_stub):
    _write_corpus(tmp_path / "docs", n=8)
    s = _ollama(tmp_path, embed_stub, chunk_size=300, chunk_overlap=30, batch=4)
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    summary = eng.run_index()
    batches = [
        _inputs(r.json)
        for r in embed_stub.requests
        if r.path == "/api/embed" and _inputs(r.json) != ["chunknav probe: the quick brown fox jumps over the lazy dog"]
    ]
    lengths = [[len(t) for t in b] for b in batches]
    assert all(len(b) <= 4 for b in lengths)
    assert [x for b in lengths for x in b] == sorted(x for b in lengths for x in b)  # one group, length order
    assert sum(len(b) for b in batches) == summary["embedded"]
    # each chunk id got the vector of its own text (what unsorted, one-by-one embedding gives)
    chunks = [c for d in eng.store.documents("C") for c in eng.store.chunks("C", d.file_path)]
    for c in chunks:
        hit = eng.store.search_vectors(
            "stub-embed", np.asarray(stub_vector(c.chunk_text, 8), np.float32) / 3.0, ["C"], 1
        )[0]
        assert hit.chunk.chunk_text == c.chunk_text and hit.score == pytest.approx(1.0, abs=1e-5)
    eng.close()


def test_local_model_length_order_gives_the_same_vectors_as_unsorted(tmp_path):
    from engine.embed import make_embedder

    _write_corpus(tmp_path / "docs", n=6)
    s = Settings(
        embed_model="l2_supercat_256",
        allowed_roots=ALLOWED_ROOTS,
        db=str(tmp_path / "db" / "index.db"),
        embed_provider="local",
        chunk_size=250,
        chunk_overlap=25,
    ).validate()
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    assert eng.run_index()["embedError"] is None
    emb = make_embedder(s)
    chunks = [c for d in eng.store.documents("C") for c in eng.store.chunks("C", d.file_path)]
    for c in chunks[::3]:
        want = emb.embed([c.chunk_text])[0]  # alone: no padding at all
        hit = eng.store.search_vectors(emb.model, want, ["C"], 1)[0]
        assert hit.chunk.chunk_id == c.chunk_id or hit.chunk.chunk_text == c.chunk_text
        assert hit.score == pytest.approx(1.0, abs=1e-4)
    eng.close()


# --------------------------------------------------------------------------- reuse by window text


def test_a_resaved_pdf_is_not_embedded_again(tmp_path, store, embed_stub):
    docs = tmp_path / "docs"
    docs.mkdir()
    _pdf(docs / "report.pdf")
    s = _ollama(tmp_path, embed_stub)
    store.add_collection(Collection("C", str(docs)))
    first = Engine(s, store=store).run_index()
    assert first["embedded"] > 5 and first["embedError"] is None
    old_ids = {c.chunk_id for c in store.chunks("C", "report.pdf")}
    before = (docs / "report.pdf").read_bytes()
    doc = pymupdf.open(docs / "report.pdf")
    doc.set_metadata({"title": "Re-saved", "author": "someone else"})
    doc.save(docs / "resaved.pdf", garbage=4, deflate=True)
    doc.close()
    (docs / "resaved.pdf").replace(docs / "report.pdf")
    assert (docs / "report.pdf").read_bytes() != before
    posts = embed_stub.count("/api/embed")
    second = Engine(s, store=store).run_index()
    assert second["indexed"] == 1 and second["embedded"] == 0, second  # 0 re-embedded
    new_ids = {c.chunk_id for c in store.chunks("C", "report.pdf")}
    assert new_ids and not (new_ids & old_ids)  # chunk_id stays content-addressed (file hash + text)
    assert second["reused"] >= len(new_ids)
    assert store.vector_counts()["stub-embed"]["missing"] == 0
    assert embed_stub.count("/api/embed") == posts + 1  # only the probe: no text was sent


def test_a_recurring_window_text_is_embedded_once(tmp_path, embed_stub):
    docs = tmp_path / "docs"
    docs.mkdir()
    same = "The same boilerplate paragraph appears in every file of this folder. " * 3
    for i in range(4):
        (docs / f"f{i}.txt").write_text(same + ("x" * i), encoding="utf-8")  # different bytes, one window text
    s = _ollama(tmp_path, embed_stub, chunk_size=len(same), chunk_overlap=0)
    eng = _engine(s)
    eng.add_collection("C", str(docs))
    summary = eng.run_index()
    sent = [t for r in embed_stub.requests if r.path == "/api/embed" for t in _inputs(r.json)]
    assert sent.count(same) == 1 and summary["reused"] >= 3
    assert eng.store.vector_counts()["stub-embed"]["missing"] == 0
    eng.close()


# --------------------------------------------------------------------------- probe only when needed


def test_nothing_to_embed_means_no_probe(tmp_path, embed_stub):
    _write_corpus(tmp_path / "docs", n=2)
    s = _ollama(tmp_path, embed_stub)
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    eng.run_index()
    eng.close()
    n = embed_stub.count()
    eng = _engine(s)
    summary = eng.run_index()
    assert summary["embedError"] is None and summary["embedded"] == 0 and summary["reused"] > 0
    assert embed_stub.count() == n  # not even the probe
    eng.close()


def test_auto_detection_waits_until_something_needs_embedding(tmp_path, embed_stub, closed_port):
    _write_corpus(tmp_path / "docs", n=2)
    s = Settings(
        allowed_roots=ALLOWED_ROOTS,
        db=str(tmp_path / "db" / "index.db"),
        embed_provider="auto",
        embed_url=embed_stub.url,
        embed_model="stub-embed",
        embed_retries=0,
    ).validate()
    eng = _engine(s)
    eng.add_collection("C", str(tmp_path / "docs"))
    first = eng.run_index()
    assert first["embedError"] is None and first["embedded"] > 0
    eng.close()
    n = embed_stub.count()
    eng = _engine(s)
    assert eng.run_index()["embedded"] == 0 and embed_stub.count() == n  # no detection probe
    eng.close()
    # an unreachable server is still reported when something does need embedding
    (tmp_path / "docs" / "new.txt").write_text("fresh text to embed\n", encoding="utf-8")
    down = Settings(
        allowed_roots=ALLOWED_ROOTS,
        db=s.db,
        embed_provider="auto",
        embed_url=f"http://127.0.0.1:{closed_port}",
        embed_model="stub-embed",
        embed_retries=0,
    ).validate()
    eng = _engine(down)
    summary = eng.run_index()
    assert summary["indexed"] == 1 and summary["embedError"]["error"] == "embedding-unavailable"
    eng.close()


@pytest.mark.slow
def test_an_unchanged_index_run_does_not_load_wordllama(tmp_path):
    _write_corpus(tmp_path / "docs", n=2)
    code = (
        "import sys, json\n"
        "from engine.config import Settings\n"
        "from engine.tools.registry import Engine\n"
        f"s = Settings(allowed_roots={ALLOWED_ROOTS!r}, db={str(tmp_path / 'index.db')!r}, embed_provider='local', embed_model='l2_supercat_256').validate()\n"
        "e = Engine(s)\n"
        f"e.add_collection('C', {str(tmp_path / 'docs')!r})\n"
        "r = e.run_index()\n"
        "import engine.embed.local as L\n"
        "print(json.dumps({'embedded': r['embedded'], 'loaded': L._MODEL is not None,"
        " 'wordllama': 'wordllama' in sys.modules, 'onnxruntime': 'onnxruntime' in sys.modules}))\n"
    )
    runs = [
        json.loads(
            subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
            .stdout.strip()
            .splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert runs[0]["embedded"] > 0 and runs[0]["loaded"]
    assert runs[1] == {"embedded": 0, "loaded": False, "wordllama": False, "onnxruntime": False}


def test_check_hook_stops_the_pass_between_batches_keeping_what_was_stored(tmp_path, embed_stub):
    from engine.embed import make_embedder
    from engine.index.embed_pass import embed_pass
    from engine.store.sqlite.store import SqliteStore

    _write_corpus(tmp_path / "docs", n=6)
    s = _ollama(tmp_path, embed_stub, chunk_size=200, chunk_overlap=20, batch=4)
    store = SqliteStore(s.db)
    store.add_collection(Collection("C", str(tmp_path / "docs")))
    Indexer(store, s).run()  # text only
    calls = []

    class Stop(Exception):
        pass

    def check():
        calls.append(1)
        if len(calls) == 3:
            raise Stop

    summary = {"embedded": 0, "reused": 0, "embedError": None}
    with pytest.raises(Stop):
        embed_pass(store, make_embedder(s), 4, summary, lambda e: None, 0.0, check=check, write=lambda fn: fn())
    assert summary["embedded"] == 8  # two batches of 4, stored before the stop
    assert store.vector_counts()["stub-embed"]["vectors"] == 8
    store.close()
