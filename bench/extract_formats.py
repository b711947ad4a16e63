"""Cost of the OCR, .docx, HTML, EPUB and encoding readers, as ratios against native PDF text extraction.

Anchor: ``extract`` of ``tests/corpus/pdf/pdflatex-4-pages.pdf`` (PyMuPDF words), per page,
measured in the same run. Rows: OCR of the 5 scanned pages of
``tests/corpus/edge/test_4090.pdf`` at 150 / 200 / 300 dpi (``auto``), the .docx XML reader
on ``tests/corpus/docx/test.docx``, the HTML reader, EPUB (MuPDF layout), and decoding a
~1 MB cp1252 text (charset-normalizer) against a ~1 MB UTF-8 one. Best of ``--repeat``.
Run from the repo root::

    .venv/bin/python bench/extract_formats.py [--repeat 3] [--no-ocr]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.extract import extract  # noqa: E402
from engine.extract.ocr import OcrSettings, ocr_unavailable  # noqa: E402

C = ROOT / "tests" / "corpus"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ocr", action="store_true")
    a = ap.parse_args()
    rows = []
    anchor = best(lambda: extract(C / "pdf/pdflatex-4-pages.pdf"), a.repeat) / 4
    rows.append(("PDF native words (anchor)", "page", anchor))
    if not a.no_ocr and ocr_unavailable("eng") is None:
        for dpi in (150, 200, 300):
            s = best(lambda: extract(C / "edge/test_4090.pdf", ocr=OcrSettings("auto", "eng", dpi)), 1) / 5
            rows.append((f"PDF scan, OCR {dpi} dpi", "page", s))
    rows.append(("EPUB (MuPDF layout)", "page", best(lambda: extract(C / "formats/test_open2.epub"), a.repeat) / 42))
    rows.append((".docx XML reader (test.docx)", "file", best(lambda: extract(C / "docx/test.docx"), a.repeat)))
    rows.append(
        ("HTML reader (visible-text.html)", "file", best(lambda: extract(C / "formats/visible-text.html"), a.repeat))
    )
    with tempfile.TemporaryDirectory() as d:
        french = (C / "text/encodings/moliere-cp1252.txt").read_bytes().decode("cp1252")
        big = french * (1_000_000 // len(french))
        (Path(d) / "cp.txt").write_bytes(big.encode("cp1252"))
        (Path(d) / "u8.txt").write_bytes(big.encode("utf-8"))
        rows.append(("1 MB UTF-8 text", "file", best(lambda: extract(Path(d) / "u8.txt"), a.repeat)))
        rows.append(("1 MB cp1252 text (detected)", "file", best(lambda: extract(Path(d) / "cp.txt"), a.repeat)))
    print(f"{'reader':36} {'per':5} {'seconds':>10} {'x anchor page':>14}")
    for name, per, s in rows:
        print(f"{name:36} {per:5} {s:10.4f} {s / anchor:14.1f}")


if __name__ == "__main__":
    main()
