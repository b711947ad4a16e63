"""Indexing never loses data and never skips a file silently.

Every hostile case is built for real (tests/fixtures/hostile.py): permissions dropped
with setpriv (we run as root) or a plain non-root user, names that are not
UTF-8, FIFOs, sockets, symlink loops, symlinks leaving the root, hidden
entries, real .docx bombs, a file rewritten during extraction, a remove
during a run, a held writer lock, Ctrl-C/SIGTERM and kill -9 of a CLI run.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import engine.extract
from engine.config import Settings
from engine.errors import ERROR_CODES, IndexBusyError, TooLargeError, ExtractError, REASON_CODES
from engine.extract.limits import check_docx
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.index.runs import run_outcome
from engine.service import Engine
from engine.store.sqlite.store import SqliteStore
from engine.tools.registry import call_tool
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.hostile import DROP_CAPS, build_hostile_folder, docx_bomb, restore_permissions

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
LIMITS = {"CHUNKNAV_MAX_FILE_BYTES": str(1 << 20), "CHUNKNAV_MAX_DOCX_PART_BYTES": str(1 << 20)}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.update(EMBED_PROVIDER="none", PYTHONPATH=str(REPO), CHUNKNAV_ALLOWED_ROOTS=ALLOWED_ROOTS, **extra)
    return env


def _cli(db: Path, *args: str, drop_caps: bool = False, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    cmd = (DROP_CAPS if drop_caps else []) + [sys.executable, "-m", "engine", "--db", str(db), *args]
    return subprocess.run(cmd, cwd=REPO, env=env or _env(), capture_output=True, text=True, **kw)


@pytest.fixture
def tree(tmp_path):
    yield tmp_path
    restore_permissions(tmp_path)


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS, **kw).validate()


# -- the folder of 60+ hostile files ------------------------------------------------------
def test_hostile_folder_every_healthy_file_indexed_every_hostile_one_has_a_reason(tree):
    root = tree / "root"
    healthy, hostile = build_hostile_folder(root)
    assert len(hostile) >= 60
    db = tree / "index.db"
    assert _cli(db, "collections", "add", "H", str(root)).returncode == 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = _cli(db, "index", "--json", drop_caps=True, env=_env(**LIMITS))
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"hostile folder run: peak RSS of the CLI child <= {peak_mib:.0f} MiB (before: {before / 1024:.0f})")
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1  # corrupt and encrypted files failed: README says exit 1
    summary = json.loads(r.stdout)
    assert summary["status"] == "finished"
    c = summary["counts"]
    assert c["indexed"] + c["empty"] + c["unchanged"] + c["failed"] + c["skipped"] == summary["filesSeen"]
    got: dict[str, str] = {}
    for f in summary["failed"] + summary["skippedFiles"]:
        assert f["code"] in REASON_CODES and f["reason"], f
        key = f["filePath"] + ("#bytes" if f["code"] == "bad-file-name" else "")
        assert key not in got, key
        got[key] = f["code"]
    for f in summary["empty"]:
        got[f["filePath"]] = "empty"
    store = SqliteStore(str(db))
    try:
        docs = {d.file_path: d for d in store.documents("H")}
        for fp in healthy:
            assert docs[fp].status == "indexed" and store.chunk_count("H", fp) > 0, fp
        for fp, want in hostile.items():
            if want == "indexed":
                assert docs[fp].status == "indexed" and store.chunk_count("H", fp) > 0, fp
            else:
                assert got.get(fp) == want, (fp, got.get(fp), want)
        assert set(got) <= set(hostile), set(got) - set(hostile)
        # identical bytes, different suffixes: read as a PDF, refused as text
        pdf_text = store.document_text("H", "ok/minimal.pdf")
        assert "%PDF" not in pdf_text and docs["ok/minimal.pdf"].file_type == "pdf"
        assert not store.document_text("H", "ok/minimal-pdf-bytes.txt")
        assert store.search_keyword("zqxoutsidezq", None, 5) == []
    finally:
        store.close()
    # status counts every class and names the last run's outcome
    st = _cli(db, "status")
    assert st.returncode == 0 and "last run: finished" in st.stdout and "51 skipped" in st.stdout, st.stdout


# -- an unreadable path never deletes indexed data ---------------------------------------------
def test_unreadable_folder_and_file_keep_their_documents_stale_then_recover(tree):
    root = tree / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("alpha words in a folder that will close", "utf-8")
    (root / "sub" / "b.txt").write_text("beta words in a folder that will close", "utf-8")
    (root / "c.txt").write_text("gamma words in a file that will close", "utf-8")
    (root / "d.txt").write_text("delta words in a file that will be deleted", "utf-8")
    (root / "half").mkdir()
    (root / "half" / "e.txt").write_text("epsilon words, folder readable but not searchable", "utf-8")
    db = tree / "index.db"
    _cli(db, "collections", "add", "C", str(root))
    assert _cli(db, "index").returncode == 0
    (root / "sub").chmod(0)
    (root / "c.txt").chmod(0)
    (root / "half").chmod(0o644)
    (root / "d.txt").unlink()
    r = _cli(db, "index", "--json", drop_caps=True)
    assert "Traceback" not in r.stderr, r.stderr
    summary = json.loads(r.stdout)
    assert r.returncode == 0 and summary["status"] == "finished"
    stale = {f["filePath"]: f["code"] for f in summary["stale"]}
    assert stale == {
        "sub/a.txt": "unreadable",
        "sub/b.txt": "unreadable",
        "c.txt": "unreadable",
        "half/e.txt": "unreadable",
    }
    assert summary["removed"] == 1  # only the file that is really gone
    # every entry ends in exactly one class: a kept document is stale, not also skipped
    skipped = {f["filePath"] for f in summary["skippedFiles"]}
    assert not skipped & set(stale), skipped & set(stale)
    c = summary["counts"]
    assert c["skipped"] == len(skipped) and c["stale"] == len(stale)
    under_skipped_folder = {fp for fp in stale if any(fp.startswith(d + "/") for d in skipped)}
    assert under_skipped_folder == {"sub/a.txt", "sub/b.txt"}  # not walk entries: their folder is
    assert (
        c["indexed"] + c["empty"] + c["unchanged"] + c["failed"] + c["skipped"] + c["stale"] - len(under_skipped_folder)
    ) == summary["filesSeen"]
    store = SqliteStore(str(db))
    try:
        for fp in stale:
            d = store.get_document("C", fp)
            assert d.status == "indexed" and store.chunk_count("C", fp) == 1, fp
            assert d.metadata["stale"]["code"] == "unreadable"
        assert store.get_document("C", "d.txt") is None
        assert store.search_keyword("alpha", ["C"], 5)
    finally:
        store.close()
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert {f["filePath"] for f in st["failures"] if f["status"] == "stale"} == set(stale)
    # get_chunk says so too: a chmod 000 file keeps its size and mtime, only the run's mark tells
    got = json.loads(_cli(db, "get-chunk", "C", "c.txt", "0", drop_caps=True).stdout)
    assert got["found"] and got["stale"] is True and got["staleReason"].startswith("unreadable: "), got
    restore_permissions(tree)
    r = _cli(db, "index", "--json", drop_caps=True)
    summary = json.loads(r.stdout)
    assert summary["stale"] == [] and summary["counts"]["unchanged"] == 4
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert not [f for f in st["failures"] if f["status"] == "stale"]
    got = json.loads(_cli(db, "get-chunk", "C", "c.txt", "0", drop_caps=True).stdout)
    assert got["found"] and "stale" not in got and "staleReason" not in got, got  # read again: fresh


def test_a_missing_root_keeps_every_document(tmp_path):
    root = tmp_path / "mount"
    root.mkdir()
    (root / "a.txt").write_text("words on a share that goes away", "utf-8")
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("M", str(root)))
    Indexer(store, settings).run()
    shutil.rmtree(root)
    summary = Indexer(store, settings).run()
    assert summary["rootErrors"][0]["code"] == "root-missing" and summary["removed"] == 0
    assert summary["failed"] == [] and [f["filePath"] for f in summary["stale"]] == ["a.txt"]
    assert store.chunk_count("M", "a.txt") == 1
    store.close()


def test_stale_marks_of_a_vanished_root_touch_only_the_document_rows(store, tmp_path):
    """A root that vanished marks every document stale without rewriting its text and chunks
    (``set_document_metadata``: one row each; a rewrite cost as much as indexing again), on
    SQLite and Postgres; the root back clears the marks the same way."""
    root = tmp_path / "share"
    root.mkdir()
    for i in range(3):
        (root / f"f{i}.txt").write_text(f"file {i} zqshare " + "words " * 400, "utf-8")
    settings = _settings(tmp_path)
    store.add_collection(Collection("S", str(root)))
    Indexer(store, settings).run()

    def rows() -> dict:
        if hasattr(store, "path"):  # SQLite: the rowids too (a rewrite gives new ones)
            with sqlite3.connect(store.path) as raw:
                return {
                    "rowids": raw.execute("SELECT group_concat(rowid) FROM chunks").fetchone()[0],
                    "gen": raw.execute("SELECT value FROM meta WHERE key = 'chunks_gen'").fetchone()[0],
                }
        return {
            fp: [(c.chunk_id, c.chunk_text) for c in store.chunks("S", fp)] for fp in ("f0.txt", "f1.txt", "f2.txt")
        }

    before = rows()
    root.rename(tmp_path / "share-away")
    summary = Indexer(store, settings).run()
    assert {f["filePath"] for f in summary["stale"]} == {"f0.txt", "f1.txt", "f2.txt"}
    assert all(
        store.get_document("S", fp).metadata["stale"]["code"] == "root-missing" for fp in ("f0.txt", "f1.txt", "f2.txt")
    )
    assert rows() == before
    assert len(store.search_keyword("zqshare", ["S"], 5)) == 3  # still searchable
    (tmp_path / "share-away").rename(root)
    summary = Indexer(store, settings).run()
    assert summary["stale"] == [] and summary["counts"]["unchanged"] == 3
    assert not any((store.get_document("S", f"f{i}.txt").metadata or {}).get("stale") for i in range(3))
    assert rows() == before


@pytest.mark.parametrize("how", ["vanished", "not-a-folder", "unreadable"])
def test_a_root_that_cannot_be_listed_lists_every_document_stale_and_status_says_which_and_why(tree, how):
    """The documents of a vanished or unreadable root are stale with the root's reason;
    ``status`` (human and --json) names the collection and the reason; the next run recovers."""
    root = tree / "share"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("heron words on a share that goes away", "utf-8")
    (root / "sub" / "b.txt").write_text("egret words in a folder of that share", "utf-8")
    other = tree / "other"
    other.mkdir()
    (other / "c.txt").write_text("a collection that stays readable", "utf-8")
    db = tree / "index.db"
    assert _cli(db, "collections", "add", "V", str(root)).returncode == 0
    assert _cli(db, "collections", "add", "Keep", str(other)).returncode == 0
    assert _cli(db, "index").returncode == 0
    moved = tree / "share-moved"
    if how == "vanished":
        root.rename(moved)
    elif how == "not-a-folder":
        root.rename(moved)
        root.write_text("a file where the folder was", "utf-8")
    else:
        root.chmod(0)
    want = "unreadable" if how == "unreadable" else "root-missing"
    r = _cli(db, "index", "--json", drop_caps=True)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1  # something the operator must look at
    summary = json.loads(r.stdout)
    assert summary["status"] == "finished" and summary["failed"] == [] and summary["removed"] == 0
    assert [(e["collectionPath"], e["root"], e["code"]) for e in summary["rootErrors"]] == [("V", str(root), want)]
    assert "2 documents kept" in summary["rootErrors"][0]["reason"]
    stale = {f["filePath"]: f for f in summary["stale"]}
    assert set(stale) == {"a.txt", "sub/b.txt"}
    assert {(f["collectionPath"], f["code"]) for f in stale.values()} == {("V", want)}
    assert all(str(root) in f["reason"] and "cannot be listed" in f["reason"] for f in stale.values())
    assert summary["counts"]["stale"] == 2 and summary["counts"]["failed"] == 0
    assert summary["counts"]["unchanged"] == 1  # the other collection
    # the chunks are kept, searchable, and get_chunk says stale
    hits = json.loads(_cli(db, "search-chunks", "heron", "--scope", "V", "--mode", "keyword").stdout)
    assert hits["count"] == 1
    chunk = json.loads(_cli(db, "get-chunk", "V", "a.txt", "0", drop_caps=True).stdout)
    assert chunk["found"] and chunk["stale"] is True
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert {(f["collectionPath"], f["filePath"], f["status"]) for f in st["failures"]} == {
        ("V", "a.txt", "stale"),
        ("V", "sub/b.txt", "stale"),
    }
    assert all(f["reason"].startswith(f"{want}: collection root {root}") for f in st["failures"])
    assert st["lastRun"]["rootErrors"][0]["code"] == want
    human = _cli(db, "status")
    assert human.returncode == 0, human.stdout
    assert f"attention: collection V: {want}: collection root {root} cannot be listed" in human.stdout
    assert f"({want} at the last run)" in next(ln for ln in human.stdout.splitlines() if ln.strip().startswith("V "))
    assert "finished with failures" in human.stdout and "1 collection root not listed" in human.stdout
    assert f"stale   V/a.txt: {want}:" in human.stdout
    out = _cli(db, "index", drop_caps=True)
    assert out.returncode == 1 and "1 kept stale" not in out.stdout and "2 kept stale" in out.stdout
    assert "0 removed, 1 collection root not listed" in out.stdout.splitlines()[0]
    assert f"  root    V <- {root}: {want}: collection root {root} cannot be listed" in out.stdout
    # a second run changes nothing; the root back: every document is current again
    again = json.loads(_cli(db, "index", "--json", drop_caps=True).stdout)
    assert {f["filePath"] for f in again["stale"]} == {"a.txt", "sub/b.txt"}
    if how == "unreadable":
        root.chmod(0o755)
    else:
        if root.is_file():
            root.unlink()
        moved.rename(root)
    back = _cli(db, "index", "--json", drop_caps=True)
    summary = json.loads(back.stdout)
    assert back.returncode == 0 and summary["rootErrors"] == [] and summary["stale"] == []
    assert summary["counts"]["unchanged"] == 3
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert st["failures"] == []


@pytest.mark.parametrize("closed", [False, True])
def test_a_file_replaced_by_a_folder_of_the_same_name_is_removed(tree, closed):
    """A folder at a document's path means its file is gone: the document goes (it is not
    kept stale as "the file exists but the walk did not reach it"); the folder's own files
    are indexed, or, for a folder that cannot be entered, it is skipped."""
    root = tree / "gate"
    root.mkdir()
    (root / "b.txt").write_text("file becomes dir zqfolded", "utf-8")
    (root / "c.txt").write_text("a file that stays", "utf-8")
    db = tree / "index.db"
    _cli(db, "collections", "add", "G", str(root))
    assert _cli(db, "index").returncode == 0
    (root / "b.txt").unlink()
    (root / "b.txt").mkdir()
    (root / "b.txt" / "inner.txt").write_text("inner words", "utf-8")
    if closed:
        (root / "b.txt").chmod(0)
    r = _cli(db, "index", "--json", drop_caps=True)
    assert "Traceback" not in r.stderr, r.stderr
    summary = json.loads(r.stdout)
    assert summary["removed"] == 1 and summary["stale"] == [], summary["stale"]
    skipped = {f["filePath"]: f["code"] for f in summary["skippedFiles"]}
    assert skipped == ({"b.txt": "unreadable"} if closed else {})
    assert summary["indexed"] == (0 if closed else 1)
    again = json.loads(_cli(db, "index", "--json", drop_caps=True).stdout)
    assert again["removed"] == 0 and again["stale"] == []
    hits = json.loads(_cli(db, "search-chunks", "zqfolded", "--scope", "G", "--mode", "keyword").stdout)
    assert hits["count"] == 0
    chunk = json.loads(_cli(db, "get-chunk", "G", "b.txt", "0").stdout)
    assert chunk["found"] is False
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert not [f for f in st["failures"] if f["filePath"] == "b.txt"]
    docs = {d["filePath"] for d in json.loads(_cli(db, "documents", "G").stdout)["documents"]}
    assert docs == ({"c.txt"} if closed else {"c.txt", "b.txt/inner.txt"})


# -- names that are not UTF-8, NUL bytes ----------------------------------------------------------
def test_a_name_that_is_not_utf8_is_indexed_and_the_tools_accept_it_back(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"bad-\xff.txt"), "wb") as f:
        f.write(b"words behind a name that is not UTF-8: zqbadbyte")
    (root / "fine.txt").write_text("a fine file", "utf-8")
    settings = _settings(tmp_path)
    eng = Engine(settings)
    try:
        eng.add_collection("B", str(root))
        summary = eng.run_index()
        assert summary["indexed"] == 2 and summary["failed"] == []
        shown = "bad-\\xff.txt"
        assert {d.file_path for d in eng.store.documents("B")} == {shown, "fine.txt"}
        shown.encode("utf-8")  # valid UTF-8
        chunk = call_tool(eng, "get_chunk", {"collectionPath": "B", "filePath": shown, "chunkIndex": 0})
        assert chunk["found"] and "zqbadbyte" in chunk["text"]
        doc = call_tool(eng, "read_document", {"collectionPath": "B", "filePath": shown})
        assert doc["found"] and "zqbadbyte" in doc["text"]
        hits = call_tool(eng, "search_chunks", {"query": "zqbadbyte", "scope": "B", "mode": "keyword"})
        assert hits["hits"][0]["filePath"] == shown
        for tool in ("get_chunk", "read_document"):
            args = {"collectionPath": "B", "filePath": "a\x00b.txt"}
            if tool == "get_chunk":
                args["chunkIndex"] = 0
            out = call_tool(eng, tool, args)
            assert out["found"] is False and out["error"] == "path-escape" and "NUL" in out["message"]
        os.symlink("loop.txt", root / "loop.txt")  # a loop asked for by name: an answer, not an exception
        out = call_tool(eng, "get_chunk", {"collectionPath": "B", "filePath": "loop.txt", "chunkIndex": 0})
        assert out["found"] is False and out["error"] == "path-escape" and "loop" in out["message"]
        # a second run sees the same name: unchanged
        again = eng.run_index()
        assert again["counts"]["unchanged"] == 2 and again["skippedFiles"][0]["code"] == "symlink-loop"
    finally:
        eng.close()


# -- limits ----------------------------------------------------------------------------------------
def test_docx_bomb_is_refused_before_it_is_inflated(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    docx_bomb(root / "bomb.docx", 1 << 30)  # 1 GiB of XML in a few MB
    assert (root / "bomb.docx").stat().st_size < 8 << 20
    docx_bomb(root / "liar.docx", 256 << 20, lie_bytes=5000)  # the header claims 5000 bytes
    shutil.copy(CORPUS / "docx" / "lorem_ipsum.docx", root / "fine.docx")
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("D", str(root)))
    t0 = time.process_time()
    summary = Indexer(store, settings).run()
    cpu_s = time.process_time() - t0
    skipped = {f["filePath"]: f for f in summary["skippedFiles"]}
    failed = {f["filePath"]: f for f in summary["failed"]}
    assert skipped["bomb.docx"]["code"] == "too-large"
    assert "max_docx_part_bytes" in skipped["bomb.docx"]["reason"]
    assert failed["liar.docx"]["code"] == "corrupt" and "CRC" in failed["liar.docx"]["reason"]
    assert store.get_document("D", "fine.docx").status == "indexed"
    # refused from the zip directory: inflating 1 GiB would take seconds of CPU; the
    # liar is read only up to its declared size
    print(f"docx bombs handled in {cpu_s:.2f} s CPU")
    store.close()
    with pytest.raises(ExtractError, match="CRC"):  # a high limit: the liar is still read bounded
        check_docx(root / "liar.docx", 1 << 30)


def test_over_the_limits_is_too_large_and_names_the_limit(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "big.txt").write_bytes(b"words " * 50_000)  # 300 KB
    shutil.copy(CORPUS / "pdf" / "pdflatex-4-pages.pdf", root / "four.pdf")
    (root / "small.txt").write_text("small", "utf-8")
    settings = _settings(tmp_path, max_file_bytes=100_000, max_pages=3)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("L", str(root)))
    summary = Indexer(store, settings).run()
    why = {f["filePath"]: f for f in summary["skippedFiles"]}
    assert why["big.txt"]["code"] == "too-large" and "CHUNKNAV_MAX_FILE_BYTES" in why["big.txt"]["reason"]
    assert why["four.pdf"]["code"] == "too-large" and "max_pages" in why["four.pdf"]["reason"]
    assert summary["indexed"] == 1
    store.close()


# -- extraction keyed by what it reads -------------------------------------------------------------
def test_same_bytes_other_suffix_are_extracted_by_their_own_reader(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    pdf = (CORPUS / "pdf" / "minimal-document.pdf").read_bytes()
    (root / "a.txt").write_bytes(pdf)  # sorts first
    (root / "b.pdf").write_bytes(pdf)
    (root / "e.txt").write_bytes(b"")
    (root / "f.pdf").write_bytes(b"")
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("K", str(root)))
    Indexer(store, settings).run()
    b = store.get_document("K", "b.pdf")
    assert b.status == "indexed" and b.file_type == "pdf" and "%PDF" not in store.document_text("K", "b.pdf")
    assert store.get_document("K", "e.txt").status == "empty"
    f = store.get_document("K", "f.pdf")
    assert f.status == "failed" and f.metadata["code"] == "corrupt"
    store.close()


def test_a_file_rewritten_during_extraction_is_stored_from_the_bytes_read(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    target = root / "moving.txt"
    original = b"the original words of the file\n" * 10
    target.write_bytes(original)
    (root / "flapping.txt").write_bytes(b"first version")
    real = engine.extract.extract
    calls: dict[str, int] = {}

    def rewriting(path, password=None, ocr=None, **kw):
        """Rewrite the file while it is read, then put the old bytes and mtime back."""
        name = Path(path).name
        calls[name] = calls.get(name, 0) + 1
        st = os.stat(path)
        if name == "moving.txt" and calls[name] == 1:
            target.write_bytes(b"INTERMEDIATE words nobody should keep\n" * 10)
            out = real(path, password, ocr, **kw)
            target.write_bytes(original)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as before
            return out
        if name == "flapping.txt":  # changes on every read
            Path(path).write_bytes(b"version %d" % (calls[name] + 1))
        return real(path, password, ocr, **kw)

    monkeypatch.setattr(engine.extract, "extract", rewriting)
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("R", str(root)))
    summary = Indexer(store, settings).run()
    doc = store.get_document("R", "moving.txt")
    assert calls["moving.txt"] == 2  # read again from the bytes now on disk
    assert "INTERMEDIATE" not in store.document_text("R", "moving.txt")
    assert doc.content_hash == hashlib.sha256(original).hexdigest()
    skipped = {f["filePath"]: f["code"] for f in summary["skippedFiles"]}
    assert skipped == {"flapping.txt": "changed-during-read"}
    assert store.get_document("R", "flapping.txt") is None
    store.close()


# -- remove and index serialise ----------------------------------------------------------------
def test_removing_a_collection_during_a_run_is_refused_and_orphans_are_repaired(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}.txt").write_text(f"file {i} words", "utf-8")
    settings = _settings(tmp_path)
    eng = Engine(settings)
    eng.add_collection("R", str(root))
    entered, release = threading.Event(), threading.Event()

    def hold(ev: dict) -> None:
        if ev["phase"] == "extract" and not entered.is_set():
            entered.set()
            release.wait(30)

    result: dict = {}
    t = threading.Thread(target=lambda: result.update(eng.run_index(on_progress=hold)))
    t.start()
    try:
        assert entered.wait(30)
        with pytest.raises(IndexBusyError, match="nothing was removed"):
            eng.remove_collection("R")
        r = _cli(Path(settings.db), "collections", "remove", "R")
        assert r.returncode == 1 and "cannot remove collection 'R'" in r.stderr and "Traceback" not in r.stderr
    finally:
        release.set()
        t.join(60)
    assert result["indexed"] == 5 and eng.store.get_collection("R") is not None
    assert eng.remove_collection("R") is True
    assert eng.store.documents() == []
    eng.close()
    # orphan rows (documents of a collection that is gone) go at open
    store = SqliteStore(settings.db)
    store.add_collection(Collection("X", str(root)))
    Indexer(store, settings).run()
    with sqlite3.connect(settings.db) as raw:
        raw.execute("DELETE FROM collections WHERE collection_path = 'X'")
    assert store.documents("X")
    store.close()
    eng = Engine(settings)
    assert eng.store.documents("X") == [] and eng.store.chunks("X", "f0.txt") == []
    eng.close()


# -- a held writer lock ---------------------------------------------------------------------------
def test_a_held_writer_lock_is_retried_then_the_run_stops_cleanly_with_its_summary(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("words", "utf-8")
    db = tmp_path / "index.db"
    _cli(db, "collections", "add", "W", str(root))
    holder = sqlite3.connect(str(db), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "-v", "--db", str(db), "index", "--json"],  # -v: the stop is logged
        cwd=REPO,
        env=_env(CHUNKNAV_LOCK_WAIT_S="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err_lines = []
    try:
        for line in proc.stderr:  # held until the run has given up on its writes
            err_lines.append(line)
            if "index run stopped" in line:
                break
    finally:
        holder.execute("ROLLBACK")  # now the summary can be saved
    out, rest = proc.communicate(timeout=60)
    stderr = "".join(err_lines) + rest
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == 1
    summary = json.loads(out)
    assert summary["status"] == "stopped" and summary["error"]["error"] == "store-busy"
    assert "CHUNKNAV_LOCK_WAIT_S" in summary["error"]["message"]
    holder.close()
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert st["lastRun"]["status"] == "stopped" and st["lastRun"]["runId"] == summary["runId"]
    ok = _cli(db, "index", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["indexed"] == 1


def test_a_second_index_run_while_one_holds_the_lock_prints_an_index_busy_envelope(tmp_path):
    """``chunknav index --json`` refused by a run in progress prints a JSON envelope
    (``error: index-busy``) on stdout, the reason on stderr, exit 1, and changes nothing."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("words", "utf-8")
    db = tmp_path / "index.db"
    _cli(db, "collections", "add", "W", str(root))
    store = SqliteStore(str(db))
    try:
        with store.index_lock():  # what a running `chunknav index` holds (flock on <db>.lock)
            r = _cli(db, "index", "--json", env=_env(CHUNKNAV_LOCK_WAIT_S="1"))
            human = _cli(db, "index")
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        env = json.loads(r.stdout)
        assert env["error"] == "index-busy" and env["status"] == "refused"
        assert "already in progress" in env["message"] and str(db) in env["message"]
        assert env["error"] in ERROR_CODES  # declared in engine/errors.py
        assert "already in progress" in r.stderr
        assert human.returncode == 1 and human.stdout == "" and "already in progress" in human.stderr
        assert store.last_run() is None and store.documents("W") == []  # nothing started
    finally:
        store.close()


