"""Internal values shared by extract, chunk, store, index and search.

Owns: frozen dataclasses in snake_case, plus ``WordArray`` (a document's word
provenance as numpy columns). They become camelCase wire envelopes in
``engine/tools/registry.py`` only. Imports nothing from the engine; outside it only the
standard library and numpy.

Frames and units:
    * offsets (``start``/``end``) are characters into one document's extracted
      text, end exclusive;
    * ``page`` is 1-based;
    * ``Bbox`` is normalised to 0..1 of the page *as displayed* (CropBox and
      /Rotate applied), origin top-left, x right, y down.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = [
    "Bbox",
    "Region",
    "RECT_GRID",
    "Rects",
    "rects_code",
    "rects_decode",
    "Word",
    "WordArray",
    "PageInfo",
    "ExtractedText",
    "Window",
    "Chunk",
    "Document",
    "Collection",
    "VectorHit",
    "KeywordHit",
    "RankedChunk",
]


@dataclass(frozen=True, slots=True)
class Bbox:
    """A box in 0..1 fractions of the displayed page, origin top-left.

    Attributes:
        x, y: top-left corner, fractions of displayed width / height.
        w, h: width / height, fractions of displayed width / height, >= 0.
    """

    x: float
    y: float
    w: float
    h: float

    def union(self, other: Bbox) -> Bbox:
        """Smallest box holding both (same page frame)."""
        x0 = min(self.x, other.x)
        y0 = min(self.y, other.y)
        x1 = max(self.x + self.w, other.x + other.w)
        y1 = max(self.y + self.h, other.y + other.h)
        return Bbox(x0, y0, x1 - x0, y1 - y0)

    def contains(self, other: Bbox, tol_x: float = 0.0, tol_y: float = 0.0) -> bool:
        """True when ``other`` lies inside this box, widened by the tolerances."""
        return (
            other.x >= self.x - tol_x
            and other.y >= self.y - tol_y
            and other.x + other.w <= self.x + self.w + tol_x
            and other.y + other.h <= self.y + self.h + tol_y
        )

    def to_dict(self) -> dict[str, float]:
        """``{"x","y","w","h"}`` rounded to 5 decimals (wire form)."""
        return {k: round(getattr(self, k), 5) for k in ("x", "y", "w", "h")}

    @staticmethod
    def from_dict(d: dict[str, float] | None) -> Bbox | None:
        """Inverse of ``to_dict``; ``None`` stays ``None``."""
        return None if d is None else Bbox(d["x"], d["y"], d["w"], d["h"])


@dataclass(frozen=True, slots=True)
class Region:
    """One page a chunk touches: 1-based ``page`` and the union ``bbox`` of its words there.

    ``rects``: the chunk's words on that page grouped into lines, one ``Bbox``
    per line in text order (0..1 of the displayed page, on the ``RECT_GRID``
    grid, corners rounded outwards); what a highlight draws. ``bbox`` is their
    union. () when the region carries no line rectangles.
    """

    page: int
    bbox: Bbox
    rects: tuple[Bbox, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``{"page", "bbox", "rects"}`` wire form (``rects`` only when there are some)."""
        d: dict[str, Any] = {"page": self.page, "bbox": self.bbox.to_dict()}
        if self.rects:
            d["rects"] = [r.to_dict() for r in self.rects]
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Region:
        """Inverse of ``to_dict``; also reads the stored form (``"r"``: ``rects_code``)."""
        if "r" in d:
            rects = rects_decode(d["r"])
        else:
            rects = tuple(Bbox(r["x"], r["y"], r["w"], r["h"]) for r in d.get("rects") or ())
        return Region(int(d["page"]), Bbox.from_dict(d["bbox"]), rects)  # type: ignore[arg-type]

    def to_store(self) -> dict[str, Any]:
        """Stored form: ``{"page", "bbox", "r"}`` with ``r = rects_code(rects)``
        (about 11 characters per rectangle instead of ~60 as wire JSON)."""
        d: dict[str, Any] = {"page": self.page, "bbox": self.bbox.to_dict()}
        if self.rects:
            d["r"] = rects_code(self.rects)
        return d


