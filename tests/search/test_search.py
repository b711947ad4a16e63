"""search / search_chunks: scopes, modes and every arm of the DESIGN error table.

A real SQLite index of small text files in nested collections, embedded by
the loopback stub (Ollama wire format, deterministic vectors). The failure
arms come from the stub answering with the real servers' error bodies.
"""

import pytest

from engine.config import Settings
from engine.tools.envelopes import ChunkHit, SearchHit, SearchResult
from engine.tools.registry import Engine, ToolArgumentError, call_tool
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.stub import Reply, ollama_error

DOCS = {
    "ACME": {"charter.txt": "The ACME charter describes governance of the anvil cooperative."},
    "ACME/Reports": {
        "q1.md": "# Quarterly report\nRocket skates sold well; anvil sales fell in spring.",
        "q2.md": "# Second quarter\nAnvil sales recovered after the spring discount.",
    },
    "ACME/Reports/Q1": {"notes.txt": "Meeting notes about anvil logistics and rocket skates."},
    "Other": {"zoo.txt": "Penguins and walruses share the cold water enclosure."},
}


def _shape(env, t):
    assert t.__required_keys__ <= set(env) <= t.__required_keys__ | t.__optional_keys__, set(env) ^ t.__required_keys__


@pytest.fixture
def engine(tmp_path, embed_stub):
    for coll, files in DOCS.items():
        root = tmp_path / "roots" / coll.replace("/", "_")
        root.mkdir(parents=True)
        for name, text in files.items():
            (root / name).write_text(text, "utf-8")
    settings = Settings(
        db=str(tmp_path / "index.db"),
        allowed_roots=ALLOWED_ROOTS,
        embed_provider="ollama",
        embed_url=embed_stub.url,
        embed_model="stub-embed",
        embed_retries=0,
    ).validate()
    eng = Engine(settings)
    for coll in DOCS:
        eng.add_collection(coll, str(tmp_path / "roots" / coll.replace("/", "_")))
    summary = eng.run_index()
    assert summary["indexed"] == 5 and summary["embedded"] == 5, summary
    yield eng
    eng.close()


def test_anchored_scope_searches_the_path_and_its_ancestors(engine):
    env = call_tool(engine, "search_chunks", {"query": "anvil", "scope": "ACME/Reports/Q1", "mode": "keyword"})
    _shape(env, SearchResult)
    assert env["searched"] and env["collections"] == ["ACME", "ACME/Reports", "ACME/Reports/Q1"]
    assert {h["collectionPath"] for h in env["hits"]} == {"ACME", "ACME/Reports", "ACME/Reports/Q1"}
    assert [h["rank"] for h in env["hits"]] == list(range(env["count"]))
    for h in env["hits"]:
        _shape(h, ChunkHit)


def test_anchored_scope_does_not_reach_below(engine):
    env = call_tool(engine, "search", {"query": "anvil", "scope": "ACME", "mode": "keyword"})
    assert env["collections"] == ["ACME"]
    assert {h["filePath"] for h in env["hits"]} == {"charter.txt"}


def test_namespace_token_wins_over_scope_and_subtree_widens(engine):
    env = call_tool(engine, "search", {"query": "namespace:ACME/Reports anvil", "scope": "Other", "mode": "keyword"})
    assert env["collections"] == ["ACME/Reports"]
    env = call_tool(engine, "search", {"query": "namespace:ACME scope:subtree anvil", "mode": "keyword"})
    assert env["collections"] == ["ACME", "ACME/Reports", "ACME/Reports/Q1"]
    assert len({(h["collectionPath"], h["filePath"]) for h in env["hits"]}) == env["count"] == 4


def test_namespace_with_a_leading_slash_is_the_collection(engine):
    env = call_tool(engine, "search_chunks", {"query": "namespace:/ACME/Reports/ anvil", "mode": "keyword"})
    assert env["searched"] and env["collections"] == ["ACME/Reports"]
    assert {h["filePath"] for h in env["hits"]} == {"q1.md", "q2.md"}
    assert "hint" not in env or "namespace" not in env["hint"]


