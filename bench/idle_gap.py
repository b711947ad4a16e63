"""A search after an idle gap, as an MCP server or the explorer sees one, by OpenBLAS thread timeout.

Usage::

    .venv/bin/python bench/idle_gap.py [--n 100000] [--gaps 0,0.02,0.3,1.0] [--queries 12] [--rounds 2]
        [--int8-min-rows N]   (the engine's vector_int8_min_rows for the children; default: the engine's)

``engine/__init__.py`` sets ``OPENBLAS_THREAD_TIMEOUT`` (how long an OpenBLAS
worker thread spins for more work after a call before it sleeps; 2^value
cycles) unless the user has set it. Back-to-back benchmarks find the threads
spinning; a server answering a person or an agent finds them asleep. This
bench times ``call_tool("search_chunks")`` (modes vector and hybrid) over
``--n`` synthetic vectors (``bench/perf_rows.build_vectors``: real text windows,
20 collections) in child processes that sleep ``gap`` seconds before each
query, for each timeout value, the values alternated round by round. It
prints the median per query (ms) and the ratio against OpenBLAS's own
default (28) measured in the same run, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

QUESTIONS = [
    "who speaks of the quality of mercy",
    "a king who divides his kingdom",
    "the ghost on the battlements",
    "lovers from two feuding houses",
    "a storm at sea and a shipwreck",
    "jealousy and a lost handkerchief",
    "the murder of a king in his sleep",
    "a fool who tells the truth",
    "a play within a play",
    "banished to the forest",
    "a merchant and a pound of flesh",
    "witches and a prophecy",
]


def child(db: str, gap: float, queries: int, int8_rows: int | None = None) -> None:
    """In a fresh process: warm up, then time one search per query after ``gap`` seconds idle."""
    import engine  # noqa: F401  (before numpy, as the CLI and the MCP server)
    from engine.config import Settings
    from engine.tools.registry import Engine, call_tool

    extra = {} if int8_rows is None else {"vector_int8_min_rows": int8_rows}
    eng = Engine(Settings(db=db, embed_provider="local", **extra).validate())
    out: dict[str, list[float]] = {}
    for mode in ("vector", "hybrid"):
        for q in QUESTIONS[:3]:  # warm: matrix mapped, model loaded, caches filled
            call_tool(eng, "search_chunks", {"query": f"namespace:Org scope:subtree {q}", "mode": mode, "limit": 10})
        ts = []
        for i in range(queries):
            time.sleep(gap)
            q = QUESTIONS[i % len(QUESTIONS)]
            t = time.perf_counter()
            env = call_tool(
                eng, "search_chunks", {"query": f"namespace:Org scope:subtree {q}", "mode": mode, "limit": 10}
            )
            ts.append(time.perf_counter() - t)
            assert env.get("count") == 10, env
        out[mode] = ts
    eng.close()
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--gaps", default="0,0.02,0.3,1.0")
    ap.add_argument("--queries", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeouts", default="4,28", help="OPENBLAS_THREAD_TIMEOUT values; the last is the anchor")
    ap.add_argument(
        "--int8-min-rows",
        type=int,
        default=None,
        help="vector_int8_min_rows of the searching processes (default: the engine's)",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], float(args.child[1]), int(args.child[2]), args.int8_min_rows)
        return
    import numpy as np
    import perf_rows

    work = Path(tempfile.mkdtemp(prefix="chunknav-idle-"))
    db = str(work / "idle.db")
    perf_rows.build_vectors(db, args.n, np.random.default_rng(0))
    gaps = [float(g) for g in args.gaps.split(",")]
    timeouts = args.timeouts.split(",")
    res: dict[tuple[str, float, str], list[float]] = {}
    for _ in range(args.rounds):
        for gap in gaps:
            for to in timeouts:
                env = {**os.environ, "OPENBLAS_THREAD_TIMEOUT": to}
                rows = [] if args.int8_min_rows is None else ["--int8-min-rows", str(args.int8_min_rows)]
                p = subprocess.run(
                    [sys.executable, __file__, "--child", db, str(gap), str(args.queries), *rows],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                for mode, ts in json.loads(p.stdout.strip().splitlines()[-1]).items():
                    res.setdefault((mode, gap, to), []).extend(ts)
    anchor = timeouts[-1]
    from engine.config import Settings

    int8_rows = Settings().vector_int8_min_rows if args.int8_min_rows is None else args.int8_min_rows
    print(
        f"bench/idle_gap.py: {args.n:,} vectors (int8 scan from {int8_rows:,} rows), "
        f"{args.queries} queries x {args.rounds} rounds per cell, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"{'mode':8} {'gap s':>6} "
        + " ".join(f"{'TO=' + t + ' ms':>11}" for t in timeouts)
        + "   "
        + " ".join(f"{'TO=' + t + '/' + anchor:>9}" for t in timeouts[:-1])
    )
    for mode in ("vector", "hybrid"):
        for gap in gaps:
            meds = [statistics.median(res[(mode, gap, t)]) * 1000 for t in timeouts]
            print(
                f"{mode:8} {gap:6.2f} "
                + " ".join(f"{m:11.2f}" for m in meds)
                + "   "
                + " ".join(f"{m / meds[-1]:8.2f}x" for m in meds[:-1])
            )


if __name__ == "__main__":
    main()
