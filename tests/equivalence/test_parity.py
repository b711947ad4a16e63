"""Face parity: for each tool, registry call == CLI ``main([...])`` JSON == MCP ``call_tool``.

The MCP side is one ``chunknav mcp`` subprocess (official client) per
transport for the whole module: the ``mcp_answers`` fixture, parametrized over
stdio and streamable HTTP, makes every case's call on one session. The CLI argv comes from ``engine.tools.registry.cli_command`` (the same line
the GUI shows), so that is checked too. Equality is on the serialised text:
``to_json`` of each side must match character for character (key order,
score rounding, null vs absent).
"""

from __future__ import annotations

import json
import shlex

import pytest

from engine.tools import envelopes as E
from engine.faces.cli import main as cli_main
from engine.paths import document_path
from engine.search.searcher import MAX_QUERY_CHARS
from engine.tools.registry import REGISTRY, Engine, ToolArgumentError, call_tool, cli_command, to_json
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION
from tests.fixtures.mcp_session import TRANSPORTS, run_session

C = SAMPLE_COLLECTION


def _pick(engine: Engine, suffix: str):
    docs = [d for d in engine.store.documents(C) if d.file_path.lower().endswith(suffix) and d.chunk_count]
    return max(docs, key=lambda d: d.chunk_count) if docs else None


