"""The first vector search in a new process, with the vector cache files and without them.

Usage: .venv/bin/python bench/first_search.py [sizes...]   (default 200000; add 1000000 for 1M)

For each size: a fresh SQLite index of that many 256-d synthetic unit vectors
(``bench/search_latency.build``), then one search in this process to write the vector
cache files, then, each in a new process:

* **warm** (the anchor): the median of 20 searches after the first one, in the same process;
* **cache present**: open + first search in a new process reading the cache files the
  writer left (what each ``chunknav search-chunks`` pays after its imports);
* **cache absent, read-only**: the cache files deleted and the index directory not
  writable by the reader (run as ``nobody`` through ``setpriv``): the reader builds the
  matrix in memory from the database and writes nothing. Its peak resident memory
  (``ru_maxrss``) is shown against the vectors' own size (n x 256 x 4 bytes), and the
  directory is listed before and after to show that nothing was written.

Run as root (for ``setpriv``); prints one table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import engine  # noqa: E402,F401
import numpy as np  # noqa: E402

from engine.store.sqlite.store import SqliteStore  # noqa: E402
from search_latency import DIM, build  # noqa: E402

_CHILD = """
import resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[2])
import numpy as np
from engine.store.sqlite.store import SqliteStore
q = np.ones(int(sys.argv[3]), np.float32) / np.sqrt(int(sys.argv[3]))
t1 = time.perf_counter()
s = SqliteStore(sys.argv[1])
s.search_vectors("bench", q, None, 10)
t2 = time.perf_counter()
warm = []
for _ in range(20):
    a = time.perf_counter(); s.search_vectors("bench", q, None, 10); warm.append(time.perf_counter() - a)
print(t2 - t1, sorted(warm)[10], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def child(db: Path, as_nobody: bool) -> tuple[float, float, int]:
    """(open + first search s, warm median s, peak RSS bytes) in a fresh interpreter."""
    cmd = [sys.executable, "-c", _CHILD, str(db), str(REPO), str(DIM)]
    if as_nobody:
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"the reader failed: {run.stderr.strip()[-800:]}")
    out = run.stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [200_000]
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="first-search-") as tmp:
            os.chmod(tmp, 0o755)  # the reader runs as nobody
            folder = Path(tmp) / "idx"
            folder.mkdir()
            db = folder / "index.db"
            build(str(db), n, np.random.default_rng(7))
            store = SqliteStore(str(db))
            store.search_vectors("bench", np.ones(DIM, np.float32) / np.sqrt(DIM), None, 10)
            store.close()
            present_first, warm, present_rss = child(db, False)
            for p in folder.iterdir():  # the cache files go; the database stays
                if p.name.startswith("index.db.bench."):
                    p.unlink()
            os.chmod(folder, 0o755)
            for p in folder.iterdir():
                os.chmod(p, 0o644)
            before = sorted(p.name for p in folder.iterdir())
            t = time.perf_counter()
            absent_first, _, absent_rss = child(db, True)
            wall = time.perf_counter() - t
            after = sorted(p.name for p in folder.iterdir())
            own = n * DIM * 4
            rows.append((n, warm, present_first, absent_first, wall, absent_rss, own, before == after))
    print(
        f"{'vectors':>9} {'warm ms':>8} {'present ms':>11} {'x warm':>7} {'absent ms':>10} "
        f"{'peak MB':>8} {'vectors MB':>11} {'x own':>6} {'wrote':>6}"
    )
    for n, warm, present, absent, _wall, rss, own, same in rows:
        print(
            f"{n:>9} {warm * 1000:>8.1f} {present * 1000:>11.1f} {present / warm:>7.2f} {absent * 1000:>10.1f} "
            f"{rss / 1e6:>8.0f} {own / 1e6:>11.0f} {rss / own:>6.2f} {'no' if same else 'YES':>6}"
        )


if __name__ == "__main__":
    main()
