"""search_vectors latency on SQLite vs the bare numpy lower bound, in one run.

Usage: .venv/bin/python bench/search_latency.py [sizes...]   (default 10000 100000 1000000)
       .venv/bin/python bench/search_latency.py --postgres [pg options]
       .venv/bin/python bench/search_latency.py --hybrid [n]   (hybrid vs vector p50, bench/hybrid_latency.py)

``--postgres`` runs the Postgres column instead (``bench/search_latency_pg.py``:
pgvector HNSW p50/p95 and recall@10 at 100k and 1M beside numpy exact and
the SQLite store, all in the same run, on clustered embedding-like vectors).

For each size: a fresh SQLite file with that many 256-d synthetic unit
vectors spread over 20 collections (Zipf-like sizes), built with bulk
inserts. Then: the cold first query (builds the memory-mapped matrix file
and the row map), a new store object's first query (matrix file reused),
p50/p95 over ``QUERIES`` queries for scope = all, 3 small collections and
the largest collection, and the bare lower bound ``M @ q`` + argpartition
on an in-RAM matrix. Resident memory: RSS growth of the searching process
vs the raw float32 matrix bytes (n * 256 * 4). Then two more first queries:
in a new process (what each ``chunknav search-chunks`` call pays after its
imports; the import time is printed separately), and in a new store object
after a chunks change (``chunks_gen`` bumped: the chunk -> matrix row table
is rebuilt from SQL instead of loaded from its file).
"""

from __future__ import annotations

import gc
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import engine  # noqa: E402,F401  (before numpy, as the CLI and MCP server do: engine/__init__.py)
import numpy as np  # noqa: E402

from engine.store.sqlite.store import SqliteStore  # noqa: E402

