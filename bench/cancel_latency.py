"""Cancel latency: how long a run takes to stop once cancel is asked, at random moments.

    .venv/bin/python bench/cancel_latency.py [--cancels 10] [--workers 0] [--seed 1]

The corpus: 40 small text files, a 300-page PDF, a 4-page scan (page images
without a text layer, OCR'd: seconds a page) and 20 more text files; a real SQLite index, the
engine's own cancel event set from another thread (what the explorer's
button and the CLI's signal handler set). Each of ``--cancels`` runs is
cancelled at a random moment in the first ``0.9 x`` the full run's time, and
timed from the request to the run's return.

Rows:

* ``full run``: the same run uncancelled (the anchor: what a cancel that
  waits for the files read ahead can cost at worst);
* ``cancel, median`` and ``cancel, worst`` over the cancels, with the ratio
  to the anchor.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config import Settings  # noqa: E402
from engine.index.indexer import Indexer  # noqa: E402
from engine.store.sqlite.store import SqliteStore  # noqa: E402
from engine.values import Collection  # noqa: E402


def _pdf(path: Path, pages: int) -> None:
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        text = "\n".join(f"page {i} line {j}: the quick brown fox jumps over the lazy dog" for j in range(40))
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 760), text, fontsize=10)
    doc.save(path)


def _scan(path: Path, pages: int) -> None:
    """A PDF of page images without a text layer: OCR'd with ``ocr=auto`` (seconds a page)."""
    import pymupdf

    src = Path(str(path) + ".src.pdf")
    _pdf(src, pages)
    text, scan = pymupdf.open(src), pymupdf.open()
    for page in text:
        pix = page.get_pixmap(dpi=150)
        scan.new_page(width=page.rect.width, height=page.rect.height).insert_image(page.rect, pixmap=pix)
    scan.save(path)
    src.unlink()


def corpus(root: Path) -> None:
    root.mkdir(parents=True)
    for i in range(40):
        (root / f"a{i:02d}.txt").write_text(f"small file {i} words " * 400, "utf-8")
    _pdf(root / "m-book.pdf", 300)
    _scan(root / "n-scan.pdf", 4)
    for i in range(20):
        (root / f"z{i:02d}.txt").write_text(f"small file after {i} " * 400, "utf-8")


def one_run(root: Path, workers: int, cancel_after: float | None) -> tuple[float, float | None, str]:
    """(run seconds, seconds from cancel to return or None, status) of one fresh index."""
    with tempfile.TemporaryDirectory() as d:
        settings = Settings(db=os.path.join(d, "i.db"), ocr="auto", embed_provider="none", extract_workers=workers)
        store = SqliteStore(settings.db)
        store.add_collection(Collection("C", str(root)))
        cancel = threading.Event()
        asked: dict[str, float] = {}

        def later() -> None:
            if not cancel.wait(cancel_after):
                asked["at"] = time.perf_counter()
                cancel.set()

        t0 = time.perf_counter()
        timer = threading.Thread(target=later, daemon=True) if cancel_after is not None else None
        if timer:
            timer.start()
        summary = Indexer(store, settings).run(cancel=cancel)
        end = time.perf_counter()
        cancel.set()
        store.close()
        return end - t0, (end - asked["at"]) if "at" in asked else None, summary["status"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cancels", type=int, default=10)
    ap.add_argument("--workers", type=int, default=0, help="extract_workers (0: auto)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "root"
        corpus(root)
        full, _, status = one_run(root, args.workers, None)
        latencies = []
        for _ in range(args.cancels):
            _run, latency, status = one_run(root, args.workers, rng.uniform(0.05, 0.9) * full)
            if latency is not None and status == "cancelled":
                latencies.append(latency)
    print(f"load average {os.getloadavg()[0]:.1f}, {len(latencies)} of {args.cancels} runs cancelled")
    print(f"{'row':<16} {'seconds':>8} {'x full run':>10}")
    print(f"{'full run':<16} {full:>8.2f} {1.0:>10.2f}")
    if latencies:
        med, worst = statistics.median(latencies), max(latencies)
        print(f"{'cancel, median':<16} {med:>8.2f} {med / full:>10.3f}")
        print(f"{'cancel, worst':<16} {worst:>8.2f} {worst / full:>10.3f}")


if __name__ == "__main__":
    main()
