"""engine/index/pool.py: outcomes from worker processes equal those of extracting here.

The pool runs in a fresh single-threaded interpreter (a process with other
threads, such as pytest's leftovers, keeps extraction in-process by design),
on the real corpus PDFs plus broken and encrypted ones.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.config import Settings
from engine.index.gate import STAT_KEY
from engine.index.pool import ExtractPool, worker_count
from engine.store.sqlite.store import SqliteStore

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"

_CHILD = r"""
import hashlib, json, sys
from pathlib import Path
from engine.errors import ExtractError
from engine.extract import extract
from engine.index.pool import ExtractPool

def digest(x):
    if isinstance(x, ExtractError):
        return [type(x).__name__, x.reason]
    w = x.words
    cols = b"".join(getattr(w, c).tobytes() for c in ("starts", "ends", "pages", "boxes"))
    return [hashlib.sha256(x.text.encode()).hexdigest(), len(w), hashlib.sha256(cols).hexdigest(),
            [p.number for p in x.pages], x.file_type, list(x.notes), sorted(x.metadata)]

def run(fn, p):
    try:
        return digest(fn(p))
    except ExtractError as e:
        return digest(e)

paths = [Path(p) for p in sys.argv[2:]]
with ExtractPool(int(sys.argv[1])) as pool:
    pool.prefetch((p, None, p.stat().st_size) for p in paths)
    pooled = [run(pool.extract, p) for p in paths]
    counts = [pool.in_workers, pool.here]
here = [run(extract, p) for p in paths]
print(json.dumps({"pooled": pooled, "here": here, "counts": counts}))
"""


def _run_child(workers: int, paths: list[Path]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(workers), *map(str, paths)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def _files() -> list[Path]:
    return (
        sorted((CORPUS / "pdf").glob("*.pdf"))
        + sorted((CORPUS / "edge").glob("*.pdf"))
        + sorted((CORPUS / "text").glob("*.txt"))
    )


def test_workers_give_the_same_outcomes_as_this_process():
    paths = _files()
    r = _run_child(2, paths)
    assert r["pooled"] == r["here"]
    assert r["counts"] == [len(paths), 0]  # every file came from a worker
    assert any(x[0] in ("EncryptedError", "ExtractError") for x in r["here"])  # errors crossed too


def test_one_worker_means_no_pool():
    paths = _files()[:6]
    r = _run_child(1, paths)
    assert r["pooled"] == r["here"]
    assert r["counts"] == [0, len(paths)]


def test_small_runs_and_threaded_processes_stay_in_process():
    paths = sorted((CORPUS / "text").glob("*.txt"))[:2]
    with ExtractPool(2) as pool:
        pool.prefetch((p, None, p.stat().st_size) for p in paths)  # too little to repay a pool
        for p in paths:
            pool.extract(p)
        assert (pool.in_workers, pool.here) == (0, 2)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        big = sorted((CORPUS / "pdf").glob("*.pdf"))
        with ExtractPool(2) as pool:
            pool.prefetch((p, None, 10_000_000) for p in big)
            pool.extract(big[0])
            assert (pool.in_workers, pool.here) == (0, 1)
    finally:
        stop.set()
        t.join()
    import os

    assert worker_count(0) in (1, os.cpu_count()) and worker_count(3) == 3 and worker_count(1) == 1


def _chunks(db: Path) -> list[tuple]:
    """Every stored column of every chunk (in rowid order: the order they were written) and
    document (all but ``indexed_at``, a clock reading), and the FTS rows."""
    from engine.store.sqlite.rows import CHUNK_COLUMNS, DOC_COLUMNS

    s = SqliteStore(str(db))
    with s._read() as conn:
        rows = conn.execute(f"SELECT rowid, {CHUNK_COLUMNS} FROM chunks ORDER BY rowid").fetchall()
        columns = DOC_COLUMNS.replace("indexed_at, ", "")
        docs = conn.execute(f"SELECT {columns}, text FROM documents ORDER BY file_path").fetchall()
        fts = conn.execute("SELECT rowid, chunk_text FROM chunks_fts ORDER BY rowid").fetchall()
    s.close()
    at = [c.strip() for c in columns.split(",")].index("metadata")
    # the file's stat on this disk (its ctime differs between two copies) is not the document's content
    docs = [(*d[:at], _without_stat(d[at]), *d[at + 1 :]) for d in docs]
    return rows + docs + fts


def _without_stat(metadata: str | None) -> str | None:
    """The metadata JSON without ``STAT_KEY`` (size, mtime and ctime of the file read)."""
    if not metadata:
        return metadata
    meta = json.loads(metadata)
    meta.pop(STAT_KEY, None)
    return json.dumps(meta, sort_keys=True)


_INDEX_CHILD = r"""
import os, sys
import engine.index.pool as P
_close = P.ExtractPool.close
def close(self):  # report how many files came from workers
    print("in_workers", self.in_workers)
    _close(self)
