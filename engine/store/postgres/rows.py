"""Rows of the Postgres store: row <-> dataclass conversion and the SQL text of its row I/O.

Owns: the column lists the Postgres store selects (``CHUNK_SELECT``,
``DOCUMENT_SELECT``), the text of its row-writing statements
(``DOCUMENT_UPSERT``, ``CHUNK_INSERT``; ``{}`` stands for the partition
schema identifier, filled by ``psycopg.sql.SQL(...).format``), the
conversion of ``dict_row`` rows to ``Chunk``/``Document``, and the escaping of
values Postgres cannot store (NUL in text and jsonb). Pure Python: imports
only ``engine.values``; must not import psycopg, streamlit, mcp, argparse,
``engine.store.postgres.store``, ``engine.store.postgres.schema`` or any other
engine module.
"""

from __future__ import annotations

import json
from typing import Any

from engine.values import Bbox, Chunk, Document, Region

__all__ = [
    "CHUNK_SELECT",
    "DOCUMENT_SELECT",
    "DOCUMENT_UPSERT",
    "CHUNK_INSERT",
    "bbox_from_jsonb",
    "row_to_chunk",
    "row_to_document",
    "document_params",
    "chunk_params",
    "pg_text",
    "pg_jsonb",
    "key_order",
]

#: ``content_chunks`` columns read into a ``Chunk`` (``row_to_chunk``), in order.
CHUNK_SELECT = (
    "collection_path, file_path, chunk_index, chunk_id, content_hash, start_char, end_char, "
    "chunk_text, page, page_label, bbox, regions, metadata, last_modified"
)


def key_order(alias: str = "") -> str:
    """The ``ORDER BY`` terms that put equal scores in a stable order: collection path, file
    path, chunk index, the text compared by code point (``COLLATE "C"``, as Python compares
    the hits merged from several partitions); ``alias``: the table's alias, if any."""
    t = f"{alias}." if alias else ""
    return f'{t}collection_path COLLATE "C", {t}file_path COLLATE "C", {t}chunk_index'


#: ``documents`` columns read into a ``Document`` (``row_to_document``; no text).
DOCUMENT_SELECT = (
    "collection_path, file_path, content_hash, settings_key, file_type, status, reason, "
    "size_bytes, last_modified, indexed_at, page_count, chunk_count, text_length, summary, metadata"
)
#: Insert or replace one ``documents`` row with its text: 16 parameters, ``{}`` = schema.
DOCUMENT_UPSERT = (
    "INSERT INTO {}.documents (collection_path, file_path, content_hash, settings_key, file_type, "
    "status, reason, size_bytes, last_modified, indexed_at, page_count, chunk_count, text_length, "
    "summary, metadata, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
    "%s::jsonb, %s) ON CONFLICT (collection_path, file_path) DO UPDATE SET "
    "content_hash = EXCLUDED.content_hash, settings_key = EXCLUDED.settings_key, "
    "file_type = EXCLUDED.file_type, status = EXCLUDED.status, reason = EXCLUDED.reason, "
    "size_bytes = EXCLUDED.size_bytes, last_modified = EXCLUDED.last_modified, "
    "indexed_at = EXCLUDED.indexed_at, page_count = EXCLUDED.page_count, "
    "chunk_count = EXCLUDED.chunk_count, text_length = EXCLUDED.text_length, "
    "summary = EXCLUDED.summary, metadata = EXCLUDED.metadata, text = EXCLUDED.text"
)
#: Insert one ``content_chunks`` row: the 14 parameters of ``chunk_params`` and the keyword
#: text (``engine.store.fts.keyword_text``, None: the chunk text), ``{}`` = schema.
CHUNK_INSERT = (
    "INSERT INTO {}.content_chunks (collection_path, file_path, chunk_index, chunk_id, "
    "content_hash, start_char, end_char, chunk_text, page, page_label, bbox, regions, "
    "metadata, last_modified, search_text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, "
    "%s::jsonb, %s::jsonb, %s, %s)"
)


def bbox_from_jsonb(value: Any) -> Bbox | None:
    """A jsonb ``{x, y, w, h}`` (0..1 of the displayed page) -> ``Bbox``; null -> None."""
    return Bbox.from_dict(value) if value else None


def row_to_chunk(r: dict[str, Any]) -> Chunk:
    """A ``content_chunks`` row (``CHUNK_SELECT`` columns) -> ``Chunk``; jsonb decoded, nulls defaulted."""
    return Chunk(
        collection_path=r["collection_path"],
        file_path=r["file_path"],
        chunk_index=r["chunk_index"],
        chunk_id=r["chunk_id"],
        content_hash=r["content_hash"],
        start=r["start_char"],
        end=r["end_char"],
        chunk_text=r["chunk_text"],
        page=r["page"],
        page_label=r["page_label"],
        bbox=bbox_from_jsonb(r["bbox"]),
        regions=tuple(Region.from_dict(x) for x in (r["regions"] or [])),
        metadata=r["metadata"] or {},
        last_modified=r["last_modified"],
    )


def row_to_document(r: dict[str, Any]) -> Document:
    """A ``documents`` row (``DOCUMENT_SELECT`` columns, no text) -> ``Document``."""
    return Document(
        collection_path=r["collection_path"],
        file_path=r["file_path"],
        content_hash=r["content_hash"],
        settings_key=r["settings_key"],
        file_type=r["file_type"],
        status=r["status"],
        reason=r["reason"],
        size_bytes=r["size_bytes"],
        last_modified=r["last_modified"],
        indexed_at=r["indexed_at"],
        page_count=r["page_count"],
        chunk_count=r["chunk_count"],
        text_length=r["text_length"],
        summary=r["summary"],
        metadata=r["metadata"] or {},
    )


def document_params(d: Document, text: str) -> tuple[Any, ...]:
    """The 16 ``DOCUMENT_UPSERT`` parameters of a document and its full extracted text (NUL escaped)."""
    return (
        d.collection_path,
        d.file_path,
        d.content_hash,
        d.settings_key,
        d.file_type,
        d.status,
        d.reason,
        d.size_bytes,
        d.last_modified,
        d.indexed_at,
        d.page_count,
        d.chunk_count,
        d.text_length,
        pg_text(d.summary),
        pg_jsonb(d.metadata),
        pg_text(text),
    )


def chunk_params(c: Chunk) -> tuple[Any, ...]:
    """The 14 ``CHUNK_INSERT`` parameters of a chunk (bbox/regions/metadata as jsonb text, NUL escaped)."""
    return (
        c.collection_path,
        c.file_path,
        c.chunk_index,
        c.chunk_id,
        c.content_hash,
        c.start,
        c.end,
        pg_text(c.chunk_text),
        c.page,
        pg_text(c.page_label),
        pg_jsonb(c.bbox.to_dict() if c.bbox else None),
        pg_jsonb([r.to_store() for r in c.regions]),
        pg_jsonb(c.metadata),
        c.last_modified,
    )


def pg_text(value: str | None) -> str | None:
    """Postgres text cannot hold NUL: each becomes U+FFFD (one character, so offsets stay valid)."""
    return None if value is None else value.replace("\x00", "\ufffd")


def pg_jsonb(value: Any) -> str | None:
    """JSON for a jsonb column (which rejects ``\\u0000``: it becomes ``\\ufffd``)."""
    return None if value is None else json.dumps(value).replace("\\u0000", "\\ufffd")
