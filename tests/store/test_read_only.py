"""A complete SQLite index in a directory the reader cannot write (a shared snapshot, a
read-only mount) is searched and read, and nothing is written beside it.

Real parts: an index (keyword and local vectors) built in tmp, closed (its write-ahead
log checkpointed), then the directory and its files made read-only with ``chmod a-w``.
Root ignores file modes, so as root every reader runs through ``setpriv`` without the
capabilities that override them; ``status``, ``search-chunks`` (keyword, vector,
hybrid), ``get-chunk``, ``read-document``, the MCP tools and an index run are
subprocesses. In-process, the vector cache of a read-only store is compared with the
writable store's answers when its files are absent or behind.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.errors import StoreUnavailableError
from engine.faces.cli import main
from engine.store.sqlite import connections
from engine.store.sqlite.store import SqliteStore
from engine.values import Collection
from tests.fixtures.fixtures_store import one_chunk_files

REPO = Path(__file__).resolve().parents[2]
#: The capabilities that let root write where file modes say no (``setpriv`` drops them).
_CAPS = "-dac_override,-dac_read_search,-fowner"


def _reader_prefix(probe_dir: Path) -> list[str]:
    """The command prefix that runs a process which file modes bind: nothing for a user
    other than root; for root ``setpriv`` without the overriding capabilities. Skips when
    there is no such way (no ``setpriv``, or it cannot drop them here)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv missing: root ignores chmod, so a read-only reader cannot be run")
    prefix = [setpriv, f"--inh-caps={_CAPS}", f"--bounding-set={_CAPS}"]
    probe = subprocess.run([*prefix, "sh", "-c", f"touch '{probe_dir}/probe'"], capture_output=True)
    if probe.returncode == 0 or (probe_dir / "probe").exists():
        pytest.skip("setpriv could not drop the capabilities that override file modes here")
    return prefix


def _listing(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every name in ``folder`` with its size, mtime and mode."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_mode) for p in folder.iterdir()}


def _make_read_only(folder: Path) -> None:
    for p in (*folder.iterdir(), folder):
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.fixture
def read_only_index(tmp_path, monkeypatch):
    """``(db path, reader prefix, run)``: an index of two files (keyword + local vectors) in a
    read-only directory; ``run(*argv)`` runs ``python -m engine --db DB *argv`` as the reader."""
    docs, folder = tmp_path / "docs", tmp_path / "idx"
    docs.mkdir()
    folder.mkdir()
    (docs / "anvils.md").write_text("# Anvils\n" + "Anvils are heavy iron blocks for blacksmiths. " * 15, "utf-8")
    (docs / "rockets.md").write_text("# Rockets\n" + "Rockets carry satellites into orbit on fuel. " * 15, "utf-8")
    db = str(folder / "i.db")
    monkeypatch.setenv("EMBED_PROVIDER", "local")
    assert main(["--db", db, "collections", "add", "C", str(docs), "--allow-any-root"]) == 0
    assert main(["--db", db, "index"]) == 0
    assert not Path(db + "-wal").exists()  # closed: the log was checkpointed and removed
    _make_read_only(folder)
    prefix = _reader_prefix(folder)
    env = {
        "PYTHONPATH": str(REPO),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "EMBED_PROVIDER": "local",
    }

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "engine", "--db", db, *argv],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )

    yield db, prefix, env, run
    folder.chmod(0o755)


def test_a_read_only_index_is_searched_and_read_and_nothing_is_written(read_only_index):
    db, _, _, run = read_only_index
    folder = Path(db).parent
    before = _listing(folder)
    status = run("status")
    assert status.returncode == 0, status.stderr
    assert "documents 2, chunks 2" in status.stdout and "read-only" in status.stdout
    envelope = json.loads(run("status", "--json").stdout)
    assert envelope["readOnly"] is True and envelope["documents"] == 2 and "error" not in envelope
    for mode in ("keyword", "vector", "hybrid"):
        r = run("search-chunks", "heavy iron anvils", "--scope", "C", "--mode", mode)
        assert r.returncode == 0, (mode, r.stderr)
        answer = json.loads(r.stdout)
        assert answer["searched"] is True and answer["mode"] == mode, answer
        assert answer["hits"][0]["filePath"] == "anvils.md", (mode, answer["hits"])
    chunk = run("get-chunk", "C", "rockets.md", "0")
    assert chunk.returncode == 0 and json.loads(chunk.stdout)["text"].startswith("# Rockets")
    text = run("read-document", "C", "anvils.md")
    assert text.returncode == 0 and "blacksmiths" in json.loads(text.stdout)["text"]
    assert "Traceback" not in status.stderr + chunk.stderr + text.stderr
    assert _listing(folder) == before  # no lock, journal, -wal/-shm or cache file made or touched


def test_vector_search_without_the_cache_files_builds_them_in_memory(read_only_index):
    db, _, _, run = read_only_index
    folder = Path(db).parent
    folder.chmod(0o755)
    cache = [p for p in folder.iterdir() if ".l2_supercat_256." in p.name]
    assert cache  # the index run left the matrix files
    for p in cache:
        p.unlink()
    _make_read_only(folder)
    before = _listing(folder)
    r = run("search-chunks", "satellites in orbit", "--scope", "C", "--mode", "vector")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"][0]["filePath"] == "rockets.md"
    assert _listing(folder) == before


