"""``chunknav mcp``: the tool registry served over MCP on stdio or streamable HTTP.

Owns: the MCP face. It publishes every ``engine.tools.registry.REGISTRY`` entry as an
MCP tool (name, description and the registry's JSON Schema as
``inputSchema``, unchanged) and answers ``tools/call`` with the tool's
envelope: once as JSON text (``engine.tools.registry.to_json``, the one serialisation
every face uses) and once as ``structuredContent``. No face goes past the
registry: validation and the envelope come from ``engine.tools.registry.call_tool``.

Outcomes (STYLE.md section 3):

* an envelope -> ``CallToolResult`` with ``isError`` true exactly when the
  envelope carries ``error`` (a refused embedding call, ``path-escape``,
  ``search-not-performed``); ``found: false`` is an answer, not an error;
* an unknown tool or arguments that break the schema -> a JSON-RPC error
  ``-32602`` (invalid params) whose message names the argument;
* anything unexpected (a bug, a store that cannot be opened) -> a tool
  result with ``isError`` and a one-line message; the traceback goes to the
  server's log on stderr, never to the client, and the server keeps serving;
* a stdio frame that is not JSON -> a JSON-RPC error ``-32700`` (parse
  error), valid JSON that is not a JSON-RPC message -> ``-32600`` (invalid
  request), both with ``id: null``; the server keeps serving
  (``_answer_bad_frames``);
* a request whose ``id`` is neither a string nor an integer (an object, a list,
  a boolean, a fraction) -> ``-32600`` with ``id: null`` on both transports
  (``bad_id_error``); the SDK would otherwise take it for a notification and
  answer nothing;
* a client that goes away mid-request (stdout closed, a broken pipe) ends the
  stdio server quietly: one INFO line, exit status 0, no traceback.

Every text leaving the server (results, failure messages, log lines) passes
``engine.secrets`` redaction.

Built on the official SDK's low-level ``mcp.server.lowlevel.Server`` (mcp
2.x: ``on_list_tools`` / ``on_call_tool`` constructor handlers), which
passes the registry's schemas through as they are and lets a result carry
both text content and ``structuredContent``. Engine calls run in worker
threads (the Store keeps one SQLite connection per thread), so a slow
embedding call does not stall the protocol loop.

Transports: stdio (``chunknav mcp``), or the SDK's streamable HTTP
(``chunknav mcp --http HOST:PORT``, endpoint ``http://HOST:PORT/mcp``, served by
uvicorn) with the same server object. HTTP listens on loopback unless told
otherwise; any other address needs ``CHUNKNAV_MCP_TOKEN`` (refused to start
without it), and when the token is set every request must carry
``Authorization: Bearer <token>``, else 401 (both rules:
``engine.faces.exposure``). The token is never logged.

This module and ``engine.faces.mcp_resources`` (the resources it serves) are the only ones
that import ``mcp``; the engine core never imports
this module.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, BinaryIO, Iterator, cast

try:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "'chunknav mcp' needs the 'mcp' package (the official MCP Python SDK): "
        "pip install 'mcp==2.3.0' (see requirements.txt)"
    ) from e

from engine.config import Settings, load_settings
from engine.errors import SettingsError
from engine.faces import exposure
from engine.faces.mcp_resources import Watch, list_resources, list_templates, resource_contents
from engine.secrets import install_log_redaction, redact
from engine.tools.registry import REGISTRY, Engine, ToolArgumentError, call_tool, to_json

__all__ = [
    "SERVER_NAME",
    "HTTP_PATH",
    "list_tools",
    "tool_result",
    "build_server",
    "serve",
    "parse_http_address",
    "bad_id_error",
    "http_app",
    "serve_http",
    "main",
]

log = logging.getLogger(__name__)

#: The server name announced in the MCP handshake.
SERVER_NAME = "chunknav"
#: The streamable-HTTP endpoint's path.
HTTP_PATH = "/mcp"

_INSTRUCTIONS = (
    "chunknav indexes document collections (PDF, docx, markdown, text) by document and by chunk. "
    "Find passages with search_chunks (or files with search), pass scope=<collectionPath> or put "
    "namespace:<collectionPath> in the query (index_status and the chunknav://collections resource "
    "list the collections). Read a hit with get_chunk and step with nextIndex/prevIndex; use "
    "read_document for a whole table or section. Answers fit maxTokens; pass 'cursor' back for more. "
    "An envelope with an 'error' code is a failure to report, never an empty result."
)


class _Server(Server):
    """The SDK's low-level server announcing ``resources.listChanged`` (``Watch`` sends it)."""

    def create_initialization_options(self, notification_options=None, *args: Any, **kwargs: Any):
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True), *args, **kwargs
        )


