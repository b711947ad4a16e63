"""The tool registry: one entry per DESIGN.md tool (the ``Engine`` they run on lives in ``engine.service``).

Owns: each tool's name, agent-facing description, JSON Schema for its
arguments, engine function and envelope type; argument validation; the one
JSON serialisation every face uses (``to_json``); the equivalent ``chunknav``
command line of a call (``cli_command``). The CLI subcommands, the MCP tool
list and the GUI's "maps to a tool call" panel are all built from
``REGISTRY``: a tool added here appears in all three.

Envelopes are built here and only here (internal values -> camelCase). No
exception crosses a tool boundary except ``ToolArgumentError`` (bad
arguments: a protocol-level error for MCP, exit 2 for the CLI).
Imports no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import json
import logging
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from engine.tools import envelopes as E
from engine.errors import StoreFaultError
from engine.tools.budget import MAX_TOKENS_DEFAULT, MAX_TOKENS_MIN, TOKEN_BYTES, CursorError, to_json
from engine.search.query import SCOPE_QUALIFIERS
from engine.search.searcher import MAX_QUERY_CHARS
from engine.secrets import public_dsn, redact_obj
from engine.service import Engine

__all__ = [
    "Tool",
    "REGISTRY",
    "Engine",
    "ToolArgumentError",
    "call_tool",
    "to_json",
    "normalise",
    "cli_command",
    "READ_LIMIT_DEFAULT",
    "LIST_LIMIT_DEFAULT",
]

log = logging.getLogger(__name__)

from engine.tools.answers import (  # noqa: E402,F401  (re-exported: the registry's functions)
    LIST_LIMIT_DEFAULT,
    READ_LIMIT_DEFAULT,
    SCORE_DECIMALS,
    tool_cancel_index,
    tool_get_chunk,
    tool_get_document,
    tool_index_status,
    tool_list_documents,
    tool_read_document,
)
from engine.tools.operations import PLAN_LIMIT_DEFAULT, tool_coverage, tool_plan_index  # noqa: E402
from engine.tools.hits import NEIGHBOURS_MOST, tool_search, tool_search_chunks  # noqa: E402


def _max_tokens(tool: str) -> dict[str, Any]:
    """The ``maxTokens`` argument of a tool, with its default budget."""
    default = MAX_TOKENS_DEFAULT[tool]
    return {
        "type": ["integer", "null"],
        "minimum": MAX_TOKENS_MIN,
        "description": f"most tokens the answer may take (1 token = {TOKEN_BYTES} bytes of its JSON; "
        + (f"default {default})" if default else "default: no limit)"),
    }


_CURSOR = {
    "type": ["string", "null"],
    "minLength": 1,
    "maxLength": 4000,
    "description": "the 'cursor' of an earlier answer to this call: continues where it stopped",
}
#: A ``modified:`` window as the query grammar writes it (``engine.search.query.parse_modified``).
MODIFIED_PATTERN = (
    r"^\s*(?:(?:>=|<=|>|<)?[0-9]{4}-[0-9]{2}-[0-9]{2}[^.\s]*"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}[^.\s]*\.\.(?:[0-9]{4}-[0-9]{2}-[0-9]{2}[^.\s]*)?"
    r"|\.\.[0-9]{4}-[0-9]{2}-[0-9]{2}[^.\s]*)\s*$"
)
_FILTERS = {
    "modified": {
        "type": ["string", "null"],
        "pattern": MODIFIED_PATTERN,
        "description": "file modification time (UTC): '>2026-01-01', '<=2026-03-31', "
        "'2026-01-01..2026-03-31', or a day; as the query token modified:",
    },
    "heading": {
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": 500,
        "description": 'keep hits under a heading holding these words; as the query token heading:"..."',
    },
}


class ToolArgumentError(ValueError):
    """Arguments that do not fit the tool's schema; the message names the argument."""


# ---------------------------------------------------------------------------
# registry


@dataclass(frozen=True)
class Tool:
    """One tool: ``name``, agent-facing ``description``, JSON Schema ``schema``
    for its arguments, the function ``fn(engine, **arguments)`` and its
    ``envelope`` TypedDict."""

    name: str
    description: str
    schema: dict[str, Any]
    fn: Callable[..., Any]
    envelope: type


