"""Throughput of the local embedding provider (WordLlama l2_supercat 256-d), in chunks/s.

Embeds 1000-character windows (overlap 150, as the default chunking) of real
text: Tiny Shakespeare (verse), the text of every PDF in the shared corpus
(tables, forms, a federal register notice, papers) and one paper alone. For each batch size it
times two paths, best of ``--repeat`` runs:

* ``raw``: ``WordLlamaInference.embed(texts, batch_size=b)`` in input order
  (every batch padded to its longest member);
* ``engine``: ``engine.embed.LocalEmbedder(batch=b).embed(texts)``, which sorts
  a call's texts by length into batches (count <= b, count x longest <= a
  character budget) and L2-normalises.

Also prints the model load time and the single-query latency. Run from the
repo root::

    .venv/bin/python bench/embed_throughput.py [--windows 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import embed as E  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
SIZE, OVERLAP = 1000, 150
BATCHES = (16, 32, 64, 512)


def cut(text: str, limit: int) -> list[str]:
    step = SIZE - OVERLAP
    out = [text[i : i + SIZE] for i in range(0, max(len(text) - OVERLAP, 1), step)]
    return [w for w in out if w.strip()][:limit]


def pdf_text(name: str) -> str:
    import fitz  # PyMuPDF, only for the bench's input text

    with fitz.open(CORPUS / "pdf" / name) as doc:
        return "\n".join(page.get_text() for page in doc)


def best_rate(fn, n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=2000, help="windows per corpus (max)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell; the best is kept")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model = E._shared_model()
    load_s = time.perf_counter() - t0

    corpora = {
        "tinyshakespeare": cut((CORPUS / "text" / "tinyshakespeare-input.txt").read_text("utf-8"), args.windows),
        "corpus PDFs (24 files)": [
            w for p in sorted((CORPUS / "pdf").glob("*.pdf")) for w in cut(pdf_text(p.name), args.windows)
        ][: args.windows],
        "tracemonkey (pdf)": cut(pdf_text("tracemonkey.pdf"), args.windows),
    }
    e_query = E.LocalEmbedder(query_memo=0)  # the same question 200 times: each one embedded
    e_query.probe()
    q_ms = 1000 / best_rate(lambda: e_query.embed_query("who killed the king?"), 1, 200)

    print(f"model load: {load_s:.2f} s   query latency (best of 200): {q_ms:.2f} ms")
    print(f"windows: {SIZE} chars, overlap {OVERLAP}; chunks/s, best of {args.repeat}\n")
    header = f"{'corpus':24} {'windows':>7} {'tokens/win':>10} " + " ".join(
        f"{'raw b=' + str(b):>10} {'eng b=' + str(b):>10}" for b in BATCHES
    )
    print(header)
    print("-" * len(header))
    for name, texts in corpora.items():
        tokens = sum(len(enc.ids) for enc in model.tokenize(texts[:200])) / min(len(texts), 200)
        cells = []
        for b in BATCHES:
            raw = best_rate(lambda: model.embed(texts, norm=True, batch_size=b), len(texts), args.repeat)
            emb = E.LocalEmbedder(batch=b)
            emb.probe()
            eng = best_rate(lambda: emb.embed(texts), len(texts), args.repeat)
            cells.append(f"{raw:10.0f} {eng:10.0f}")
        print(f"{name:24} {len(texts):7d} {tokens:10.0f} " + " ".join(cells))


if __name__ == "__main__":
    main()