def _version() -> str:
    import engine

    return engine.__version__  # package metadata; "0+unknown" in a never-installed checkout


def list_tools() -> list[types.Tool]:
    """The MCP tool list: one ``types.Tool`` per registry entry, in registry order.

    ``inputSchema`` is a deep copy of the registry's JSON Schema, unchanged.
    """
    return [
        types.Tool(name=t.name, description=t.description, input_schema=copy.deepcopy(t.schema))
        for t in REGISTRY.values()
    ]


def tool_result(envelope: dict[str, Any]) -> types.CallToolResult:
    """One envelope as an MCP result: JSON text + ``structuredContent``.

    Args:
        envelope: a tool envelope as ``call_tool`` returns it (already
            normalised: JSON types only, scores rounded).

    Returns:
        ``CallToolResult`` whose single text block is ``to_json(envelope)``,
        whose ``structuredContent`` is the envelope, and whose ``isError`` is
        true exactly when the envelope carries ``error``.
    """
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=to_json(envelope))],
        structured_content=envelope,
        is_error="error" in envelope,
    )


def _failure_result(name: str, exc: BaseException) -> types.CallToolResult:
    text = redact(f"{name} failed: {type(exc).__name__}: {exc}".strip())
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(engine: Engine) -> Server:
    """A low-level MCP ``Server`` answering ``tools/list``, ``tools/call`` and the
    ``resources/*`` requests (``engine.faces.mcp_resources``) from ``engine``; while it
    runs, a ``Watch`` tells sessions that listed or subscribed to resources when an index
    run changed a collection.

    Args:
        engine: the Engine every call runs on (shared, thread-safe for reads).

    Returns:
        The server; run it with ``server.run(read, write, server.create_initialization_options())``.
    """

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list_tools())

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        arguments = dict(params.arguments or {})
        try:
            envelope = await anyio.to_thread.run_sync(call_tool, engine, name, arguments)
        except ToolArgumentError as e:
            # Unknown tool / arguments outside the schema: a protocol error (STYLE.md section 3).
            raise MCPError(code=types.INVALID_PARAMS, message=redact(str(e))) from None
        except Exception as e:  # a bug or an unusable store: report it, keep serving
            log.exception("tool %s failed with arguments %s", name, to_json(arguments))
            return _failure_result(name, e)
        if "error" in envelope:
            log.info("tool %s answered error %s: %s", name, envelope["error"], envelope.get("message", ""))
        return tool_result(envelope)

    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[Watch]:
        watch = Watch(engine)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch.watch)
            try:
                yield watch
            finally:
                tg.cancel_scope.cancel()

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        ctx.lifespan_context.listening(ctx.session)
        return types.ListResourcesResult(resources=await anyio.to_thread.run_sync(list_resources, engine))

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list_templates())

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            result = await anyio.to_thread.run_sync(resource_contents, engine, uri)
        except ToolArgumentError as e:
            raise MCPError(code=types.INVALID_PARAMS, message=redact(str(e))) from None
        if result is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {uri!r}; see resources/templates/list")
        return result

    async def on_subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        ctx.lifespan_context.subscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    async def on_unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        ctx.lifespan_context.unsubscribe(ctx.session, str(params.uri))
        return types.EmptyResult()

    return _Server(
        SERVER_NAME,
        version=_version(),
        title="chunknav content index",
        instructions=_INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_subscribe_resource=on_subscribe,
        on_unsubscribe_resource=on_unsubscribe,
    )


async def serve(settings: Settings | None = None, engine: Engine | None = None) -> None:
    """Serve the tools over stdio until the client closes stdin.

    Args:
        settings: validated settings (default ``load_settings()``); ignored
            when ``engine`` is given.
        engine: an Engine to serve (tests); default ``Engine(settings)``,
            closed when serving ends.

    The SDK diverts file descriptor 1 to stderr while it serves, so nothing
    the engine prints can corrupt the JSON-RPC stream on stdout.
    """
    own = engine is None
    engine = engine or Engine(settings or load_settings())
    server = build_server(engine)
    bad_send, bad_read = anyio.create_memory_object_stream[types.JSONRPCError](16)
    try:
        with _private_stdin() as wire:
            lines = cast("anyio.AsyncFile[str]", _IdCheckedLines(wire, bad_send))  # read as an async iterable
            async with stdio_server(stdin=lines) as (read_stream, write_stream):
                clean_send, clean_read = create_context_streams[SessionMessage | Exception](0)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_answer_bad_frames, read_stream, clean_send, write_stream)
                    tg.start_soon(_answer_bad_ids, bad_read, write_stream)
                    await server.run(clean_read, write_stream, server.create_initialization_options())
                    tg.cancel_scope.cancel()
    except* (BrokenPipeError, ConnectionResetError):
        log.info("chunknav mcp: the client closed the connection mid-request; stopping")
        _silence_stdout()
    finally:
        if own:
            engine.close()


