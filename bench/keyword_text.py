"""What the keyword text does to real PDFs: line-end splits joined or kept, and its cost.

Usage::

    .venv/bin/python bench/keyword_text.py [pdf_dir]     # default tests/corpus/pdf

Rows: every PDF of ``pdf_dir`` with at least one line-end split, then the total.
Columns: splits (``word-`` at a line end followed by a word), joined and kept by
``engine.store.fts.keyword_text``, and the cost of the keyword text of the whole
document (the document rule plus every chunk of it) as a ratio to the anchor,
extracting the same file (``engine.extract.extract``) in the same run. Then up to
20 kept and 20 joined examples, to judge the rule by eye.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from engine.chunk import windows
from engine.extract import extract
from engine.store.fts import _SPLIT, keyword_text


def main(folder: Path) -> None:
    rows = []
    kept_ex: list[str] = []
    joined_ex: list[str] = []
    total_x = total_k = 0.0
    for p in sorted(folder.glob("*.pdf")):
        t0 = time.perf_counter()
        try:
            x = extract(p)
        except Exception:
            continue
        t1 = time.perf_counter()
        fold = keyword_text(x.text)
        texts = [x.text[w.start : w.end] for w in windows(x.text, 1000, 100)]
        folded = [fold(t) for t in texts]
        t2 = time.perf_counter()
        total_x += t1 - t0
        total_k += t2 - t1
        out = fold(x.text) or x.text
        splits = list(_SPLIT.finditer(x.text))
        kept = [m.group().replace("\n", " ") for m in splits if m.group() in out]
        kept_ex += kept
        joined_ex += [m.group().replace("\n", " ") for m in splits if m.group() not in out]
        if splits:
            changed = sum(f is not None for f in folded)
            rows.append(
                (p.name, len(splits), len(splits) - len(kept), len(kept), changed, len(texts), (t2 - t1) / (t1 - t0))
            )
    print(f"{'file':40} {'splits':>6} {'joined':>6} {'kept':>5} {'chunks folded':>14} {'keyword/extract':>15}")
    for name, n, j, k, c, m, r in rows:
        print(f"{name[:40]:40} {n:6} {j:6} {k:5} {f'{c}/{m}':>14} {r:15.3f}")
    n = sum(r[1] for r in rows)
    j = sum(r[2] for r in rows)
    print(f"{'total':40} {n:6} {j:6} {n - j:5} {'':>14} {total_k / total_x:15.3f}  (anchor: extract {total_x:.2f} s)")
    print("kept:", kept_ex[:20])
    print("joined:", joined_ex[:20])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/corpus/pdf"))
