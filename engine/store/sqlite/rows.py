"""SQLite row conversion: model values <-> rows of the SQLite store, and the FTS5 query text.

Owns: the column lists of ``documents`` and ``chunks`` (the order every
SELECT uses), row -> ``Document`` / ``Chunk`` (and search hits), ``Chunk`` -> INSERT parameters
(boxes as compact JSON; line rectangles as ``rects_code`` text), and ``fts_queries`` (plain words -> safe FTS5
query strings for the porter and trigram indexes). Imports
``engine.values`` and ``engine.store.fts`` only; no connection, no SQL execution.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable

from engine.values import Bbox, Chunk, Document, KeywordHit, Region, VectorHit, rects_code
from engine.store.fts import MAX_TERMS, content_terms, keyword_terms, quote, trigrams

__all__ = [
    "DOC_COLUMNS",
    "CHUNK_COLUMNS",
    "to_json",
    "document_of",
    "chunk_of",
    "hits_of",
    "bbox_json",
    "chunk_params",
    "fts_queries",
]

DOC_COLUMNS = (
    "collection_path, file_path, content_hash, settings_key, file_type, status, reason, "
    "size_bytes, last_modified, indexed_at, page_count, chunk_count, text_length, summary, metadata"
)
CHUNK_COLUMNS = (
    'collection_path, file_path, chunk_index, chunk_id, content_hash, start, "end", chunk_text, '
    "page, page_label, bbox, regions, metadata, last_modified"
)


def to_json(value: Any) -> str | None:
    """A JSON value as compact text (non-ASCII kept), None stays None."""
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def document_of(row: sqlite3.Row | tuple) -> Document:
    """One ``documents`` row in ``DOC_COLUMNS`` order -> ``Document``."""
    (cp, fp, ch, sk, ft, st, reason, size, mtime, at, pages, nchunks, tlen, summary, meta) = row
    return Document(
        cp,
        fp,
        ch,
        sk,
        ft,
        st,
        reason,
        size or 0,
        mtime or 0.0,
        at or 0.0,
        pages or 0,
        nchunks or 0,
        tlen or 0,
        summary or "",
        json.loads(meta) if meta else {},
    )


def _slots_twin(cls: type) -> type | None:
    """A plain class with the slot layout of ``cls`` (a frozen, slotted dataclass), or None.

    An object of the twin takes its fields by ordinary attribute stores (a
    frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``:
    ~1.45 us for a ``Chunk``, ~0.25 us this way), then its ``__class__`` becomes
    ``cls``: CPython allows that between classes whose slots are the same, and
    the object is then what ``cls(...)`` makes (same type, fields, equality,
    hash, repr, still frozen). Checked here on a sample; None (callers build
    through ``cls(...)``) when ``cls`` has another shape or the check fails
    (docs/decisions/chunk-slot-twins.md).
    """
    import dataclasses

    try:
        names = tuple(f.name for f in dataclasses.fields(cls))
        if cls.__dict__.get("__slots__") != names or hasattr(cls, "__post_init__"):
            return None
        twin = type(f"_{cls.__name__}Slots", (), {"__slots__": names, "__module__": __name__})
        sample = [object() for _ in names]
        obj: Any = object.__new__(twin)
        for name, value in zip(names, sample):
            setattr(obj, name, value)
        obj.__class__ = cls
        if type(obj) is not cls or obj != cls(*sample) or repr(obj) != repr(cls(*sample)):
            return None
        try:
            setattr(obj, names[0], None)
        except dataclasses.FrozenInstanceError:
            return twin
    except (TypeError, AttributeError, ValueError):
        pass
    return None


_CHUNK_FIELDS = (
    "collection_path",
    "file_path",
    "chunk_index",
    "chunk_id",
    "content_hash",
    "start",
    "end",
    "chunk_text",
    "page",
    "page_label",
    "bbox",
    "regions",
    "metadata",
    "last_modified",
)
_UNBUILT: Any = object()  # the twins below before their first use (built then, ~0.15 ms, not at import)
#: ``Chunk``'s twin (``_slots_twin``) when its fields are the 14 of ``CHUNK_COLUMNS``; else None.
_CHUNK_SLOTS: Any = _UNBUILT
_HIT_SLOTS: dict[type, type | None] = {}
_new = object.__new__


def _build_twins() -> type | None:
    """Build the slot twins of ``Chunk``, ``VectorHit`` and ``KeywordHit``; returns ``Chunk``'s.
    Idempotent (two threads that both build it get equal twins: either one makes the same objects)."""
    global _CHUNK_SLOTS
    _HIT_SLOTS.update({cls: _slots_twin(cls) for cls in (VectorHit, KeywordHit)})
    _CHUNK_SLOTS = _slots_twin(Chunk) if tuple(Chunk.__dataclass_fields__) == _CHUNK_FIELDS else None
    return _CHUNK_SLOTS


def chunk_of(row: sqlite3.Row | tuple) -> Chunk:
    """One ``chunks`` row in ``CHUNK_COLUMNS`` order -> ``Chunk`` (bbox/regions JSON parsed).

    Built through ``Chunk``'s slot twin (``_slots_twin``: the same object the
    dataclass ``__init__`` makes, ~3x cheaper: a search's hit fetch builds ten).
    """
    (cp, fp, idx, cid, ch, start, end, text, page, label, bbox, regions, meta, mtime) = row
    box = Bbox.from_dict(json.loads(bbox)) if bbox else None
    parts = tuple(Region.from_dict(r) for r in json.loads(regions)) if regions else ()
    metadata = json.loads(meta) if meta else {}
    twin = _CHUNK_SLOTS
    if twin is _UNBUILT:
        twin = _build_twins()
    if twin is None:
        return Chunk(cp, fp, idx, cid, ch, start, end, text, page, label, box, parts, metadata, mtime or 0.0)
    c = _new(twin)
    c.collection_path = cp
    c.file_path = fp
    c.chunk_index = idx
    c.chunk_id = cid
    c.content_hash = ch
    c.start = start
    c.end = end
    c.chunk_text = text
    c.page = page
    c.page_label = label
    c.bbox = box
    c.regions = parts
    c.metadata = metadata
    c.last_modified = mtime or 0.0
    c.__class__ = Chunk
    return c


def hits_of(hit: type[VectorHit] | type[KeywordHit], rows: Iterable[tuple], scores: Iterable[float]) -> list:
    """``hit(chunk_of(row[1:]), score)`` for each row (a rowid, then ``CHUNK_COLUMNS``) and
    its score, in order: the hit list of a search (built through the slot twins, ``_slots_twin``)."""
    if _CHUNK_SLOTS is _UNBUILT:
        _build_twins()
    twin = _HIT_SLOTS.get(hit)
    if twin is None:
        return [hit(chunk_of(r[1:]), s) for r, s in zip(rows, scores)]
    out = []
    for r, s in zip(rows, scores):
        h: Any = _new(twin)
        h.chunk = chunk_of(r[1:])
        h.score = s
        h.__class__ = hit
        out.append(h)
    return out


def bbox_json(b: Bbox) -> str:
    """``Bbox.to_dict()`` as compact JSON, formatted directly (json.dumps of a
    dict per box costs ~5% of an index run). Boxes are finite: extraction clamps them."""
    return box_json(b.x, b.y, b.w, b.h)


def box_json(x: float, y: float, w: float, h: float) -> str:
    """``bbox_json`` of ``Bbox(x, y, w, h)`` from its four numbers (no object needed)."""
    return f'{{"x":{round(x, 5)!r},"y":{round(y, 5)!r},"w":{round(w, 5)!r},"h":{round(h, 5)!r}}}'


def chunk_params(c: Chunk) -> tuple:
    """``Chunk`` -> INSERT parameters in ``CHUNK_COLUMNS`` order."""
    bbox = bbox_json(c.bbox) if c.bbox is not None else None
    return (
        c.collection_path,
        c.file_path,
        c.chunk_index,
        c.chunk_id,
        c.content_hash,
        c.start,
        c.end,
        c.chunk_text,
        c.page,
        c.page_label,
        bbox,
        "["
        + ",".join(
            f'{{"page":{r.page},"bbox":{bbox if r.bbox is c.bbox else bbox_json(r.bbox)}'
            + (f',"r":"{rects_code(r.rects)}"' if r.rects else "")
            + "}"
            for r in c.regions
        )
        + "]"
        if c.regions
        else None,
        to_json(c.metadata) if c.metadata else None,
        c.last_modified,
    )


def fts_queries(text: str) -> tuple[tuple[str | None, str | None], tuple[str | None, str | None]] | None:
    """Plain words -> the (porter index, trigram index) FTS5 queries, all-terms then any-term.

    Returns ``((porter_all, trigram_all), (porter_any, trigram_any))``; a part is
    None when the query has no term for that index (no Latin term, or no CJK
    term of >= 3 characters, the trigram tokenizer's shortest match). English
    stop words are left out of the porter queries unless nothing else is left
    (``engine.store.fts.content_terms``). A CJK
    term shorter than 3 characters goes to the porter index as a whole token.
    The any-term trigram query ORs every 3-character piece of each CJK term, so
    a long run of characters still matches passages sharing parts of it.
    None when the query has no term at all.
    """
    terms = keyword_terms(text)
    if not terms:
        return None
    words = content_terms(terms.latin)
    latin = [quote(t) for t in words] + [quote(t) for t in terms.cjk if len(t) < 3]
    cjk = [t for t in terms.cjk if len(t) >= 3]
    porter_all = " AND ".join(latin) or None
    porter_any = " OR ".join(latin) or None
    tri_all = " AND ".join(quote(t) for t in cjk) or None
    pieces: dict[str, None] = {}
    for t in cjk:
        for piece in trigrams(t):
            pieces.setdefault(piece, None)
    tri_any = " OR ".join(quote(t) for t in list(pieces)[:MAX_TERMS]) or None
    return (porter_all, tri_all), (porter_any, tri_any)