@contextmanager
def _private_stdin() -> Iterator[BinaryIO]:
    """The wire's stdin on a private descriptor, fd 0 pointed at the null device
    while serving (handlers and child processes read EOF, never the wire);
    fd 0 is restored on exit."""
    saved, private = os.dup(0), os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    wire = os.fdopen(private, "rb", buffering=0)
    try:
        yield wire
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        wire.close()


def _silence_stdout() -> None:
    """After a broken pipe, point fd 1 at the null device so the interpreter's
    final flush has nowhere to fail."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


class _IdCheckedLines:
    """The stdin lines the SDK reads, less the requests whose ``id`` is not a
    string or an integer: those are answered ``-32600`` through ``errors``.

    A pipe or a socket is read by the event loop, so a read waiting for the next
    line is cancelled at once when the server stops (the client went away); other
    stdin (a regular file) is read in a worker thread."""

    def __init__(self, wire: BinaryIO, errors: Any):
        self._wire = wire
        self._errors = errors
        self._reader: asyncio.StreamReader | None = None
        self._file: anyio.AsyncFile[str] | None = None

    def __aiter__(self) -> "_IdCheckedLines":
        return self

    async def _readline(self) -> str:
        if self._reader is None and self._file is None:
            reader = asyncio.StreamReader(limit=_MAX_FRAME_BYTES)
            try:
                await asyncio.get_running_loop().connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(reader), self._wire
                )
                self._reader = reader
            except (ValueError, OSError):  # not a pipe, a socket or a character device
                text = io.TextIOWrapper(self._wire, encoding="utf-8", errors="replace")
                self._file = anyio.wrap_file(text)
        if self._reader is not None:
            return (await self._reader.readline()).decode("utf-8", "replace")
        assert self._file is not None
        return await self._file.readline()

    async def __anext__(self) -> str:
        while line := await self._readline():
            error = bad_id_error(line)
            if error is None:
                return line
            log.info("JSON-RPC request with an invalid id answered -32600")
            await self._errors.send(error)
        raise StopAsyncIteration


#: The longest stdio frame read (a line longer than this ends the session).
_MAX_FRAME_BYTES = 64 * 1024 * 1024


async def _answer_bad_ids(errors, write_stream) -> None:
    """Send each ``-32600`` answer ``_IdCheckedLines`` queued."""
    async with errors:
        async for error in errors:
            await write_stream.send(SessionMessage(error))


def bad_id_error(frame: str | bytes) -> types.JSONRPCError | None:
    """The ``-32600`` answer to a JSON-RPC request whose ``id`` is neither a string
    nor an integer (JSON-RPC 2.0 allows those and null), else None.

    Args:
        frame: one raw frame (a stdio line or an HTTP body); a batch (a JSON list)
            is judged by its members.
    """
    if b'"id"' not in (frame if isinstance(frame, bytes) else frame.encode("utf-8", "replace")):
        return None
    try:
        parsed = json.loads(frame)
    except ValueError:
        return None  # not JSON: the SDK answers -32700
    for message in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(message, dict) or "id" not in message:
            continue
        ident = message["id"]
        if ident is None or (isinstance(ident, (str, int)) and not isinstance(ident, bool)):
            continue
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"Invalid Request: the id must be a string or an integer, not {_json_kind(ident)}",
            ),
        )
    return None


def _json_kind(value: Any) -> str:
    """The JSON name of ``value``'s type (``an object``, ``a list``, ...)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a fraction" if isinstance(value, float) else type(value).__name__


def parse_error(exc: BaseException) -> types.JSONRPCError:
    """The JSON-RPC error answering one bad stdio frame: ``-32700`` when the
    frame is not JSON, ``-32600`` when it is JSON but not a JSON-RPC message;
    ``id`` is null (the frame's id cannot be trusted)."""
    errors = exc.errors() if hasattr(exc, "errors") else []
    not_json = any(e.get("type") == "json_invalid" for e in errors) or not errors
    code, what = (
        (types.PARSE_ERROR, "Parse error: the frame is not valid JSON")
        if not_json
        else (types.INVALID_REQUEST, "Invalid Request: the frame is JSON but not a JSON-RPC 2.0 message")
    )
    detail = str(errors[0].get("msg", "")) if errors else type(exc).__name__
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=redact(f"{what} ({detail})"))
    )


async def _answer_bad_frames(read_stream, clean_send, write_stream) -> None:
    """Forward good frames to the server; answer each bad one with ``parse_error``."""
    async with clean_send:
        async for item in read_stream:
            if isinstance(item, Exception):
                log.warning("malformed JSON-RPC frame on stdin: %s", type(item).__name__)
                await write_stream.send(SessionMessage(parse_error(item)))
                continue
            await clean_send.send(item)


