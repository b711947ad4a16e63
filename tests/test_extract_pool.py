"""engine/extract_pool.py: outcomes from worker processes equal those of extracting here.

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

from engine.config import Settings
from engine.extract_pool import ExtractPool, worker_count
from engine.index import Indexer
from engine.model import Collection
from engine.store.sqlite import SqliteStore

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus"

_CHILD = r"""
import hashlib, json, sys
from pathlib import Path
from engine.errors import ExtractError
from engine.extract import extract
from engine.extract_pool import ExtractPool

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
    out = subprocess.run([sys.executable, "-c", _CHILD, str(workers), *map(str, paths)], cwd=REPO,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def _files() -> list[Path]:
    return sorted((CORPUS / "pdf").glob("*.pdf")) + sorted((CORPUS / "edge").glob("*.pdf")) + \
        sorted((CORPUS / "text").glob("*.txt"))


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
    s = SqliteStore(str(db))
    with s._read() as conn:
        rows = conn.execute("SELECT file_path, chunk_index, chunk_id, start, \"end\", page, bbox, regions "
                            "FROM chunks ORDER BY file_path, chunk_index").fetchall()
        docs = conn.execute("SELECT file_path, status, reason, page_count, chunk_count FROM documents "
                            "ORDER BY file_path").fetchall()
    s.close()
    return rows + docs


_INDEX_CHILD = r"""
import sys
import engine.extract_pool as P
_close = P.ExtractPool.close
def close(self):  # report how many files came from workers
    print("in_workers", self.in_workers)
    _close(self)
P.ExtractPool.close = close
from engine.config import Settings
from engine.index import Indexer
from engine.model import Collection
from engine.store.sqlite import SqliteStore
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
        out = subprocess.run([sys.executable, "-c", _INDEX_CHILD, str(db), str(root), str(workers)], cwd=REPO,
                             check=True, capture_output=True, text=True).stdout
        used[workers] = int(out.split()[-1])
        dbs.append(db)
    assert used[1] == 0 and used[2] >= len(list(root.glob("*.pdf"))) - 1  # the duplicate is extracted once
    a, b = (_chunks(d) for d in dbs)
    assert a and a == b


def test_the_setting_is_validated():
    import pytest

    from engine.errors import SettingsError

    assert Settings().extract_workers == 0
    with pytest.raises(SettingsError, match="CHUNKNAV_EXTRACT_WORKERS"):
        Settings(extract_workers=-1).validate()
