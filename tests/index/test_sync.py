"""Sync you can trust: the dry run's plan is what the next run does, missing files can be
kept, a rename keeps chunks and vectors, and the stat pre-gate reads no unchanged file.

Real parts: files in tmp, a real SQLite index, ``chunknav`` run in-process (``main``) and
as subprocesses. Root reads every file whatever its mode, so the scenario with an
unreadable file runs ``chunknav`` through ``setpriv`` without the capabilities that
override file modes (as tests/store/test_read_only.py does).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import Settings
from engine.faces.cli import main
from engine.index.indexer import Indexer
from engine.store.sqlite.store import SqliteStore
from engine.values import Collection
from tests.fixtures.fixtures_store import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]
_CAPS = "-dac_override,-dac_read_search,-fowner"


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i % 37} lorem ipsum dolor" for i in range(n))


def _tree(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "keep.txt").write_text(_words(300, "keep"), "utf-8")
    (root / "change.txt").write_text(_words(300, "change"), "utf-8")
    (root / "rename.md").write_text("# Moved\n" + _words(400, "moved"), "utf-8")
    (root / "delete.txt").write_text(_words(200, "gone"), "utf-8")
    (root / "locked.txt").write_text(_words(200, "locked"), "utf-8")
    (root / "sub" / "deep.txt").write_text(_words(200, "deep"), "utf-8")
    (root / "skip.bin").write_bytes(b"\x00\x01")


def _reader_prefix(probe_dir: Path) -> list[str]:
    """A command prefix under which file modes bind (root: ``setpriv`` without the
    overriding capabilities); skips when there is none."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv missing: root ignores chmod")
    prefix = [setpriv, f"--inh-caps={_CAPS}", f"--bounding-set={_CAPS}"]
    probe_dir.mkdir(exist_ok=True)
    probe_dir.chmod(0o555)
    try:
        probe = subprocess.run([*prefix, "sh", "-c", f"touch '{probe_dir}/probe'"], capture_output=True)
        if probe.returncode == 0 or (probe_dir / "probe").exists():
            pytest.skip("setpriv could not drop the capabilities that override file modes here")
    finally:
        probe_dir.chmod(0o755)
    return prefix


