"""Marks a hit carries beside its text, computed when the answer is built: line numbers
and the state of its file.

Owns: ``line_span`` (the 1-based lines a chunk covers in its document's extracted text),
``has_lines`` (which documents are numbered by lines: text, Markdown, HTML and other
documents without pages, not ``.docx``), ``file_state`` (``current | changed | missing``
from ``engine.index.gate.check_file``: a stat, a hash only when size or mtime moved) and
``HitMarks`` (both for the hits of one answer, each document read and stat'ed once).
``engine.tools.answers`` puts them into the envelopes. Imports ``engine.index.gate`` and
``engine.values``; no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

from typing import Any, Literal

from engine.values import Document

__all__ = ["HitFileState", "LINE_FREE_TYPES", "line_span", "has_lines", "file_state", "HitMarks"]

#: The state of a hit's file at answer time.
HitFileState = Literal["current", "changed", "missing"]
#: File types numbered by pages or paragraphs, not lines.
LINE_FREE_TYPES = frozenset({"docx"})


def line_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(lineStart, lineEnd)``: the 1-based lines of ``text`` holding characters
    ``start`` .. ``end - 1`` (lines end at ``"\\n"``; the extractor turns ``\\r\\n`` and
    ``\\r`` into ``\\n``, so they are the file's lines for text, Markdown and code). An empty
    span is the line of ``start``."""
    first = text.count("\n", 0, start) + 1
    last = first + text.count("\n", start, max(start, end - 1))
    return first, last


def has_lines(doc: Document, page: int | None) -> bool:
    """True for a document numbered by lines: no page (``page`` None) and not a ``.docx``."""
    return page is None and doc.file_type.lower() not in LINE_FREE_TYPES


def file_state(root: str, doc: Document) -> HitFileState:
    """``current`` (same size and mtime, or same content), ``changed`` or ``missing``
    (vanished, unreadable, escaping the root) of ``doc``'s file under ``root``
    (``engine.index.gate.check_file``)."""
    from engine.index.gate import check_file

    state = check_file(root, doc).state
    if state == "missing":
        return "missing"
    return "changed" if state == "changed" else "current"


class HitMarks:
    """Line numbers and file states for the hits of one answer.

    Args:
        store: the engine's store (``get_document``, ``get_collection``, ``document_text``).

    Each document is read from the store, stat'ed and (for line numbers) its text read
    at most once per ``HitMarks``.
    """

    def __init__(self, store: Any):
        self._store = store
        self._docs: dict[tuple[str, str], Document | None] = {}
        self._states: dict[tuple[str, str], HitFileState | None] = {}
        self._texts: dict[tuple[str, str], str | None] = {}
        self._roots: dict[str, str | None] = {}

    def document(self, cp: str, fp: str) -> Document | None:
        """The stored document, or None."""
        key = (cp, fp)
        if key not in self._docs:
            self._docs[key] = self._store.get_document(cp, fp)
        return self._docs[key]

    def state(self, cp: str, fp: str) -> HitFileState | None:
        """``file_state`` of the document's file; None for an unknown document or collection."""
        key = (cp, fp)
        if key not in self._states:
            if cp not in self._roots:
                coll = self._store.get_collection(cp)
                self._roots[cp] = None if coll is None else coll.root
            doc, root = self.document(cp, fp), self._roots[cp]
            self._states[key] = None if doc is None or root is None else file_state(root, doc)
        return self._states[key]

    def lines(self, cp: str, fp: str, start: int, end: int, page: int | None) -> tuple[int, int] | None:
        """``line_span`` of a chunk of a document numbered by lines (``has_lines``), else None."""
        doc = self.document(cp, fp)
        if doc is None or not has_lines(doc, page):
            return None
        key = (cp, fp)
        if key not in self._texts:
            self._texts[key] = self._store.document_text(cp, fp)
        text = self._texts[key]
        if not text or end > len(text):
            return None
        return line_span(text, start, end)