def parse_http_address(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``PORT`` (loopback) -> ``(host, port)``.

    Raises:
        SettingsError: not of that form, or the port outside 1..65535.
    """
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"--http must be HOST:PORT with a port in 1..65535, got {value!r}")
    return host, int(port)


class _BearerToken:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``, else 401."""

    def __init__(self, app, token: str):
        self.app = app
        self._token = token

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not exposure.bearer_matches(given, self._token):
                body = json.dumps(
                    {"error": "unauthorized", "message": "missing or wrong bearer token (CHUNKNAV_MCP_TOKEN)"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="chunknav"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class _CheckIds:
    """ASGI middleware: a POSTed JSON-RPC request whose ``id`` is not a string or an
    integer gets HTTP 400 with the ``-32600`` error of ``bad_id_error``; every other
    request reaches the SDK with its body as sent."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        error = bad_id_error(body)
        if error is None:
            await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)
            return
        log.info("JSON-RPC request with an invalid id answered -32600")
        payload = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": error.error.model_dump(exclude_none=True)}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _replay(messages: list[dict], then=None):
    """An ASGI ``receive`` giving ``messages`` first, then deferring to ``then``."""
    queue = list(messages)

    async def receive():
        if queue:
            return queue.pop(0)
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive


def http_app(engine: Engine, host: str = "127.0.0.1", token: str = ""):
    """The ASGI app serving ``build_server(engine)`` over streamable HTTP at ``HTTP_PATH``.

    Args:
        engine: the Engine every call runs on.
        host: the address it will listen on; loopback turns on the SDK's DNS
            rebinding protection (Host/Origin must be loopback).
        token: when non-empty, every request must carry ``Authorization: Bearer <token>``.

    Raises:
        SettingsError: ``host`` is not loopback and ``token`` is empty.
    """
    exposure.check(exposure.MCP_HTTP, host, token)
    app = _CheckIds(build_server(engine).streamable_http_app(streamable_http_path=HTTP_PATH, host=host))
    return _BearerToken(app, token) if token else app


async def serve_http(host: str, port: int, settings: Settings | None = None, engine: Engine | None = None) -> None:
    """Serve the tools over streamable HTTP on ``host:port`` until interrupted.

    Args:
        host: listen address; a non-loopback one needs ``settings.mcp_token``.
        port: TCP port, 1..65535.
        settings: validated settings (default ``load_settings()``).
        engine: an Engine to serve (tests); default ``Engine(settings)``,
            closed when serving ends.

    Raises:
        SettingsError: non-loopback ``host`` without ``CHUNKNAV_MCP_TOKEN``.
    """
    import uvicorn

    own = engine is None
    if settings is None:
        settings = load_settings() if engine is None else engine.settings
    exposure.check(exposure.MCP_HTTP, host, settings.mcp_token)  # before opening anything
    engine = engine or Engine(settings)
    app = http_app(engine, host, settings.mcp_token)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="on", log_config=None
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        if own:
            engine.close()


def main(settings: Settings | None = None, *, db: str | None = None, http: str | None = None) -> int:
    """Run the server (the ``chunknav mcp`` subcommand); returns the exit code.

    Args:
        settings: validated settings; default ``load_settings()`` (environment,
            ``chunknav.toml``), with ``db`` as an override when given.
        db: SQLite index file, when ``settings`` is not given.
        http: ``HOST:PORT`` to serve streamable HTTP there instead of stdio.

    Returns:
        0 when the client closed the connection (stdio) or the server was stopped (HTTP).

    Raises:
        SettingsError: a bad ``http`` address, or a non-loopback one without
            ``CHUNKNAV_MCP_TOKEN``.
    """
    install_log_redaction()
    if settings is None:
        settings = load_settings({"db": db})
    if http is None:
        log.info("chunknav mcp: serving %d tools on stdio (db %s)", len(REGISTRY), settings.dsn or settings.db)
        anyio.run(serve, settings)
        return 0
    host, port = parse_http_address(http)
    exposure.check(exposure.MCP_HTTP, host, settings.mcp_token)
    shown = f"[{host}]" if ":" in host else host
    if log.getEffectiveLevel() > logging.INFO:  # the start line is information the operator still sees
        log.setLevel(logging.INFO)
    log.info(
        "chunknav mcp: serving %d tools on http://%s:%d%s (%s)",
        len(REGISTRY),
        shown,
        port,
        HTTP_PATH,
        "bearer token required" if settings.mcp_token else "loopback, no token",
    )
    anyio.run(serve_http, host, port, settings)
    return 0


if __name__ == "__main__":  # python -m engine.faces.mcp_server (settings from the environment)
    import sys

    sys.exit(main())