# -- cancel, kill, exit codes, records ----------------------------------------------------------------
def test_cancel_stops_at_a_file_boundary_and_keeps_what_was_committed(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    for i in range(20):
        (root / f"f{i:02d}.txt").write_text(f"file {i} words " * 30, "utf-8")
    settings = _settings(tmp_path)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("C", str(root)))
    cancel = threading.Event()
    phases: list[str] = []

    def progress(ev: dict) -> None:
        phases.append(ev["phase"])
        if ev["phase"] == "extract" and ev["done"] == 7:
            cancel.set()

    summary = Indexer(store, settings).run(on_progress=progress, cancel=cancel)
    assert summary["status"] == "cancelled" and summary["indexed"] == 7
    assert len(store.documents("C")) == 7 and store.last_run()["status"] == "cancelled"
    assert phases.index("walk") < phases.index("hash") < phases.index("extract")
    again = Indexer(store, settings).run()
    assert again["status"] == "finished" and again["indexed"] == 13 and again["unchanged"] == 7
    store.close()


def _many_files(root: Path, n: int = 3000) -> None:
    """``n`` text files of ~30 KB: several seconds of work, so a signal lands mid-run."""
    root.mkdir()
    body = "".join(f"line {j} of many words to chunk and index\n" for j in range(700))
    for i in range(n):
        (root / f"f{i:05d}.txt").write_text(f"file {i}\n" + body, "utf-8")