def test_an_index_run_on_a_read_only_index_fails_in_one_line(read_only_index):
    db, _, _, run = read_only_index
    before = _listing(Path(db).parent)
    r = run("index")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "read-only" in r.stderr and "Traceback" not in r.stderr, r.stderr
    as_json = run("index", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["error"] == "index-unavailable"
    added = run("collections", "add", "D", str(Path(db).parent), "--allow-any-root")
    assert added.returncode != 0 and "read-only" in added.stderr and "Traceback" not in added.stderr
    assert _listing(Path(db).parent) == before


def test_the_mcp_tools_answer_from_a_read_only_index(read_only_index):
    db, prefix, env, _ = read_only_index
    before = _listing(Path(db).parent)
    p = subprocess.Popen(
        [*prefix, sys.executable, "-m", "engine", "--db", db, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )

    def send(message: dict) -> dict:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(json.dumps(message) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    def tool(i: int, name: str, arguments: dict) -> dict:
        answer = send(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )
        result = answer["result"]
        assert not result.get("isError"), result
        return json.loads(result["content"][0]["text"])

    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "result" in send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert p.stdin is not None
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        assert tool(2, "index_status", {})["readOnly"] is True
        for i, mode in enumerate(("keyword", "vector", "hybrid"), start=3):
            hits = tool(i, "search_chunks", {"query": "heavy iron anvils", "scope": "C", "mode": mode})["hits"]
            assert hits[0]["filePath"] == "anvils.md", mode
        assert tool(7, "get_chunk", {"collectionPath": "C", "filePath": "anvils.md", "chunkIndex": 0})["found"]
        assert "orbit" in tool(8, "read_document", {"collectionPath": "C", "filePath": "rockets.md"})["text"]
    finally:
        assert p.stdin is not None
        p.stdin.close()
        assert p.wait(30) == 0
        for stream in (p.stdout, p.stderr):
            assert stream is not None
            stream.close()
    assert _listing(Path(db).parent) == before


def test_a_write_ahead_log_left_with_its_shm_is_read(tmp_path):
    """A writer that died left ``-wal`` and ``-shm``: the read-only reader sees its commits;
    without the ``-shm`` the log cannot be read there, said in one line."""
    folder = tmp_path / "idx"
    folder.mkdir()
    db = str(folder / "i.db")
    SqliteStore(db).close()
    writer = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute(\"INSERT INTO collections VALUES ('Late', '/srv/late', NULL)\")\n"
        "os._exit(0)\n"
    )
    env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "EMBED_PROVIDER": "none"}
    subprocess.run([sys.executable, "-c", writer, db], check=True, env=env, timeout=60)
    assert Path(db + "-wal").stat().st_size > 0 and Path(db + "-shm").exists()
    _make_read_only(folder)
    prefix = _reader_prefix(folder)

    def collections() -> subprocess.CompletedProcess:
        argv = [*prefix, sys.executable, "-m", "engine", "--db", db, "collections", "list"]
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=60)

    try:
        before = _listing(folder)
        r = collections()
        assert r.returncode == 0, r.stderr
        assert [c["collectionPath"] for c in json.loads(r.stdout)] == ["Late"]
        assert _listing(folder) == before
        folder.chmod(0o755)
        Path(db + "-shm").unlink()
        _make_read_only(folder)
        r = collections()
        assert r.returncode != 0 and r.stderr.count("\n") == 1, r.stderr
        assert "write-ahead log" in r.stderr and "Traceback" not in r.stderr, r.stderr
    finally:
        folder.chmod(0o755)


# ------------------------------------------------------------ in-process: the vector cache
def _vector_store(tmp_path: Path) -> tuple[str, np.ndarray, dict[str, bytes]]:
    """A store of 40 one-chunk files with vectors of model ``m``, closed; with the bytes of
    its matrix files as they were when they covered the first 25 vectors."""
    db = str(tmp_path / "v.db")
    s, ids, vecs = one_chunk_files(db, str(tmp_path))
    s.add_vectors("m", ids[:25], vecs[:25])
    s.save_run({})  # readies the matrix files: they cover the first 25 rows
    early = {p.name: p.read_bytes() for p in tmp_path.iterdir() if ".m." in p.name and not p.name.endswith(".lock")}
    s.add_vectors("m", ids[25:], vecs[25:])
    s.close()
    return db, vecs, early


@pytest.mark.parametrize("files", ["behind", "absent"])
def test_a_read_only_vector_cache_writes_nothing_and_answers_the_same(tmp_path, monkeypatch, files):
    db, vecs, early = _vector_store(tmp_path)

    def answers(store: SqliteStore) -> list[list[tuple[str, float]]]:
        return [
            [(h.chunk.chunk_id, round(h.score, 5)) for h in store.search_vectors("m", q, ["C"], 10)] for q in vecs[::7]
        ]

    writable = SqliteStore(db)
    expected = answers(writable)
    writable.close()
    for p in tmp_path.iterdir():
        if ".m." in p.name:
            p.unlink()
    if files == "behind":  # valid files of this database that lack the last 15 vectors
        for name, data in early.items():
            (tmp_path / name).write_bytes(data)
        assert json.loads((tmp_path / "v.db.m.json").read_text())["rows"] == 25
    monkeypatch.setattr(connections, "read_only_reason", lambda path: "a test says so")
    before = _listing(tmp_path)
    ro = SqliteStore(db)
    try:
        assert ro.read_only
        assert answers(ro) == expected
        assert ro.repair_orphans() == 0
        with pytest.raises(StoreUnavailableError, match="read-only"):
            ro.add_collection(Collection("D", str(tmp_path), None))
    finally:
        ro.close()
    # the reader's directory is writable here, so SQLite may keep its -wal/-shm; nothing else
    after = _listing(tmp_path)
    assert {k: v for k, v in after.items() if not k.endswith(("-wal", "-shm"))} == before
