"""What the stemmed and CJK trigram keyword indexes cost at index time, in one run.

Usage: .venv/bin/python bench/fts_index_cost.py [corpus_dir]   (default tests/corpus)

Indexes the corpus (extract + chunk + store, no embedding) into fresh SQLite
files, alternating two variants ``BENCH_REPEATS`` times (default 7):

* **before**: a plain FTS5 index (``unicode61`` tokenizer, no trigram
  index, no CJK check) — the store's tables are rebuilt that way right after
  it opens, and the CJK check is switched off;
* **after**: the engine's index (``porter`` over ``unicode61`` plus the ``trigram``
  index over chunks holding CJK characters).

Prints best and median wall and CPU seconds and the after/before ratio.
Target: at most 1.25x.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import engine.store.sqlite.store as sqlite_store  # noqa: E402
from engine.config import Settings  # noqa: E402
from engine.index.indexer import Indexer  # noqa: E402
from engine.values import Collection  # noqa: E402

REPEATS = int(os.environ.get("BENCH_REPEATS", "7"))


def make_before(store: sqlite_store.SqliteStore) -> None:
    """Turn a fresh store's keyword index into the plain ``unicode61`` one, without the trigram index."""
    with store._write() as conn:
        conn.execute("DROP TABLE chunks_fts")
        conn.execute(
            "CREATE VIRTUAL TABLE chunks_fts USING FTS5 (chunk_text, "
            "tokenize='unicode61 remove_diacritics 2', content=\"chunks\")"
        )
        for t in ("chunks_tri_ad", "chunks_tri_aud", "chunks_tri_aui"):
            conn.execute(f"DROP TRIGGER {t}")
        conn.execute("DROP TABLE chunks_tri")


def index_once(root: Path, before: bool) -> tuple[float, float, int]:
    """(wall s, cpu s, chunks) of one first index of ``root`` into a fresh file."""
    work = Path(tempfile.mkdtemp(prefix="chunknav-fts-"))
    real_is_cjk = sqlite_store.is_cjk
    try:
        settings = Settings(db=str(work / "index.db"), embed_provider="none").validate()
        store = sqlite_store.SqliteStore(settings.db)
        if before:
            make_before(store)
            sqlite_store.is_cjk = lambda text: False
        store.add_collection(Collection("C", str(root), None))
        w, c = time.perf_counter(), time.process_time()
        summary = Indexer(store, settings).run()
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        store.close()
        return wall, cpu, summary["chunksWritten"]
    finally:
        sqlite_store.is_cjk = real_is_cjk
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    """Alternate the two variants, print the table."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "corpus"
    runs: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
    index_once(root, False)  # warm the page cache and imports
    for r in range(REPEATS):
        for variant in ("before", "after") if r % 2 == 0 else ("after", "before"):
            runs[variant].append(index_once(root, variant == "before"))
    print(f"corpus {root}: {runs['after'][0][2]} chunks; best / median of {REPEATS} alternating runs")
    print(f"{'variant':>8} | {'wall best':>9} | {'wall med':>8} | {'cpu best':>8} | {'cpu med':>8}")
    stats = {}
    for v, xs in runs.items():
        walls, cpus = [x[0] for x in xs], [x[1] for x in xs]
        stats[v] = (min(walls), statistics.median(walls), min(cpus), statistics.median(cpus))
        print(f"{v:>8} | {stats[v][0]:9.3f} | {stats[v][1]:8.3f} | {stats[v][2]:8.3f} | {stats[v][3]:8.3f}")
    b, a = stats["before"], stats["after"]
    print(
        f"   ratio | {a[0] / b[0]:8.2f}x | {a[1] / b[1]:7.2f}x | {a[2] / b[2]:7.2f}x | {a[3] / b[3]:7.2f}x"
        "  (after / before; target <= 1.25x)"
    )


if __name__ == "__main__":
    main()