_PATHS = {
    "collectionPath": {"type": "string", "minLength": 1, "description": "collection node path, e.g. 'ACME/Reports'"},
    "filePath": {
        "type": "string",
        "minLength": 1,
        "description": "POSIX path of the file relative to the collection root",
    },
}
_SEARCH_ARGS = {
    "query": {
        "type": "string",
        "maxLength": MAX_QUERY_CHARS,
        "description": "words to search for (at most "
        f"{MAX_QUERY_CHARS} characters); may contain 'namespace:<collectionPath>' (targets "
        f"that collection; repeatable) and 'scope:{'|'.join(SCOPE_QUALIFIERS)}' (exact: that "
        "collection only, the default; subtree: it and the collections below; "
        "ancestorsandself: it and its ancestors), 'modified:>2026-01-01' (also <, >=, <=, "
        "A..B) and 'heading:\"Terms of use\"'. Other key:value tokens are named in "
        "'hint' and not searched",
    },
    "scope": {
        "type": ["string", "array", "null"],
        "items": {"type": "string", "minLength": 1},
        "minItems": 1,
        "maxItems": 100,
        "description": "anchored scope: a node path, or a list of them; each path and its "
        "ancestors are searched; '*' = every collection. A trailing '/' is accepted",
    },
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 20, "description": "hits to return"},
    "mode": {
        "type": "string",
        "enum": ["auto", "vector", "keyword", "hybrid"],
        "default": "auto",
        "description": "vector = cosine over embeddings, keyword = BM25 (stemmed; CJK by "
        "substring), hybrid = weighted reciprocal rank fusion of both (each hit carries "
        "vectorScore/vectorRank/keywordScore/keywordRank); auto = hybrid when a provider is "
        "configured and vectors exist for it, else keyword",
    },
    "minScore": {
        "type": ["number", "null"],
        "description": "drop hits whose score (the mode's own: cosine, BM25 or fused) is below this",
    },
    "vectorWeight": {
        "type": ["number", "null"],
        "minimum": 0,
        "maximum": 1,
        "description": "hybrid only: weight of the vector ranking in the fusion, 0..1 "
        "(default 0.5; 1 = vector order, 0 = keyword order)",
    },
}


_COLLECTIONS = {
    "type": ["string", "array", "null"],
    "items": {"type": "string", "minLength": 1},
    "minItems": 1,
    "maxItems": 100,
    "description": "a collection path or a list of them (default: every collection)",
}
_PAGED_SEARCH = {**_SEARCH_ARGS, **_FILTERS, "maxTokens": _max_tokens("search"), "cursor": _CURSOR}
_CHUNK_SEARCH = {
    **_PAGED_SEARCH,
    "maxTokens": _max_tokens("search_chunks"),
    "neighbours": {
        "type": "integer",
        "minimum": 0,
        "maximum": NEIGHBOURS_MOST,
        "default": 0,
        "description": "chunks of context before and after each hit, merged into one span (hit.context)",
    },
}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


