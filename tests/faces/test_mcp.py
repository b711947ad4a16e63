"""``chunknav mcp``: the stdio and streamable-HTTP servers, driven by the official MCP client.

Every over-the-wire test runs on both transports (the ``transport`` fixture).
HTTP only: a non-loopback address without CHUNKNAV_MCP_TOKEN refuses to start
naming the setting; with the token set, requests without it or with a wrong one
get 401 and the right one gets served; the token never reaches the log.

* smoke: handshake, tool list = registry, a walk through a document by
  ``nextIndex`` over the wire, ``read_document`` for the whole text;
* bad arguments (missing, wrong type, negative, unknown tool, unknown
  argument) are JSON-RPC errors ``-32602`` naming the argument; unknown
  collection / out of range are ``found: false`` answers; path traversal is an
  ``isError`` result with ``error: path-escape``; the server keeps serving;
* no provider / empty or unusable store: envelopes or tool errors, never a
  protocol error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import types

from engine.faces import mcp_server
from engine.tools.registry import REGISTRY, call_tool, to_json
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION
from tests.fixtures.mcp_session import TRANSPORTS, call, run_script, run_session
from tests.tools.test_tools_get_chunk import pick, walk

pytestmark = pytest.mark.slow

C = SAMPLE_COLLECTION
REPO = Path(__file__).resolve().parents[2]
INVALID_PARAMS = types.INVALID_PARAMS


def _env(settings) -> dict[str, str]:
    return {"EMBED_PROVIDER": settings.embed_provider}


@pytest.fixture(params=TRANSPORTS)
def transport(request) -> str:
    """Each over-the-wire test runs on stdio and on streamable HTTP."""
    return request.param


# -- in-process pieces (no subprocess) -------------------------------------------


def test_list_tools_publishes_the_registry_schemas():
    tools = mcp_server.list_tools()
    assert [t.name for t in tools] == list(REGISTRY)
    for t in tools:
        assert t.input_schema == REGISTRY[t.name].schema
        assert t.input_schema is not REGISTRY[t.name].schema  # a copy: the registry stays untouched
        assert t.description == REGISTRY[t.name].description
        wire = t.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert wire["inputSchema"] == REGISTRY[t.name].schema


@pytest.mark.parametrize(
    "envelope, is_error",
    [
        ({"found": False, "totalChunks": 3, "message": "chunkIndex 5 is out of range: valid 0..2"}, False),
        (
            {
                "searched": False,
                "query": "q",
                "mode": "vector",
                "collections": [],
                "error": "search-not-performed",
                "message": "no provider",
            },
            True,
        ),
        (
            {
                "searched": True,
                "query": "q",
                "mode": "vector",
                "collections": ["A"],
                "count": 1,
                "hits": [{"score": 0.123457, "page": None}],
            },
            False,
        ),
    ],
)
def test_tool_result(envelope, is_error):
    r = mcp_server.tool_result(envelope)
    assert r.is_error is is_error
    assert [c.type for c in r.content] == ["text"] and r.content[0].text == to_json(envelope)
    assert r.structured_content == envelope
    wire = r.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert wire["structuredContent"] == envelope and wire["isError"] is is_error


def test_server_declares_tools_capability(sample_engine):
    server = mcp_server.build_server(sample_engine)
    opts = server.create_initialization_options()
    assert opts.server_name == "chunknav" and opts.capabilities.tools is not None


# -- over the wire (stdio and HTTP) ------------------------------------------------------------------


def test_walk_and_read(sample_index, sample_engine, transport):
    """Search, then step a document chunk by chunk over the wire, then read it whole."""
    doc = pick(sample_engine, ".pdf")
    first = sample_engine.store.get_chunk(C, doc.file_path, 0).chunk_text
    query = " ".join(first.split()[:5])

    async def script(session):
        tools = (await session.list_tools()).tools
        hits = await call(session, "search_chunks", {"query": query, "scope": C, "limit": 3})
        steps = []
        index = 0
        while index is not None:
            a = await call(session, "get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": index})
            steps.append(a)
            index = a.envelope["nextIndex"]
        whole = await call(session, "read_document", {"collectionPath": C, "filePath": doc.file_path})
        return tools, hits, steps, whole

    (tools, hits, steps, whole), log = run_script(sample_index.db, script, _env(sample_index), transport)
    assert [t.name for t in tools] == list(REGISTRY)
    assert [t.input_schema for t in tools] == [t.schema for t in REGISTRY.values()]

    assert hits.result.is_error is False and hits.envelope["searched"] is True and hits.envelope["count"] >= 1
    assert hits.envelope == call_tool(sample_engine, "search_chunks", {"query": query, "scope": C, "limit": 3})

    by_index = {a.envelope["chunkIndex"]: a.envelope for a in steps}
    text, chunks = walk(lambda args: by_index[args["chunkIndex"]], doc.file_path)
    assert len(chunks) == doc.chunk_count
    assert whole.result.is_error is False and whole.envelope["nextOffset"] is None
    assert text == whole.envelope["text"] == whole.result.structured_content["text"]
    assert "Traceback" not in log


def test_bad_arguments_and_the_server_keeps_serving(sample_index, sample_engine, transport):
    doc = pick(sample_engine, ".pdf")
    good = ("get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": 0})
    calls = [
        good,
        ("get_chunk", {"collectionPath": C, "filePath": doc.file_path}),  # missing
        ("get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": "zero"}),  # wrong type
        ("get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": -1}),  # negative
        ("get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": 0, "pge": 1}),  # unknown arg
        ("search_chunks", {"query": "x", "scope": C, "limit": 0}),
        ("search", {"query": "x", "scope": C, "mode": "semantic"}),
        ("read_document", {"collectionPath": C, "filePath": doc.file_path, "offset": -5}),
        ("delete_everything", {}),  # unknown tool
        ("get_chunk", {"collectionPath": "No/Such", "filePath": doc.file_path, "chunkIndex": 0}),
        ("get_chunk", {"collectionPath": C, "filePath": doc.file_path, "chunkIndex": doc.chunk_count}),
        ("get_chunk", {"collectionPath": C, "filePath": "../../../etc/passwd", "chunkIndex": 0}),
        ("read_document", {"collectionPath": C, "filePath": "/etc/passwd"}),
        ("read_document", {"collectionPath": C, "filePath": "sub/../../outside.txt"}),
        ("get_document", {"documentPath": "not a node path"}),
        good,
    ]
    session = run_session(sample_index.db, calls, _env(sample_index), transport=transport)
    a = session.answers
    want_first = call_tool(sample_engine, *good)

    # protocol errors that name the argument (or the tool)
    for answer, named in zip(
        a[1:9], ["chunkIndex", "chunkIndex", "chunkIndex", "pge", "limit", "mode", "offset", "delete_everything"]
    ):
        assert answer.result is None and answer.error is not None, answer
        assert answer.error.code == INVALID_PARAMS
        assert f"'{named}'" in answer.error.message, answer.error.message
        assert "Traceback" not in answer.error.message

    # answers, not errors
    unknown_coll, out_of_range = a[9].envelope, a[10].envelope
    assert a[9].result.is_error is False and unknown_coll["found"] is False and "No/Such" in unknown_coll["message"]
    assert a[10].result.is_error is False and out_of_range["found"] is False
    assert out_of_range["totalChunks"] == doc.chunk_count and f"0..{doc.chunk_count - 1}" in out_of_range["message"]

    # path traversal: a tool error carrying the envelope
    for answer in a[11:14]:
        assert answer.result.is_error is True, answer.envelope
        assert answer.envelope["error"] == "path-escape" and answer.envelope["found"] is False
        assert "text" not in answer.envelope

    assert a[14].result.is_error is False and a[14].envelope["found"] is False

    # still serving, same answer as before the bad calls
    assert a[0].envelope == a[-1].envelope == want_first
    assert "Traceback" not in session.stderr


def test_no_provider_answers_with_envelopes(sample_index, sample_engine, transport):
    """EMBED_PROVIDER=none: vector/hybrid -> search-not-performed; auto falls back to keyword."""
    calls = [
        ("search_chunks", {"query": "table", "scope": C, "mode": "vector"}),
        ("search", {"query": "table", "scope": C, "mode": "hybrid"}),
        ("search_chunks", {"query": "table", "scope": C}),
        ("index_status", {}),
        ("get_chunk", {"collectionPath": C, "filePath": pick(sample_engine, ".pdf").file_path, "chunkIndex": 0}),
    ]
    session = run_session(sample_index.db, calls, {"EMBED_PROVIDER": "none"}, transport=transport)
    vector, hybrid, auto, status, chunk = session.answers
    for answer, mode in ((vector, "vector"), (hybrid, "hybrid")):
        env = answer.envelope
        assert answer.result.is_error is True
        assert env["searched"] is False and env["error"] == "search-not-performed" and env["mode"] == mode
        assert "count" not in env and "hits" not in env and env["message"]
    assert auto.result.is_error is False
    assert auto.envelope["searched"] is True and auto.envelope["mode"] == "keyword"
    assert auto.envelope["scoreKind"] == "bm25" and "EMBED_PROVIDER" in auto.envelope["message"]
    assert status.result.is_error is False
    assert status.envelope["provider"]["provider"] == "none"
    assert status.envelope["provider"]["probe"]["error"] == "search-not-performed"
    assert chunk.envelope["found"] is True


def test_empty_index_answers(tmp_path, transport):
    """A database that does not exist yet: an empty index, every tool answers."""
    db = str(tmp_path / "new" / "index.db")
    calls = [
        ("index_status", {"probe": False}),
        ("search", {"query": "anything"}),
        ("search_chunks", {"query": "anything", "scope": "A/B"}),
        ("get_chunk", {"collectionPath": "A", "filePath": "x.pdf", "chunkIndex": 0}),
        ("read_document", {"collectionPath": "A", "filePath": "x.pdf"}),
        ("get_document", {"documentPath": "A/_Documents/x.pdf"}),
    ]
    session = run_session(db, calls, {"EMBED_PROVIDER": "none"}, transport=transport)
    status, search, chunks, chunk, read, node = (a.envelope for a in session.answers)
    assert all(a.error is None and a.result.is_error is False for a in session.answers)
    assert status["collections"] == [] and status["documents"] == 0
    # no scope: an empty result with a hint (DESIGN "The tools"), not an error
    assert search["searched"] is False and "scope" in search["hint"] and search["hits"] == [] and "error" not in search
    assert chunks["searched"] is False and chunks["hint"] and chunks["hits"] == []
    assert chunk["found"] is False and chunk["totalChunks"] == 0
    assert read["found"] is False and node["found"] is False


def test_unusable_store_is_a_tool_error_not_a_protocol_error(tmp_path, transport):
    """A database path that cannot be opened: each call is an isError result, the server keeps serving."""
    db = tmp_path / "a-directory.db"
    db.mkdir()
    calls = [
        ("search_chunks", {"query": "x", "scope": "A", "mode": "keyword"}),
        ("get_chunk", {"collectionPath": "A", "filePath": "x.pdf", "chunkIndex": 0}),
        ("get_chunk", {"collectionPath": "A", "filePath": "x.pdf", "chunkIndex": -1}),
        ("index_status", {"probe": False}),
    ]
    session = run_session(str(db), calls, {"EMBED_PROVIDER": "none"}, transport=transport)
    first, second, bad, last = session.answers
    for answer in (first, second, last):
        assert answer.error is None and answer.result.is_error is True
        assert (
            "Traceback" not in answer.text and "index-unavailable" in answer.text and "cannot be opened" in answer.text
        )
    assert bad.error is not None and bad.error.code == INVALID_PARAMS


def test_text_and_structured_content_agree(sample_index, transport):
    calls = [(name, {"probe": False} if name == "index_status" else {}) for name in ("index_status",)]
    session = run_session(sample_index.db, calls, _env(sample_index), transport=transport)
    (answer,) = session.answers
    assert json.loads(answer.text) == answer.result.structured_content
    assert answer.text == to_json(answer.result.structured_content)


def _agent_section() -> str:
    """The page docs/agents.md, "Use it from an agent" (the README links it)."""
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text("utf-8")


def test_agent_docs_name_every_tool():
    """The page "Use it from an agent" cannot drift from the registry."""

    text = _agent_section()
    assert text.startswith("# Use it from an agent")
    for name in ("search_chunks", "get_chunk", "read_document", "get_document", "index_status"):
        assert name in text, name
    assert '"mcpServers"' in text and '"mcp"]' in text and "-32602" in text
    assert "nextIndex" in text and "nextOffset" in text and "overlapPrev" in text


def test_agent_docs_example_matches_the_sample_index(sample_engine):
    """The worked loop in docs/agents.md quotes real answers for Samples/multicolumn.pdf."""

    if sample_engine.store.get_document(C, "multicolumn.pdf") is None:
        pytest.skip("multicolumn.pdf is not in the sample corpus")
    text = _agent_section()
    args = {"collectionPath": C, "filePath": "multicolumn.pdf"}
    seven = call_tool(sample_engine, "get_chunk", {**args, "chunkIndex": 7})
    past = call_tool(sample_engine, "get_chunk", {**args, "chunkIndex": 9})
    page = call_tool(sample_engine, "read_document", {**args, "offset": 6600, "limit": 400})
    assert f'"start": {seven["start"]}, "end": {seven["end"]}' in text
    assert f'"totalChunks": {past["totalChunks"]}, "message": "{past["message"]}"' in text
    assert f'"totalLength": {page["totalLength"]}' in text and f'"nextOffset": {page["nextOffset"]}' in text
    hits = call_tool(
        sample_engine, "search_chunks", {"query": "EU countries population capital", "scope": C, "limit": 2}
    )["hits"]
    assert [(h["filePath"], h["chunkIndex"]) for h in hits] == [("multicolumn.pdf", 8), ("multicolumn.pdf", 7)]


def test_module_exports_are_documented():
    assert mcp_server.__doc__.strip()
    for name in mcp_server.__all__:
        obj = getattr(mcp_server, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), name


def test_missing_mcp_package_names_it():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "try:\n    import engine.faces.mcp_server\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'mcp'" in out and "pip install" in out


# -- HTTP only: address and bearer token ---------------------------------------------


def test_http_non_loopback_without_token_refuses_to_start(tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "engine", "--db", str(tmp_path / "i.db"), "mcp", "--http", "0.0.0.0:1"],
        cwd=REPO,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "CHUNKNAV_MCP_TOKEN" in r.stderr and "0.0.0.0" in r.stderr, r.stderr
    assert not (tmp_path / "i.db").exists()  # refused before opening the index


@pytest.mark.parametrize(
    "value, want",
    [
        ("127.0.0.1:8600", ("127.0.0.1", 8600)),
        ("8600", ("127.0.0.1", 8600)),
        ("[::1]:9", ("::1", 9)),
        ("localhost:80", ("localhost", 80)),
    ],
)
def test_parse_http_address(value, want):
    assert mcp_server.parse_http_address(value) == want


@pytest.mark.parametrize("value", ["127.0.0.1:", "127.0.0.1:0", "host:99999", "host:http"])
def test_parse_http_address_rejects(value):
    from engine.errors import SettingsError

    with pytest.raises(SettingsError, match="--http"):
        mcp_server.parse_http_address(value)


def test_http_token_is_required_and_never_logged(tmp_path):
    """Token set: no header or a wrong one -> 401; the right one -> a working session; log clean."""
    import tempfile
    import urllib.error
    import urllib.request

    from tests.fixtures.mcp_session import start_http_server, stop_http_server

    token = "s3cret-token-" + "x" * 20
    db = str(tmp_path / "i.db")
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        # listening on every address: the token is what admits a client
        proc, url = start_http_server(db, {"EMBED_PROVIDER": "none"}, errlog, address=f"0.0.0.0:{_port()}", token=token)
        try:
            statuses = []
            for header in (None, "Bearer wrong", f"Bearer {token}x", token, f"Bearer {token}"):
                req = urllib.request.Request(
                    url,
                    data=init,
                    method="POST",
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        **({"authorization": header} if header else {}),
                    },
                )
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        statuses.append(r.status)
                except urllib.error.HTTPError as e:
                    statuses.append(e.code)
                    if e.code == 401:
                        assert "CHUNKNAV_MCP_TOKEN" in e.read().decode() and e.headers["www-authenticate"]
        finally:
            stop_http_server(proc)
        errlog.seek(0)
        log = errlog.read()
    assert statuses == [401, 401, 401, 401, 200], statuses
    assert token not in log and "bearer token required" in log, log


def test_http_session_with_token(sample_index):
    """The official client with the Authorization header gets the same envelopes."""
    calls = [("index_status", {"probe": False})]
    session = run_session(sample_index.db, calls, _env(sample_index), transport="http", token="tok-" + "y" * 24)
    (answer,) = session.answers
    assert answer.result.is_error is False and answer.envelope["collections"]
    assert "tok-" not in session.stderr


def _port() -> int:
    from tests.fixtures.mcp_session import free_port

    return free_port()


def _clean_env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.update(PYTHONPATH=str(REPO), EMBED_MODEL="l2_supercat_256")
    return env


def _stdio_server(tmp_path) -> subprocess.Popen:
    """``chunknav mcp`` on stdio over an empty index, initialised by hand."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "--db", str(tmp_path / "i.db"), "mcp"],
        cwd=REPO,
        env={**_clean_env(), "EMBED_PROVIDER": "none"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _INIT_PARAMS})
    assert json.loads(proc.stdout.readline())["id"] == 1
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


_INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def _send(proc: subprocess.Popen, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


@pytest.mark.parametrize("ident", [{"a": 1}, [2], True, 1.5])
def test_a_request_whose_id_is_not_a_string_or_integer_is_invalid(tmp_path, ident):
    """Stdio and HTTP answer -32600 with id null; the server keeps serving."""
    import urllib.error
    import urllib.request

    from tests.fixtures.mcp_session import start_http_server, stop_http_server

    proc = _stdio_server(tmp_path)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": ident, "method": "tools/list"})
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        first, second = json.loads(proc.stdout.readline()), json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert first["id"] is None and first["error"]["code"] == -32600, first
    assert "id must be a string or an integer" in first["error"]["message"]
    assert second["id"] == 3 and second["result"]["tools"]

    with open(tmp_path / "http.log", "w+", encoding="utf-8") as errlog:
        server, url = start_http_server(str(tmp_path / "h.db"), {"EMBED_PROVIDER": "none"}, errlog)
        try:
            body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": _INIT_PARAMS})
            request = urllib.request.Request(
                url,
                data=body.encode(),
                method="POST",
                headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
            )
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(request, timeout=30)
        finally:
            stop_http_server(server)
    assert answer.value.code == 400
    error = json.loads(answer.value.read())
    assert error["id"] is None and error["error"]["code"] == -32600, error


def test_a_client_gone_mid_request_stops_the_server_quietly(tmp_path):
    """The client closes its end of stdout, then asks: the answer meets a broken
    pipe, and the server ends with status 0 and one INFO line, no traceback."""
    proc = _stdio_server(tmp_path)
    proc.stdout.close()
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    try:
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    stderr = proc.stderr.read().decode()
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
