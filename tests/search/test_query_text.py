"""A query's text as the index holds it (engine/search/query.py).

A real SQLite index of real .txt files, embedded by the loopback stub (Ollama wire
format, which records every text it is sent), searched through ``call_tool`` (what
the CLI and MCP faces call) and once through the CLI's ``main``:

- a query longer than the embedder takes (``EMBED_MAX_INPUT_CHARS``) is searched:
  its start, cut at a word boundary, is embedded, the hint says so, the keyword side
  is the whole query's (never ``embedding-request-rejected``);
- the query goes through the NFKC the extractors apply to every stored text, so
  "x²", "H₂O", "ｶﾀｶﾅ" copied from a file find it; the envelope's
  ``query`` stays what was sent.
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from engine.config import Settings
from engine.search.query import embeddable, normal_query
from engine.search.searcher import MAX_QUERY_CHARS, parse_query, query_terms
from engine.store.fts import keyword_terms
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

LIMIT = 400  # EMBED_MAX_INPUT_CHARS of the index below (every file is shorter)
NFKC_LINE = "Area is x² + y² = r²; ① first; the ﬁnal oﬃce; ｶﾀｶﾅ; H₂O; ½ cup; ™ Ⅻ\n"


@pytest.fixture
def engine(tmp_path, embed_stub):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "census.txt").write_text("The table population census counts every county resident.\n", "utf-8")
    (root / "zoo.txt").write_text("Penguins and walruses share the cold water enclosure.\n", "utf-8")
    (root / "nfkc.txt").write_text(NFKC_LINE, "utf-8")
    settings = Settings(
        db=str(tmp_path / "index.db"),
        allowed_roots=ALLOWED_ROOTS,
        embed_provider="ollama",
        embed_url=embed_stub.url,
        embed_model="stub-embed",
        embed_retries=0,
        embed_max_input_chars=LIMIT,
    ).validate()
    eng = Engine(settings)
    eng.add_collection("C", str(root))
    summary = eng.run_index()
    assert summary["indexed"] == 3 and summary["embedded"] == 3, summary
    yield eng
    eng.close()


def _sent(stub) -> list[str]:
    """Every text the stub was asked to embed, in order."""
    out = []
    for r in stub.requests:
        if r.path == "/api/embed":
            texts = r.json.get("input")
            out.extend([texts] if isinstance(texts, str) else texts)
    return out


# ------------------------------------------------------------------ a long query
@pytest.mark.parametrize("mode", ["auto", "hybrid", "vector"])
def test_a_query_longer_than_the_model_takes_is_searched_with_its_start_embedded(engine, embed_stub, mode):
    query = "table population " * 100 + "walruses"  # 1,708 characters, over the 400 the model takes
    before = len(_sent(embed_stub))
    env = call_tool(engine, "search_chunks", {"query": query, "scope": "C", "limit": 3, "mode": mode})
    assert env["searched"] and "error" not in env, env
    assert env["query"] == query and env["mode"] == ("hybrid" if mode == "auto" else mode)
    sent = _sent(embed_stub)[before:]
    assert len(sent) == 1, sent
    assert len(sent[0]) <= LIMIT and query.startswith(sent[0]) and query[len(sent[0])] == " ", sent[0][-30:]
    assert sent[0] == embeddable(query, LIMIT) and len(sent[0]) == 396  # 23 x "table population " + "table"
    assert f"the query's first {len(sent[0])} of {len(query):,} characters" in env["hint"], env["hint"]
    assert "CHUNK_SIZE" not in json.dumps(env)
    if mode != "vector":  # the keyword side is the whole query's: "walruses" (past the cut) is found
        assert "searched the whole query" in env["hint"]
        zoo = [h for h in env["hits"] if h["filePath"] == "zoo.txt"]
        assert zoo and zoo[0]["keywordRank"] is not None, env["hits"]
    else:
        assert "keyword" not in env["hint"]


def test_a_query_that_fits_is_embedded_whole_and_gets_no_hint(engine, embed_stub):
    query = "table population " * 23  # 391 characters
    env = call_tool(engine, "search_chunks", {"query": query, "scope": "C", "mode": "hybrid"})
    assert env["searched"] and "hint" not in env, env
    assert _sent(embed_stub)[-1] == query.strip()


def test_the_longest_query_the_schema_takes_is_searched_through_the_cli(engine, embed_stub, capsys, monkeypatch):
    from engine.faces.cli import main

    s = engine.settings
    for k, v in {
        "CHUNKNAV_DB": s.db,
        "EMBED_PROVIDER": "ollama",
        "EMBED_URL": embed_stub.url,
        "EMBED_MODEL": "stub-embed",
        "EMBED_RETRIES": "0",
        "EMBED_MAX_INPUT_CHARS": str(LIMIT),
    }.items():
        monkeypatch.setenv(k, v)
    query = ("census " * (MAX_QUERY_CHARS // 7 + 1))[:MAX_QUERY_CHARS]
    code = main(["search-chunks", query, "--scope", "C", "--limit", "2"])
    out, _err = capsys.readouterr()
    env = json.loads(out)
    assert code == 0 and env["searched"] and env["mode"] == "hybrid" and env["count"] >= 1, env
    assert f"of {MAX_QUERY_CHARS:,} characters" in env["hint"]


@pytest.mark.slow
def test_a_long_query_and_an_nfkc_one_over_mcp(engine, embed_stub):
    from tests.fixtures.mcp_session import run_session

    query = "table population " * 100 + "walruses"
    session = run_session(
        engine.settings.db,
        [
            ("search_chunks", {"query": query, "scope": "C", "limit": 2}),
            ("search", {"query": "H₂O", "scope": "C", "mode": "keyword"}),
        ],
        env={
            "EMBED_PROVIDER": "ollama",
            "EMBED_URL": embed_stub.url,
            "EMBED_MODEL": "stub-embed",
            "EMBED_RETRIES": "0",
            "EMBED_MAX_INPUT_CHARS": str(LIMIT),
        },
    )
    long_env, nfkc_env = (a.result.structured_content for a in session.answers)
    assert not session.answers[0].result.is_error and long_env["searched"] and long_env["mode"] == "hybrid", long_env
    assert "the query's first 396 of 1,708 characters" in long_env["hint"]
    assert nfkc_env["query"] == "H₂O" and [h["filePath"] for h in nfkc_env["hits"]] == ["nfkc.txt"], nfkc_env


def test_embeddable_cuts_at_a_word_boundary():
    assert embeddable("alpha beta gamma", 0) == "alpha beta gamma"
    assert embeddable("alpha beta gamma", 16) == "alpha beta gamma"
    assert embeddable("alpha beta gamma", 12) == "alpha beta"  # "gamma" would be split
    assert embeddable("alpha beta gamma", 11) == "alpha beta"  # the cut falls on the space
    assert embeddable("alpha beta  gamma", 12) == "alpha beta"
    assert embeddable("alphabetagamma", 5) == "alpha"  # one giant word: a hard cut
    assert embeddable(" alphabeta", 4) == " alp"
    for n in range(1, 40):
        text = "the quick brown fox jumps over the lazy dog"
        cut = embeddable(text, n)
        assert cut and len(cut) <= n and text.startswith(cut)
        assert len(cut) == n or text[len(cut)] == " " or n < 3


# ------------------------------------------------------------------ NFKC on the query side
@pytest.mark.parametrize("query", ["x²", "H₂O", "ｶﾀｶﾅ", "ﬁnal", "oﬃce", "①", "x2", "カタカナ", "H2O", "final"])
def test_a_string_copied_from_the_file_finds_it(engine, query):
    env = call_tool(engine, "search_chunks", {"query": query, "scope": "C", "mode": "keyword"})
    assert env["searched"] and env["query"] == query, env
    assert [h["filePath"] for h in env["hits"]] == ["nfkc.txt"], env
    normal = unicodedata.normalize("NFKC", query).lower()
    assert normal in env["hits"][0]["snippet"].lower()


def test_the_any_term_pass_and_its_per_term_lists_see_the_normal_form(engine):
    """Over every collection, a term no chunk holds sends the keyword search to its any-term
    pass, which the SQLite store ranks from per-term lists from the second time a term is
    asked (engine/store/sqlite/term_scores.py): both find "x²" as the stored "x2"."""
    for _ in range(3):
        env = call_tool(engine, "search_chunks", {"query": "x² zeppelinoid", "scope": "*", "mode": "keyword"})
        assert [h["filePath"] for h in env["hits"]] == ["nfkc.txt"], env
    lists = engine.store._df_cache["term_lists"]
    assert lists.get('"x2"') is not None and lists.get('"x²"') is None  # the list is the stored term's


def test_the_hybrid_side_and_the_terms_see_the_normal_form(engine, embed_stub):
    env = call_tool(engine, "search", {"query": "ｶﾀｶﾅ H₂O", "scope": "C", "mode": "hybrid"})
    assert env["searched"] and env["query"] == "ｶﾀｶﾅ H₂O" and env["hits"][0]["filePath"] == "nfkc.txt", env
    assert env["hits"][0]["keywordRank"] == 0
    assert _sent(embed_stub)[-1] == "カタカナ H2O"  # the embedding is of the NFKC text
    # the parse, the snippet / mark terms and the store's keyword terms
    assert parse_query("namespace:C ｶﾀｶﾅ x²").text == "カタカナ x2"
    assert parse_query("namespace:C ｶﾀｶﾅ").namespaces == ("C",)
    assert query_terms("ｶﾀｶﾅ H₂O ﬁnal") == ("カタカナ", "h2o", "final")
    for text in ("ｶﾀｶﾅ H₂O", parse_query("ｶﾀｶﾅ H₂O").text):  # a store called directly folds it too
        terms = keyword_terms(text)
        assert terms.cjk == ("カタカナ",) and terms.latin == ("h2o",)


def test_normal_query_leaves_ascii_alone_and_is_nfkc_otherwise():
    text = "plain ascii question"
    assert normal_query(text) is text
    for s in ["x²", "ｶﾀｶﾅ", "ﬁ", "½", "Ⅻ", "e\u0301", "ＡＢＣ"]:
        assert normal_query(s) == unicodedata.normalize("NFKC", s)
