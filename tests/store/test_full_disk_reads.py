"""A complete SQLite index on a full disk is searched and read, and nothing is written beside it.

Real parts: an index (keyword and local vectors) built on a small tmpfs
(``tests/fixtures/small_disk.py``; skipped with the reason when it cannot be mounted) and
closed, its vector cache files removed (a run that could not write them), then every free
byte taken. ``status``, keyword/vector/hybrid ``search-chunks`` and ``get-chunk`` run as
subprocesses; in-process, a store opened for writing before the disk filled answers a
vector search without its cache files and writes none.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.faces.cli import main
from engine.store.sqlite.store import SqliteStore
from tests.fixtures.fixtures_store import one_chunk_files
from tests.fixtures.small_disk import fill, listing, small_disk

REPO = Path(__file__).resolve().parents[2]


def _cache_files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if ".l2_supercat_256." in p.name or ".m." in p.name]


@pytest.fixture
def full_disk_index(tmp_path, monkeypatch):
    """``(db, run)``: an index of two files on a full tmpfs, vector cache files removed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "anvils.md").write_text("# Anvils\n" + "Anvils are heavy iron blocks for blacksmiths. " * 15, "utf-8")
    (docs / "rockets.md").write_text("# Rockets\n" + "Rockets carry satellites into orbit on fuel. " * 15, "utf-8")
    with small_disk(tmp_path / "disk", "8m") as disk:
        db = str(disk / "i.db")
        monkeypatch.setenv("EMBED_PROVIDER", "local")
        assert main(["--db", db, "collections", "add", "C", str(docs), "--allow-any-root"]) == 0
        assert main(["--db", db, "index"]) == 0
        assert not Path(db + "-wal").exists()  # closed: the log was checkpointed and removed
        cache = _cache_files(disk)
        assert cache
        for p in cache:
            p.unlink()
        fill(disk)
        env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "EMBED_PROVIDER": "local"}

        def run(*argv: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "-m", "engine", "--db", db, *argv],
                capture_output=True,
                text=True,
                cwd=REPO,
                env=env,
                timeout=120,
            )

        yield db, run


def test_a_full_disk_index_is_searched_and_read_and_nothing_is_written(full_disk_index):
    db, run = full_disk_index
    folder = Path(db).parent
    before = listing(folder)
    status = run("status")
    assert status.returncode == 0, status.stderr
    assert "documents 2, chunks 2" in status.stdout and "no space left" in status.stdout, status.stdout
    envelope = json.loads(run("status", "--json").stdout)
    assert envelope["readOnly"] is True and envelope["documents"] == 2 and "error" not in envelope
    for mode in ("keyword", "vector", "hybrid"):
        r = run("search-chunks", "heavy iron anvils", "--scope", "C", "--mode", mode)
        assert r.returncode == 0, (mode, r.stderr)
        assert r.stderr == "", (mode, r.stderr)
        answer = json.loads(r.stdout)
        assert answer["searched"] is True and answer["hits"][0]["filePath"] == "anvils.md", (mode, answer)
    chunk = run("get-chunk", "C", "rockets.md", "0")
    assert chunk.returncode == 0 and json.loads(chunk.stdout)["text"].startswith("# Rockets")
    from engine.config import Settings
    from engine.service import Engine
    from engine.tools.registry import call_tool

    engine = Engine(Settings(db=db, embed_provider="local"))  # the registry every face (MCP too) calls
    try:
        st = call_tool(engine, "index_status", {"probe": False})
        assert st["readOnly"] is True and "no space left" in st["readOnlyReason"]
        hits = call_tool(engine, "search_chunks", {"query": "satellites in orbit", "scope": "C", "mode": "hybrid"})
        assert hits["hits"][0]["filePath"] == "rockets.md"
    finally:
        engine.close()
    assert listing(folder) == before  # no -wal/-shm, lock or cache file made or touched
    index = run("index")  # a run on the full disk is refused in one classified line
    assert index.returncode == 1 and index.stdout == "" and index.stderr.count("\n") == 1, index.stderr
    assert "disk" in index.stderr and "full" in index.stderr and "Traceback" not in index.stderr
    as_json = run("index", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["error"] == "disk-full"
    assert listing(folder) == before


def test_a_store_opened_before_the_disk_filled_searches_without_writing_its_cache(tmp_path, caplog):
    with small_disk(tmp_path / "disk", "32m") as disk:
        db = str(disk / "v.db")
        s, ids, vecs = one_chunk_files(db, str(tmp_path))
        s.add_vectors("m", ids, vecs)
        s.close()
        writer = SqliteStore(db)  # writable, its -wal/-shm made while there was room
        try:
            assert not writer.read_only
            for p in _cache_files(disk):
                p.unlink()
            fill(disk)
            before = listing(disk)
            with caplog.at_level(logging.WARNING):
                hits = writer.search_vectors("m", vecs[3], ["C"], 5)
            assert hits[0].chunk.chunk_id == ids[3]
            assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
            assert listing(disk) == before  # the cache stayed in memory
        finally:
            writer.close()
