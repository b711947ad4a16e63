"""``search`` (one hit per file): asking for more hits never reorders or rescores the first ones.

In hybrid mode an RRF score depends on the fusion depth, so the depth must not
depend on ``limit``: it is the first of ``max(limit, FUSION_DEPTH)`` x 1, 4, 16, ... whose fused chunks come from
``max(limit, FUSION_DEPTH)`` files (or every file of the scope, or the whole lists):
for limits up to 20 it does not depend on the limit. Checked on the real index of
the bundled samples (7 files of four formats, the real local embedding model), for
many questions, every mode and limits 1..20, and on 40 one-chunk files (stub
embeddings) where the top-20 pass suffices, through ``call_tool`` (what the CLI and
MCP faces call).
"""

from __future__ import annotations

import pytest

from engine.tools.registry import call_tool
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION

QUERIES = [
    "how many people were checked before buying guns",
    "two column layout lorem",
    "table",
    "table population",
    "extract tables from a PDF with python",
    "background checks by state and month",
    "word document with merged cells",
    "la république française",
    "a minimal document",
    "pages of a LaTeX paper",
    "install pdfplumber with pip",
    "firearm permit handgun long gun",
    "lorem ipsum dolor sit amet",
    "what does the chart show",
    "crop the page and extract words",
    "totals per year",
    "visual debugging of the page",
    "cells rows columns",
    "zebra quantum marmalade",  # matches nothing by keyword: the vector list alone
]
LIMITS = [1, 2, 3, 5, 8, 13, 20]


def _key(h: dict) -> tuple:
    return (
        h["filePath"],
        h["chunkIndex"],
        h["rank"],
        h["score"],
        h.get("vectorRank"),
        h.get("vectorScore"),
        h.get("keywordRank"),
        h.get("keywordScore"),
        h["snippet"],
    )


@pytest.mark.parametrize("mode", ["auto", "hybrid", "vector", "keyword"])
def test_more_hits_never_reorder_or_rescore_the_first_ones(sample_engine, mode):
    checked = 0
    for query in QUERIES:
        for weight in [None, 0.3] if mode == "hybrid" else [None]:
            args = {"query": query, "scope": SAMPLE_COLLECTION, "mode": mode}
            if weight is not None:
                args["vectorWeight"] = weight
            answers = {n: call_tool(sample_engine, "search", {**args, "limit": n}) for n in LIMITS}
            for n, env in answers.items():
                assert env["searched"] and env["count"] <= n, env
                files = [h["filePath"] for h in env["hits"]]
                assert len(files) == len(set(files)), files  # one hit per file
                scores = [h["score"] for h in env["hits"]]
                assert scores == sorted(scores, reverse=True), (query, mode, n, scores)  # best first
            for small, big in zip(LIMITS, LIMITS[1:]):
                a, b = answers[small]["hits"], answers[big]["hits"]
                assert [_key(h) for h in a] == [_key(h) for h in b[: len(a)]], (query, mode, small, big)
                assert len(a) == small or len(a) == len(b), (query, small, len(a), len(b))  # no file lost
                checked += 1
    assert checked >= len(QUERIES) * (len(LIMITS) - 1)


@pytest.fixture
def many_files(tmp_path, embed_stub):
    """A real index of 40 one-chunk .txt files (stub embeddings), so the fused top-20 lists
    of a question reach 20 files and no deeper pass runs."""
    from engine.config import Settings
    from engine.tools.registry import Engine
    from tests.conftest import ALLOWED_ROOTS

    root = tmp_path / "many"
    root.mkdir()
    topics = ["river", "stone", "table", "census", "harbor", "lantern", "meadow", "copper"]
    for i in range(40):
        words = " ".join(topics[(i + k) % len(topics)] for k in range(1 + i % 4))
        (root / f"f{i:02d}.txt").write_text(f"Note {i}: {words} and more {words}.\n", "utf-8")
    eng = Engine(
        Settings(
            db=str(tmp_path / "many.db"),
            allowed_roots=ALLOWED_ROOTS,
            embed_provider="ollama",
            embed_url=embed_stub.url,
            embed_model="stub-embed",
            embed_retries=0,
        ).validate()
    )
    eng.add_collection("Many", str(root))
    assert eng.run_index()["indexed"] == 40
    yield eng
    eng.close()