REGISTRY: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "search",
            "Which documents are about X? Ranks files by their best chunk. Returns one hit per file "
            "(documentPath, collectionPath, filePath, rank, score, snippet, chunkIndex of the best "
            "chunk). Give a scope or a namespace: token. Answers fit maxTokens; pass 'cursor' back "
            "for more. On error the envelope has searched=false and an 'error' code; never read "
            "that as 'no results'.",
            _schema(_PAGED_SEARCH, ["query"]),
            tool_search,
            E.SearchResult,
        ),
        Tool(
            "search_chunks",
            "Find passages about X. Returns chunks (not deduplicated by file) with rank, score "
            "(hybrid by default: fused, with vectorScore/vectorRank/keywordScore/keywordRank), "
            "snippet, page and bbox (0..1 of the displayed page), headingPath and lastModified. "
            "neighbours=k adds the chunks around each hit. Answers fit maxTokens; pass 'cursor' "
            "back for the next page. Follow up with get_chunk for the full text.",
            _schema(_CHUNK_SEARCH, ["query"]),
            tool_search_chunks,
            E.SearchResult,
        ),
        Tool(
            "get_chunk",
            "Read one chunk (about 1000 characters; neighbours overlap by 150) with its page, bbox, "
            "start/end character offsets, and prevIndex/nextIndex to step through the document. "
            "Out of range answers found=false with totalChunks and the valid range; a file that failed, "
            "is encrypted or has no text answers found=false with status, reasonCode and message.",
            _schema(
                {
                    **_PATHS,
                    "chunkIndex": {"type": "integer", "minimum": 0, "description": "0-based chunk index"},
                    "maxTokens": _max_tokens("get_chunk"),
                    "cursor": _CURSOR,
                },
                ["collectionPath", "filePath", "chunkIndex"],
            ),
            tool_get_chunk,
            E.ChunkResult,
        ),
        Tool(
            "read_document",
            "Read a document's whole extracted text (use this for a whole table or section, not "
            "chunk stepping). Paged: 'limit' characters from 'offset'; nextOffset is null at the end. "
            "A file that failed, is encrypted or has no text answers found=false with status, "
            "reasonCode and message (never an empty text).",
            _schema(
                {
                    **_PATHS,
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "default": 0,
                        "description": "character offset to start at",
                    },
                    "limit": {
                        "type": ["integer", "null"],
                        "minimum": 1,
                        "description": f"characters to return (default {READ_LIMIT_DEFAULT})",
                    },
                    "maxTokens": _max_tokens("read_document"),
                    "cursor": _CURSOR,
                },
                ["collectionPath", "filePath"],
            ),
            tool_read_document,
            E.DocumentText,
        ),
        Tool(
            "get_document",
            "Metadata and a short summary of a document node (never its text), with collectionPath "
            "and filePath for read_document.",
            _schema(
                {
                    "documentPath": {
                        "type": "string",
                        "minLength": 1,
                        "description": "'<collectionPath>/_Documents/<slug>' as in search hits",
                    }
                },
                ["documentPath"],
            ),
            tool_get_document,
            E.DocumentNode,
        ),
        Tool(
            "list_documents",
            "List a collection's files (paged, sorted by filePath): documentPath for get_document, "
            "filePath for get_chunk/read_document, type, status and reason (failed/empty files "
            "too), pages, chunks, text encoding and OCR pages where recorded.",
            _schema(
                {
                    "collectionPath": _PATHS["collectionPath"],
                    "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "documents to skip"},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1000,
                        "default": LIST_LIMIT_DEFAULT,
                        "description": "documents to return",
                    },
                    "maxTokens": _max_tokens("list_documents"),
                    "cursor": _CURSOR,
                },
                ["collectionPath"],
            ),
            tool_list_documents,
            E.DocumentList,
        ),
        Tool(
            "index_status",
            "What is indexed: collections, documents, chunks, vectors per model, stale vectors, failed "
            "files with reasons, and the embedding provider with its probe result.",
            _schema(
                {
                    "probe": {
                        "type": "boolean",
                        "default": True,
                        "description": "embed a fixed string to check the provider",
                    }
                },
                [],
            ),
            tool_index_status,
            E.IndexStatus,
        ),
        Tool(
            "plan_index",
            "Dry run of an index run: which files it would add, change (read again), rename "
            "(chunks and vectors moved), remove or keep missing, leave unchanged, mark stale or "
            "skip, with reasons. Nothing is written.",
            _schema(
                {
                    "collections": _COLLECTIONS,
                    "force": {
                        "type": "boolean",
                        "default": False,
                        "description": "plan a Rebuild: every file read again",
                    },
                    "keepMissing": {
                        "type": ["boolean", "null"],
                        "description": "keep documents whose file is gone, marked missing "
                        "(default: the keep_missing setting)",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 100000,
                        "default": PLAN_LIMIT_DEFAULT,
                        "description": "files listed per list (counts stay whole)",
                    },
                },
                [],
            ),
            tool_plan_index,
            E.IndexPlan,
        ),
        Tool(
            "coverage",
            "Coverage per collection and file type: files seen on disk, indexed, empty, failed, "
            "stale, missing, not indexed yet, skipped by reason, chunks, and chunks with a vector "
            "per model.",
            _schema({"collections": _COLLECTIONS}, []),
            tool_coverage,
            E.Coverage,
        ),
        Tool(
            "cancel_index",
            "Stop the index run that is active on this index, whichever process runs it: it abandons "
            "the files it is reading within seconds, keeps what it committed, and is recorded cancelled. "
            "Answers requested false (with the last run's status) when no run is active.",
            _schema({}, []),
            tool_cancel_index,
            E.CancelIndexResult,
        ),
    )
}


#: One validator per tool, built on the tool's first call: building one (the schema itself
#: checked) takes ~2 ms, a call on a built one ~0.03 ms (docs/decisions/tool-validators.md).
#: jsonschema itself (~40-60 ms of imports) loads with the first call, so a process
#: that never calls a tool (``chunknav index``, ``collections``) never imports it.
_VALIDATORS: dict[str, Any] = {}


def _validator(tool: Tool) -> Any:
    """The jsonschema validator of the tool's schema (built again when the schema object changes)."""
    v = _VALIDATORS.get(tool.name)
    if v is None or v.schema is not tool.schema:
        import jsonschema

        cls = jsonschema.validators.validator_for(tool.schema)
        cls.check_schema(tool.schema)
        v = _VALIDATORS[tool.name] = cls(tool.schema)
    return v