#: Line rectangles live on a grid of 1/RECT_GRID of the displayed page (0.08 pt on A4).
RECT_GRID = 10_000


class Rects(tuple[Bbox, ...]):
    """A tuple of ``Bbox`` (a ``Region``'s ``rects``; equal to, and used as, a plain tuple)
    that may carry ``code``: its ``rects_code``, set by whoever made the rectangles from
    grid units (``engine.chunk``) so the store need not quantise them again. Without
    ``code``, ``rects_code`` computes it."""

    code: str


def rects_code(rects: Sequence[Bbox]) -> str:
    """Rectangles on the ``RECT_GRID`` grid -> base64 of uint16 little-endian
    ``x, y, w, h`` grid units per rectangle (8 bytes each).

    Each value is rounded half to even (``round``, as ``numpy.rint``) and
    clipped to 0..RECT_GRID; plain Python (a chunk has a few rectangles:
    numpy's per-call overhead was most of the cost, and a reading process
    need not import numpy).
    """
    code = getattr(rects, "code", None)
    if isinstance(code, str):
        return code
    import base64
    import struct

    grid = RECT_GRID
    units = [round(v * grid) for r in rects for v in (r.x, r.y, r.w, r.h)]
    if units and (min(units) < 0 or max(units) > grid):
        units = [min(max(k, 0), grid) for k in units]
    return base64.b64encode(struct.pack(f"<{len(units)}H", *units)).decode("ascii")


def rects_decode(code: str) -> tuple[Bbox, ...]:
    """Inverse of ``rects_code``: a tuple of ``Bbox`` (grid units / ``RECT_GRID``)."""
    import base64
    import struct

    raw = base64.b64decode(code)
    u = [k / RECT_GRID for k in struct.unpack(f"<{len(raw) // 2}H", raw)]
    return tuple(Bbox(u[i], u[i + 1], u[i + 2], u[i + 3]) for i in range(0, len(u) - 3, 4))


@dataclass(frozen=True, slots=True)
class Word:
    """One extracted word: ``text[start:end]`` of the document, on ``page`` at ``bbox``.

    ``page``/``bbox`` are None for formats without pages (txt, md, docx).
    """

    start: int
    end: int
    page: int | None
    bbox: Bbox | None


