"""File-level quality of the ``search`` tool (one hit per file) on the evaluation set.

Usage: .venv/bin/python bench/file_recall.py [--db PATH]

Indexes tests/corpus (collection ``Corpus``) with the local model into a fresh
SQLite file (or reuses ``--db`` when it already holds the collection), asks every
question of ``tests/data/eval_questions.json`` through ``search`` (default mode:
hybrid) at limits 5, 10 and 20, and prints the share of questions whose file is
the first hit, in the first 3 and in the first 5, and the MRR over files. The
fusion depth of ``search`` does not depend on a limit up to 20, so the first three
columns of the three rows are the same.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.retrieval_quality import open_engine  # noqa: E402
from engine.tools.registry import call_tool  # noqa: E402
from tests.fixtures.eval_text import load_questions  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Print one row per limit; returns 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=None, help="SQLite file to (re)use")
    args = ap.parse_args(argv)
    engine = open_engine(args.db)
    questions = load_questions()
    print("| limit | file@1 | file@3 | file@5 | MRR (files) |\n|---|---|---|---|---|")
    for limit in (5, 10, 20):
        at = {1: 0, 3: 0, 5: 0}
        mrr = 0.0
        for q in questions:
            env = call_tool(engine, "search", {"query": q["query"], "scope": "Corpus", "limit": limit})
            files = [h["filePath"] for h in env.get("hits", [])]
            if q["file"] in files:
                rank = files.index(q["file"])
                mrr += 1.0 / (rank + 1)
                for k in at:
                    at[k] += rank < k
        n = len(questions)
        print(f"| {limit} | {at[1] / n:.3f} | {at[3] / n:.3f} | {at[5] / n:.3f} | {mrr / n:.3f} |")
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
