"""MCP resources of ``chunknav mcp``: collections, their documents and counts under ``chunknav://``.

Owns: the ``chunknav://`` URI scheme (``SCHEME``, ``collection_uri``, ``documents_uri``,
``document_uri``, ``parse_uri``), the resource list and resource templates, reading a
resource (each answer is a registry tool's envelope as JSON: ``index_status``,
``list_documents``, ``get_document``, so a resource and its tool never disagree), and
``Watch``: the lifespan state that remembers which sessions listed or subscribed and
tells them when an index run changed a collection (``notifications/resources/list_changed``
to each such session, ``notifications/resources/updated`` for each subscribed URI whose
collection changed). An index run in any process is seen: ``Watch.watch`` reads the
store's last run record every ``WATCH_S`` seconds and, when it moved, compares each
collection's stamp (``engine.tools.budget.collection_stamp``).

URIs (a collectionPath or filePath is one percent-encoded segment, ``/`` as ``%2F``)::

    chunknav://collections                                   every collection with its counts
    chunknav://collections/{collectionPath}                  one collection: root and counts
    chunknav://collections/{collectionPath}/documents        its documents (list_documents)
    chunknav://collections/{collectionPath}/documents/{filePath}   one document node (get_document)

Imports ``mcp`` (a face); the engine core never imports this module.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote, unquote

import anyio
from mcp import types

from engine.paths import document_path
from engine.tools.budget import collection_stamp
from engine.tools.registry import Engine, call_tool, to_json

__all__ = [
    "SCHEME",
    "WATCH_S",
    "collection_uri",
    "documents_uri",
    "document_uri",
    "parse_uri",
    "list_resources",
    "list_templates",
    "read_resource",
    "Watch",
]

log = logging.getLogger(__name__)

SCHEME = "chunknav"
#: Seconds between two looks at the store's last run record (one row read).
WATCH_S = 1.0
_ROOT = f"{SCHEME}://collections"
_JSON = "application/json"


def _segment(value: str) -> str:
    return quote(value, safe="")


def collection_uri(collection_path: str) -> str:
    """``chunknav://collections/{collectionPath}``."""
    return f"{_ROOT}/{_segment(collection_path)}"


def documents_uri(collection_path: str) -> str:
    """``chunknav://collections/{collectionPath}/documents``."""
    return collection_uri(collection_path) + "/documents"


def document_uri(collection_path: str, file_path: str) -> str:
    """``chunknav://collections/{collectionPath}/documents/{filePath}``."""
    return documents_uri(collection_path) + "/" + _segment(file_path)


def parse_uri(uri: str) -> tuple[str, str | None, str | None] | None:
    """``(kind, collectionPath, filePath)`` of a ``chunknav://`` URI, kind ``collections``,
    ``collection``, ``documents`` or ``document``; None when it is not one of ours."""
    if uri.rstrip("/") == _ROOT:
        return "collections", None, None
    if not uri.startswith(_ROOT + "/"):
        return None
    parts = uri[len(_ROOT) + 1 :].split("/")
    if len(parts) == 1 and parts[0]:
        return "collection", unquote(parts[0]), None
    if len(parts) == 2 and parts[1] == "documents":
        return "documents", unquote(parts[0]), None
    if len(parts) == 3 and parts[1] == "documents" and parts[2]:
        return "document", unquote(parts[0]), unquote(parts[2])
    return None


def list_resources(engine: Engine) -> list[types.Resource]:
    """The resource list: every collection's summary and document list, and the whole index."""
    out = [
        types.Resource(
            name="collections",
            uri=_ROOT,
            description="every collection with its documents, chunks and failures",
            mime_type=_JSON,
        )
    ]
    for c in engine.store.collections():
        cp = c.collection_path
        out.append(types.Resource(name=cp, uri=collection_uri(cp), description=f"collection {cp}", mime_type=_JSON))
        out.append(
            types.Resource(
                name=f"{cp} documents",
                uri=documents_uri(cp),
                description=f"documents of {cp} (first page; list_documents pages on)",
                mime_type=_JSON,
            )
        )
    return out


def list_templates() -> list[types.ResourceTemplate]:
    """The resource templates (RFC 6570; each variable is one percent-encoded segment)."""
    return [
        types.ResourceTemplate(
            name="collection",
            uri_template=_ROOT + "/{collectionPath}",
            description="one collection: root, documents, chunks, failed",
            mime_type=_JSON,
        ),
        types.ResourceTemplate(
            name="documents",
            uri_template=_ROOT + "/{collectionPath}/documents",
            description="a collection's documents, as list_documents answers",
            mime_type=_JSON,
        ),
        types.ResourceTemplate(
            name="document",
            uri_template=_ROOT + "/{collectionPath}/documents/{filePath}",
            description="one document node, as get_document answers (never its text)",
            mime_type=_JSON,
        ),
    ]


