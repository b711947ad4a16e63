"""Explore page render time with a deep link asking for 1000 hits, in one run.

Usage: .venv/bin/python bench/hit_list_render.py [files] [repeats]   (default 1000 3)

Builds a keyword-only index of ``files`` small text files that all hold the query word,
then renders the Explore page (Streamlit's AppTest, the whole script as a browser session
runs it) for ``limit=10`` (the anchor), ``limit=1000`` drawn 50 at a time (the page as it
is) and ``limit=1000`` with every row drawn at once (``HITS_PER_SCREEN`` raised to 1000:
what a page without "Show more" does). Also the cost of the hit marks (line numbers and
file state) inside one ``search_chunks`` envelope of 1000 hits. Prints medians and ratios
against the anchor.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _build(tmp: Path, files: int) -> str:
    from engine.config import Settings
    from engine.tools.registry import Engine

    root = tmp / "docs"
    root.mkdir()
    for n in range(files):
        (root / f"f{n:05d}.txt").write_text(f"note {n}\nthe harbour at dawn, number {n}\n" * 3, encoding="utf-8")
    db = str(tmp / "index.db")
    eng = Engine(Settings(db=db, embed_provider="none", allowed_roots=str(tmp)).validate())
    eng.add_collection("Many", str(root))
    eng.run_index()
    eng.close()
    return db


def _render(limit: int) -> float:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    at = AppTest.from_file(str(REPO / "explorer" / "app.py"), default_timeout=600).run()
    for k, v in {"q": "harbour", "scope": "Many", "limit": str(limit), "mode": "keyword"}.items():
        at.query_params[k] = v
    t0 = time.perf_counter()
    at.switch_page("../pages/explore.py").run()
    dt = time.perf_counter() - t0
    assert not at.exception, at.exception
    return dt


def _marks(db: str, repeats: int) -> tuple[float, float]:
    from engine.config import Settings
    from engine.tools import answers
    from engine.tools.registry import Engine

    eng = Engine(Settings(db=db, embed_provider="none").validate())
    outcome = eng.search.search("harbour", "Many", 1000, "keyword", per_file=False)
    bare, marked = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        answers._search_envelope(outcome, False)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        answers._search_envelope(outcome, False, eng)
        marked.append(time.perf_counter() - t0)
    eng.close()
    return statistics.median(bare), statistics.median(marked)


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        db = _build(tmp, files)
        os.environ.update(CHUNKNAV_DB=db, EMBED_PROVIDER="none", CHUNKNAV_ALLOWED_ROOTS=str(tmp))
        from explorer import retrieval

        rows = []
        anchor = statistics.median(_render(10) for _ in range(repeats))
        rows.append(("limit=10 (anchor)", anchor))
        rows.append(("limit=1000, 50 at a time", statistics.median(_render(1000) for _ in range(repeats))))
        shown = retrieval.HITS_PER_SCREEN
        retrieval.HITS_PER_SCREEN = 1000
        try:
            rows.append(("limit=1000, all rows at once", statistics.median(_render(1000) for _ in range(repeats))))
        finally:
            retrieval.HITS_PER_SCREEN = shown
        bare, marked = _marks(db, max(5, repeats))
    print(f"Explore page render, {files} matching files, median of {repeats} (AppTest, whole script)")
    print(f"{'case':<32} {'seconds':>9} {'x anchor':>9}")
    for name, sec in rows:
        print(f"{name:<32} {sec:>9.3f} {sec / anchor:>9.2f}")
    print()
    print("search_chunks envelope of 1000 hits (median)")
    print(f"{'case':<32} {'ms':>9} {'x anchor':>9}")
    print(f"{'without marks (anchor)':<32} {bare * 1000:>9.1f} {1.0:>9.2f}")
    print(f"{'with lines + fileState':<32} {marked * 1000:>9.1f} {marked / bare:>9.2f}")


if __name__ == "__main__":
    main()
