"""Test helpers: talk to ``chunknav mcp`` as a subprocess with the official MCP client.

Not a test module. ``run_session(settings, calls)`` starts
``python -m engine --db DB mcp`` (what the ``chunknav mcp`` console script
runs) through ``mcp.client.stdio.stdio_client`` + ``ClientSession``, lists the
tools, makes each call in order on that one session and returns what came
back: a ``CallToolResult`` or the ``MCPError`` a protocol error raised.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


async def _run(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]], errlog) -> Session:
    out = Session()
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_S) as session:
            await session.initialize()
            out.tools = (await session.list_tools()).tools
            for name, arguments in calls:
                try:
                    out.answers.append(Answer(result=await session.call_tool(name, arguments)))
                except MCPError as e:
                    out.answers.append(Answer(error=e))
    return out


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
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            session = anyio.run(_run, server_params(db, env), calls, errlog)
        except BaseException:
            errlog.seek(0)
            sys.stderr.write("--- chunknav mcp stderr ---\n" + errlog.read())
            raise
        errlog.seek(0)
        session.stderr = errlog.read()
    return session
