"""Peak disk use of a first index, as a ratio to its final size and to the text it holds.

Usage::

    .venv/bin/python bench/index_disk_peak.py [--files 400] [--kb 30] [--embed] [--repeat 1]

Builds ``--files`` text files of ``--kb`` KiB of made-up words (seeded, no two alike), then
indexes them into a fresh SQLite file twice: with the write-ahead log checkpointed after
each commit batch once it holds ``CHECKPOINT_WAL_BYTES`` (what chunknav does), and with
that turned off (SQLite's own checkpoint every 1000 pages only). The index runs in a child
process (``chunknav index``, ``EMBED_PROVIDER=none`` or ``local`` with ``--embed``); this
process adds up the sizes of every file in the index folder (database, ``-wal``, ``-shm``,
vector cache files) every 2 ms. The table gives per case the peak, the final size after the
run (its log checkpointed at close), the peak of the ``-wal`` alone, and the ratios
peak / final and peak / text: the anchor is the final size of the same run.
``docs/operations.md`` quotes peak / text as the factor of the free-space check.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import sys
sys.path.insert(0, {repo!r})
from engine.store.sqlite import connections
if not {checkpoint!r}:
    connections.Connections.checkpoint_wal_bytes = 0
from engine.faces.cli import main
assert main(["--db", {db!r}, "collections", "add", "B", {root!r}, "--allow-any-root"]) == 0
sys.exit(main(["--db", {db!r}, "index"]))
"""


def write_corpus(folder: Path, files: int, kib: int) -> int:
    """``files`` text files of about ``kib`` KiB each; returns their total bytes."""
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10))) for _ in range(20000)]
    total = 0
    for i in range(files):
        out, size = [], 0
        while size < kib * 1024:
            w = rng.choice(words)
            out.append(w)
            size += len(w) + 1
        data = " ".join(out).encode()
        (folder / f"doc{i:05}.md").write_bytes(data)
        total += len(data)
    return total


def folder_bytes(folder: Path) -> tuple[int, int]:
    """(bytes of every file in ``folder``, bytes of its ``-wal`` files)."""
    total = wal = 0
    for entry in os.scandir(folder):
        try:
            size = entry.stat().st_size
        except OSError:
            continue
        total += size
        if entry.name.endswith("-wal"):
            wal += size
    return total, wal


def one_run(root: Path, checkpoint: bool, embed: bool) -> dict[str, float]:
    """Index ``root`` into a fresh folder; peak and final bytes sampled every 2 ms."""
    work = Path(tempfile.mkdtemp(prefix="chunknav-disk-"))
    db = str(work / "i.db")
    env = {**os.environ, "EMBED_PROVIDER": "local" if embed else "none"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(repo=str(REPO), checkpoint=checkpoint, db=db, root=str(root))],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    peak = wal_peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, wal_peak
        while not done.is_set():
            total, wal = folder_bytes(work)
            peak, wal_peak = max(peak, total), max(wal_peak, wal)
            time.sleep(0.002)

    t = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    t.start()
    rc = child.wait()
    seconds = time.perf_counter() - t0
    done.set()
    t.join()
    final, _ = folder_bytes(work)
    shutil.rmtree(work, ignore_errors=True)
    if rc != 0:
        raise SystemExit(f"the index run failed (exit {rc})")
    return {"peak": peak, "final": final, "wal": wal_peak, "seconds": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--kb", type=int, default=30, help="KiB of text per file")
    ap.add_argument("--embed", action="store_true", help="also embed with the local model")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (the median peak is shown)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="chunknav-disk-corpus-"))
    try:
        text = write_corpus(root, args.files, args.kb)
        mib = 1 << 20
        print(f"{args.files} files, {text / mib:.1f} MiB of text, embedding {'local' if args.embed else 'none'}")
        print(
            f"{'case':<26} {'peak MiB':>9} {'final MiB':>10} {'wal MiB':>8} {'peak/final':>11} {'peak/text':>10} {'s':>6}"
        )
        for label, checkpoint in (("checkpoint at 4 MiB", True), ("SQLite's own checkpoint", False)):
            runs = sorted((one_run(root, checkpoint, args.embed) for _ in range(args.repeat)), key=lambda r: r["peak"])
            r = runs[len(runs) // 2]
            print(
                f"{label:<26} {r['peak'] / mib:>9.1f} {r['final'] / mib:>10.1f} {r['wal'] / mib:>8.1f} "
                f"{r['peak'] / r['final']:>11.2f} {r['peak'] / text:>10.2f} {r['seconds']:>6.1f}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
