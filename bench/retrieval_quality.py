"""Retrieval quality on the evaluation set: recall@5, recall@10 and MRR@10 per mode and per kind.

Usage: .venv/bin/python bench/retrieval_quality.py [--db PATH] [--modes vector,keyword,hybrid]
       [--vector-weight W] [--misses]

Indexes tests/corpus (collection ``Corpus``) with the local model into a fresh
SQLite file (or reuses ``--db`` when it already holds the collection), then
asks every question of ``tests/data/eval_questions.json`` through the
``search_chunks`` tool in each mode. A question is answered at rank r when the
r-th hit (0-based) comes from its file and its chunk touches the answer
phrase (its start..end overlaps the phrase). Prints one table per metric: rows = kinds (and "all"), columns = modes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.config import Settings  # noqa: E402
from engine.tools.registry import Engine  # noqa: E402
from tests.fixtures.eval_text import CORPUS, load_questions, metrics, rank_of_answer  # noqa: E402


def open_engine(db: str | None) -> Engine:
    """An Engine over ``db`` (a temp file when None) with tests/corpus indexed as ``Corpus``."""
    path = db or str(Path(tempfile.mkdtemp(prefix="chunknav-quality-")) / "index.db")
    engine = Engine(Settings(db=path, embed_provider="local").validate())
    if engine.store.get_collection("Corpus") is None:
        engine.add_collection("Corpus", str(CORPUS))
    t0 = time.perf_counter()
    summary = engine.run_index()
    print(
        f"index {path}: {summary.get('indexed', 0)} indexed, {summary.get('unchanged', 0)} unchanged "
        f"in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return engine


def table(results: dict[str, dict[str, list]], questions: list[dict]) -> str:
    """Markdown tables of r5 / r10 / mrr10: one row per kind plus 'all', one column per mode."""
    kinds = ["all"] + sorted({q["kind"] for q in questions})
    modes = list(results)
    lines = []
    for metric, title in (("r5", "recall@5"), ("r10", "recall@10"), ("mrr10", "MRR@10")):
        lines.append(f"\n{title}\n")
        lines.append("| kind | n | " + " | ".join(modes) + " |")
        lines.append("|---|---|" + "---|" * len(modes))
        for kind in kinds:
            idx = [i for i, q in enumerate(questions) if kind == "all" or q["kind"] == kind]
            cells = [f"{metrics([results[m]['ranks'][i] for i in idx])[metric]:.3f}" for m in modes]
            lines.append(f"| {kind} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation and print the tables; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", help="reuse this SQLite index (built when missing)")
    ap.add_argument("--modes", default="vector,keyword,hybrid")
    ap.add_argument("--vector-weight", type=float, default=None, help="hybrid vectorWeight argument")
    ap.add_argument("--misses", action="store_true", help="list the questions each mode missed")
    args = ap.parse_args(argv)
    questions = load_questions()
    engine = open_engine(args.db)
    results: dict[str, dict[str, list]] = {}
    try:
        for mode in args.modes.split(","):
            extra = {"vectorWeight": args.vector_weight} if args.vector_weight is not None and mode == "hybrid" else {}
            t0 = time.perf_counter()
            ranks = [rank_of_answer(engine, q, mode, extra=extra) for q in questions]
            results[mode] = {"ranks": ranks, "seconds": time.perf_counter() - t0}
            print(f"{mode}: {len(questions)} questions in {results[mode]['seconds']:.1f} s", file=sys.stderr)
    finally:
        engine.close()
    print(f"{len(questions)} questions over tests/corpus (tests/data/eval_questions.json)")
    print(table(results, questions))
    if args.misses:
        for mode, r in results.items():
            missed = [q["id"] for q, rank in zip(questions, r["ranks"]) if rank is None or rank >= 5]
            print(f"\n{mode} missed@5: {' '.join(missed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
