"""Keyword first, vectors after, and a model change that never leaves search without vectors.

On real files, a real SQLite index and the real local models: every chunk is
found by keyword search before the embed pass starts; the embed pass reports
each batch with its rate and time left; after ``EMBED_MODEL`` changes, the
old model's vectors keep serving (and ``index_status`` says so) until the new
model covers the collection, nothing is extracted again, and the switch
happens at the search after the last vector is committed.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from engine.config import Settings
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

WORDS = ["harbour", "glacier", "orchard", "lantern", "meadow", "canyon", "violin", "compass"]


def _corpus(root: Path) -> None:
    root.mkdir(parents=True)
    for i, w in enumerate(WORDS):
        (root / f"note{i}.txt").write_text(
            f"Note {i} about the {w}. The {w} was described in detail by visitor number {i}.\n", encoding="utf-8"
        )


def _settings(tmp_path: Path, model: str, batch: int = 2) -> Settings:
    return Settings(
        db=str(tmp_path / "index.db"),
        embed_provider="local",
        embed_model=model,
        embed_batch=batch,
        allowed_roots=ALLOWED_ROOTS,
    ).validate()


def test_text_is_searchable_before_vectors_and_the_embed_pass_reports_each_batch(tmp_path):
    _corpus(tmp_path / "notes")
    settings = _settings(tmp_path, "l2_supercat_256")
    eng = Engine(settings)
    eng.add_collection("Notes", str(tmp_path / "notes"))
    found_during_embed: list[int] = []
    events: list[dict] = []

    def progress(e: dict) -> None:
        if e["phase"] != "embed":
            return
        events.append(e)
        if len(events) == 1:  # another reader, as an agent would be, while vectors are written
            other = Engine(settings)
            try:
                out = call_tool(other, "search_chunks", {"query": "glacier", "scope": "Notes", "mode": "keyword"})
                found_during_embed.append(out["count"])
            finally:
                other.close()

    summary = eng.run_index(on_progress=progress)
    eng.close()
    assert summary["status"] == "finished" and summary["embedded"] == len(WORDS)
    assert found_during_embed == [1]
    assert len(events) >= len(WORDS) // 2  # one event per batch of 2, not one per 1000 chunks
    assert [e["done"] for e in events] == sorted(e["done"] for e in events)
    last = events[-1]
    assert last["done"] == last["total"] == len(WORDS) and last["model"] == "l2_supercat_256"
    assert last["chunksPerS"] > 0 and last["leftS"] == 0


@pytest.mark.minilm
def test_old_vectors_serve_until_the_new_model_covers_the_collection(tmp_path, monkeypatch):
    from engine.search.searcher import ContentChunkSearch

    monkeypatch.setattr(ContentChunkSearch, "COVERAGE_RECHECK_S", 0.0)  # ask the store at every search
    _corpus(tmp_path / "notes")
    old = Engine(_settings(tmp_path, "l2_supercat_256"))
    old.add_collection("Notes", str(tmp_path / "notes"))
    assert old.run_index()["embedded"] == len(WORDS)
    old.close()

    eng = Engine(_settings(tmp_path, "all-MiniLM-L6-v2"))
    cancel = threading.Event()
    summary = eng.run_index(on_progress=lambda e: e["phase"] == "embed" and cancel.set(), cancel=cancel)
    assert summary["status"] == "cancelled"
    assert summary["indexed"] == 0 and summary["unchanged"] == len(WORDS)  # the model change re-extracts nothing
    assert 0 < summary["embedded"] < len(WORDS)

    query = {"query": "ice field in the mountains", "scope": "Notes", "mode": "auto"}
    out = call_tool(eng, "search_chunks", query)
    assert out["mode"] == "hybrid" and out["model"] == "l2_supercat_256"
    assert "all-MiniLM-L6-v2" in out["message"] and "l2_supercat_256" in out["message"]
    status = call_tool(eng, "index_status", {"probe": False})
    rows = {v["model"]: v for v in status["vectors"]}
    assert rows["l2_supercat_256"].get("serving") is True and rows["l2_supercat_256"]["missing"] == 0
    assert rows["all-MiniLM-L6-v2"]["missing"] == len(WORDS) - summary["embedded"]
    assert not rows["all-MiniLM-L6-v2"].get("serving")

    summary = eng.run_index()  # the rest
    assert summary["status"] == "finished" and summary["indexed"] == 0
    out = call_tool(eng, "search_chunks", query)
    assert out["model"] == "all-MiniLM-L6-v2" and "l2_supercat_256" not in out.get("message", "")
    assert out["hits"][0]["filePath"] == "note1.txt"  # glacier
    status = call_tool(eng, "index_status", {"probe": False})
    rows = {v["model"]: v for v in status["vectors"]}
    assert rows["all-MiniLM-L6-v2"].get("serving") is True and rows["all-MiniLM-L6-v2"]["missing"] == 0
    assert not rows["l2_supercat_256"].get("serving")
    eng.close()