DIM = 256
COLLECTIONS = 20
QUERIES = 60
LIMIT = 10
CHUNKS_PER_FILE = 50


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def build(path: str, n: int, rng: np.random.Generator) -> list[str]:
    """Bulk-insert n chunks + n vectors; returns the collection names, largest first."""
    weights = 1.0 / np.arange(1, COLLECTIONS + 1)
    counts = np.floor(weights / weights.sum() * n).astype(int)
    counts[0] += n - counts.sum()
    names = [f"Org/C{i:02d}" for i in range(COLLECTIONS)]
    store = SqliteStore(path)
    conn = store._conn()
    conn.execute("BEGIN")
    i = 0
    block = 50_000
    for name, count in zip(names, counts):
        for s in range(0, count, block):
            m = min(block, count - s)
            v = rng.standard_normal((m, DIM), dtype=np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            ids = [f"{k:064x}" for k in range(i, i + m)]
            conn.executemany(
                'INSERT INTO chunks(collection_path, file_path, chunk_index, chunk_id, content_hash, start, "end", '
                "chunk_text, last_modified) VALUES (?, ?, ?, ?, ?, 0, 1, ?, 0)",
                (
                    (name, f"f{(i + k) // CHUNKS_PER_FILE}.txt", (i + k) % CHUNKS_PER_FILE, ids[k], "h", f"w{i + k}")
                    for k in range(m)
                ),
            )
            conn.executemany(
                "INSERT INTO vectors(chunk_id, model, dim, vec, created) VALUES (?, 'bench', ?, ?, 0)",
                ((ids[k], DIM, v[k].tobytes()) for k in range(m)),
            )
            i += m
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_gen'")
    conn.execute("INSERT INTO meta(key, value) VALUES ('vectors_gen:bench', '1')")
    conn.execute("COMMIT")
    store.close()
    return names


_CHILD = """
import sys, time
t0 = time.perf_counter()
import numpy as np
sys.path.insert(0, sys.argv[2])
from engine.store.sqlite.store import SqliteStore
t1 = time.perf_counter()
q = np.ones(int(sys.argv[3]), np.float32) / np.sqrt(int(sys.argv[3]))
s = SqliteStore(sys.argv[1])
s.search_vectors("bench", q, None, 10)
print(t1 - t0, time.perf_counter() - t1)
"""


def child_first_query(path: str) -> tuple[float, float]:
    """(import seconds, open + first search seconds) in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, path, str(REPO), str(DIM)], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def pct(xs: list[float]) -> tuple[float, float]:
    a = np.sort(np.asarray(xs)) * 1000
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def main() -> None:
    if "--hybrid" in sys.argv[1:]:
        from hybrid_latency import main as hybrid_main

        raise SystemExit(hybrid_main([a for a in sys.argv[1:] if a != "--hybrid"]))
    if "--postgres" in sys.argv[1:]:
        from search_latency_pg import main as pg_main

        rest = [a for a in sys.argv[1:] if a != "--postgres"]
        raise SystemExit(pg_main(rest if "--sqlite" in rest else ["--sqlite", *rest]))
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000, 1_000_000]
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        work = Path(tempfile.mkdtemp(prefix="chunknav-search-"))
        path = str(work / "index.db")
        t = time.perf_counter()
        names = build(path, n, rng)
        build_s = time.perf_counter() - t
        qs = rng.standard_normal((QUERIES, DIM), dtype=np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        gc.collect()
        rss0 = rss_bytes()
        store = SqliteStore(path)
        t = time.perf_counter()
        store.search_vectors("bench", qs[0], None, LIMIT)
        cold_s = time.perf_counter() - t
        store.close()
        store = SqliteStore(path)
        t = time.perf_counter()
        store.search_vectors("bench", qs[0], None, LIMIT)
        reopen_s = time.perf_counter() - t
        scopes = {"all": None, "3 small": names[-3:], "largest": names[:1]}
        lat = {}
        for label, scope in scopes.items():
            store.search_vectors("bench", qs[0], scope, LIMIT)  # warm the scope cache
            times = []
            for q in qs:
                t = time.perf_counter()
                hits = store.search_vectors("bench", q, scope, LIMIT)
                times.append(time.perf_counter() - t)
            assert len(hits) == LIMIT
            lat[label] = pct(times)
        rss_store = rss_bytes() - rss0
        raw = n * DIM * 4
        # exactness check against numpy on the same data
        mfile = np.fromfile(path + ".bench.f32", dtype=np.float32).reshape(n, DIM)
        best = store.search_vectors("bench", qs[1], None, 1)[0].score
        assert abs(best - float((mfile @ qs[1]).max())) < 1e-4
        store.close()
        import_s, child_s = child_first_query(path)
        conn = sqlite3.connect(path)
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_gen'")
        conn.commit()
        conn.close()
        store = SqliteStore(path)
        t = time.perf_counter()
        store.search_vectors("bench", qs[0], None, LIMIT)
        rebuild_s = time.perf_counter() - t
        store.close()
        matrix = np.array(mfile)  # in RAM
        del mfile
        times = []
        for q in qs:
            t = time.perf_counter()
            s = matrix @ q
            top = np.argpartition(-s, LIMIT)[:LIMIT]
            top[np.argsort(-s[top])]
            times.append(time.perf_counter() - t)
        bare = pct(times)
        del matrix
        rows.append((n, build_s, cold_s, reopen_s, lat, bare, rss_store, raw, import_s, child_s, rebuild_s))
        shutil.rmtree(work, ignore_errors=True)
        print(f"n={n:>9,}: built in {build_s:.1f} s", flush=True)

    print()
    print(
        f"{'vectors':>9} | {'bare M@q p50/p95':>17} | {'all p50/p95':>15} | {'3 small p50/p95':>15} | "
        f"{'largest p50/p95':>15} | {'cold 1st':>8} | {'reopen 1st':>10} | {'new proc 1st':>12} | "
        f"{'after write':>11} | {'RSS/raw':>11}"
    )
    for n, build_s, cold_s, reopen_s, lat, bare, rss_store, raw, import_s, child_s, rebuild_s in rows:
        f = lambda p: f"{p[0]:6.2f}/{p[1]:6.2f}"  # noqa: E731
        print(
            f"{n:>9,} | {f(bare):>17} | {f(lat['all']):>15} | {f(lat['3 small']):>15} | "
            f"{f(lat['largest']):>15} | {cold_s:7.2f}s | {reopen_s:9.2f}s | {child_s:11.2f}s | "
            f"{rebuild_s:10.2f}s | {rss_store / raw:5.2f}x {raw / 1e6:.0f}MB"
        )
    print(
        "(milliseconds; limit 10, 256-d float32, 20 collections; RSS = growth of the searching process "
        "over raw matrix bytes, memory-mapped pages included;\n new proc 1st = open + first search in a fresh "
        "interpreter after its imports (imports took "
        + ", ".join(f"{r[8]:.2f}s" for r in rows)
        + "); after write = new store object's first search "
        "after chunks_gen changed)"
    )


if __name__ == "__main__":
    main()