@pytest.mark.slow
def test_with_20_files_in_the_top_20_a_files_score_is_its_chunks_in_search_chunks(many_files):
    """When the fused top-20 lists reach 20 files, ``search`` ranks by the fusion
    ``search_chunks`` uses at limit 20: each file's hit is its first chunk there, same score."""
    for query in ("river stone", "table census harbor", "lantern", "copper meadow river"):
        args = {"query": query, "scope": "Many", "mode": "hybrid", "limit": 20, "maxTokens": 1_000_000}
        chunks = call_tool(many_files, "search_chunks", args)["hits"]
        files = call_tool(many_files, "search", args)["hits"]
        assert len(files) == 20
        best: dict[str, dict] = {}
        for h in chunks:
            best.setdefault(h["filePath"], h)
        for h in files:
            if h["filePath"] in best:
                c = best[h["filePath"]]
                assert (h["chunkIndex"], h["score"], h.get("vectorRank"), h.get("keywordRank")) == (
                    c["chunkIndex"],
                    c["score"],
                    c.get("vectorRank"),
                    c.get("keywordRank"),
                ), query
        assert [h["filePath"] for h in files[: len(best)]] == list(best)[: len(files)], query
        for n in (1, 3, 7, 19):
            assert call_tool(many_files, "search", {**args, "limit": n})["hits"] == files[:n]


def test_two_questions_keep_their_top_hit_at_every_limit(sample_engine):
    """Two questions whose top hit depends on the depth if the depth follows the limit."""
    for query in ("how many people were checked before buying guns", "two column layout lorem"):
        tops = {
            n: call_tool(sample_engine, "search", {"query": query, "scope": SAMPLE_COLLECTION, "limit": n})["hits"][:2]
            for n in (1, 2, 3, 5)
        }
        assert tops[1] == tops[2][:1] == tops[3][:1] == tops[5][:1]
        assert tops[2] == tops[3][:2] == tops[5][:2]


@pytest.mark.slow
def test_no_deeper_pass_once_every_file_of_the_scope_is_reached(tmp_path, embed_stub):
    """A collection of one long file: the first pass reaches its only file, so ``search``
    ranks once (before: 4x deeper until the lists ran out, every pass a scan)."""
    from engine.config import Settings
    from engine.tools.registry import Engine
    from tests.conftest import ALLOWED_ROOTS

    root = tmp_path / "one"
    root.mkdir()
    (root / "long.txt").write_text(" ".join(f"river stone word{i}" for i in range(20_000)), "utf-8")
    eng = Engine(
        Settings(
            db=str(tmp_path / "one.db"),
            allowed_roots=ALLOWED_ROOTS,
            embed_provider="ollama",
            embed_url=embed_stub.url,
            embed_model="stub-embed",
            embed_retries=0,
        ).validate()
    )
    eng.add_collection("One", str(root))
    assert eng.run_index()["indexed"] == 1 and eng.store.get_document("One", "long.txt").chunk_count > 320
    args = {"query": "river stone", "scope": "One", "mode": "hybrid", "limit": 20}
    call_tool(eng, "search", args)  # warm
    statements: list[str] = []
    eng.store._conn().set_trace_callback(statements.append)
    try:
        env = call_tool(eng, "search", args)
    finally:
        eng.store._conn().set_trace_callback(None)
    assert env["count"] == 1 and env["hits"][0]["filePath"] == "long.txt", env
    matches = [s for s in statements if "MATCH" in s]
    # one keyword pass (all terms), one fusion; every chunk scores the same here, so the pass
    # ranks the rows tied at its cut once more, by key (``engine.store.sqlite.keyword``)
    assert len(matches) == 2 and "r.s >= " not in matches[0] and "r.s >= " in matches[1], statements
    eng.close()


@pytest.mark.slow
def test_the_row_id_path_gives_what_the_rows_path_gives(sample_engine, sample_index):
    """``engine.search.hybrid.HybridRanker.per_file`` (the file of each fused row, the hits' rows read once)
    against the path that reads every fused row (taken by a store without ``row_refs``, as
    Postgres): the same hits, order and scores, for every question, limit and weight."""
    from engine.search.searcher import ContentChunkSearch
    from engine.store.sqlite.store import SqliteStore

    class RowsOnly(SqliteStore):
        row_refs = False  # the real SQLite store, searched as a store without row ids

    store = RowsOnly(sample_index.db)
    rows_path = ContentChunkSearch(store, sample_engine.embedder)
    try:
        for query in QUERIES:
            for limit in (1, 5, 20, 30):
                for weight, min_score in ((None, None), (0.3, None), (None, 0.012)):
                    want = sample_engine.search.search(
                        query,
                        SAMPLE_COLLECTION,
                        limit,
                        "hybrid",
                        per_file=True,
                        min_score=min_score,
                        vector_weight=weight,
                    )
                    got = rows_path.search(
                        query,
                        SAMPLE_COLLECTION,
                        limit,
                        "hybrid",
                        per_file=True,
                        min_score=min_score,
                        vector_weight=weight,
                    )
                    assert want.hits and got.hits == want.hits, (query, limit, weight, min_score)
    finally:
        store.close()