def _cases(engine: Engine) -> dict[str, tuple[str, dict]]:
    docs = [d for d in engine.store.documents(C) if d.chunk_count]
    assert docs, "the sample index has no chunked document"
    pdf = _pick(engine, ".pdf") or docs[0]
    words = " ".join(engine.store.get_chunk(C, pdf.file_path, 0).chunk_text.split()[:4])
    last = pdf.chunk_count - 1
    cases = {
        "search": ("search", {"query": words, "scope": C}),
        "search-namespace": ("search", {"query": f"namespace:{C} {words}", "limit": 3}),
        "search-no-scope": ("search", {"query": words}),
        "search-no-query": ("search", {"query": "", "scope": C}),
        "search_chunks": ("search_chunks", {"query": words, "scope": C, "limit": 5}),
        "search_chunks-keyword": ("search_chunks", {"query": words, "scope": C, "mode": "keyword"}),
        "search_chunks-hybrid": ("search_chunks", {"query": words, "scope": f"{C}/below", "mode": "hybrid"}),
        "search_chunks-budget": (
            "search_chunks",
            {"query": words, "scope": C, "limit": 6, "maxTokens": 600, "neighbours": 1},
        ),
        "list_documents-budget": ("list_documents", {"collectionPath": C, "limit": 3, "maxTokens": 500}),
        "get_chunk-first": ("get_chunk", {"collectionPath": C, "filePath": pdf.file_path, "chunkIndex": 0}),
        "get_chunk-last": ("get_chunk", {"collectionPath": C, "filePath": pdf.file_path, "chunkIndex": last}),
        "get_chunk-out-of-range": (
            "get_chunk",
            {"collectionPath": C, "filePath": pdf.file_path, "chunkIndex": last + 1},
        ),
        "get_chunk-unknown-collection": (
            "get_chunk",
            {"collectionPath": "No/Such", "filePath": pdf.file_path, "chunkIndex": 0},
        ),
        "get_chunk-path-escape": ("get_chunk", {"collectionPath": C, "filePath": "../../etc/passwd", "chunkIndex": 0}),
        "read_document": ("read_document", {"collectionPath": C, "filePath": pdf.file_path}),
        "read_document-page": (
            "read_document",
            {"collectionPath": C, "filePath": pdf.file_path, "offset": 10, "limit": 300},
        ),
        "read_document-missing": ("read_document", {"collectionPath": C, "filePath": "no-such-file.pdf"}),
        "get_document": ("get_document", {"documentPath": document_path(C, pdf.file_path)}),
        "get_document-missing": ("get_document", {"documentPath": f"{C}/_Documents/nothing-here"}),
        "list_documents": ("list_documents", {"collectionPath": f"{C}/"}),
        "list_documents-page": ("list_documents", {"collectionPath": C, "offset": 1, "limit": 2}),
        "list_documents-missing": ("list_documents", {"collectionPath": "No/Such"}),
        "plan_index": ("plan_index", {"collections": [C]}),
        "plan_index-force": ("plan_index", {"collections": C, "force": True, "limit": 2}),
        "plan_index-missing": ("plan_index", {"collections": ["No/Such"], "keepMissing": True}),
        "coverage": ("coverage", {}),
        "coverage-missing": ("coverage", {"collections": "No/Such"}),
        # probe=False: the probe's timing differs per call
        "index_status": ("index_status", {"probe": False}),
        # no run is active on the sample index: the last run's status, nothing requested
        "cancel_index": ("cancel_index", {}),
        # weights, thresholds, the breakdown, the scope grammar, trailing slashes
        "search_chunks-breakdown": (
            "search_chunks",
            {"query": words, "scope": C, "mode": "hybrid", "vectorWeight": 0.7, "minScore": 0.001, "limit": 5},
        ),
        "search-auto-weight": ("search", {"query": words, "scope": C, "vectorWeight": 0.25}),
        "search_chunks-scope-list": ("search_chunks", {"query": words, "scope": [f"{C}/", "No/Such"], "limit": 3}),
        "search_chunks-star": ("search_chunks", {"query": words, "scope": "*", "mode": "keyword", "limit": 3}),
        "search_chunks-grammar": (
            "search_chunks",
            {"query": f"namespace:{C}/ scope:subtree author:x {words}", "mode": "keyword", "limit": 3},
        ),
        "get_chunk-trailing-slash": (
            "get_chunk",
            {"collectionPath": f"{C}/", "filePath": pdf.file_path, "chunkIndex": 0},
        ),
        "read_document-trailing-slash": (
            "read_document",
            {"collectionPath": f"{C}/", "filePath": pdf.file_path, "limit": 100},
        ),
    }
    for suffix in (".md", ".docx"):
        d = _pick(engine, suffix)
        if d is not None:
            cases[f"get_chunk{suffix}"] = (
                "get_chunk",
                {"collectionPath": C, "filePath": d.file_path, "chunkIndex": d.chunk_count // 2},
            )
            cases[f"read_document{suffix}"] = ("read_document", {"collectionPath": C, "filePath": d.file_path})
    return cases


CASE_IDS = [
    "search",
    "search-namespace",
    "search-no-scope",
    "search-no-query",
    "search_chunks",
    "search_chunks-keyword",
    "search_chunks-hybrid",
    "get_chunk-first",
    "get_chunk-last",
    "get_chunk-out-of-range",
    "get_chunk-unknown-collection",
    "get_chunk-path-escape",
    "read_document",
    "read_document-page",
    "read_document-missing",
    "get_document",
    "get_document-missing",
    "index_status",
    "cancel_index",
    "get_chunk.md",
    "read_document.md",
    "get_chunk.docx",
    "read_document.docx",
    "search_chunks-breakdown",
    "search-auto-weight",
    "search_chunks-scope-list",
    "search_chunks-star",
    "search_chunks-grammar",
    "get_chunk-trailing-slash",
    "read_document-trailing-slash",
    "list_documents",
    "list_documents-page",
    "list_documents-missing",
    "plan_index",
    "plan_index-force",
    "plan_index-missing",
    "coverage",
    "coverage-missing",
]
#: Calls every face must refuse as bad arguments, naming the argument: (tool, arguments, argument named).
ERROR_CASES = {
    "search-query-too-long": ("search", {"query": "x" * (MAX_QUERY_CHARS + 1), "scope": C}, "query"),
    "search_chunks-weight-out-of-range": (
        "search_chunks",
        {"query": "x", "scope": C, "vectorWeight": 1.5},
        "vectorWeight",
    ),
    "search_chunks-empty-scope-list": ("search_chunks", {"query": "x", "scope": []}, "scope"),
}


@pytest.fixture(scope="module")
def cases(sample_index):
    engine = Engine(sample_index)
    try:
        yield _cases(engine)
    finally:
        engine.close()


@pytest.fixture(scope="module", params=TRANSPORTS)
def mcp_answers(request, sample_index, cases):
    """Every case (and every bad-argument case) answered by one ``chunknav mcp`` session on
    the sample index, per transport."""
    calls = list(cases.values()) + [(n, a) for n, a, _ in ERROR_CASES.values()]
    session = run_session(
        sample_index.db, calls, env={"EMBED_PROVIDER": sample_index.embed_provider}, transport=request.param
    )
    return session, dict(zip([*cases, *ERROR_CASES], session.answers))


def test_every_tool_has_a_case():
    assert {cid.split("-")[0].split(".")[0] for cid in CASE_IDS} == set(REGISTRY)


@pytest.mark.slow
def test_mcp_lists_the_registry(mcp_answers):
    session, _ = mcp_answers
    assert [t.name for t in session.tools] == list(REGISTRY)
    for t in session.tools:
        assert t.input_schema == REGISTRY[t.name].schema, t.name
        assert t.description == REGISTRY[t.name].description, t.name


def _cli(capsys, db: str, name: str, arguments: dict) -> tuple[int, str]:
    argv = shlex.split(cli_command(name, arguments))
    assert argv[0] == "chunknav"
    capsys.readouterr()
    code = cli_main(["--db", db, *argv[1:]])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("case", CASE_IDS)
def test_registry_cli_mcp_agree(case, cases, mcp_answers, sample_engine, sample_index, capsys):
    if case not in cases:
        pytest.skip(f"the sample corpus has no file for {case!r}")
    name, arguments = cases[case]
    direct = call_tool(sample_engine, name, dict(arguments))
    want = to_json(direct)

    # shape: exactly the envelope's keys
    t = REGISTRY[name].envelope
    assert t.__required_keys__ <= set(direct) <= t.__required_keys__ | t.__optional_keys__, set(direct)

    # CLI: same JSON (indent aside), exit 1 only when the envelope carries error
    code, out = _cli(capsys, sample_index.db, name, arguments)
    assert to_json(json.loads(out)) == want
    assert code == (1 if "error" in direct else 0)

    # MCP: text block is the one serialisation, structuredContent the same value
    _, answers = mcp_answers
    answer = answers[case]
    assert answer.error is None, answer.error
    assert answer.text == want
    assert answer.result.structured_content == direct
    assert to_json(answer.result.structured_content) == want  # key order survives the wire
    assert bool(answer.result.is_error) == ("error" in direct)


def _walk(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, value


@pytest.mark.parametrize("name", ["search", "search_chunks"])
def test_search_envelope_serialisation(name, sample_engine):
    """Scores are rounded to 6 decimals, ranks 0.., optional keys absent rather than null."""
    hits_env = call_tool(sample_engine, name, {"query": "the", "scope": C, "limit": 10})
    assert hits_env["searched"] is True and hits_env["count"] == len(hits_env["hits"])
    for rank, hit in enumerate(hits_env["hits"]):
        assert hit["rank"] == rank
        assert isinstance(hit["score"], float) and round(hit["score"], 6) == hit["score"]
        hit_type = E.SearchHit if name == "search" else E.ChunkHit
        assert hit_type.__required_keys__ <= set(hit) <= hit_type.__required_keys__ | hit_type.__optional_keys__
        assert None not in (hit.get("page", 0), hit.get("bbox", 0)), "absent, never null"
    scores = [h["score"] for h in hits_env["hits"]]
    assert scores == sorted(scores, reverse=True)
    nulls = [p for p, v in _walk(hits_env) if v is None]
    assert not nulls, nulls


def test_failure_arm_has_no_count(tmp_path):
    """No provider + vector mode: searched false, error search-not-performed, count/hits absent."""
    from engine.config import Settings

    engine = Engine(Settings(db=str(tmp_path / "empty.db"), embed_provider="none").validate())
    try:
        env = call_tool(engine, "search_chunks", {"query": "x", "scope": "A", "mode": "vector"})
    finally:
        engine.close()
    assert env["searched"] is False and env["error"] == "search-not-performed"
    assert "count" not in env and "hits" not in env and env["message"]


def test_chunk_neighbours_are_null_not_absent(cases, sample_engine):
    name, arguments = cases["get_chunk-first"]
    first = call_tool(sample_engine, name, arguments)
    assert first["prevIndex"] is None and "prevIndex" in to_json(first)
    name, arguments = cases["get_chunk-last"]
    last = call_tool(sample_engine, name, arguments)
    assert last["nextIndex"] is None


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_bad_search_arguments_are_refused_on_every_face(case, mcp_answers, sample_engine, sample_index, capsys):
    """Registry: ToolArgumentError; CLI: exit 2 naming the argument; MCP: -32602 naming it."""
    import mcp.types as types

    name, arguments, named = ERROR_CASES[case]
    with pytest.raises(ToolArgumentError, match=f"'{named}'"):
        call_tool(sample_engine, name, dict(arguments))
    argv = (
        shlex.split(cli_command(name, arguments))
        if arguments.get("scope") != []
        else ["chunknav", "search-chunks", "x"]
    )
    if arguments.get("scope") != []:  # argparse cannot spell an empty list
        capsys.readouterr()
        code = cli_main(["--db", sample_index.db, *argv[1:]])
        err = capsys.readouterr().err
        assert code == 2 and f"'{named}'" in err and len(err) < 500, err[:300]
    _, answers = mcp_answers
    answer = answers[case]
    assert answer.result is None and answer.error is not None
    assert answer.error.code == types.INVALID_PARAMS and f"'{named}'" in answer.error.message
    assert len(answer.error.message) < 500


def test_hybrid_hits_carry_the_breakdown_on_every_face(cases, mcp_answers):
    _, answers = mcp_answers
    env = answers["search_chunks-breakdown"].envelope
    assert env["mode"] == "hybrid" and env["vectorWeight"] == 0.7 and env["minScore"] == 0.001
    assert env["hits"] and all(h["score"] >= 0.001 for h in env["hits"])
    for h in env["hits"]:
        assert "vectorRank" in h or "keywordRank" in h
    grammar = answers["search_chunks-grammar"].envelope
    assert grammar["collections"] == [C] and "author:x" in grammar["hint"]
