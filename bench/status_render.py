"""Status page render time at 10k documents, against the ``index_status`` call it renders.

    .venv/bin/python bench/status_render.py [--documents 10000] [--renders 5]

Builds a real SQLite index of ``--documents`` small text files (plus 50
broken PDFs that fail and 100 files of an unsupported type that are
skipped) with the CLI's indexer, then times:

* ``index_status`` (the registry call, no probe): the anchor;
* the Status page rendered by Streamlit's AppTest (the whole app script,
  sidebar included), median of ``--renders`` renders, no probe (the page
  probes on demand only);
* the same page with the probe asked (the local model: one embedding).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build(root: Path, db: str, n: int) -> None:
    from engine.config import Settings
    from engine.index.indexer import Indexer
    from engine.store.sqlite.store import SqliteStore
    from engine.values import Collection

    root.mkdir(parents=True)
    for i in range(n):
        sub = root / f"d{i // 1000:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:05d}.txt").write_text(f"document {i} about topic {i % 97} and more words " * 5, "utf-8")
    for i in range(50):
        (root / f"broken-{i:02d}.pdf").write_bytes(b"%PDF-1.7 not really")
    for i in range(100):
        (root / f"notes-{i:03d}.xyz").write_text("unsupported", "utf-8")
    settings = Settings(db=db, embed_provider="none", ocr="off")
    store = SqliteStore(db)
    store.add_collection(Collection("Bench", str(root)))
    Indexer(store, settings).run()
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--documents", type=int, default=10_000)
    ap.add_argument("--renders", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "index.db")
        t = time.perf_counter()
        build(Path(d) / "root", db, args.documents)
        print(f"built {args.documents} documents in {time.perf_counter() - t:.1f} s")
        os.environ.update(CHUNKNAV_DB=db, EMBED_PROVIDER="local", CHUNKNAV_ALLOWED_ROOTS=d)
        from streamlit.testing.v1 import AppTest

        from engine.config import load_settings
        from engine.tools.registry import Engine, call_tool

        eng = Engine(load_settings())
        tool = []
        for _ in range(args.renders):
            t = time.perf_counter()
            call_tool(eng, "index_status", {"probe": False})
            tool.append(time.perf_counter() - t)
        eng.close()
        at = AppTest.from_file(str(REPO / "explorer" / "app.py"), default_timeout=120).run()
        t = time.perf_counter()
        at.switch_page("../pages/status.py").run()
        first = time.perf_counter() - t
        renders = []
        for _ in range(args.renders):
            t = time.perf_counter()
            at.run()
            renders.append(time.perf_counter() - t)
        assert not at.exception, at.exception
        t = time.perf_counter()
        at.button(key="status_probe").click().run()
        probed = time.perf_counter() - t
    anchor = statistics.median(tool)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'row':<34} {'seconds':>8} {'x index_status':>14}")
    for label, s in (
        ("index_status (no probe)", anchor),
        ("Status page, first render", first),
        ("Status page, render (median)", statistics.median(renders)),
        ("Status page, render (worst)", max(renders)),
        ("Status page, probe asked", probed),
    ):
        print(f"{label:<34} {s:>8.3f} {s / anchor:>14.1f}")


if __name__ == "__main__":
    main()