P.ExtractPool.close = close
_join = P._join_spilled
def join(*a):  # in a worker: note each PDF whose page ranges it joined
    out = _join(*a)
    with open(sys.argv[1] + ".joined", "a") as fh:
        fh.write(out[0] + " " + type(out[1]).__name__ + "\n")
    return out
P._join_spilled = join
from engine.config import Settings
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore
s = SqliteStore(sys.argv[1])
s.add_collection(Collection("C", sys.argv[2]))
Indexer(s, Settings(db=sys.argv[1], embed_provider="none", extract_workers=int(sys.argv[3])).validate()).run()
s.close()
"""


def test_index_with_workers_stores_what_one_process_stores(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    for p in _files():
        shutil.copy(p, root / p.name)
    shutil.copy(CORPUS / "pdf" / "tracemonkey.pdf", root / "copy-of-tracemonkey.pdf")  # a duplicate
    dbs = []
    used = {}
    for workers in (1, 2):
        db = tmp_path / f"w{workers}.db"
        out = subprocess.run(
            [sys.executable, "-c", _INDEX_CHILD, str(db), str(root), str(workers)],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        used[workers] = int(out.split()[-1])
        dbs.append(db)
    assert used[1] == 0 and used[2] >= len(list(root.glob("*.pdf"))) - 1  # the duplicate is extracted once
    a, b = (_chunks(d) for d in dbs)
    assert a and a == b  # byte-identical rows, written in the same order
    # the large PDFs were read in page ranges, joined and chunked into rows in a worker
    joined = (tmp_path / "w2.db.joined").read_text().split("\n")[:-1]
    assert len(joined) >= 2 and set(joined) == {"joined ReadyText"}
    assert not (tmp_path / "w1.db.joined").exists()
    assert any(r[-2] and '"ocr":true' in r[-2] for r in a if len(r) == 15)  # an OCR'd page's chunks crossed too


def test_the_setting_is_validated():
    import pytest

    from engine.errors import SettingsError

    assert Settings().extract_workers == 0
    with pytest.raises(SettingsError, match="CHUNKNAV_EXTRACT_WORKERS"):
        Settings(extract_workers=-1).validate()


_CRASH_CHILD = r"""
import json, os, sys
import engine.index.pool as P
_whole = P._extract_in_worker
def whole(path, *a):  # the PDF library dying on one file (a segfault, say)
    if path.endswith(sys.argv[3]):
        os._exit(139)
    return _whole(path, *a)
whole.__qualname__ = whole.__name__ = "_extract_in_worker"
whole.__module__ = P.__name__
P._extract_in_worker = whole
from engine.config import Settings
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore
s = SqliteStore(sys.argv[1])
s.add_collection(Collection("C", sys.argv[2]))
r = Indexer(s, Settings(db=sys.argv[1], embed_provider="none", extract_workers=2).validate()).run()
print(json.dumps({"status": r["status"], "failed": r["failed"], "indexed": r["indexed"]}))
s.close()
"""


def test_a_worker_that_dies_fails_its_file_and_the_run_goes_on(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    pdfs = sorted((CORPUS / "pdf").glob("*.pdf"))
    for p in pdfs:
        shutil.copy(p, root / p.name)
    victim = "annotations.pdf"  # read whole (small), early in the order
    db = tmp_path / "crash.db"
    out = subprocess.run(
        [sys.executable, "-c", _CRASH_CHILD, str(db), str(root), victim],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    r = json.loads(out)
    assert r["status"] == "finished"
    failed = {f["filePath"]: f for f in r["failed"]}
    assert victim in failed and failed[victim]["code"] == "extractor-error"
    assert "worker process died" in failed[victim]["reason"]
    assert all(f["code"] == "extractor-error" and "worker process died" in f["reason"] for f in r["failed"])
    assert list(failed) == [victim] and "exit code 139" in failed[victim]["reason"]  # only the file that killed it
    assert r["indexed"] + len(failed) == len(pdfs) and r["indexed"] > 0
    s = SqliteStore(str(db))
    assert s.get_document("C", victim).status == "failed"
    assert all(
        s.get_document("C", p.name).chunk_count > 0
        for p in pdfs
        if p.name not in failed and s.get_document("C", p.name).status == "indexed"
    )
    s.close()


_SIGNAL_CHILD = r"""
import ctypes, json, os, signal, sys
import engine.index.pool as P
# victims: name:how[:part] -- how: segv (a real segfault in native code, as MuPDF's) or kill
# (SIGKILL, as the kernel's OOM killer); part: the page range of a split PDF that dies
victims = dict((v.split(":")[0], v.split(":")[1:]) for v in sys.argv[3].split(",") if v)
def die(path, part=None):
    how = victims.get(os.path.basename(path))
    if how and (len(how) == 1 or int(how[1]) == part):
        if how[0] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        ctypes.string_at(0)  # reads address 0: SIGSEGV
_whole, _part = P._extract_in_worker, P._extract_part_in_worker
def whole(path, *a):
    die(path)
    return _whole(path, *a)
