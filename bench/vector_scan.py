"""Vector scans at 1M on real WordLlama vectors with real question queries: exact, quantised, ANN.

Usage::

    .venv/bin/python bench/real_vectors.py 1000000      # once: ~8 CPU-minutes, cached in /tmp
    .venv/bin/pip install -r requirements-bench.txt            # usearch, hnswlib (for --ann)
    .venv/bin/python bench/vector_scan.py [--n 1000000] [--ann] [--ann-n 200000] [--only "(a),(b')"] [--store]

Vectors: ``bench/real_vectors.py`` (1000-character windows of text on this
machine, WordLlama l2_supercat 256-d, L2-normalised). Queries: questions, not
held-out windows (windows as queries overstate ANN recall): the labelled
questions of tests/data/search_queries.json plus the questions below about
Python code and docs (what the windows hold). Ground truth: exact float32
top-10 by cosine. For each method: p50/p95 latency of one query (ms),
recall@10 against the exact top-10, memory per vector (bytes that must be
in RAM for the scan), all in one run. Methods:

(a) float32 exact ``M @ q`` + top-10 (numpy/OpenBLAS), 1 and 2 BLAS threads;
(b) quantised exact scans, each followed by float32 rescoring of the top R
    candidates: 1-bit sign codes with Hamming distance (numpy
    ``bitwise_count``), the 64-d Matryoshka prefix in float32, and usearch's
    SIMD exact search over int8 and float16 copies;
(b') the engine's int8 scan (``engine/store/sqlite/int8.py``, simsimd int8 dot
    products on 1 or 2 threads, top R kept per half) + float32 rescoring of
    R rows (``--int8-r``), and the same with per-dimension scales;
(c) ANN (``--ann``, test-only dependencies): usearch HNSW and hnswlib HNSW
    (M=16, efConstruction=128), built on ``--ann-n`` vectors (default 200k:
    a 1M build takes many minutes on a busy 2-core machine; pass
    ``--ann-n 1000000`` for the full size), at several ef.

``--store`` times the engine instead: ``SqliteStore.search_vectors`` with
``vector_scan`` exact vs auto (int8) on a SQLite file of the n vectors
(built once under ``$BENCH_VECTORS``), against the numpy bound.
``--only "(a),(b')"`` keeps the rows whose names start so.

The load average is printed; every method is timed over the same queries,
interleaved query by query (5 rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from real_vectors import load  # noqa: E402

K = 10
ROUNDS = 5
QUESTIONS = [q["query"] for q in json.loads((REPO / "tests/data/search_queries.json").read_text())["queries"]] + [
    "how do I parse a URL query string into a dictionary",
    "open a gzip compressed file for reading text",
    "what exception is raised when a dictionary key is missing",
    "how to run a subprocess and capture its output",
    "read a CSV file row by row",
    "how does the garbage collector find reference cycles",
    "convert a datetime to an ISO 8601 string",
    "what does the with statement do with context managers",
    "how to compute a SHA-256 hash of a file",
    "split a path into directory and file name",
    "how are HTTP redirects followed by the client",
    "set a timeout on a socket connection",
    "what is the default encoding used when opening files",
    "how to make a class iterable",
    "sort a list of dictionaries by a key",
    "where are the package's configuration files looked up",
    "how to register a command line entry point for a package",
    "what does the license permit for redistribution",
    "how is a wheel file built from source",
    "copy a directory tree recursively",
    "how to serialise an object to JSON with custom types",
    "retry a failed network request with backoff",
    "how do thread locks prevent race conditions",
    "what is the difference between a process and a thread pool",
    "how to read environment variables with defaults",
    "changelog entry about a security fix",
    "how are unicode strings normalised",
    "parse command line arguments with subcommands",
    "how to write a unit test that expects an exception",
    "memory mapped file access for large arrays",
    "matrix multiplication of two arrays",
    "how to compress data with zlib",
    "what happens when an iterator is exhausted",
    "format a floating point number with two decimals",
    "how to define an abstract base class",
    "regular expression to match an email address",
    "how do I configure logging to write to a file",
    "what are the terms of the MIT license",
    "how does a decorator wrap a function",
    "create a temporary directory that is deleted afterwards",
    "how to connect to a SQLite database and run a query",
    "send an email message over SMTP",
    "how to measure the execution time of code",
    "random numbers with a fixed seed for reproducibility",
    "how to validate data against a JSON schema",
    "render a template with variables",
    "what is the byte order of the data",
    "how to handle keyboard interrupt gracefully",
    "pickling objects and the security risk of loading untrusted data",
    "asynchronous coroutine awaiting several tasks at once",
]


def pct(xs: list[float]) -> tuple[float, float]:
    a = np.asarray(xs) * 1000
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def topk(scores: np.ndarray, k: int) -> np.ndarray:
    top = np.argpartition(-scores, k)[:k] if k < len(scores) else np.arange(len(scores))
    return top[np.argsort(-scores[top], kind="stable")]


def recall(found: list[np.ndarray], truth: list[np.ndarray]) -> float:
    return float(np.mean([len(set(f[:K].tolist()) & set(t[:K].tolist())) / K for f, t in zip(found, truth)]))


def blas(n: int) -> None:
    from threadpoolctl import ThreadpoolController

    for c in ThreadpoolController().lib_controllers:
        if c.user_api == "blas":
            c.set_num_threads(n)


def _two_blas(name: str) -> bool:
    """Methods that call BLAS with 2 threads (timed last in each query's turn, then a pause)."""
    return "2 BLAS threads" in name or name.startswith("(b) 64-d") and "2 thr" in name


def rescore(m: np.ndarray, q: np.ndarray, cand: np.ndarray) -> np.ndarray:
    cand = np.sort(cand)  # forward reads of the float32 matrix
    s = m[cand] @ q
    return cand[topk(s, min(K, len(cand)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--ann", action="store_true", help="also build and query HNSW indexes (slow)")
    ap.add_argument("--ann-n", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="rounds over the queries (default 5)")
    ap.add_argument(
        "--int8-r",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[20, 50, 100, 200, 500, 1000],
        help="rescore depths R of the (b') int8 rows, comma-separated",
    )
    ap.add_argument("--only", default="", help='comma-separated method prefixes to time, e.g. "(a),(b\')"')
    ap.add_argument(
        "--store",
        action="store_true",
        help="time the engine instead: SqliteStore.search_vectors, exact vs int8 (auto), on a SQLite "
        "file of the n real vectors (built once under $BENCH_VECTORS/store-<n>.db)",
    )
    args = ap.parse_args()
    print(f"bench/vector_scan.py: n={args.n:,}, load average {os.getloadavg()}", flush=True)
    m = load(args.n)
    from engine.embed.local import LocalEmbedder

    e = LocalEmbedder()
    qs = np.stack([e.embed_query(q) for q in QUESTIONS]).astype(np.float32)
    if args.store:
        return bench_store(m, qs, args)
    blas(2)
    truth = [topk(m @ q, K) for q in qs]

    # -- quantised copies
    t = time.perf_counter()
    bits = np.packbits(m > 0, axis=1).view(np.uint64)  # (n, 4) uint64
    qbits = np.packbits(qs > 0, axis=1).view(np.uint64)
    bits_s = time.perf_counter() - t
    m64 = np.ascontiguousarray(m[:, :64])
    norms64 = np.linalg.norm(m64, axis=1)
    scale = np.abs(m).max(axis=0)
    m8 = np.round(m / scale * 127).astype(np.int8)
    m16 = m.astype(np.float16)
    print(
        f"codes built: 1-bit {bits_s:.2f} s; memory per vector: f32 {m.itemsize * 256} B, "
        f"1-bit {bits.nbytes // args.n} B, 64-d f32 {m64.nbytes // args.n} B, int8 {m8.nbytes // args.n} B, "
        f"f16 {m16.nbytes // args.n} B",
        flush=True,
    )

    def f32(threads):
        def run(i):
            blas(threads)
            return topk(m @ qs[i], K)

        return run

    cols = [np.ascontiguousarray(bits[:, j]) for j in range(bits.shape[1])]  # column-major codes
    tmp = np.empty(args.n, np.uint64)

    def hamming_dist(i):
        np.bitwise_xor(cols[0], qbits[i, 0], out=tmp)
        d = np.bitwise_count(tmp)  # uint8
        for j in range(1, len(cols)):
            np.bitwise_xor(cols[j], qbits[i, j], out=tmp)
            np.add(d, np.bitwise_count(tmp), out=d)
        return d

    def hamming(r):
        def run(i):
            d = hamming_dist(i)
            cand = np.argpartition(d, r)[:r]
            blas(1)
            return rescore(m, qs[i], cand)

        return run

    def hamming_prefix(r1, r2):
        def run(i):
            d = hamming_dist(i)
            cand = np.sort(np.argpartition(d, r1)[:r1])
            s = (m64[cand] @ qs[i, :64]) / norms64[cand]
            cand2 = cand[np.argpartition(-s, r2)[:r2]]
            blas(1)
            return rescore(m, qs[i], cand2)

        return run

    def prefix64(r, threads=1):
        def run(i):
            blas(threads)
            s = (m64 @ qs[i, :64]) / norms64
            cand = np.argpartition(-s, r)[:r]
            blas(1)
            return rescore(m, qs[i], cand)

        return run

    methods: dict[str, object] = {
        "(a) f32 exact, 1 BLAS thread": f32(1),
        "(a) f32 exact, 2 BLAS threads": f32(2),
    }
    for r in (4000, 16000, 64000, 128000):
        if r < args.n:
            methods[f"(b) 1-bit Hamming + f32 rescore {r}"] = hamming(r)
    for r1, r2 in ((64000, 2000), (128000, 4000)):
        if r1 < args.n:
            methods[f"(b) 1-bit {r1} -> 64-d {r2} -> f32 rescore"] = hamming_prefix(r1, r2)
    for r in (4000, 16000):
        methods[f"(b) 64-d prefix f32 + rescore {r}, 1 thr"] = prefix64(r)
    methods["(b) 64-d prefix f32 + rescore 16000, 2 thr"] = prefix64(16000, 2)
    # (b') the engine's int8 scan (engine/store/sqlite/int8.py): global scale from the dimension,
    # simsimd int8 dot products on 1 or 2 threads (top R kept inside each worker), float32 rescoring.
    from engine.store.sqlite import int8 as int8_scan

    if int8_scan.kernel() is not None:
        t = time.perf_counter()
        codes = int8_scan.quantise(m, int8_scan.int8_scale(m.shape[1]))
        q8_s = time.perf_counter() - t
        col = np.abs(m).max(axis=0)  # per-dimension scales, for comparison
        codes_dim = np.ascontiguousarray(np.clip(np.rint(m / col * 127), -127, 127).astype(np.int8))
        print(
            f"int8 codes (global scale {int8_scan.int8_scale(m.shape[1]):.1f}) built in {q8_s:.2f} s; "
            f"{codes.nbytes // args.n} B/vector",
            flush=True,
        )

        def int8(r, threads, per_dim=False):
            def run(i):
                if per_dim:
                    cand = int8_scan.int8_candidates(codes_dim, qs[i] / col, r, None, threads)
                else:
                    cand = int8_scan.int8_candidates(codes, qs[i], r, None, threads)
                return rescore(m, qs[i], cand)

            return run

        for r in args.int8_r:
            methods[f"(b') int8 simsimd 2 thr + f32 rescore {r}"] = int8(r, 2)
        methods[f"(b') int8 simsimd 1 thr + f32 rescore {args.int8_r[-1]}"] = int8(args.int8_r[-1], 1)
        methods["(b') int8 per-dim scales, 2 thr + rescore 100"] = int8(100, 2, True)

        def int8_shared(r):
            """As a hybrid search runs it: ~2 MB blocks shared with a helper thread (engine/store/scan_share.py)."""
            import threading

            from engine.store.scan_share import ScanShare, block_runner

            def run(i):
                share = ScanShare()
                helper = threading.Thread(target=share.help)
                helper.start()
                with share.active():
                    cand = int8_scan.int8_candidates(codes, qs[i], r, None, run=block_runner(len(codes)))
                helper.join()
                return rescore(m, qs[i], cand)

            return run

        methods[f"(b') int8 shared blocks + helper thread + f32 rescore {int8_scan.RESCORE}"] = int8_shared(
            int8_scan.RESCORE
        )
    else:
        print("simsimd not importable: the (b') int8 rows are skipped")
    try:
        from usearch.index import search as us_search
        from usearch.index import MetricKind

        def us_exact(arr, r, dtype):
            def run(i):
                qq = np.round(qs[i] / scale * 127).astype(np.int8) if dtype == "i8" else qs[i].astype(np.float16)
                res = us_search(arr, qq, r, MetricKind.IP, exact=True, threads=1)
                blas(1)
                return rescore(m, qs[i], np.asarray(res.keys, np.int64))

            return run

        methods["(b) usearch exact int8 + rescore 200"] = us_exact(m8, 200, "i8")
        methods["(b) usearch exact f16 + rescore 200"] = us_exact(m16, 200, "f16")
    except ImportError:
        print("usearch not installed: its rows are skipped (pip install -r requirements-bench.txt)")

    if args.only:
        keep = tuple(x.strip() for x in args.only.split(",") if x.strip())
        methods = {k: v for k, v in methods.items() if k.startswith(keep)}
    # Two-thread BLAS calls last in each query's turn, each followed by an untimed pause: OpenBLAS's
    # second thread spins for a while after a call and slows whatever runs next (the engine never
    # follows one with an int8 scan: a matrix is scanned one way or the other).
    two = [k for k in methods if _two_blas(k)]
    methods = {k: methods[k] for k in [k for k in methods if not _two_blas(k)] + two}
    times: dict[str, list[float]] = {k: [] for k in methods}
    found: dict[str, list[np.ndarray]] = {k: [None] * len(qs) for k in methods}  # type: ignore[list-item]
    for _ in range(args.rounds):
        for i in range(len(qs)):
            for name, fn in methods.items():
                t = time.perf_counter()
                found[name][i] = fn(i)  # type: ignore[operator]
                times[name].append(time.perf_counter() - t)
                if _two_blas(name):
                    blas(1)
                    time.sleep(0.15)  # untimed: let OpenBLAS's spinning second thread go to sleep
    blas(1)
    print(f"\n{len(qs)} question queries x {args.rounds} rounds, interleaved; load average {os.getloadavg()}")
    print(f"  {'method':48} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
    for name in methods:
        p50, p95 = pct(times[name])
        print(f"  {name:48} {p50:8.2f} {p95:8.2f} {recall(found[name], truth):10.4f}", flush=True)

    if args.ann:
        ann(m, qs, args.ann_n)


def build_store(m: np.ndarray, path: Path) -> None:
    """A SQLite index of len(m) chunks (4 collections) with m as their vectors, added through
    ``add_vectors`` in 2,000-row calls (the embed pass's appends to the .f32/.i8 files), then ``save_run``."""
    from engine.values import Collection
    from engine.store.sqlite.store import SqliteStore

    tmp = path.with_suffix(".building.db")
    for p in tmp.parent.glob(tmp.name + "*"):
        p.unlink()
    store = SqliteStore(str(tmp))
    for c in range(4):
        store.add_collection(Collection(f"C{c}", str(tmp.parent)))
    conn = store._conn()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO chunks(collection_path, file_path, chunk_index, chunk_id, content_hash, start, "
        '"end", chunk_text, last_modified) VALUES (?, ?, ?, ?, ?, 0, 1, ?, 0)',
        ((f"C{i % 4}", f"f{i // 400}.txt", i // 4 % 100, f"{i:064x}", "h", f"w{i}") for i in range(len(m))),
    )
    conn.execute("INSERT INTO chunks_fts (rowid, chunk_text) SELECT rowid, chunk_text FROM chunks")
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_gen'")
    conn.execute("COMMIT")
    for s in range(0, len(m), 2000):
        store.add_vectors(MODEL_NAME, [f"{i:064x}" for i in range(s, min(s + 2000, len(m)))], m[s : s + 2000])
    store.save_run({})
    store.close()
    for p in tmp.parent.glob(tmp.name + "*"):
        p.rename(path.parent / (path.name + p.name[len(tmp.name) :]))


MODEL_NAME = "l2_supercat_256"


def bench_store(m: np.ndarray, qs: np.ndarray, args) -> None:
    """SqliteStore.search_vectors (full scans, limit 10): exact float32 vs int8 (auto) vs the numpy bound."""
    from engine.store.sqlite.store import SqliteStore
    from real_vectors import CACHE

    path = CACHE / f"store-{len(m)}.db"
    if not path.exists():
        t = time.perf_counter()
        build_store(m, path)
        print(f"built {path} in {time.perf_counter() - t:.0f} s", flush=True)
    exact = SqliteStore(str(path), vector_scan="exact")
    auto = SqliteStore(str(path))  # the default: int8 from 200,000 vectors
    for s in (exact, auto):  # warm: matrix, codes and occurrence table mapped, thread choice tried
        for q in qs[:4]:
            s.search_vectors(MODEL_NAME, q, None, 10)
    sizes = {k: Path(f"{path}.{MODEL_NAME}.{k}").stat().st_size for k in ("f32", "i8", "ids", "rowids")}
    print("cache files, bytes per vector: " + ", ".join(f"{k} {v / len(m):.0f}" for k, v in sizes.items()))

    def bound(i):
        blas(1)
        return topk(m @ qs[i], K)

    ex_name, i8_name = "store exact f32 (engine's BLAS thread choice)", "store auto = int8 + f32 rescore (engine)"
    methods = {
        ex_name: lambda i: exact.search_vectors(MODEL_NAME, qs[i], None, 10),
        i8_name: lambda i: auto.search_vectors(MODEL_NAME, qs[i], None, 10),
        "numpy bound f32 M @ q, 1 thread": bound,
    }
    times: dict[str, list[float]] = {k: [] for k in methods}
    found: dict[str, list] = {k: [None] * len(qs) for k in methods}
    for _ in range(args.rounds):
        for i in range(len(qs)):
            for name, fn in methods.items():
                t = time.perf_counter()
                found[name][i] = fn(i)
                times[name].append(time.perf_counter() - t)
                if name == ex_name:  # untimed: its 2-thread BLAS call leaves a thread spinning
                    time.sleep(0.15)
    agree = np.mean(
        [
            len({h.chunk.chunk_id for h in a} & {h.chunk.chunk_id for h in b}) / K
            for a, b in zip(found[i8_name], found[ex_name])
        ]
    )
    same_scores = all(
        abs(x.score - y.score) < 1e-6
        for a, b in zip(found[i8_name], found[ex_name])
        for x, y in zip(a, b)
        if x.chunk.chunk_id == y.chunk.chunk_id
    )
    print(f"\n{len(qs)} question queries x {args.rounds} rounds, interleaved; load average {os.getloadavg()}")
    print(f"  {'method':48} {'p50 ms':>8} {'p95 ms':>8}")
    for name in methods:
        p50, p95 = pct(times[name])
        print(f"  {name:48} {p50:8.2f} {p95:8.2f}")
    print(f"  int8 store hits vs exact store hits: recall@10 {agree:.4f}; equal scores where equal ids: {same_scores}")
    print(f"  p50 ratio int8 / exact store: {pct(times[i8_name])[0] / pct(times[ex_name])[0]:.2f}x")
    exact.close()
    auto.close()


def ann(m: np.ndarray, qs: np.ndarray, n: int) -> None:
    """HNSW (usearch, hnswlib) on the first n vectors; recall against exact top-10 on those n."""
    sub = np.ascontiguousarray(m[:n])
    blas(2)
    truth = [topk(sub @ q, K) for q in qs]
    print(f"\nANN on {n:,} vectors (M=16, efConstruction=128; exact truth on the same {n:,})", flush=True)
    rows = []
    try:
        from usearch.index import Index

        idx = Index(ndim=sub.shape[1], metric="ip", dtype="f32", connectivity=16, expansion_add=128)
        t = time.perf_counter()
        idx.add(np.arange(n), sub, threads=2)
        build = time.perf_counter() - t
        for ef in (64, 256, 1024):
            idx.expansion_search = ef
            ts, found = [], []
            for q in qs:
                t = time.perf_counter()
                found.append(np.asarray(idx.search(q, K).keys, np.int64))
                ts.append(time.perf_counter() - t)
            rows.append((f"(c) usearch HNSW ef={ef}", pct(ts), recall(found, truth), build, idx.memory_usage / n))
    except ImportError:
        print("usearch not installed")
    try:
        import hnswlib

        h = hnswlib.Index(space="ip", dim=sub.shape[1])
        h.init_index(max_elements=n, M=16, ef_construction=128)
        h.set_num_threads(2)
        t = time.perf_counter()
        h.add_items(sub, np.arange(n))
        build = time.perf_counter() - t
        h.set_num_threads(1)
        for ef in (64, 256, 1024, 4096):
            h.set_ef(ef)
            ts, found = [], []
            for q in qs:
                t = time.perf_counter()
                labels, _ = h.knn_query(q, k=K)
                ts.append(time.perf_counter() - t)
                found.append(labels[0].astype(np.int64))
            rows.append(
                (f"(c) hnswlib HNSW ef={ef}", pct(ts), recall(found, truth), build, sub.shape[1] * 4 + 16 * 2 * 4 + 8)
            )
    except ImportError:
        print("hnswlib not installed")
    print(f"  {'method':48} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10} {'build s':>8} {'B/vector':>9}")
    for name, (p50, p95), rec, build, per in rows:
        print(f"  {name:48} {p50:8.2f} {p95:8.2f} {rec:10.4f} {build:8.1f} {per:9.0f}")
    blas(1)


if __name__ == "__main__":
    main()