class WordArray(Sequence[Word]):
    """A document's words as numpy columns: an immutable sequence of ``Word``.

    One row per word, ``n`` rows, in text order (``starts`` ascending, spans
    non-overlapping). Indexing builds ``Word`` values on demand, so callers that
    read ``words[i]``, slice or iterate see the same values as a tuple of ``Word``;
    bulk code (``engine/chunk.py``) reads the columns instead. Equal to a
    ``WordArray``, tuple or list holding equal words (``WordArray.empty() == ()``).

    Attributes:
        starts: int64, shape (n,), character offset of each word's first character.
        ends: int64, shape (n,), character offset just past each word (end exclusive).
        pages: int32, shape (n,), 1-based page number; 0 = no page (txt, md, docx).
        boxes: float64, shape (n, 4), columns x, y, w, h in 0..1 of the displayed
            page, origin top-left (as ``Bbox``); a row with x NaN = no box.

    The arrays are read-only; the object takes no new attributes.
    """

    __slots__ = ("starts", "ends", "pages", "boxes")
    __hash__ = None  # type: ignore[assignment]  # equal to tuples, which hash differently

    starts: np.ndarray
    ends: np.ndarray
    pages: np.ndarray
    boxes: np.ndarray

    def __init__(self, starts: Any, ends: Any, pages: Any, boxes: Any) -> None:
        """Wrap the columns (converted to the dtypes above, made read-only).

        Raises:
            ValueError: the columns differ in length or ``boxes`` is not (n, 4).
        """
        cols = (
            np.asarray(starts, dtype=np.int64),
            np.asarray(ends, dtype=np.int64),
            np.asarray(pages, dtype=np.int32),
            np.asarray(boxes, dtype=np.float64),
        )
        n = len(cols[0])
        if cols[3].size == 0:
            cols = cols[:3] + (cols[3].reshape(0, 4),)
        if any(c.ndim != 1 or len(c) != n for c in cols[:3]) or cols[3].shape != (n, 4):
            raise ValueError(f"WordArray: columns of shapes {[c.shape for c in cols]}, want (n,), (n,), (n,), (n, 4)")
        for name, col in zip(self.__slots__, cols):
            if col.flags.writeable:
                col = col.view()
                col.flags.writeable = False
            object.__setattr__(self, name, col)

    @classmethod
    def from_words(cls, words: Iterable[Word]) -> WordArray:
        """Columns of ``words`` (text order); page None -> 0, bbox None -> NaN row."""
        nan = float("nan")
        rows = [
            (
                w.start,
                w.end,
                w.page or 0,
                (nan, nan, nan, nan) if w.bbox is None else (w.bbox.x, w.bbox.y, w.bbox.w, w.bbox.h),
            )
            for w in words
        ]
        if not rows:
            return cls.empty()
        starts, ends, pages, boxes = zip(*rows)
        return cls(starts, ends, pages, boxes)

    @classmethod
    def empty(cls) -> WordArray:
        """No words (n = 0)."""
        return cls(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int32), np.empty((0, 4)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"WordArray is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"WordArray is immutable (cannot delete {name!r})")

    def __len__(self) -> int:
        return len(self.starts)

    def __bool__(self) -> bool:
        return len(self.starts) > 0

    def _words(self, lo: int, hi: int, step: int = 1) -> tuple[Word, ...]:
        sl = slice(lo, hi, step)
        out = []
        for s, e, p, (x, y, w, h) in zip(
            self.starts[sl].tolist(), self.ends[sl].tolist(), self.pages[sl].tolist(), self.boxes[sl].tolist()
        ):
            out.append(Word(s, e, p or None, None if x != x else Bbox(x, y, w, h)))
        return tuple(out)

    @overload
    def __getitem__(self, index: int) -> Word: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Word, ...]: ...

    def __getitem__(self, index: int | slice) -> Word | tuple[Word, ...]:
        """``int`` -> one ``Word`` (negative counts from the end; IndexError past
        either end); ``slice`` -> tuple of ``Word``, like a tuple slice."""
        if isinstance(index, slice):
            return self._words(*index.indices(len(self)))
        i = int(index.__index__())
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"word index {index} out of range (0..{n - 1})")
        (word,) = self._words(i, i + 1)
        return word

    def __iter__(self) -> Iterator[Word]:
        return iter(self._words(0, len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WordArray):
            return bool(
                np.array_equal(self.starts, other.starts)
                and np.array_equal(self.ends, other.ends)
                and np.array_equal(self.pages, other.pages)
                and np.array_equal(self.boxes, other.boxes, equal_nan=True)
            )
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"WordArray(n={len(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (WordArray, (self.starts, self.ends, self.pages, self.boxes))


@dataclass(frozen=True, slots=True)
class PageInfo:
    """One PDF page: 1-based ``number``, printed ``label`` ('' when none), word count,
    and the displayed size in PDF points (``width_pt`` x ``height_pt``)."""

    number: int
    label: str
    words: int
    width_pt: float
    height_pt: float


@dataclass(frozen=True, slots=True)
class ExtractedText:
    """A document's text plus provenance.

    Attributes:
        text: NFKC-normalised extracted text; all offsets index into it.
        words: ``WordArray``, word spans in text order, non-overlapping,
            ``start`` ascending; reads as a sequence of ``Word``. Any other
            iterable of ``Word`` given here is converted on construction.
        pages: one entry per page (PDF and the page formats; empty for txt/md/docx/html).
        file_type: ``"pdf" | "txt" | "md" | "docx" | "html" | "htm"``, or a
            PyMuPDF page format ``"epub" | "xps" | "oxps" | "fb2" | "mobi" | "cbz"``.
        notes: human notes kept with the document, e.g.
            ``"no text layer on pages 3-5"`` or ``"decoded as cp1252 (not UTF-8)"``.
        metadata: extra facts (title, author, encrypted, repaired...).
    """

    text: str
    words: WordArray
    pages: tuple[PageInfo, ...]
    file_type: str
    notes: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.words, WordArray):
            object.__setattr__(self, "words", WordArray.from_words(self.words))