def _validate(tool: Tool, arguments: dict[str, Any]) -> None:
    """Check ``arguments`` against the tool's schema (jsonschema, the schema's own draft).

    Raises:
        ToolArgumentError: the best-matching error, naming the argument.
    """
    import jsonschema

    try:
        error = jsonschema.exceptions.best_match(_validator(tool).iter_errors(arguments))
        if error is not None:
            raise error
    except jsonschema.ValidationError as e:
        where = ".".join(str(p) for p in e.absolute_path) or (
            e.message.split("'")[1] if e.validator in ("required", "additionalProperties") and "'" in e.message else ""
        )
        raise ToolArgumentError(
            f"{tool.name}: argument {where!r}: {e.message}" if where else f"{tool.name}: {e.message}"
        ) from None


def call_tool(engine: Engine, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``arguments`` against the tool's schema and run it.

    Returns:
        The tool's envelope (a plain dict, JSON-able, camelCase keys, sharing no object
        with the engine): what ``normalise`` makes of the tool's answer, with every string
        (keys included) passed through the redaction of every configured secret
        (``engine.secrets``).

    Raises:
        ToolArgumentError: unknown tool, or arguments that break the schema
            (the message names the argument).
    """
    tool = REGISTRY.get(name)
    if tool is None:
        raise ToolArgumentError(f"unknown tool {name!r}; tools: {', '.join(REGISTRY)}")
    arguments = _numeric_strings(tool, dict(arguments or {}))
    _check_lengths(tool, arguments)
    _validate(tool, arguments)
    try:
        envelope = tool.fn(engine, **_integers(tool, arguments))
    except StoreFaultError as e:  # cannot be opened, lost, disk full, busy: the class as ``error``
        envelope = _unavailable(name, arguments, str(e), e.code)
    except CursorError as e:
        raise ToolArgumentError(f"{tool.name}: argument 'cursor': {e}") from None
    return _wire(envelope)


def _numeric_strings(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """An integer argument sent as a string of digits (``"5"``, ``" -2 "``: many agent
    clients send numbers so) becomes that integer, then meets the schema as one; any
    other string stays as sent, so the schema names the argument."""
    for arg, value in arguments.items():
        kind = tool.schema["properties"].get(arg, {}).get("type")
        integer = kind == "integer" or (isinstance(kind, list) and "integer" in kind)
        if integer and isinstance(value, str):
            text = value.strip()
            digits = text[1:] if text[:1] in "+-" else text
            if digits.isascii() and digits.isdigit() and len(digits) <= 18:
                arguments[arg] = int(text)
    return arguments


def _wire(envelope: Any) -> dict[str, Any]:
    """``normalise(envelope)`` with every string redacted (``engine.secrets``: no configured
    secret leaves through any face). An envelope of plain JSON values is what the JSON round
    trip gives back, so the redaction walk (which builds every container anew) runs on it as
    it is; any other value sends it through the round trip first, which converts or refuses
    it (docs/decisions/envelope-wire-form.md)."""
    try:
        redacted: dict[str, Any] = redact_obj(envelope, json_only=True)
    except TypeError:
        redacted = redact_obj(normalise(envelope))
    return redacted


def _check_lengths(tool: Tool, arguments: dict[str, Any]) -> None:
    """Refuse a string longer than its schema's ``maxLength`` with a short message
    naming the argument (the schema validator's own message would repeat the value).

    Raises:
        ToolArgumentError: e.g. ``search: argument 'query': 60000 characters, the most is 50000``.
    """
    for arg, spec in tool.schema["properties"].items():
        most = spec.get("maxLength")
        value = arguments.get(arg)
        if most is not None and isinstance(value, str) and len(value) > most:
            raise ToolArgumentError(f"{tool.name}: argument {arg!r}: {len(value)} characters, the most is {most}")


def _unavailable(name: str, arguments: dict[str, Any], message: str, code: str = "index-unavailable") -> dict[str, Any]:
    """The tool's envelope when the store failed (``StoreFaultError``: it cannot be opened, was
    lost, its disk is full): ``error`` its ``code`` with the store's reason, the tool's required
    keys kept."""
    fail = {"error": code, "message": message}
    a = arguments
    if name in ("search", "search_chunks"):
        return {
            "searched": False,
            "query": a.get("query", ""),
            "mode": a.get("mode", "auto"),
            "collections": [],
            **fail,
        }
    if name == "get_chunk":
        return {
            "found": False,
            "collectionPath": a["collectionPath"],
            "filePath": a["filePath"],
            "chunkIndex": a["chunkIndex"],
            "totalChunks": 0,
            **fail,
        }
    if name == "read_document":
        return {
            "found": False,
            "collectionPath": a["collectionPath"],
            "filePath": a["filePath"],
            "offset": a.get("offset", 0),
            **fail,
        }
    if name == "get_document":
        return {"found": False, "documentPath": a["documentPath"], **fail}
    if name == "list_documents":
        return {"found": False, "collectionPath": a["collectionPath"], "offset": a.get("offset", 0), **fail}
    named = a.get("collections")
    named = [named] if isinstance(named, str) else list(named or [])
    if name == "coverage":
        return {"collections": named, "models": [], "rows": [], "rootErrors": [], **fail}
    if name == "plan_index":
        counts = {k: 0 for k in ("add", "change", "rename", "remove", "missing", "unchanged", "stale", "skipped")}
        lists: dict[str, list[Any]] = {k: [] for k in counts}
        return {
            "dryRun": True,
            "collections": named,
            "force": bool(a.get("force")),
            "keepMissing": bool(a.get("keepMissing")),
            "filesSeen": 0,
            "counts": counts,
            **lists,
            "rootErrors": [],
            **fail,
        }
    if name == "cancel_index":
        return {"requested": False, "status": "unknown", **fail}
    return {
        "collections": [],
        "documents": 0,
        "chunks": 0,
        "vectors": [],
        "staleVectors": 0,
        "failures": [],
        "provider": {"provider": "", "model": "", "dim": 0},
        **fail,
    }


def _integers(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema's ``integer`` admits ``3.0``; hand the tool ``3`` (a float
    index would break slicing and come back as ``3.0`` in the envelope)."""
    for arg, value in arguments.items():
        kind = tool.schema["properties"].get(arg, {}).get("type")
        integer = kind == "integer" or (isinstance(kind, list) and "integer" in kind)
        if integer and isinstance(value, float) and value.is_integer():
            arguments[arg] = int(value)
    return arguments