def _wait_running(db: Path, proc: subprocess.Popen, timeout_s: float = 60, documents: int = 1) -> None:
    """Until the CLI run has saved its ``running`` record and committed more than ``documents``."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            with sqlite3.connect(str(db)) as c:
                n = c.execute("SELECT count(*) FROM documents").fetchone()[0]
                run = c.execute("SELECT summary FROM runs ORDER BY id DESC LIMIT 1").fetchone()
                if run and json.loads(run[0])["status"] == "running" and n >= documents:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    raise AssertionError("the run never got going")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_cancel_a_cli_run_cleanly(tmp_path, sig):
    root = tmp_path / "root"
    _many_files(root)
    db = tmp_path / "index.db"
    _cli(db, "collections", "add", "C", str(root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "--db", str(db), "index", "--json"],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_running(db, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    summary = json.loads(out)
    if summary["status"] == "finished":  # the machine was fast: nothing left to cancel
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 1 and summary["status"] == "cancelled"
    assert 0 < summary["indexed"] < 3000
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert st["lastRun"]["status"] == "cancelled" and st["documents"] == summary["indexed"]


def _big_text(path: Path, mib: int = 64) -> None:
    """One text file of ``mib`` MiB (a 1 MiB block of words repeated): seconds of extraction."""
    words = [f"w{i:04d}x" for i in range(4000)]
    block = "\n".join(" ".join(words[(j * 37 + k) % 4000] for k in range(100)) for j in range(1500))
    block = (block + "\n") * max(1, (1 << 20) // (len(block) + 1))
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(mib):
            f.write(block)


@pytest.mark.parametrize("after", [0, 20])
def test_ctrl_c_during_a_big_file_abandons_it_and_records_the_run(tmp_path, after):
    """SIGINT while a big file is read: the read is abandoned (the file is not kept half-read) and
    the run is recorded ``cancelled`` with its counts (exit 1); a stop that lands while the last
    file is being written is ``finished`` with ``cancelRequested`` and a message saying so."""
    root = tmp_path / "root"
    root.mkdir()
    _big_text(root / "a-big.txt")
    for i in range(after):
        (root / f"b{i:03d}.txt").write_text(f"a small file {i} after the big one", "utf-8")
    db = tmp_path / "index.db"
    _cli(db, "collections", "add", "C", str(root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "--db", str(db), "index", "--json"],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_running(db, proc, documents=0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert "stopping: the files being read are abandoned" in err
    summary = json.loads(out)
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert st["documents"] == summary["indexed"]
    if summary["status"] == "cancelled":
        assert proc.returncode == 1 and summary["counts"]["indexed"] == summary["indexed"] < 1 + after
        assert st["lastRun"]["status"] == "cancelled"
    else:
        assert proc.returncode == 0 and summary["status"] == "finished" and summary["cancelRequested"] is True
        assert "stop was requested while the last file was being read or written" in summary["message"]
        human = _cli(db, "status").stdout
        assert "last run: finished" in human and "stop was requested while the last file" in human


def test_a_killed_run_shows_as_interrupted_and_the_next_run_carries_on(tmp_path):
    root = tmp_path / "root"
    _many_files(root, 500)
    db = tmp_path / "index.db"
    _cli(db, "collections", "add", "C", str(root))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "--db", str(db), "index"],
        cwd=REPO,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_running(db, proc, documents=0)
    proc.kill()
    proc.wait()
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert st["lastRun"]["status"] == "interrupted" and "never finished" in st["lastRun"]["message"]
    assert "last run: interrupted" in _cli(db, "status").stdout
    again = json.loads(_cli(db, "index", "--json").stdout)
    assert again["status"] == "finished" and again["indexed"] + again["unchanged"] == 500


def test_run_outcome_of_records():
    assert run_outcome(None) is None
    assert run_outcome({"indexed": 1})["status"] == "finished"  # a record without status
    alive = {"status": "running", "pid": os.getpid(), "host": os.uname().nodename}
    assert run_outcome(alive)["status"] == "running"


def test_status_into_a_closed_pipe_prints_no_traceback(tmp_path):
    db = tmp_path / "index.db"
    _cli(db, "collections", "add", "C", str(tmp_path))
    for command, reader in (("status", "head -n 1"), ("status --json", "true"), ("settings", "head -c 1")):
        r = subprocess.run(
            f"{sys.executable} -m engine --db {db} {command} | {reader}",
            shell=True,
            cwd=REPO,
            env=_env(),
            capture_output=True,
            text=True,
        )
        assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, (command, reader, r.stderr)


def test_extract_error_codes_are_reason_codes():
    import pickle

    from engine.errors import RUN_CODE, ExtractCode, ExtractReason

    assert ExtractError("corrupt", "corrupt: x").run_code == "corrupt"
    assert TooLargeError("too-large", "too-large: x").run_code == "too-large"
    assert set(RUN_CODE) == set(ExtractCode.__args__) and set(RUN_CODE.values()) <= set(REASON_CODES)
    failed = {c for c, run in RUN_CODE.items() if run not in ("too-large", "unreadable", "unsupported-type")}
    assert failed <= set(ExtractReason.__args__)  # a failed document records its code as reasonCode
    e = pickle.loads(pickle.dumps(TooLargeError("too-large", "too-large: x")))  # crosses the worker processes
    assert type(e) is TooLargeError and (e.code, e.reason, str(e)) == ("too-large", "too-large: x", "too-large: x")
    assert all(c == c.lower() and " " not in c for c in REASON_CODES)


def test_orphan_rows_are_repaired_on_every_store(store):
    """Documents whose collection is gone leave at the next run, SQLite and Postgres alike."""
    from engine.index.indexer import repair_orphans
    from engine.values import Chunk, Document

    store.add_collection(Collection("Kept", "/nowhere"))
    for cp in ("Kept", "Gone/Sub"):
        doc = Document(cp, "a.txt", "h" * 64, "k", "txt", "indexed", chunk_count=1, text_length=5)
        store.replace_document(doc, "words", [Chunk(cp, "a.txt", 0, "c" * 64, "h" * 64, 0, 5, "words")])
    assert repair_orphans(store) == 1
    assert [d.collection_path for d in store.documents()] == ["Kept"]
    assert store.chunks("Gone/Sub", "a.txt") == [] and store.chunk_count("Kept", "a.txt") == 1
