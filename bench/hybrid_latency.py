"""Hybrid vs vector (and keyword) search latency at scale, in one run: ``search_latency.py --hybrid``.

Usage: .venv/bin/python bench/search_latency.py --hybrid [n] [--no-tidy] [--no-term-lists]  (default n = 100000 chunks)

Builds a fresh SQLite index of ``n`` chunks whose texts are the real windows
of tests/corpus (cycled over files of 50 chunks in 20 collections, so BM25
sees real term statistics, CJK chunks included) with one random unit 256-d
vector per chunk under the local model's name, through the store's own
``replace_document`` / ``add_vectors`` (FTS rows written as the indexer
writes them), then merges the keyword index as an index run does after writing chunks
(``tidy_keyword_index``; ``--no-tidy`` leaves it as written, unmerged). Then asks the 116 evaluation questions through
``ContentChunkSearch.search`` (the local model embeds each query; scope =
every collection, limit 10) and prints two tables, each with hybrid / vector
p50 in the same run (target: hybrid p50 <= 1.5x vector p50):

1. each question asked for the first time, hybrid then vector (alternated):
   the any-term keyword pass finds in the per-term lists
   (``engine/store/sqlite/term_scores.py``) only what the questions before it left,
   the case of a new question in a running server;
2. asked again: vector, keyword and hybrid mode interleaved per question,
   twice, after one untimed keyword pass over every question (so a term asked
   for twice has its list, as in a long session).

``--no-term-lists`` scores every any-term pass with FTS5's OR query (the rows
without per-term lists). In table 2, beside the engine's own hybrid
(its timed choice, ``engine.search.hybrid._HYBRID_CHOICE``) it times the two ways
forced: "1-by-1" (one list after the other) and "shared" (keyword thread that
then scores blocks of the vector scan, ``engine/store/scan_share.py``), prints CPU
ms per query of this process, the choice's and the BLAS threads' timings and
the load average.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import engine as _engine_first  # noqa: E402,F401  (before numpy, as the CLI and MCP server do: engine/__init__.py)
import numpy as np  # noqa: E402

from engine.store.threads import FixedChoice  # noqa: E402
from engine.chunk import chunk_id  # noqa: E402
from engine.config import Settings  # noqa: E402
from engine.values import Chunk, Document  # noqa: E402
from engine.tools.registry import Engine  # noqa: E402
from tests.fixtures.eval_text import CORPUS, corpus_windows, load_questions  # noqa: E402

PER_FILE = 50
COLLECTIONS = 20
DIM = 256


def build(engine: Engine, n: int, model: str) -> str:
    """n chunks in files of PER_FILE over COLLECTIONS collections, plus a random vector each;
    then the keyword index is merged as ``chunknav index`` does after a run that wrote chunks
    (``tidy_keyword_index``). Returns a line saying the FTS5 segments before/after."""
    windows = corpus_windows()
    rng = np.random.default_rng(0)
    store = engine.store
    made = 0
    f = 0
    with store.batch():
        while made < n:
            coll = f"Bench/C{f % COLLECTIONS:02d}"
            fp = f"f{f:06d}.txt"
            h = f"{f:064x}"
            texts = [f"{windows[(made + k) % len(windows)]} u{made + k}" for k in range(min(PER_FILE, n - made))]
            chunks, pos = [], 0
            for k, t in enumerate(texts):
                chunks.append(Chunk(coll, fp, k, chunk_id(h, t), h, pos, pos + len(t), t))
                pos += len(t)
            store.replace_document(
                Document(coll, fp, h, "bench", "txt", "indexed", chunk_count=len(chunks), text_length=pos),
                "".join(texts),
                chunks,
            )
            v = rng.standard_normal((len(chunks), DIM), dtype=np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            store.add_vectors(model, [c.chunk_id for c in chunks], v)
            made += len(chunks)
            f += 1
    for i in range(COLLECTIONS):
        from engine.values import Collection

        store.add_collection(Collection(f"Bench/C{i:02d}", str(CORPUS), None))
    from engine.store.sqlite.keyword import fts_segments

    with store._read() as conn:
        before = fts_segments(conn)
    if "--no-tidy" in sys.argv:  # the index as written, unmerged
        return f"keyword index: {before} FTS5 segments (not merged: --no-tidy)"
    merged = store.tidy_keyword_index(made)
    with store._read() as conn:
        after = fts_segments(conn)
    return f"keyword index: {before} FTS5 segments -> {after} (merged as an index run does: {merged})"


def pct(xs: list[float]) -> tuple[float, float]:
    a = np.asarray(xs) * 1000
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def main(argv: list[str] | None = None) -> int:
    """Build, measure, print the table; returns 0."""
    import os

    import engine.search.hybrid as search_mod  # its _HYBRID_CHOICE is the timed choice

    args = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("--")]
    n = int(args[0]) if args else 100_000
    work = Path(tempfile.mkdtemp(prefix="chunknav-hybrid-"))
    chosen = search_mod._HYBRID_CHOICE
    # hybrid = what the engine does (its own timed choice); the two forced variants are
    # timed beside it: one after the other, and keyword thread + shared scan blocks
    variants = {
        "vector": ("vector", None),
        "keyword": ("keyword", None),
        "hybrid": ("hybrid", chosen),
        "hybrid 1-by-1": ("hybrid", FixedChoice(1)),
        "hybrid shared": ("hybrid", FixedChoice(2)),
    }
    try:
        engine = Engine(Settings(db=str(work / "index.db"), embed_provider="local").validate())
        model = engine.search.embedder().model
        t0 = time.perf_counter()
        tidy = build(engine, n, model)
        print(
            f"built {n:,} chunks in {time.perf_counter() - t0:.1f} s; {tidy}; load average {os.getloadavg()}",
            flush=True,
        )
        questions = [q["query"] for q in load_questions()]
        names = list(variants)
        lists_off = "--no-term-lists" in sys.argv[1:]
        if lists_off:  # the any-term pass as FTS5's OR query every time (no per-term lists)
            import engine.store.sqlite.keyword as sk

            sk.any_term_refs = lambda *a, **k: None
        for name in names:  # warm: matrix file, FTS pages, model, the hybrid choice's first timings
            mode, choice = variants[name]
            search_mod._HYBRID_CHOICE = choice or chosen
            for q in questions[:3]:
                engine.search.search(q, "*", 10, mode)
        # 1. each question asked for the first time: hybrid (the engine's choice) is the first
        # keyword search of the question, so its any-term pass finds only what the questions
        # before it left in the per-term lists (engine/store/sqlite/term_scores.py); vector beside it
        search_mod._HYBRID_CHOICE = chosen
        first: dict[str, list[float]] = {"vector": [], "hybrid": []}
        for i, q in enumerate(questions[3:]):
            for mode in ("hybrid", "vector") if i % 2 == 0 else ("vector", "hybrid"):
                t = time.perf_counter()
                out = engine.search.search(q, "*", 10, mode)
                first[mode].append(time.perf_counter() - t)
                assert out.searched, out
        for q in questions:  # untimed: a term asked for twice now has its list (as in a long session)
            engine.search.search(q, "*", 10, "keyword")
        # 2. asked again: every variant, interleaved per question, twice (order reversed)
        times: dict[str, list[float]] = {m: [] for m in names}
        cpu: dict[str, float] = {m: 0.0 for m in names}
        for rep in range(2):
            for q in questions:
                for name in names if rep % 2 == 0 else names[::-1]:
                    mode, choice = variants[name]
                    search_mod._HYBRID_CHOICE = choice or chosen
                    c = time.process_time()
                    t = time.perf_counter()
                    out = engine.search.search(q, "*", 10, mode)
                    times[name].append(time.perf_counter() - t)
                    cpu[name] += time.process_time() - c
                    assert out.searched, out
        search_mod._HYBRID_CHOICE = chosen
        store = engine.store
        lists = getattr(store, "_df_cache", {}).get("term_lists")
        kept = (
            (
                f"per-term lists: {lists.size:,} postings of {len(lists._lists)} terms kept, "
                f"{lists.fetched} fetched, {lists.used} passes answered from them"
            )
            if lists
            else "per-term lists: none" + (" (--no-term-lists)" if lists_off else "")
        )
        engine.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fv, fh = pct(first["vector"]), pct(first["hybrid"])
    print(
        f"\n1. each question asked for the first time ({len(first['hybrid'])} questions; the term lists hold "
        "what the questions before it left)"
    )
    print(f"{'mode':>14} | {'p50 ms':>8} | {'p95 ms':>8} | {'p50 / vector p50':>16}")
    for name, (p50, p95) in (("vector", fv), ("hybrid", fh)):
        print(f"{name:>14} | {p50:8.2f} | {p95:8.2f} | {p50 / fv[0]:15.2f}x")
    vec = pct(times["vector"])
    print("\n2. asked again (every question once more in keyword mode first, untimed), interleaved, twice")
    print(f"{'mode':>14} | {'p50 ms':>8} | {'p95 ms':>8} | {'p50 / vector p50':>16} | {'CPU ms/query':>12}")
    for name in names:
        p50, p95 = pct(times[name])
        print(
            f"{name:>14} | {p50:8.2f} | {p95:8.2f} | {p50 / vec[0]:15.2f}x | {cpu[name] / len(times[name]) * 1000:12.2f}"
        )
    print(kept)
    import engine.store.threads as blas

    per_row = {k: (f"{v * 1e9:.1f} ns/row" if v else "untimed") for k, v in chosen.per_row_s.items()}
    blas_row = {k: (f"{v * 1e9:.1f} ns/row" if v else "untimed") for k, v in blas._choice.per_row_s.items()}
    print(
        f"({n:,} chunks, {len(questions)} evaluation questions x 2, limit 10, scope '*', local model "
        "embeds each query; target hybrid p50 <= 1.5x vector p50;\n hybrid = the engine's timed choice "
        f"(1 = one list after the other, 2 = keyword thread + shared scan: {per_row});\n the vector scan's "
        f"BLAS threads (engine.store.threads): {blas_row}; load average "
        f"{os.getloadavg()})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