def normalise(envelope: Any) -> Any:
    """The envelope as it travels: a JSON round trip of ``to_json`` (tuples
    become lists, floats keep their rounding)."""
    return json.loads(to_json(envelope))


# CLI subcommand spelling of each tool and how arguments map to argv.
CLI_NAMES = {
    "search": "search",
    "search_chunks": "search-chunks",
    "get_chunk": "get-chunk",
    "read_document": "read",
    "get_document": "node",
    "list_documents": "documents",
    "index_status": "status",
    "plan_index": "plan",
    "coverage": "coverage",
    "cancel_index": "cancel",
}
CLI_POSITIONAL = {
    "search": ["query"],
    "search_chunks": ["query"],
    "get_chunk": ["collectionPath", "filePath", "chunkIndex"],
    "read_document": ["collectionPath", "filePath"],
    "get_document": ["documentPath"],
    "list_documents": ["collectionPath"],
    "index_status": [],
    "plan_index": [],
    "coverage": [],
    "cancel_index": [],
}


def cli_option(arg: str) -> str:
    """``chunkIndex`` -> ``--chunk-index``."""
    return "--" + "".join("-" + c.lower() if c.isupper() else c for c in arg)


def cli_command(name: str, arguments: dict[str, Any], settings: Any = None) -> str:
    """The ``chunknav`` command line equivalent to a tool call (JSON output).

    Args:
        name: a ``REGISTRY`` tool name.
        arguments: the call's arguments.
        settings: the ``Settings`` of the index the call ran on; when given,
            the command names that index so it runs from any directory:
            ``--dsn`` without its password (``engine.secrets.public_dsn``) for
            Postgres, else ``--db`` with the absolute path of the SQLite file.
    """
    parts = ["chunknav"]
    if settings is not None:
        if getattr(settings, "dsn", ""):
            parts += ["--dsn", public_dsn(settings.dsn)]
        elif getattr(settings, "db", "") and settings.db != ":memory:":
            import os

            parts += ["--db", os.path.abspath(settings.db)]
    parts.append(CLI_NAMES[name])
    for arg in CLI_POSITIONAL[name]:
        if arg in arguments:
            parts.append(str(arguments[arg]))
    for arg, value in arguments.items():
        if arg in CLI_POSITIONAL[name] or value is None:
            continue
        if isinstance(value, bool):  # the flag that sets it, unless it is the default
            if value != REGISTRY[name].schema["properties"][arg].get("default"):
                parts.append(cli_option(arg) if value else "--no-" + cli_option(arg)[2:])
            continue
        for item in value if isinstance(value, list) else [value]:
            parts += [cli_option(arg), str(item)]
    if name in ("index_status", "coverage"):
        parts.append("--json")
    return " ".join(shlex.quote(p) for p in parts)