def test_no_scope_gives_a_hint_not_a_guess(engine):
    env = call_tool(engine, "search", {"query": "anvil"})
    assert env["searched"] is False and env["hits"] == [] and "scope" in env["hint"]
    assert "error" not in env


def test_no_query_text_is_an_answer(engine):
    env = call_tool(engine, "search_chunks", {"query": "  namespace:ACME ", "mode": "keyword"})
    assert env["searched"] is False and "no query text" in env["message"] and "error" not in env


def test_search_is_one_hit_per_file_and_chunks_are_not_deduped(engine):
    chunks = call_tool(engine, "search_chunks", {"query": "namespace:ACME scope:subtree anvil sales", "mode": "vector"})
    files = call_tool(engine, "search", {"query": "namespace:ACME scope:subtree anvil sales", "mode": "vector"})
    assert files["scoreKind"] == "cosine" and files["model"] == "stub-embed"
    assert len({h["filePath"] for h in files["hits"]}) == files["count"]
    for h in files["hits"]:
        _shape(h, SearchHit)
        assert -1.0 <= h["score"] <= 1.0
    scores = [h["score"] for h in chunks["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_vector_score_is_the_real_cosine(engine):
    import numpy as np

    from tests.fixtures.stub import stub_vector

    env = call_tool(engine, "search_chunks", {"query": "namespace:Other walrus", "mode": "vector"})
    hit = env["hits"][0]
    q = np.array(stub_vector("walrus", 8))
    d = np.array(stub_vector(DOCS["Other"]["zoo.txt"], 8))
    cosine = float(q @ d / np.linalg.norm(q) / np.linalg.norm(d))
    assert hit["score"] == pytest.approx(cosine, abs=1e-5)


def test_hybrid_fuses_both_rankings(engine):
    env = call_tool(engine, "search_chunks", {"query": "namespace:ACME scope:subtree rocket skates", "mode": "hybrid"})
    assert env["scoreKind"] == "rrf" and env["count"] >= 2
    assert env["hits"][0]["score"] <= 2 / 61 + 1e-9


@pytest.mark.parametrize(
    "status, code",
    [
        (401, "embedding-credential-rejected"),
        (403, "embedding-credential-rejected"),
        (400, "embedding-request-rejected"),
        (404, "embedding-request-rejected"),
        (422, "embedding-request-rejected"),
        (429, "embedding-unavailable"),
        (500, "embedding-unavailable"),
        (503, "embedding-unavailable"),
    ],
)
@pytest.mark.parametrize("tool", ["search", "search_chunks"])
def test_refusals_are_never_an_empty_result(engine, embed_stub, status, code, tool):
    engine.embedder().probe()  # the probe passed while the server was healthy
    embed_stub.reply = Reply(status, ollama_error(f"stub refusal {status}"))
    env = call_tool(engine, tool, {"query": "anvil", "scope": "ACME", "mode": "vector"})
    _shape(env, SearchResult)
    assert env["searched"] is False and env["error"] == code
    assert "count" not in env and "hits" not in env
    assert env["statusCode"] == status and f"stub refusal {status}" in env["responseBody"]
    assert env["endpoint"].startswith("http://127.0.0.1:") and env["model"] == "stub-embed"
    assert env["message"]


def test_unreachable_backend(tmp_path, closed_port):
    eng = Engine(
        Settings(
            db=str(tmp_path / "i.db"),
            allowed_roots=ALLOWED_ROOTS,
            embed_provider="ollama",
            embed_url=f"http://127.0.0.1:{closed_port}",
            embed_model="m",
            embed_retries=0,
            embed_timeout_s=2,
        ).validate()
    )
    eng.add_collection("C", str(tmp_path))
    env = call_tool(eng, "search_chunks", {"query": "anything", "scope": "C", "mode": "hybrid"})
    assert env["searched"] is False and env["error"] == "embedding-unavailable" and env["statusCode"] is None
    assert "count" not in env
    auto = call_tool(eng, "search_chunks", {"query": "anything", "scope": "C"})  # no vectors yet: keyword
    assert auto["searched"] and auto["mode"] == "keyword" and "no vectors" in auto["message"]


def test_no_provider(tmp_path):
    (tmp_path / "a.txt").write_text("walrus facts")
    eng = Engine(Settings(db=str(tmp_path / "i.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate())
    eng.add_collection("C", str(tmp_path))
    eng.run_index()
    explicit = call_tool(eng, "search_chunks", {"query": "walrus", "scope": "C", "mode": "vector"})
    assert explicit["searched"] is False and explicit["error"] == "search-not-performed" and "count" not in explicit
    auto = call_tool(eng, "search", {"query": "walrus", "scope": "C"})
    assert auto["searched"] and auto["mode"] == "keyword" and auto["count"] == 1 and "keyword" in auto["message"]


def test_searched_nothing_matched(engine):
    env = call_tool(engine, "search_chunks", {"query": "zzyzx", "scope": "Other", "mode": "keyword"})
    assert env["searched"] is True and env["count"] == 0 and env["hits"] == [] and "error" not in env


def test_hostile_keyword_queries_do_not_break(engine):
    for q in [
        '"',
        "AND OR NOT",
        "anvil*",
        "-anvil",
        "NEAR(a b)",
        "a :b",
        "10:30",
        "https://x.y/anvil",
        "'; DROP TABLE chunks; --",
    ]:
        env = call_tool(engine, "search_chunks", {"query": q, "scope": "ACME", "mode": "keyword"})
        assert env["searched"] is True, (q, env)


# -- the full scope grammar ------------------------------------------------------------


def _colls(engine, query, scope=None, mode="keyword"):
    args = {"query": query, "mode": mode}
    if scope is not None:
        args["scope"] = scope
    return call_tool(engine, "search_chunks", args)


def test_namespace_qualifiers_exact_subtree_ancestorsandself(engine):
    assert _colls(engine, "namespace:ACME/Reports anvil")["collections"] == ["ACME/Reports"]
    assert _colls(engine, "namespace:ACME/Reports scope:exact anvil")["collections"] == ["ACME/Reports"]
    assert _colls(engine, "namespace:ACME/Reports scope:subtree anvil")["collections"] == [
        "ACME/Reports",
        "ACME/Reports/Q1",
    ]
    assert _colls(engine, "namespace:ACME/Reports/Q1 scope:ancestorsandself anvil")["collections"] == [
        "ACME",
        "ACME/Reports",
        "ACME/Reports/Q1",
    ]
    assert _colls(engine, "namespace:ACME namespace:Other penguins")["collections"] == ["ACME", "Other"]


def test_unknown_tokens_are_named_in_a_hint_and_not_searched(engine):
    env = _colls(engine, "namespace:Other scope:sideways walruses")
    assert env["searched"] and env["collections"] == ["Other"] and env["count"] == 1
    assert "scope:sideways" in env["hint"]
    env = _colls(engine, "namespace:Other author:penguins walruses")
    assert "author:penguins" in env["hint"] and env["count"] == 1
    only = _colls(engine, "namespace:Other author:walruses")  # the token is not searched as words
    assert only["searched"] is False and "no query text" in only["message"] and "author:walruses" in only["hint"]
    env = _colls(engine, "a:b", scope="ACME")
    assert env["searched"] is False and "a:b" in env["hint"] and "error" not in env


def test_scope_list_star_and_trailing_slash(engine):
    assert _colls(engine, "anvil", ["ACME/Reports/", "Other"])["collections"] == ["ACME", "ACME/Reports", "Other"]
    assert _colls(engine, "anvil", "*")["collections"] == ["ACME", "ACME/Reports", "ACME/Reports/Q1", "Other"]
    assert _colls(engine, "anvil", "ACME/Reports/")["collections"] == ["ACME", "ACME/Reports"]
    assert _colls(engine, "namespace:ACME/Reports/ anvil")["collections"] == ["ACME/Reports"]
    assert _colls(engine, "scope:subtree anvil", "ACME/Reports")["collections"] == ["ACME/Reports", "ACME/Reports/Q1"]
    half = _colls(engine, "anvil", ["ACME", "Nowhere"])
    assert half["collections"] == ["ACME"] and "Nowhere" in half["hint"]
    assert _colls(engine, "anvil")["searched"] is False  # neither scope nor namespace: a hint, not a guess
    chunk = call_tool(engine, "get_chunk", {"collectionPath": "ACME/Reports/", "filePath": "q1.md", "chunkIndex": 0})
    assert chunk["found"] and chunk["collectionPath"] == "ACME/Reports"
    doc = call_tool(engine, "read_document", {"collectionPath": "/ACME/Reports/", "filePath": "q1.md"})
    assert doc["found"] and doc["collectionPath"] == "ACME/Reports"


# -- hybrid by default, score breakdown, threshold and weight ----------------------------


def test_auto_is_hybrid_when_vectors_exist_and_hits_carry_the_breakdown(engine):
    env = call_tool(engine, "search_chunks", {"query": "namespace:ACME scope:subtree anvil sales"})
    assert env["mode"] == "hybrid" and env["scoreKind"] == "rrf" and env["vectorWeight"] == 0.5
    assert env["count"] >= 2
    for h in env["hits"]:
        _shape(h, ChunkHit)
        assert "vectorRank" in h or "keywordRank" in h
        expect = sum(1.0 / (61 + h[r]) for r in ("vectorRank", "keywordRank") if r in h)
        assert h["score"] == pytest.approx(expect, abs=1e-6)
        assert ("vectorScore" in h) == ("vectorRank" in h) and ("keywordScore" in h) == ("keywordRank" in h)
    files = call_tool(engine, "search", {"query": "namespace:ACME scope:subtree anvil sales"})
    for h in files["hits"]:
        _shape(h, SearchHit)
    single = call_tool(engine, "search_chunks", {"query": "namespace:ACME anvil", "mode": "keyword"})
    assert not any("keywordRank" in h for h in single["hits"])  # only hybrid hits carry the breakdown


def test_vector_weight_moves_the_fusion_to_one_list(engine):
    q = {"query": "namespace:ACME scope:subtree anvil sales rocket", "mode": "hybrid", "limit": 10}
    vec = call_tool(engine, "search_chunks", {**q, "mode": "vector"})
    only_vec = call_tool(engine, "search_chunks", {**q, "vectorWeight": 1.0})
    assert [h["chunkIndex"] for h in only_vec["hits"] if "vectorRank" in h][: len(vec["hits"])] == [
        h["chunkIndex"] for h in vec["hits"]
    ][: len([h for h in only_vec["hits"] if "vectorRank" in h])]
    assert all(h.get("vectorRank") == i for i, h in enumerate(only_vec["hits"]) if "vectorRank" in h)
    only_kw = call_tool(engine, "search_chunks", {**q, "vectorWeight": 0.0})
    ranks = [h["keywordRank"] for h in only_kw["hits"] if "keywordRank" in h]
    assert ranks == sorted(ranks) and only_kw["vectorWeight"] == 0.0
    with pytest.raises(ToolArgumentError, match="vectorWeight"):
        call_tool(engine, "search_chunks", {**q, "vectorWeight": 1.5})


def test_min_score_is_a_threshold_on_the_modes_own_score(engine):
    q = {"query": "namespace:ACME scope:subtree anvil", "mode": "vector"}
    all_hits = call_tool(engine, "search_chunks", q)["hits"]
    assert len({h["score"] for h in all_hits}) >= 3
    cut = (all_hits[0]["score"] + all_hits[1]["score"]) / 2
    kept = call_tool(engine, "search_chunks", {**q, "minScore": cut})
    assert kept["minScore"] == cut and [h["score"] for h in kept["hits"]] == [
        h["score"] for h in all_hits if h["score"] >= cut
    ]
    assert call_tool(engine, "search_chunks", {**q, "minScore": 1e9})["count"] == 0


def test_a_query_over_the_maximum_is_refused_naming_the_argument(engine):
    from engine.search.searcher import MAX_QUERY_CHARS

    with pytest.raises(ToolArgumentError, match=r"search_chunks: argument 'query': \d+ characters, the most is"):
        call_tool(engine, "search_chunks", {"query": "a" * (MAX_QUERY_CHARS + 1), "scope": "ACME"})
    env = call_tool(engine, "search_chunks", {"query": " ".join(["anvil"] * 5000), "scope": "ACME", "mode": "keyword"})
    assert env["searched"] and env["count"] >= 1