def read_resource(engine: Engine, uri: str) -> dict[str, Any] | None:
    """The JSON answer of one resource, or None when ``uri`` names none.

    ``collections``: ``{"collections": [...]}`` as ``index_status`` counts them (no probe);
    ``collection``: that collection's entry (``found: false`` when unknown);
    ``documents``: the ``list_documents`` envelope; ``document``: the ``get_document`` envelope.
    """
    parsed = parse_uri(uri)
    if parsed is None:
        return None
    kind, cp, fp = parsed
    if kind in ("collections", "collection"):
        status = call_tool(engine, "index_status", {"probe": False})
        colls = status.get("collections", [])
        if kind == "collections":
            return {"collections": colls, "documents": status.get("documents", 0), "chunks": status.get("chunks", 0)}
        one = next((c for c in colls if c["collectionPath"] == cp), None)
        return {"found": True, **one} if one else {"found": False, "collectionPath": cp}
    if kind == "documents":
        return call_tool(engine, "list_documents", {"collectionPath": cp})
    return call_tool(engine, "get_document", {"documentPath": document_path(cp or "", fp or "")})


def resource_contents(engine: Engine, uri: str) -> types.ReadResourceResult | None:
    """``read_resource`` as an MCP result (one JSON text block), or None."""
    answer = read_resource(engine, uri)
    if answer is None:
        return None
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=_JSON, text=to_json(answer))]
    )


class Watch:
    """Sessions that listed or subscribed to resources, and the collections they saw.

    Args:
        engine: the Engine the server reads.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions: list[Any] = []  # ServerSession, each once
        self.subscribed: dict[str, list[Any]] = {}  # uri -> sessions
        self._run: Any = None
        self._stamps: dict[str, str] = {}

    def listening(self, session: Any) -> None:
        """Remember ``session`` for list-changed notifications."""
        if not any(s is session for s in self.sessions):
            self.sessions.append(session)

    def subscribe(self, session: Any, uri: str) -> None:
        """Remember that ``session`` subscribed to ``uri``."""
        self.listening(session)
        subs = self.subscribed.setdefault(uri, [])
        if not any(s is session for s in subs):
            subs.append(session)

    def unsubscribe(self, session: Any, uri: str) -> None:
        """Forget ``session``'s subscription to ``uri``."""
        self.subscribed[uri] = [s for s in self.subscribed.get(uri, []) if s is not session]

    def look(self) -> set[str] | None:
        """The collections whose stamp changed since the last look (a new collection or a
        removed one too), or None when the store's last run record did not move (blocking:
        run in a worker thread)."""
        store = self.engine.store
        run = store.last_run()
        key = to_json(run) if run is not None else None
        if key == self._run and self._stamps:
            return None
        self._run = key
        now = {c.collection_path: collection_stamp(store, [c.collection_path]) for c in store.collections()}
        changed = {c for c in set(now) | set(self._stamps) if now.get(c) != self._stamps.get(c)}
        first = not self._stamps
        self._stamps = now
        return None if first else changed

    async def watch(self) -> None:
        """Look every ``WATCH_S`` seconds; tell the sessions what changed. Runs until cancelled."""
        try:
            await anyio.to_thread.run_sync(self.look)
        except Exception:
            log.exception("resource watch: the first look failed")
        while True:
            await anyio.sleep(WATCH_S)
            try:
                changed = await anyio.to_thread.run_sync(self.look)
            except Exception:  # a store that cannot be read now: look again later
                log.warning("resource watch: could not read the store", exc_info=True)
                continue
            if changed:
                await self._notify(changed)

    async def _notify(self, changed: set[str]) -> None:
        log.info("collections changed: %s", ", ".join(sorted(changed)))
        for session in list(self.sessions):
            try:
                await session.send_resource_list_changed()
            except Exception:  # a closed session: forget it
                self.sessions = [s for s in self.sessions if s is not session]
        uris = {_ROOT} | {u for c in changed for u in (collection_uri(c), documents_uri(c))}
        for uri, sessions in list(self.subscribed.items()):
            parsed = parse_uri(uri)
            hit = uri in uris or (parsed is not None and parsed[0] == "document" and parsed[1] in changed)
            for session in sessions if hit else []:
                try:
                    await session.send_resource_updated(uri)
                except Exception:
                    self.unsubscribe(session, uri)
