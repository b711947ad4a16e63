"""Export and import of a portable archive against the store's own bulk copy.

Builds a SQLite index of ``--docs`` documents of ``--chunks`` chunks each (1000-character
windows) with one 256-d float32 vector per chunk (random, L2-normalised: the copy never
looks at them), then times, ``--repeat`` times each, into fresh files:

* anchor: ``engine.store.copy.migrate`` SQLite -> SQLite (``chunknav migrate``)
* ``Engine.export_archive`` (SQLite -> one archive file)
* ``Engine.import_archive`` (archive -> SQLite), checksums and model checks included

and prints chunks/s and the ratio of each median to the anchor's.

    python bench/archive_copy.py [--docs 1000] [--chunks 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config import Settings  # noqa: E402
from engine.service import Engine  # noqa: E402
from engine.store.copy import migrate  # noqa: E402
from engine.store.sqlite.store import SqliteStore  # noqa: E402
from engine.values import Chunk, Collection, Document  # noqa: E402

import numpy as np  # noqa: E402

MODEL = "l2_supercat_256"


def build(db: str, docs: int, per: int) -> int:
    store = SqliteStore(db)
    store.add_collection(Collection("B", "/srv/bench"))
    rng = np.random.default_rng(7)
    ids: list[str] = []
    with store.batch():
        for d in range(docs):
            text = " ".join(f"word{(d * 31 + i) % 5000}" for i in range(per * 125))
            fp = f"f{d:05d}.txt"
            chunks = [
                Chunk(
                    "B",
                    fp,
                    i,
                    f"{d:05d}-{i:03d}" + "0" * 55,
                    f"h{d}",
                    i * 1000,
                    i * 1000 + 1000,
                    text[i * 1000 : i * 1000 + 1000],
                )
                for i in range(per)
            ]
            doc = Document("B", fp, f"h{d}", "k", "txt", "indexed", chunk_count=per, text_length=len(text))
            store.replace_document(doc, text, chunks)
            ids += [c.chunk_id for c in chunks]
    v = rng.standard_normal((len(ids), 256)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    store.add_vectors(MODEL, ids, v)
    store.close()
    return len(ids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="chunknav-archive-") as tmp:
        src_db = os.path.join(tmp, "src.db")
        n = build(src_db, a.docs, a.chunks)
        src = Engine(Settings(db=src_db, embed_provider="none"))
        times: dict[str, list[float]] = {
            "migrate SQLite -> SQLite (anchor)": [],
            "export -> archive": [],
            "import archive -> SQLite": [],
        }
        size = 0
        for r in range(a.repeat):
            dst = SqliteStore(os.path.join(tmp, f"m{r}.db"))
            t0 = time.perf_counter()
            migrate(src.store, dst)
            times["migrate SQLite -> SQLite (anchor)"].append(time.perf_counter() - t0)
            dst.close()
            archive = os.path.join(tmp, f"a{r}.chunknav")
            t0 = time.perf_counter()
            src.export_archive(archive)
            times["export -> archive"].append(time.perf_counter() - t0)
            size = os.path.getsize(archive)
            imp = Engine(Settings(db=os.path.join(tmp, f"i{r}.db"), embed_provider="none"))
            t0 = time.perf_counter()
            imp.import_archive(archive)
            times["import archive -> SQLite"].append(time.perf_counter() - t0)
            imp.close()
        src.close()
    print(f"{a.docs} documents, {n} chunks of 1000 characters, {n} vectors of 256 float32; archive {size / 1e6:.1f} MB")
    anchor = statistics.median(times["migrate SQLite -> SQLite (anchor)"])
    print(f"{'copy':<36} {'median s':>9} {'chunks/s':>10} {'x anchor':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<36} {med:>9.3f} {n / med:>10.0f} {med / anchor:>9.2f}")


if __name__ == "__main__":
    main()
