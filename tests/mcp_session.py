"""Test helpers: talk to ``chunknav mcp`` as a subprocess with the official MCP client.

Not a test module. ``run_session(db, calls)`` starts
``python -m engine --db DB mcp`` (what the ``chunknav mcp`` console script
runs) through ``mcp.client.stdio.stdio_client`` + ``ClientSession``, lists the
tools, makes each call in order on that one session and returns what came
back: a ``CallToolResult`` or the ``MCPError`` a protocol error raised.
``run_script(db, script)`` runs any ``async script(session)`` instead.

``transport="http"`` starts ``python -m engine --db DB mcp --http
127.0.0.1:PORT`` instead (a free port), waits until it listens, and connects
with the SDK's ``streamable_http_client`` (with ``Authorization: Bearer
<token>`` when ``token`` is given; the server gets it as CHUNKNAV_MCP_TOKEN).
``TRANSPORTS`` lists both, for ``parametrize``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[1]
#: Every transport ``chunknav mcp`` serves; tests parametrize over it.
TRANSPORTS = ("stdio", "http")
#: Seconds one request may take (the first search loads the local model).
READ_TIMEOUT_S = 120.0


@dataclass
class Answer:
    """One ``tools/call`` outcome: ``result`` (CallToolResult) or ``error`` (MCPError)."""

    result: Any = None
    error: MCPError | None = None

    @property
    def text(self) -> str:
        """The single text block of the result."""
        assert self.result is not None, f"protocol error instead of a result: {self.error}"
        (block,) = self.result.content
        assert block.type == "text"
        return block.text

    @property
    def envelope(self) -> dict[str, Any]:
        """The envelope parsed from the text block."""
        return json.loads(self.text)


@dataclass
class Session:
    """What one server session answered: the tool list and each call's answer."""

    tools: list[Any] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    stderr: str = ""


def server_params(db: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``python -m engine --db DB mcp`` from the repo root, environment limited to ``env``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "engine", "--db", db, "mcp"],
        cwd=str(REPO),
        env={"PYTHONPATH": str(REPO), **(env or {})},
    )


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Answer:
    """One ``tools/call``: the result, or the protocol error it raised."""
    try:
        return Answer(result=await session.call_tool(name, arguments))
    except MCPError as e:
        return Answer(error=e)


async def _run(params: StdioServerParameters, script: Callable[[ClientSession], Awaitable[Any]], errlog) -> Any:
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_S) as session:
            await session.initialize()
            return await script(session)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_http_server(db: str, env: dict[str, str] | None, errlog, address: str | None = None,
                      token: str | None = None) -> tuple[subprocess.Popen, str]:
    """``python -m engine --db DB mcp --http ADDRESS`` (default a free loopback port).

    Returns:
        ``(process, endpoint URL)`` once the port accepts connections.

    Raises:
        RuntimeError: the server exited or did not listen within 60 s.
    """
    address = address or f"127.0.0.1:{free_port()}"
    host, _, port = address.rpartition(":")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    full_env.update({"PYTHONPATH": str(REPO), **(env or {})})
    if token is not None:
        full_env["CHUNKNAV_MCP_TOKEN"] = token
    proc = subprocess.Popen([sys.executable, "-m", "engine", "--db", db, "mcp", "--http", address],
                            cwd=str(REPO), env=full_env, stdout=errlog, stderr=errlog, start_new_session=True)
    connect_host = "127.0.0.1" if host in ("0.0.0.0", "") else host.strip("[]")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chunknav mcp --http exited with {proc.returncode}")
        try:
            with socket.create_connection((connect_host, int(port)), timeout=1):
                return proc, f"http://{connect_host}:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    stop_http_server(proc)
    raise RuntimeError("chunknav mcp --http did not listen within 60 s")


def stop_http_server(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group; SIGKILL after 10 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def _run_http(url: str, token: str | None, script: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_S) as session:
                await session.initialize()
                return await script(session)


def run_script(db: str, script: Callable[[ClientSession], Awaitable[Any]],
               env: dict[str, str] | None = None, transport: str = "stdio",
               token: str | None = None) -> tuple[Any, str]:
    """Start the server on ``db``, run ``await script(session)`` after the handshake, stop it.

    Args:
        transport: ``stdio`` or ``http`` (see the module docstring).
        token: HTTP only: the server's CHUNKNAV_MCP_TOKEN, sent as a bearer token.

    Returns:
        ``(what script returned, the server's stderr log)``.
    """
    assert transport in TRANSPORTS, transport
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            if transport == "stdio":
                value = anyio.run(_run, server_params(db, env), script, errlog)
            else:
                proc, url = start_http_server(db, env, errlog, token=token)
                try:
                    value = anyio.run(_run_http, url, token, script)
                finally:
                    stop_http_server(proc)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("--- chunknav mcp stderr ---\n" + errlog.read())
            raise
        errlog.seek(0)
        return value, errlog.read()


def run_session(db: str, calls: list[tuple[str, dict[str, Any]]], env: dict[str, str] | None = None,
                transport: str = "stdio", token: str | None = None) -> Session:
    """Start the server on ``db``, make ``calls`` in order on one session, stop it.

    Args:
        db: SQLite index file passed as ``--db``.
        calls: ``(tool name, arguments)`` in order.
        env: extra environment for the server (e.g. ``EMBED_PROVIDER``).
        transport: ``stdio`` or ``http``.
        token: HTTP only: CHUNKNAV_MCP_TOKEN for the server, sent by the client.

    Returns:
        The session's tool list and one ``Answer`` per call; ``stderr`` holds
        the server's log.
    """

    async def script(session: ClientSession) -> Session:
        out = Session(tools=(await session.list_tools()).tools)
        for name, arguments in calls:
            out.answers.append(await call(session, name, arguments))
        return out

    out, out.stderr = run_script(db, script, env, transport, token)
    return out