def _files(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file in ``folder``: size, mtime and sha256."""
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in folder.iterdir()
        if p.is_file()
    }


def _paths(entries: list[dict]) -> set[str]:
    return {e["filePath"] for e in entries}


def test_the_dry_run_plan_is_what_the_next_run_does(tmp_path):
    root, idx = tmp_path / "root", tmp_path / "idx"
    _tree(root)
    idx.mkdir()
    prefix = _reader_prefix(tmp_path / "probe")
    db = str(idx / "i.db")
    env = {
        "PYTHONPATH": str(REPO),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "EMBED_PROVIDER": "none",
        "CHUNKNAV_ALLOWED_ROOTS": ALLOWED_ROOTS,
    }

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "engine", "--db", db, *argv],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=300,
        )

    assert run("collections", "add", "R", str(root)).returncode == 0
    first = run("index", "--json")
    assert first.returncode == 0, first.stderr
    # add, change, rename (a move into a folder), delete, make unreadable
    (root / "new.txt").write_text(_words(250, "fresh"), "utf-8")
    (root / "change.txt").write_text(_words(310, "changed"), "utf-8")
    (root / "moved").mkdir()
    os.replace(root / "rename.md", root / "moved" / "renamed.md")
    (root / "delete.txt").unlink()
    (root / "locked.txt").chmod(0o000)
    try:
        store = SqliteStore(db)
        before = {d.file_path: d for d in store.documents("R")}
        store.close()
        files_before = _files(idx)
        planned = run("index", "--dry-run", "--json")
        assert planned.returncode == 0, planned.stderr
        plan = json.loads(planned.stdout)
        assert _files(idx) == files_before  # nothing in the index folder written or touched
        assert plan["dryRun"] is True
        assert _paths(plan["add"]) == {"new.txt"}
        assert _paths(plan["change"]) == {"change.txt"}
        assert plan["rename"] == [{"collectionPath": "R", "from": "rename.md", "to": "moved/renamed.md"}]
        assert _paths(plan["remove"]) == {"delete.txt"}
        assert _paths(plan["stale"]) == {"locked.txt"} and plan["stale"][0]["code"] == "unreadable"
        assert _paths(plan["unchanged"]) == {"keep.txt", "sub/deep.txt", "moved/renamed.md"}
        assert _paths(plan["skipped"]) == {"skip.bin"}

        done = run("index", "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
    finally:
        (root / "locked.txt").chmod(0o644)
    store = SqliteStore(db)
    after = {d.file_path: d for d in store.documents("R")}
    moved = store.get_document("R", "moved/renamed.md")
    store.close()
    # what the run read = what the plan said it would add or change
    moved_to = {r["to"] for r in plan["rename"]}
    read = {
        fp
        for fp, d in after.items()
        if (fp not in before and fp not in moved_to) or (fp in before and d.indexed_at != before[fp].indexed_at)
    }
    assert read == _paths(plan["add"]) | _paths(plan["change"])
    assert [{k: r[k] for k in ("collectionPath", "from", "to")} for r in summary["renamed"]] == plan["rename"]
    assert _paths(summary["removedFiles"]) == _paths(plan["remove"]) and "delete.txt" not in after
    assert _paths(summary["stale"]) == _paths(plan["stale"]) and "locked.txt" in after
    assert _paths(summary["skippedFiles"]) == _paths(plan["skipped"])
    assert summary["counts"]["unchanged"] == plan["counts"]["unchanged"]
    assert summary["indexed"] == plan["counts"]["add"] + plan["counts"]["change"]
    # the moved document kept its row: read at the old path's time, not again
    assert moved is not None and moved.indexed_at == before["rename.md"].indexed_at
    assert moved.chunk_count == before["rename.md"].chunk_count
    # a second plan after the run: nothing left to do but the unreadable file
    again = json.loads(run("index", "--dry-run", "--json").stdout)
    assert again["counts"]["add"] == again["counts"]["change"] == again["counts"]["remove"] == 0


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(db=str(tmp_path / "i.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS, **kw)


def test_keep_missing_keeps_a_vanished_file_searchable_with_its_mark(tmp_path, monkeypatch, capsys):
    root = tmp_path / "root"
    _tree(root)
    monkeypatch.setenv("CHUNKNAV_DB", str(tmp_path / "i.db"))
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    assert main(["collections", "add", "R", str(root)]) == 0
    assert main(["index", "--json"]) == 0
    (root / "delete.txt").unlink()
    capsys.readouterr()
    assert main(["index", "--json", "--keep-missing"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["missing"] == 1 and summary["removed"] == 0
    assert _paths(summary["missing"]) == {"delete.txt"}
    assert main(["search-chunks", "gone5 lorem", "--scope", "R", "--mode", "keyword"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    gone = [h for h in hits if h["filePath"] == "delete.txt"]
    assert gone and all(h.get("missing") is True for h in gone)
    assert all("missing" not in h for h in hits if h["filePath"] != "delete.txt")
    assert main(["get-chunk", "R", "delete.txt", "0"]) == 0
    chunk = json.loads(capsys.readouterr().out)
    assert chunk["found"] is True and chunk["stale"] is True and chunk["staleReason"].startswith("missing")
    # the plan without --keep-missing says it would go; the setting keeps it
    assert main(["index", "--dry-run", "--json"]) == 0
    assert _paths(json.loads(capsys.readouterr().out)["remove"]) == {"delete.txt"}
    monkeypatch.setenv("CHUNKNAV_KEEP_MISSING", "true")
    assert main(["index", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["keepMissing"] is True and _paths(plan["missing"]) == {"delete.txt"} and not plan["remove"]
    monkeypatch.delenv("CHUNKNAV_KEEP_MISSING")
    assert main(["index", "--json"]) == 0
    assert _paths(json.loads(capsys.readouterr().out)["removedFiles"]) == {"delete.txt"}


def test_a_missing_file_that_comes_back_elsewhere_is_moved_not_read(tmp_path):
    root = tmp_path / "root"
    _tree(root)
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("R", str(root)))
    Indexer(store, settings).run()
    text = (root / "delete.txt").read_bytes()
    (root / "delete.txt").unlink()
    Indexer(store, settings).run(keep_missing=True)
    (root / "back.txt").write_bytes(text)
    s = Indexer(store, settings).run()
    assert s["renamed"][0]["from"] == "delete.txt" and s["renamed"][0]["to"] == "back.txt"
    assert s["indexed"] == 0 and s["chunksWritten"] == 0
    doc = store.get_document("R", "back.txt")
    assert doc is not None and "stale" not in doc.metadata and store.get_document("R", "delete.txt") is None
    store.close()


def test_a_rename_keeps_chunks_and_vectors(tmp_path):
    root = tmp_path / "root"
    _tree(root)
    from engine.service import Engine

    settings = Settings(db=str(tmp_path / "i.db"), embed_model="l2_supercat_256", allowed_roots=ALLOWED_ROOTS)
    eng = Engine(settings)
    try:
        eng.add_collection("R", str(root))
        first = eng.run_index()
        assert first["embedded"] > 0 and not first["embedError"]
        ids = [c.chunk_id for c in eng.store.chunks("R", "rename.md")]
        vectors = eng.store.vector_counts()
        os.replace(root / "rename.md", root / "sub" / "renamed.md")
        s = eng.run_index()
        assert s["counts"]["renamed"] == 1 and s["renamed"][0]["to"] == "sub/renamed.md"
        assert s["indexed"] == 0 and s["chunksWritten"] == 0 and s["embedded"] == 0
        assert [c.chunk_id for c in eng.store.chunks("R", "sub/renamed.md")] == ids
        assert eng.store.chunks("R", "rename.md") == []
        after = eng.store.vector_counts()
        assert {m: v["vectors"] for m, v in after.items()} == {m: v["vectors"] for m, v in vectors.items()}
        assert all(v["stale"] == 0 and v["missing"] == 0 for v in after.values())
        hits = eng.search.search("moved3 lorem", "R", 3, "vector").hits
        assert hits and hits[0].chunk.file_path == "sub/renamed.md"
    finally:
        eng.close()


def test_the_stat_pre_gate_reads_no_unchanged_file(tmp_path):
    root = tmp_path / "root"
    _tree(root)
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("R", str(root)))
    Indexer(store, settings).run()
    s = Indexer(store, settings).run()
    supported = 6
    assert s["counts"]["unchanged"] == supported
    assert s["statGated"] == supported and s.get("bytesHashed", 0) == 0
    # touched: size and mtime move, bytes do not: hashed once, unchanged, its stat recorded
    st = os.stat(root / "keep.txt")
    os.utime(root / "keep.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    s = Indexer(store, settings).run()
    assert s["counts"]["unchanged"] == supported and s["indexed"] == 0
    assert s["statGated"] == supported - 1 and s["bytesHashed"] == st.st_size
    assert Indexer(store, settings).run()["statGated"] == supported
    # without the pre-gate every file is hashed
    off = Indexer(store, _settings(tmp_path, stat_gate=False)).run()
    assert off["statGated"] == 0 and off["counts"]["unchanged"] == supported
    store.close()


def test_coverage_counts_per_collection_and_file_type(tmp_path, monkeypatch, capsys):
    root = tmp_path / "root"
    _tree(root)
    (root / ".hidden.txt").write_text("x", "utf-8")
    monkeypatch.setenv("CHUNKNAV_DB", str(tmp_path / "i.db"))
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    assert main(["collections", "add", "R", str(root)]) == 0
    assert main(["index", "--json"]) == 0
    (root / "delete.txt").unlink()  # missing until the next run
    (root / "later.md").write_text("# Later\nnot indexed yet", "utf-8")
    (root / "change.txt").write_text(_words(333, "edited"), "utf-8")  # stale: moved since indexed
    capsys.readouterr()
    assert main(["coverage", "--json"]) == 0
    cov = json.loads(capsys.readouterr().out)
    rows = {(r["collectionPath"], r["fileType"]): r for r in cov["rows"]}
    txt, md, total = rows[("R", "txt")], rows[("R", "md")], rows[("R", "*")]
    assert (txt["filesSeen"], txt["indexed"], txt["stale"], txt["missing"]) == (5, 3, 1, 1)
    assert txt["skipped"] == {"hidden": 1}
    assert (md["filesSeen"], md["indexed"], md["notIndexed"]) == (2, 1, 1)
    assert rows[("R", "bin")]["skipped"] == {"unsupported-type": 1}
    assert total["filesSeen"] == 8 and total["chunks"] == txt["chunks"] + md["chunks"] > 0
    assert total["skipped"] == {"hidden": 1, "unsupported-type": 1}
    assert main(["coverage", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("collectionPath,fileType,filesSeen") and len(lines) == 1 + len(cov["rows"])
    assert main(["coverage"]) == 0
    assert "notIndexed" not in capsys.readouterr().out  # the human table
