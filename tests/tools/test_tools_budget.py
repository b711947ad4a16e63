"""Answers sized for an agent: maxTokens, cursors (stale after an index run), neighbours,
heading paths, the time scope and lenient integers; through the registry and the CLI."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from engine.config import Settings
from engine.faces.cli import main as cli_main
from engine.tools import envelopes as E
from engine.tools.budget import MAX_TOKENS_DEFAULT, count_tokens
from engine.tools.registry import Engine, ToolArgumentError, call_tool, cli_command, to_json
from tests.conftest import ALLOWED_ROOTS

C = "Guide"
JAN = 1767225600.0  # 2026-01-01T00:00:00Z
MAR = 1772323200.0  # 2026-03-01T00:00:00Z

_SECTION = (
    "The tenant pays the rent on the first day of each month. Late rent carries a fee of five "
    "percent. The landlord repairs the roof, the heating and the windows. "
)


def _guide() -> str:
    parts = ["# Lease guide\n\nThis guide explains the lease.\n"]
    for i in range(12):
        parts.append(f"\n## Section {i}\n\n" + (_SECTION + f"Clause {i} applies to rent. ") * 3)
    parts.append(
        "\n## Terms of use\n\n" + "You may copy this guide for personal use only; rent rules apply. " * 5 + "\n"
    )
    return "".join(parts)


def _write(root, name: str, text: str, mtime: float) -> None:
    path = root / name
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))


@pytest.fixture
def guide(tmp_path):
    """An index (keyword only) of two Markdown files: guide.md (January, many chunks with
    headings) and later.md (March)."""
    root = tmp_path / "guide"
    root.mkdir()
    _write(root, "guide.md", _guide(), JAN + 86400 * 10)
    _write(root, "later.md", "# Later\n\nA late note about rent and the heating.\n", MAR + 86400 * 3)
    for i in range(6):
        _write(root, f"extra{i}.md", f"# Extra {i}\n\nRent note {i}.\n", JAN + 86400 * 20)
    settings = Settings(
        db=str(tmp_path / "index.db"),
        embed_provider="none",
        chunk_size=300,
        chunk_overlap=50,
        allowed_roots=ALLOWED_ROOTS,
    ).validate()
    engine = Engine(settings)
    engine.add_collection(C, str(root))
    engine.run_index()
    yield engine, root, settings
    engine.close()


def _all_pages(engine, name, arguments):
    """Every page of one call, following cursors: (pages, hits)."""
    pages = [call_tool(engine, name, arguments)]
    while pages[-1].get("cursor"):
        pages.append(call_tool(engine, name, {**arguments, "cursor": pages[-1]["cursor"]}))
        assert len(pages) < 100
    return pages, [h for p in pages for h in p.get("hits", [])]


def test_a_default_search_answer_stays_under_the_default_budget(sample_engine):
    from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION

    for name in ("search", "search_chunks"):
        env = call_tool(sample_engine, name, {"query": "page", "scope": SAMPLE_COLLECTION})
        assert env["searched"]
        assert count_tokens({**env, "query": ""}) <= MAX_TOKENS_DEFAULT[name] <= 4000


@pytest.mark.parametrize("budget", [500, 700, 1500])
def test_budget_is_never_exceeded_and_cursors_page_without_repeats_or_skips(guide, budget):
    engine, _root, _ = guide
    args = {"query": "rent heating", "scope": C, "limit": 12}
    full = call_tool(engine, "search_chunks", {**args, "limit": 200, "maxTokens": 100_000})
    assert full["count"] > 12
    pages, hits = _all_pages(engine, "search_chunks", {**args, "maxTokens": budget})
    for p in pages:
        assert count_tokens({**p, "query": ""}) <= budget
        assert (
            E.SearchResult.__required_keys__
            <= set(p)
            <= E.SearchResult.__required_keys__ | E.SearchResult.__optional_keys__
        )
    assert any(p.get("truncated") for p in pages)
    cut = next(p for p in pages if p.get("omitted"))
    assert cut["truncated"] is True and cut["omitted"] > 0 and cut["cursor"]
    key = [(h["filePath"], h["chunkIndex"]) for h in hits]
    assert key == [(h["filePath"], h["chunkIndex"]) for h in full["hits"]]  # no repeat, no skip
    assert [h["rank"] for h in hits] == list(range(len(hits)))


def test_a_page_that_fits_carries_a_cursor_when_more_may_follow(guide):
    engine, _root, _ = guide
    first = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 3})
    assert first["count"] == 3 and "truncated" not in first and first["cursor"]
    second = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 3, "cursor": first["cursor"]})
    assert [h["rank"] for h in second["hits"]] == [3, 4, 5]
    end = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 500, "maxTokens": 10**6})
    assert "cursor" not in end


def test_an_index_run_between_two_pages_gives_stale_cursor(guide):
    engine, root, _ = guide
    args = {"query": "rent", "scope": C, "limit": 2}
    first = call_tool(engine, "search_chunks", args)
    same = call_tool(engine, "search_chunks", {**args, "cursor": first["cursor"]})
    assert same["searched"] and "error" not in same  # an unchanged index: the cursor stays good
    docs = call_tool(engine, "list_documents", {"collectionPath": C, "limit": 2})
    assert docs["cursor"]
    _write(root, "later.md", "# Later\n\nChanged: rent is due on the second day.\n", MAR + 86400 * 5)
    engine.run_index()
    stale = call_tool(engine, "search_chunks", {**args, "cursor": first["cursor"]})
    assert stale["error"] == "stale-cursor" and stale["searched"] is False and "cursor" in stale["message"]
    listed = call_tool(engine, "list_documents", {"collectionPath": C, "limit": 2, "cursor": docs["cursor"]})
    assert listed["error"] == "stale-cursor" and listed["found"] is False


def test_a_cursor_of_another_call_or_garbage_is_a_bad_argument(guide):
    engine, _root, _ = guide
    first = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 2})
    with pytest.raises(ToolArgumentError, match="argument 'cursor'.*other arguments"):
        call_tool(engine, "search_chunks", {"query": "roof", "scope": C, "cursor": first["cursor"]})
    with pytest.raises(ToolArgumentError, match="argument 'cursor'"):
        call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "cursor": "not-a-cursor!"})
    with pytest.raises(ToolArgumentError, match="argument 'cursor'.*belongs to 'search_chunks'"):
        call_tool(engine, "list_documents", {"collectionPath": C, "cursor": first["cursor"]})


def test_neighbours_merge_and_never_repeat_a_chunk(guide):
    engine, _root, _ = guide
    args = {"query": "rent", "scope": C, "limit": 8, "neighbours": 2, "maxTokens": 100_000, "mode": "keyword"}
    env = call_tool(engine, "search_chunks", args)
    text = engine.store.document_text(C, "guide.md")
    seen: dict[str, set[int]] = {}
    for h in env["hits"]:
        if "context" in h:
            ctx = h["context"]
            assert ctx["fromIndex"] <= h["chunkIndex"] <= ctx["toIndex"]
            assert ctx["toIndex"] - ctx["fromIndex"] <= 4 + 8 * 4
            if h["filePath"] == "guide.md":
                assert ctx["text"] == text[ctx["start"] : ctx["end"]]
            span = set(range(ctx["fromIndex"], ctx["toIndex"] + 1))
            assert not span & seen.setdefault(h["filePath"], set())  # never duplicated across hits
            seen[h["filePath"]] |= span
        else:
            owner = env["hits"][h["contextOf"]]
            assert owner["rank"] < h["rank"]
            assert owner["context"]["fromIndex"] <= h["chunkIndex"] <= owner["context"]["toIndex"]
    total = engine.store.chunk_count(C, "guide.md")
    first = env["hits"][0]
    assert first["context"]["fromIndex"] == max(0, min(first["chunkIndex"] - 2, first["context"]["fromIndex"]))
    assert first["context"]["toIndex"] <= total - 1
    # within a budget: context cut to a snippet first, then fewer hits
    small = call_tool(engine, "search_chunks", {**args, "maxTokens": 1500})
    assert count_tokens({**small, "query": ""}) <= 1500 and small["truncated"]


def test_heading_paths_on_hits_and_in_the_scope(guide):
    engine, _root, _ = guide
    env = call_tool(engine, "search_chunks", {"query": "personal use", "scope": C, "limit": 3})
    top = env["hits"][0]
    assert top["filePath"] == "guide.md" and top["headingPath"] == ["Lease guide", "Terms of use"]
    chunk = call_tool(
        engine, "get_chunk", {"collectionPath": C, "filePath": "guide.md", "chunkIndex": top["chunkIndex"]}
    )
    assert chunk["headingPath"] == top["headingPath"]
    scoped = call_tool(engine, "search_chunks", {"query": 'rent heading:"Terms of use"', "scope": C, "limit": 50})
    assert scoped["count"] >= 1 and "hint" not in scoped
    assert all("Terms of use" in h["headingPath"] or h["chunkIndex"] > 0 for h in scoped["hits"])
    by_arg = call_tool(engine, "search_chunks", {"query": "rent", "heading": "terms of USE", "scope": C, "limit": 50})
    assert [h["chunkIndex"] for h in by_arg["hits"]] == [h["chunkIndex"] for h in scoped["hits"]]


def test_the_time_scope_applies_before_the_top_k_cut(guide):
    engine, _root, _ = guide
    # unfiltered, later.md is not among the first hit: the filter must still find it
    top = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 1})
    assert top["hits"][0]["filePath"] != "later.md"
    for query, arg in (
        ("rent modified:>2026-02-01", None),
        ("rent", ">=2026-03-01"),
        ("rent", "2026-03-01..2026-03-31"),
    ):
        args = {"query": query, "scope": C, "limit": 1}
        if arg:
            args["modified"] = arg
        env = call_tool(engine, "search_chunks", args)
        assert [h["filePath"] for h in env["hits"]] == ["later.md"], (query, arg)
        assert env["hits"][0]["lastModified"] == MAR + 86400 * 3
    old = call_tool(engine, "search", {"query": "rent modified:<2026-02-01", "scope": C, "limit": 50})
    assert old["count"] == 7 and all(h["lastModified"] < MAR for h in old["hits"])
    none = call_tool(engine, "search_chunks", {"query": "rent modified:2025-06-01", "scope": C})
    assert none["searched"] and none["count"] == 0
    with pytest.raises(ToolArgumentError, match="argument 'modified'"):
        call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "modified": "last week"})
    bad = call_tool(engine, "search_chunks", {"query": "rent modified:yesterday", "scope": C})
    assert "modified:yesterday" in bad["hint"]


def test_numeric_strings_are_accepted_for_integers_and_nothing_else(guide):
    engine, _root, _ = guide
    env = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": "2", "neighbours": "1"})
    assert env["count"] == 2
    same = call_tool(engine, "get_chunk", {"collectionPath": C, "filePath": "guide.md", "chunkIndex": " 1 "})
    assert same["found"] and same["chunkIndex"] == 1
    for bad, arg in (
        ({"limit": "two"}, "limit"),
        ({"limit": "0"}, "limit"),
        ({"limit": "2.5"}, "limit"),
        ({"mode": 3}, "mode"),
    ):
        with pytest.raises(ToolArgumentError, match=f"argument '{arg}'"):
            call_tool(engine, "search_chunks", {"query": "rent", "scope": C, **bad})


def test_get_chunk_and_read_document_page_by_the_same_rule(guide, sample_engine):
    from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION

    engine, _root, _ = guide
    doc = max(sample_engine.store.documents(SAMPLE_COLLECTION), key=lambda d: d.chunk_count)
    pdf = {"collectionPath": SAMPLE_COLLECTION, "filePath": doc.file_path, "chunkIndex": 0}
    whole = call_tool(sample_engine, "get_chunk", pdf)
    parts, env = [], call_tool(sample_engine, "get_chunk", {**pdf, "maxTokens": 500})
    while True:
        assert count_tokens(env) <= 500
        parts.append(env["text"])
        if not env.get("cursor"):
            break
        assert env["truncated"] and env["omitted"] > 0
        env = call_tool(sample_engine, "get_chunk", {**pdf, "maxTokens": 500, "cursor": env["cursor"]})
    assert "".join(parts) == whole["text"] and len(parts) > 1
    key = {"collectionPath": C, "filePath": "guide.md"}
    text = engine.store.document_text(C, "guide.md")
    parts, env = [], call_tool(engine, "read_document", {**key, "maxTokens": 500})
    while True:
        assert count_tokens(env) <= 500
        parts.append(env["text"])
        if not env.get("cursor"):
            break
        assert env["nextOffset"] == env["offset"] + len(env["text"])
        env = call_tool(engine, "read_document", {**key, "maxTokens": 500, "cursor": env["cursor"]})
    assert "".join(parts) == text


def test_cli_json_equals_the_registry_for_budgets_cursors_and_neighbours(guide, capsys, monkeypatch):
    engine, _root, settings = guide
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    first = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 4, "maxTokens": 600})
    calls = [
        ("search_chunks", {"query": "rent", "scope": C, "limit": 4, "maxTokens": 600}),
        ("search_chunks", {"query": "rent", "scope": C, "limit": 4, "maxTokens": 600, "cursor": first["cursor"]}),
        ("search_chunks", {"query": "rent", "scope": C, "limit": 3, "neighbours": 1}),
        ("list_documents", {"collectionPath": C, "limit": 2}),
        ("read_document", {"collectionPath": C, "filePath": "guide.md", "maxTokens": 500}),
    ]
    for name, arguments in calls:
        want = call_tool(engine, name, arguments)
        argv = shlex.split(cli_command(name, arguments, settings))[1:]
        capsys.readouterr()
        code = cli_main(argv)
        out = capsys.readouterr().out
        assert code == 0, out
        assert to_json(json.loads(out)) == to_json(want), name


def _kept(env):
    """The hits of an answer as a sorted list of (file, chunk, heading path)."""
    return sorted((h["filePath"], h["chunkIndex"], str(h.get("headingPath"))) for h in env["hits"])


@pytest.mark.postgres
def test_time_and_heading_scope_and_cursors_on_postgres_equal_sqlite(guide, tmp_path):
    pg = pytest.importorskip("tests.fixtures.pg")
    if pg.pg_dsn() is None:
        pytest.skip(pg.pg_skip_reason())
    from tests.search.test_tie_order import _uri

    engine, root, _ = guide
    dsn, drop = pg.fresh_database()
    try:
        settings = Settings(
            dsn=_uri(dsn), embed_provider="none", chunk_size=300, chunk_overlap=50, allowed_roots=ALLOWED_ROOTS
        ).validate()
        other = Engine(settings)
        try:
            other.add_collection(C, str(root))
            other.run_index()
            # keyword scores differ by store (FTS5 BM25, ts_rank): compare what the filters keep
            calls = [
                {"query": "rent modified:>2026-02-01", "scope": C, "limit": 1},
                {"query": "rent", "modified": "<2026-02-01", "scope": C, "limit": 200},
                {"query": 'rent heading:"Terms of use"', "scope": C, "limit": 200},
            ]
            for args in calls:
                a, b = call_tool(engine, "search_chunks", args), call_tool(other, "search_chunks", args)
                assert _kept(a) == _kept(b) and a["count"] >= 1, args
            near = call_tool(
                other, "search_chunks", {"query": "rent", "scope": C, "limit": 6, "neighbours": 1, "maxTokens": 800}
            )
            assert count_tokens({**near, "query": ""}) <= 800 and near["count"] >= 1
            first = call_tool(other, "search_chunks", {"query": "rent", "scope": C, "limit": 2})
            _write(root, "later.md", "# Later\n\nChanged again.\n", MAR + 86400 * 9)
            other.run_index()
            stale = call_tool(
                other, "search_chunks", {"query": "rent", "scope": C, "limit": 2, "cursor": first["cursor"]}
            )
            assert stale["error"] == "stale-cursor"
        finally:
            other.close()
    finally:
        drop()
