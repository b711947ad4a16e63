"""Answer budgets and cursors: how many tokens an envelope costs, and where the next page starts.

Owns: the one token-counting rule every face shares (``count_tokens``: the UTF-8 bytes
of the envelope's compact JSON, ``to_json``, divided by ``TOKEN_BYTES`` and rounded
up), the one serialisation of an envelope (``to_json``, re-exported by
``engine.tools.registry``), the default budgets per tool (``MAX_TOKENS_DEFAULT``),
``fit_count`` (the most items of a list that keep an envelope within a budget) and the
cursor format (``make_cursor`` / ``read_cursor``: opaque URL-safe base64 of a small
JSON object naming the tool, a digest of the call's other arguments, the position and
the stamp of what the answer was read from; ``collection_stamp`` / ``document_stamp``
make those stamps). Imports only the standard library and ``engine.store.base``'s
protocol for typing; no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "TOKEN_BYTES",
    "MAX_TOKENS_DEFAULT",
    "MAX_TOKENS_MIN",
    "CursorError",
    "to_json",
    "count_tokens",
    "fit_count",
    "args_digest",
    "make_cursor",
    "read_cursor",
    "collection_stamp",
    "document_stamp",
]

#: Bytes of UTF-8 JSON counted as one token. The Llama 2 tokenizer, among the least frugal
#: on JSON (each digit a token), counts 1.3-1.8 tokens per 3 bytes of these envelopes
#: (bench/answer_tokens.py, docs/decisions/answer-budgets.md); at 2 bytes per token a
#: budget holds under it too.
TOKEN_BYTES = 2
#: The budget a tool call gets when it names no ``maxTokens``: tools that return
#: free text or lists of it. ``None``: no budget unless asked.
MAX_TOKENS_DEFAULT: dict[str, int | None] = {
    "search": 4000,
    "search_chunks": 4000,
    "list_documents": 4000,
    "get_chunk": None,
    "read_document": None,
    "get_document": None,
    "index_status": None,
}
#: The smallest budget a call may ask for: room for the envelope's own keys, a cursor and
#: at least one bare hit or entry, so every page moves the cursor on.
MAX_TOKENS_MIN = 500


class CursorError(ValueError):
    """A cursor that cannot be read, or that was made for another tool or other arguments."""


def to_json(envelope: Any, indent: int | None = None) -> str:
    """The one serialisation of an envelope: keys in insertion order, UTF-8
    kept, ``None`` as ``null``; absent optional keys stay absent."""
    return json.dumps(envelope, ensure_ascii=False, indent=indent)


def count_tokens(envelope: Any) -> int:
    """Tokens of ``envelope`` by the one rule: ``ceil(utf8_bytes(to_json(envelope)) / TOKEN_BYTES)``.

    The compact serialisation counts, whatever a face prints (the CLI indents it)."""
    return math.ceil(len(to_json(envelope).encode("utf-8")) / TOKEN_BYTES)


def fit_count(build: Callable[[int], Any], most: int, budget: int) -> int:
    """The largest ``n`` in ``0..most`` whose ``build(n)`` costs at most ``budget`` tokens.

    Args:
        build: ``build(n)`` -> the envelope holding the first ``n`` items; its cost must
            not shrink as ``n`` grows.
        most: items there are.
        budget: tokens allowed.

    Returns:
        ``n`` (0 when even the empty envelope is over: the caller says so).
    """
    lo, hi = 0, most
    while lo < hi:  # binary search over n: O(log most) serialisations
        mid = (lo + hi + 1) // 2
        if count_tokens(build(mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def args_digest(arguments: dict[str, Any], leave_out: Iterable[str] = ("cursor", "maxTokens", "limit")) -> str:
    """A short digest of a call's arguments without the paging ones: a cursor is only
    valid for the call that made it."""
    kept = {k: v for k, v in sorted(arguments.items()) if k not in set(leave_out) and v is not None}
    return hashlib.sha256(to_json(kept).encode("utf-8")).hexdigest()[:12]


def make_cursor(tool: str, digest: str, position: int, stamp: str, **extra: Any) -> str:
    """An opaque cursor: where the next page of ``tool`` starts for the call ``digest``.

    Args:
        tool: the registry tool name.
        digest: ``args_digest`` of the call.
        position: hits, documents or characters already returned.
        stamp: ``collection_stamp`` / ``document_stamp`` of what was read.
        extra: small JSON values the next page needs (the mode that ran, the ranking depth).
    """
    body = {"t": tool, "a": digest, "p": position, "s": stamp, **extra}
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def read_cursor(cursor: str, tool: str, digest: str) -> dict[str, Any]:
    """The fields of a cursor made by ``make_cursor`` for this tool and these arguments.

    Returns:
        ``{"t", "a", "p", "s", ...extra}``.

    Raises:
        CursorError: not a cursor, or made for another tool or other arguments.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        body = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise CursorError("not a cursor this server made; pass the 'cursor' of an earlier answer as it came") from None
    if not isinstance(body, dict) or not isinstance(body.get("p"), int) or body.get("p", -1) < 0:
        raise CursorError("not a cursor this server made; pass the 'cursor' of an earlier answer as it came")
    if body.get("t") != tool:
        raise CursorError(f"this cursor belongs to {body.get('t')!r}, not {tool!r}")
    if body.get("a") != digest:
        raise CursorError("this cursor was made for other arguments; repeat the call's arguments with it")
    return body


def collection_stamp(store: Any, collections: Iterable[str]) -> str:
    """What an index run that changes a collection changes: per collection its document
    count, newest ``indexed_at`` and chunk total (a run re-stores every document it
    changes, so its ``indexed_at`` moves; a removal lowers the count). A short hex digest."""
    h = hashlib.sha256()
    for c in sorted(set(collections)):
        docs = store.documents(c)
        newest = max((d.indexed_at for d in docs), default=0.0)
        h.update(f"{c}\0{len(docs)}\0{newest!r}\0{sum(d.chunk_count for d in docs)}\n".encode())
    return h.hexdigest()[:12]


def document_stamp(doc: Any) -> str:
    """A document's version as stored: content hash, ``indexed_at`` and chunk count (hex digest)."""
    if doc is None:
        return "none"
    key = f"{doc.content_hash}\0{doc.indexed_at!r}\0{doc.chunk_count}\0{doc.text_length}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]
