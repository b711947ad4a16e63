"""The MCP face for agents, with the official client over stdio: budgets, cursors and
neighbours equal to registry calls; chunknav:// resources listed, read and templated; a
resource-list-changed (and resource-updated) notification after an index run."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import types

from engine.config import Settings
from engine.faces.mcp_resources import collection_uri, document_uri, documents_uri, parse_uri
from engine.tools.budget import count_tokens
from engine.tools.registry import Engine, call_tool, to_json
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.mcp_session import call, run_script

C = "Team/Notes"
ENV = {"EMBED_PROVIDER": "none"}
#: Seconds the test waits for a notification (the server looks every WATCH_S).
DEADLINE_S = 60.0


def _write(root, name: str, text: str) -> None:
    (root / name).write_text(text, encoding="utf-8")


@pytest.fixture
def notes(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    body = "".join(
        f"\n## Part {i}\n\n" + f"Budget line {i}: the rent and the heating cost money. " * 4 for i in range(10)
    )
    _write(root, "plan.md", "# Plan\n" + body)
    for i in range(4):
        _write(root, f"note{i}.md", f"# Note {i}\n\nThe rent note number {i}.\n")
    settings = Settings(
        db=str(tmp_path / "index.db"),
        embed_provider="none",
        chunk_size=300,
        chunk_overlap=40,
        allowed_roots=ALLOWED_ROOTS,
    ).validate()
    engine = Engine(settings)
    engine.add_collection(C, str(root))
    engine.run_index()
    yield engine, root, settings
    engine.close()


def test_uris_round_trip():
    assert parse_uri(collection_uri("A/B")) == ("collection", "A/B", None)
    assert parse_uri(documents_uri("A/B")) == ("documents", "A/B", None)
    assert parse_uri(document_uri("A/B", "x y/ü.md")) == ("document", "A/B", "x y/ü.md")
    assert parse_uri("chunknav://collections") == ("collections", None, None)
    assert parse_uri("file:///etc/passwd") is None and parse_uri("chunknav://collections/a/b/c/d") is None


def test_budgets_cursors_and_neighbours_over_stdio_equal_the_registry(notes):
    engine, _root, settings = notes
    first = call_tool(engine, "search_chunks", {"query": "rent", "scope": C, "limit": 5, "maxTokens": 600})
    assert first["truncated"] and first["cursor"]
    calls = [
        ("search_chunks", {"query": "rent", "scope": C, "limit": 5, "maxTokens": 600}),
        ("search_chunks", {"query": "rent", "scope": C, "limit": 5, "maxTokens": 600, "cursor": first["cursor"]}),
        ("search_chunks", {"query": "heating", "scope": C, "limit": 4, "neighbours": 1}),
        ("search_chunks", {"query": "heating", "scope": C, "limit": "4", "neighbours": "2", "maxTokens": "900"}),
        ("search", {"query": "rent", "scope": C, "maxTokens": 500}),
        ("list_documents", {"collectionPath": C, "limit": 2}),
        ("get_chunk", {"collectionPath": C, "filePath": "plan.md", "chunkIndex": 1, "maxTokens": 500}),
        ("read_document", {"collectionPath": C, "filePath": "plan.md", "maxTokens": 500}),
    ]

    async def script(session):
        return [await call(session, name, arguments) for name, arguments in calls]

    answers, _log = run_script(settings.db, script, ENV)
    for (name, arguments), answer in zip(calls, answers):
        want = call_tool(engine, name, arguments)
        assert answer.text == to_json(want), name
        if "maxTokens" in arguments:
            assert count_tokens({**want, "query": ""} if "query" in want else want) <= int(arguments["maxTokens"])
    assert any("context" in h for h in answers[2].envelope["hits"])


def test_stale_cursor_over_stdio_after_an_index_run(notes):
    engine, root, settings = notes
    args = {"query": "rent", "scope": C, "limit": 2}

    async def script(session):
        first = (await call(session, "search_chunks", args)).envelope
        _write(root, "note0.md", "# Note 0\n\nThe rent changed.\n")
        await anyio.to_thread.run_sync(engine.run_index)
        return await call(session, "search_chunks", {**args, "cursor": first["cursor"]})

    answer, _log = run_script(settings.db, script, ENV)
    assert answer.result.is_error and answer.envelope["error"] == "stale-cursor"


def test_resources_listed_read_and_a_list_changed_after_an_index_run(notes):
    engine, root, settings = notes

    got: list[object] = []
    changed = anyio.Event()
    updated = anyio.Event()

    async def handler(message) -> None:
        got.append(message)
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.set()

    async def script(session):
        out: dict[str, object] = {}
        out["caps"] = session.get_server_capabilities() if hasattr(session, "get_server_capabilities") else None
        listed = await session.list_resources()
        out["uris"] = [str(r.uri) for r in listed.resources]
        out["templates"] = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
        out["root"] = json.loads((await session.read_resource("chunknav://collections")).contents[0].text)
        out["coll"] = json.loads((await session.read_resource(collection_uri(C))).contents[0].text)
        out["docs"] = json.loads((await session.read_resource(documents_uri(C))).contents[0].text)
        out["doc"] = json.loads((await session.read_resource(document_uri(C, "plan.md"))).contents[0].text)
        try:
            await session.read_resource("chunknav://nothing/here")
            out["bad"] = None
        except Exception as e:  # MCPError: invalid params
            out["bad"] = str(e)
        await session.subscribe_resource(collection_uri(C))
        _write(root, "note9.md", "# Note 9\n\nA new rent note.\n")
        await anyio.to_thread.run_sync(engine.run_index)
        with anyio.fail_after(DEADLINE_S):
            await changed.wait()
            await updated.wait()
        out["after"] = [str(r.uri) for r in (await session.list_resources()).resources]
        out["docs_after"] = json.loads((await session.read_resource(documents_uri(C))).contents[0].text)
        return out

    out, _log = run_script(settings.db, script, ENV, message_handler=handler)
    assert "chunknav://collections" in out["uris"]
    assert collection_uri(C) in out["uris"] and documents_uri(C) in out["uris"]
    assert set(out["templates"]) == {
        "chunknav://collections/{collectionPath}",
        "chunknav://collections/{collectionPath}/documents",
        "chunknav://collections/{collectionPath}/documents/{filePath}",
    }
    assert [c["collectionPath"] for c in out["root"]["collections"]] == [C]
    assert out["coll"]["found"] and out["coll"]["documents"] == 5
    assert out["docs"]["total"] == 5 and [d["filePath"] for d in out["docs"]["documents"]][0] == "note0.md"
    assert out["doc"]["found"] and out["doc"]["filePath"] == "plan.md"
    assert out["bad"] and "unknown resource" in out["bad"]
    assert out["docs_after"]["total"] == 6
    kinds = [type(m).__name__ for m in got]
    assert "ResourceListChangedNotification" in kinds and "ResourceUpdatedNotification" in kinds


def test_the_watch_sees_only_runs_that_change_a_collection(notes):
    from engine.faces.mcp_resources import Watch

    engine, root, _settings = notes
    watch = Watch(engine)
    assert watch.look() is None  # the first look only learns the stamps
    assert watch.look() is None  # no run since
    engine.run_index()  # a run that changes nothing
    assert not watch.look()
    _write(root, "note1.md", "# Note 1\n\nChanged.\n")
    engine.run_index()
    assert watch.look() == {C}
    engine.add_collection("Other", str(root))
    engine.run_index()
    assert watch.look() == {"Other"}