def part(path, password, ocr, k, *a):
    die(path, k)
    return _part(path, password, ocr, k, *a)
for f, name in ((whole, "_extract_in_worker"), (part, "_extract_part_in_worker")):
    f.__qualname__ = f.__name__ = name
    f.__module__ = P.__name__
    setattr(P, name, f)
_close = P.ExtractPool.close
counts = {}
def close(self):
    counts.update(here=self.here, in_workers=self.in_workers, restarts=self.restarts)
    _close(self)
P.ExtractPool.close = close
import engine.index.recovery as C
C.MAX_RESTARTS = int(sys.argv[4]) if len(sys.argv) > 4 else C.MAX_RESTARTS
from engine.config import Settings
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore
s = SqliteStore(sys.argv[1])
s.add_collection(Collection("C", sys.argv[2]))
r = Indexer(s, Settings(db=sys.argv[1], embed_provider="none", extract_workers=2).validate()).run()
print(json.dumps({"status": r["status"], "failed": r["failed"], "indexed": r["indexed"], **counts}))
s.close()
"""


def _signal_run(
    tmp_path: Path, name: str, victims: dict[str, str], with_victims: bool, *extra: str
) -> tuple[dict, list]:
    """Index the corpus PDFs and texts (the victims only ``with_victims``) with 2 workers in a
    fresh interpreter where a worker reading a victim dies by a real signal; the summary and
    every stored row but the victims'."""
    root = tmp_path / f"root-{name}"
    root.mkdir()
    for p in sorted((CORPUS / "pdf").glob("*.pdf")) + sorted((CORPUS / "text").glob("*.txt")):
        if with_victims or p.name not in victims:
            shutil.copy2(p, root / p.name)  # with its mtime: stored as the document's last_modified
    db = tmp_path / f"{name}.db"
    spec = ",".join(f"{k}:{v}" for k, v in victims.items())
    out = subprocess.run(
        [sys.executable, "-c", _SIGNAL_CHILD, str(db), str(root), spec, *extra],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [r for r in _chunks(db) if not any(v in r for v in victims)]
    return json.loads(out), rows


def _check_only_victims_fail(tmp_path: Path, victims: dict[str, str]) -> dict:
    healthy, want = _signal_run(tmp_path, "healthy", victims, False)
    r, got = _signal_run(tmp_path, "crash", victims, True)
    assert healthy["failed"] == [] and healthy["restarts"] == 0
    assert r["status"] == "finished"
    assert sorted(f["filePath"] for f in r["failed"]) == sorted(victims)  # only the files that killed a worker
    assert all(f["code"] == "extractor-error" and "worker process died" in f["reason"] for f in r["failed"])
    assert r["indexed"] == healthy["indexed"] > 20
    assert r["here"] == 0 and r["in_workers"] == healthy["in_workers"] + len(victims)  # none read in the indexer
    assert want and got == want  # the others: the same rows, in the same order, as without the victims
    return r


def test_a_worker_killed_by_a_signal_fails_only_its_file(tmp_path):
    r = _check_only_victims_fail(tmp_path, {"annotations.pdf": "segv"})
    assert "killed by signal SIGSEGV" in r["failed"][0]["reason"]
    assert r["restarts"] == 2  # the crash among the files in flight, then the victim alone


def test_two_files_that_kill_workers_and_a_split_pdf_range_fail_alone(tmp_path):
    victims = {"annotations.pdf": "segv", "cython.pdf": "kill", "test-3820.pdf": "segv:1"}
    r = _check_only_victims_fail(tmp_path, victims)
    reasons = {f["filePath"]: f["reason"] for f in r["failed"]}
    assert "SIGKILL" in reasons["cython.pdf"] and "SIGSEGV" in reasons["test-3820.pdf"]
    assert r["restarts"] <= 2 * len(victims)  # each file read again at most once


def test_a_storm_of_crashes_ends_in_linear_restarts(tmp_path):
    pdfs = sorted((CORPUS / "pdf").glob("*.pdf"))
    victims = {p.name: "segv" for p in pdfs[::2]}  # every other PDF kills its worker
    r, _rows = _signal_run(tmp_path, "storm", victims, True)
    assert r["status"] == "finished"
    assert sorted(f["filePath"] for f in r["failed"]) == sorted(victims)
    assert r["restarts"] <= 2 * len(victims) and r["here"] == 0
    # past MAX_RESTARTS the files in flight at a crash fail without a second read: still every file ends
    r, _rows = _signal_run(tmp_path, "capped", victims, True, "2")
    assert r["status"] == "finished" and set(victims) <= {f["filePath"] for f in r["failed"]}
    assert all("worker process died" in f["reason"] for f in r["failed"])
    assert r["indexed"] + len(r["failed"]) == len(pdfs) + len(list((CORPUS / "text").glob("*.txt")))
    assert r["restarts"] <= 2 + len(victims) and r["here"] == 0
