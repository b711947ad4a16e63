"""Test helpers: talk to ``chunknav mcp`` as a subprocess with the official MCP client.

Not a test module. ``run_session(db, calls)`` starts
``python -m engine --db DB mcp`` (what the ``chunknav mcp`` console script
runs) through ``mcp.client.stdio.stdio_client`` + ``ClientSession``, lists the
tools, makes each call in order on that one session and returns what came
back: a ``CallToolResult`` or the ``MCPError`` a protocol error raised.
``run_script(db, script)`` runs any ``async script(session)`` instead.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[1]
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


def run_script(db: str, script: Callable[[ClientSession], Awaitable[Any]],
               env: dict[str, str] | None = None) -> tuple[Any, str]:
    """Start the server on ``db``, run ``await script(session)`` after the handshake, stop it.

    Returns:
        ``(what script returned, the server's stderr log)``.
    """
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            value = anyio.run(_run, server_params(db, env), script, errlog)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("--- chunknav mcp stderr ---\n" + errlog.read())
            raise
        errlog.seek(0)
        return value, errlog.read()


def run_session(db: str, calls: list[tuple[str, dict[str, Any]]], env: dict[str, str] | None = None) -> Session:
    """Start the server on ``db``, make ``calls`` in order on one session, stop it.

    Args:
        db: SQLite index file passed as ``--db``.
        calls: ``(tool name, arguments)`` in order.
        env: extra environment for the server (e.g. ``EMBED_PROVIDER``).

    Returns:
        The session's tool list and one ``Answer`` per call; ``stderr`` holds
        the server's log.
    """

    async def script(session: ClientSession) -> Session:
        out = Session(tools=(await session.list_tools()).tools)
        for name, arguments in calls:
            out.answers.append(await call(session, name, arguments))
        return out

    out, out.stderr = run_script(db, script, env)
    return out
