"""The stat pre-gate: an unchanged re-index of N files with and without it.

Builds N text files (``--files``, default 10,000; ``--kib`` each, default 16), indexes
them once (text only), then times unchanged runs alternately with the pre-gate
(``stat_gate=True``: size, mtime and ctime as stored -> no read) and without it
(every file read and hashed), ``--repeat`` times each, and prints the best and
median of each against the anchor measured in the same run: the run without the
pre-gate. The page cache is warm for both (the files were just written and read):
the hashing measured is sha256 over cached bytes, the cheapest it can be; on a cold
cache the run without the pre-gate also waits for the disk.

    python bench/sync_gate.py [--files 10000] [--kib 16] [--repeat 3]
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
from engine.index.indexer import Indexer  # noqa: E402
from engine.store.sqlite.store import SqliteStore  # noqa: E402
from engine.values import Collection  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--kib", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="chunknav-gate-") as tmp:
        root = Path(tmp) / "root"
        for i in range(a.files):
            folder = root / f"d{i // 500:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            line = f"file {i} words about topic {i % 97} "
            body = (line * (a.kib * 1024 // len(line) + 1))[: a.kib * 1024]
            (folder / f"f{i:05d}.txt").write_text(body, "utf-8")
        db = os.path.join(tmp, "i.db")
        on = Settings(db=db, embed_provider="none", allowed_roots=tmp).validate()
        off = Settings(db=db, embed_provider="none", allowed_roots=tmp, stat_gate=False).validate()
        store = SqliteStore(db)
        store.add_collection(Collection("B", str(root)))
        t0 = time.perf_counter()
        first = Indexer(store, on).run()
        first_s = time.perf_counter() - t0
        Indexer(store, on).run()  # records the stat of every row read before the pre-gate knew it
        times: dict[str, list[float]] = {"without pre-gate (hash every file)": [], "with stat pre-gate": []}
        gated = 0
        for _ in range(a.repeat):
            for name, settings in (("without pre-gate (hash every file)", off), ("with stat pre-gate", on)):
                t0 = time.perf_counter()
                s = Indexer(store, settings).run()
                times[name].append(time.perf_counter() - t0)
                assert s["counts"]["unchanged"] == a.files, s["counts"]
                if settings is on:
                    gated = s["statGated"]
        store.close()
    mb = a.files * a.kib / 1024
    print(f"{a.files} files, {a.kib} KiB each ({mb:.0f} MiB); first index {first_s:.1f} s ({first['indexed']} indexed)")
    print(f"with the pre-gate {gated} of {a.files} files took their stored hash")
    anchor = statistics.median(times["without pre-gate (hash every file)"])
    print(f"{'unchanged re-index':<38} {'best s':>8} {'median s':>9} {'x anchor':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<38} {min(ts):>8.3f} {med:>9.3f} {med / anchor:>9.2f}")


if __name__ == "__main__":
    main()
