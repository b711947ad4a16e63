"""Highlight precision of line rectangles over every PDF of a corpus.

Usage: .venv/bin/python bench/highlight_precision.py [corpus_dir]   (default tests/corpus)

For each PDF (passwords from tests/corpus/SOURCES.md for the encrypted ones),
extract it and cut it into chunks exactly as the indexer does (default size
1000 / overlap 150), then measure each chunk's drawn rectangles
(``regions[].rects``) against the page's words:

* precision: the share of the highlighted area taken by the chunk's own words
  (each word's box stretched to the height of its line rectangle); the union
  outline (``bbox``) is printed as the anchor it is compared with;
* foreign words: words of the page whose centre lies inside a drawn rectangle
  but that do not overlap the chunk's character span (listed when found);
* coverage: the share of the chunk's words that lie inside some rectangle
  (1e-4 tolerance: rectangles are rounded outwards to a 1/10000 grid);
* bounds: rectangles outside 0..1 (must be 0).

Prints one row per PDF and a total; exits 1 when a rectangle leaves 0..1 or
a chunk word is not covered. ``measure`` is also used by
tests/extract/test_highlight_precision.py.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.chunk import chunk_text  # noqa: E402
from engine.errors import ChunknavError  # noqa: E402
from engine.extract import extract  # noqa: E402

PASSWORDS = {"libreoffice-writer-password.pdf": "openpassword", "password-example.pdf": "test"}
TOL = 1e-4 + 1e-9


@dataclass
class FileReport:
    """Measurements of one PDF; areas are fractions of a page (0..1 x 0..1)."""

    file: str
    chunks: int = 0
    rects: int = 0
    own_area: float = 0.0
    rect_area: float = 0.0
    bbox_own_area: float = 0.0
    bbox_area: float = 0.0
    chunk_words: int = 0
    covered_words: int = 0
    out_of_bounds: int = 0
    bbox_foreign: int = 0  # foreign words inside the union bbox (the one-box anchor)
    foreign: list[tuple[int, int, str]] = field(default_factory=list)  # (chunk, page, word)

    @property
    def precision(self) -> float:
        return self.own_area / self.rect_area if self.rect_area else 1.0

    @property
    def bbox_precision(self) -> float:
        return self.bbox_own_area / self.bbox_area if self.bbox_area else 1.0

    @property
    def coverage(self) -> float:
        return self.covered_words / self.chunk_words if self.chunk_words else 1.0


def _own_area(boxes: np.ndarray, rect: tuple[float, float, float, float]) -> float:
    """Area of the union of word boxes clipped to ``rect`` and stretched to its height."""
    x, y, w, h = rect
    if w <= 0 or h <= 0 or not len(boxes):
        return 0.0
    lo = np.clip(boxes[:, 0], x, x + w)
    hi = np.clip(boxes[:, 0] + boxes[:, 2], x, x + w)
    # centre inside the rect vertically: the word belongs to this line
    cy = boxes[:, 1] + boxes[:, 3] / 2
    keep = (cy >= y - TOL) & (cy <= y + h + TOL) & (hi > lo)
    if not keep.any():
        return 0.0
    spans = sorted(zip(lo[keep].tolist(), hi[keep].tolist()))
    total, cur_lo, cur_hi = 0.0, spans[0][0], spans[0][1]
    for a, b in spans[1:]:
        if a > cur_hi:
            total += cur_hi - cur_lo
            cur_lo, cur_hi = a, b
        else:
            cur_hi = max(cur_hi, b)
    return (total + cur_hi - cur_lo) * h


def measure(
    path: Path, password: str | None = None, size: int = 1000, overlap: int = 150, name: str | None = None
) -> FileReport:
    """Precision, foreign words and coverage of one PDF's chunks (module docstring).

    Raises:
        ChunknavError: the PDF cannot be read (corrupt, encrypted without password).
    """
    ex = extract(path, password)
    report = FileReport(name or path.name)
    words = ex.words
    located = (words.pages > 0) & ~np.isnan(words.boxes[:, 0])
    starts, ends = words.starts[located], words.ends[located]
    pages, boxes = words.pages[located], words.boxes[located]
    text = ex.text
    for win in chunk_text(ex, size, overlap):
        report.chunks += 1
        mine = (ends > win.start) & (starts < win.end)
        for region in win.regions:
            on_page = pages == region.page
            own = boxes[mine & on_page]
            others = np.flatnonzero(~mine & on_page)
            rects = region.rects or (region.bbox,)
            covered = np.zeros(len(own), bool)
            b = region.bbox
            report.bbox_area += b.w * b.h
            report.bbox_own_area += sum(_own_area(own, (r.x, r.y, r.w, r.h)) for r in rects)
            for r in rects:
                rt = (r.x, r.y, r.w, r.h)
                report.rects += 1
                if r.x < 0 or r.y < 0 or r.x + r.w > 1 + 1e-9 or r.y + r.h > 1 + 1e-9 or r.w < 0 or r.h < 0:
                    report.out_of_bounds += 1
                report.rect_area += r.w * r.h
                report.own_area += _own_area(own, rt)
                covered |= (
                    (own[:, 0] >= r.x - TOL)
                    & (own[:, 1] >= r.y - TOL)
                    & (own[:, 0] + own[:, 2] <= r.x + r.w + TOL)
                    & (own[:, 1] + own[:, 3] <= r.y + r.h + TOL)
                )
                ob = boxes[others]
                cx, cy = ob[:, 0] + ob[:, 2] / 2, ob[:, 1] + ob[:, 3] / 2
                inside = (cx > r.x) & (cx < r.x + r.w) & (cy > r.y) & (cy < r.y + r.h)
                for j in others[inside].tolist():
                    report.foreign.append((win.chunk_index, region.page, text[starts[j] : ends[j]]))
            ob = boxes[others]
            cx, cy = ob[:, 0] + ob[:, 2] / 2, ob[:, 1] + ob[:, 3] / 2
            report.bbox_foreign += int(((cx > b.x) & (cx < b.x + b.w) & (cy > b.y) & (cy < b.y + b.h)).sum())
            report.chunk_words += len(own)
            report.covered_words += int(covered.sum())
    return report


def corpus_pdfs(corpus: Path) -> list[tuple[Path, str | None]]:
    """Every readable PDF under ``corpus`` (sorted), with its password where SOURCES.md gives one."""
    return [(p, PASSWORDS.get(p.name)) for p in sorted(corpus.rglob("*.pdf"))]


def main(argv: list[str]) -> int:
    corpus = Path(argv[1]) if len(argv) > 1 else REPO / "tests" / "corpus"
    rows: list[FileReport] = []
    for path, password in corpus_pdfs(corpus):
        try:
            rows.append(measure(path, password, name=str(path.relative_to(corpus))))
        except ChunknavError as e:
            print(f"# skipped {path.relative_to(corpus)}: {e}")
    head = (
        f"{'file':48} {'chunks':>6} {'rects':>6} {'precision':>9} {'bbox prec':>9} {'ratio':>6} "
        f"{'foreign':>7} {'bbox for.':>9} {'coverage':>8} {'oob':>4}"
    )
    print(head)
    print("-" * len(head))
    tot = FileReport("TOTAL")
    for r in rows:
        if not r.chunks:
            continue
        ratio = r.precision / r.bbox_precision if r.bbox_precision else float("nan")
        print(
            f"{r.file:48} {r.chunks:6d} {r.rects:6d} {r.precision:9.3f} {r.bbox_precision:9.3f} "
            f"{ratio:5.2f}x {len(r.foreign):7d} {r.bbox_foreign:9d} {r.coverage:8.4f} {r.out_of_bounds:4d}"
        )
        for k in (
            "chunks",
            "rects",
            "own_area",
            "rect_area",
            "bbox_own_area",
            "bbox_area",
            "chunk_words",
            "covered_words",
            "out_of_bounds",
            "bbox_foreign",
        ):
            setattr(tot, k, getattr(tot, k) + getattr(r, k))
        tot.foreign += [(c, p, f"{r.file}: {w}") for c, p, w in r.foreign]
    print("-" * len(head))
    ratio = tot.precision / tot.bbox_precision
    print(
        f"{'TOTAL (area-weighted)':48} {tot.chunks:6d} {tot.rects:6d} {tot.precision:9.3f} "
        f"{tot.bbox_precision:9.3f} {ratio:5.2f}x {len(tot.foreign):7d} {tot.bbox_foreign:9d} {tot.coverage:8.4f} "
        f"{tot.out_of_bounds:4d}"
    )
    print(
        "precision: own words' line-height area / drawn area; bbox prec: the same for the union "
        "bbox (the seed's one-box highlight, anchor); ratio = precision / bbox prec;\n"
        "foreign: other chunks' words (centre) inside a drawn rect; bbox for.: the same inside the union bbox"
    )
    if tot.foreign:
        print(f"\nforeign words ({len(tot.foreign)}): chunk, page, word")
        for c, p, w in tot.foreign[:80]:
            print(f"  chunk {c:4d} page {p:4d}  {w}")
    return 1 if tot.out_of_bounds or tot.covered_words < tot.chunk_words else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