@dataclass(frozen=True, slots=True)
class Window:
    """One chunk's span while cutting: ``text[start:end]`` with its provenance.

    Attributes:
        chunk_index: 0-based, contiguous per document.
        start, end: character offsets, end exclusive.
        page: page of the first word that starts inside the window (None: no
            page, e.g. txt, or no word starts inside).
        bbox: union of the boxes of the words inside the window on ``page``.
        regions: every page the window touches, ``regions[0]`` is (page, bbox).
    """

    chunk_index: int
    start: int
    end: int
    page: int | None = None
    bbox: Bbox | None = None
    regions: tuple[Region, ...] = ()


@dataclass(frozen=True, slots=True)
class Chunk:
    """A stored chunk, key ``(collection_path, file_path, chunk_index)``.

    ``chunk_id = sha256(content_hash + "\\0" + chunk_text)`` (hex), so an
    unchanged file keeps its ids and its vectors. ``page_label`` is the
    printed label of ``page`` where the PDF defines labels, else None.
    ``last_modified`` is the file's mtime, seconds since the epoch.
    """

    collection_path: str
    file_path: str
    chunk_index: int
    chunk_id: str
    content_hash: str
    start: int
    end: int
    chunk_text: str
    page: int | None = None
    page_label: str | None = None
    bbox: Bbox | None = None
    regions: tuple[Region, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    last_modified: float = 0.0


@dataclass(frozen=True, slots=True)
class Document:
    """A stored document (one file), key ``(collection_path, file_path)``.

    Attributes:
        status: ``"indexed"`` (chunks stored), ``"empty"`` (no text, e.g. a
            scan: no chunks, ``reason`` says why) or ``"failed"`` (``reason``
            holds the library's reason; no chunks).
        settings_key: chunk size/overlap + extractor version the chunks were
            made with; part of the hash gate.
        size_bytes: file size in bytes. ``last_modified``: mtime, epoch seconds.
        indexed_at: epoch seconds of the run that stored this row.
        summary: first ~300 characters of the text (never the whole text).
        page_count: PDF pages (0 for other types).
    """

    collection_path: str
    file_path: str
    content_hash: str
    settings_key: str
    file_type: str
    status: str
    reason: str | None = None
    size_bytes: int = 0
    last_modified: float = 0.0
    indexed_at: float = 0.0
    page_count: int = 0
    chunk_count: int = 0
    text_length: int = 0
    summary: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Collection:
    """A named root: ``collection_path`` (like ``ACME/Reports``) bound to ``root`` (a directory).

    ``password_ref`` says where the password for encrypted PDFs in this
    collection comes from (``env:NAME`` or ``file:/path``; ``engine.passwords``);
    the password itself is never stored or shown.
    """

    collection_path: str
    root: str
    password_ref: str | None = None


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One vector-search hit: the chunk and its cosine similarity ``score`` (-1..1)."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """One keyword (FTS5 BM25) hit; ``score`` is -bm25, higher is better, unbounded."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class RankedChunk:
    """One ranked chunk and what ranked it.

    Attributes:
        chunk: the chunk.
        score: the mode's score (cosine, -bm25, or the fused score).
        vector_score / vector_rank: cosine and 0-based rank in the vector list
            (hybrid only; None when that list did not return the chunk).
        keyword_score / keyword_rank: -bm25 and 0-based rank in the keyword list
            (hybrid only; None likewise).
        coverage: share (0..1) of the query's content words the chunk holds
            (``engine.search.words.coverage``); None when not measured.
        match: how well the chunk matches the query, 0..1
            (``engine.search.confidence.match``); None when not measured.
    """

    chunk: Chunk
    score: float
    vector_score: float | None = None
    vector_rank: int | None = None
    keyword_score: float | None = None
    keyword_rank: int | None = None
    coverage: float | None = None
    match: float | None = None
