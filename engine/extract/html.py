"""HTML (``.html``, ``.htm``) -> ``ExtractedText``: the visible text in reading order (no pages, no boxes).

Owns: turning markup into text with the standard library's ``html.parser``:
``script``, ``style``, ``template``, ``noscript``, ``head`` content (except
``title``), ``svg``/``math`` markup, ``hidden`` / ``aria-hidden="true"`` /
inline ``display:none`` elements and comments are dropped; block elements
(paragraphs, headings, list items, table rows, ...) become blocks joined by
``"\\n\\n"``; ``<br>`` a line break; table cells of one row are joined by
``" | "``; headings are kept as their own blocks. Bytes are decoded by the
``<meta charset>`` / BOM when present, else as ``engine.extract.text.decode``
does. Imports ``engine.values``, ``engine.errors`` and ``engine.extract``'s
``common`` / ``text``.
"""

from __future__ import annotations

import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ExtractError
from engine.extract.common import BLOCK_SEPARATOR, LINE_SEPARATOR, place_headings, words_of
from engine.extract.text import decode
from engine.values import ExtractedText

if TYPE_CHECKING:
    from engine.extract.ocr import OcrSettings

__all__ = ["read", "extract_html", "html_text"]

_SKIP = {
    "script",
    "style",
    "template",
    "noscript",
    "head",
    "svg",
    "math",
    "iframe",
    "object",
    "canvas",
    "select",
    "datalist",
}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_BLOCK = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "legend",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "ul",
    "html",
}
_CELL = {"td", "th"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0]+")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


class _Text(HTMLParser):
    """Collects visible text as blocks; ``pre`` keeps its whitespace."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.line: list[str] = []  # text pieces of the current line
        self.lines: list[str] = []  # finished lines of the current block
        self.cells: list[str] | None = None  # cells of the current table row
        self.stack: list[str] = []  # open elements
        self.hidden_depth = 0  # > 0 inside a dropped element
        self.hidden_at: list[int] = []  # stack depths where hiding started
        self.pre = 0
        self.title = ""
        self.in_title = False
        self.headings: list[tuple[int, str]] = []  # (level, title) of h1..h6, in order
        self.heading: tuple[int, list[str]] | None = None  # the open h1..h6

    # -- structure ---------------------------------------------------------------
    def _end_line(self) -> None:
        text = "".join(self.line)
        if not self.pre:
            text = _SPACES.sub(" ", text).strip()
        if self.cells is not None:
            if text:
                self.cells.append(text)
        elif text.strip():
            self.lines.append(text)
        self.line = []

    def _end_block(self) -> None:
        self._end_line()
        if self.lines:
            self.blocks.append(LINE_SEPARATOR.join(self.lines))
        self.lines = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "title":
            self.in_title = True
        hide = (
            tag in _SKIP
            or "hidden" in a
            or (a.get("aria-hidden") or "").lower() == "true"
            or _HIDDEN_STYLE.search(a.get("style") or "") is not None
        )
        if tag in _VOID:
            if not self.hidden_depth:
                if tag == "br":
                    self._end_line()
                elif tag == "hr":
                    self._end_block()
                elif tag == "img" and a.get("alt"):
                    self.line.append(f" {a['alt']} ")
            return
        self.stack.append(tag)
        if hide and not self.in_title:
            self.hidden_depth += 1
            self.hidden_at.append(len(self.stack))
            return
        if self.hidden_depth:
            return
        if tag in _BLOCK:
            self._end_block()
        elif tag == "tr":
            self._end_line()
            self.cells = []
        elif tag in _CELL:
            self._end_line()
        if tag == "pre":
            self.pre += 1
        if tag in _HEADINGS:
            self.heading = (int(tag[1]), [])

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if tag == "title":
            self.in_title = False
        if tag not in self.stack:
            return  # stray end tag
        while self.stack:
            open_tag = self.stack.pop()
            depth = len(self.stack) + 1
            if self.hidden_at and self.hidden_at[-1] == depth:
                self.hidden_at.pop()
                self.hidden_depth -= 1
            elif not self.hidden_depth:
                self._close(open_tag)
            if open_tag == tag:
                break

    def _close(self, tag: str) -> None:
        if tag in _HEADINGS and self.heading is not None:
            level, parts = self.heading
            self.heading = None
            title = _SPACES.sub(" ", "".join(parts)).strip()
            if title:
                self.headings.append((level, title))
        if tag in _CELL:
            self._end_line()
        elif tag == "tr":
            self._end_line()
            cells, self.cells = self.cells, None
            if cells:
                self.lines.append(" | ".join(cells))
        elif tag in _BLOCK:
            self._end_block()
        if tag == "pre" and self.pre:
            self.pre -= 1

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
            return
        if self.hidden_depth:
            return
        if self.heading is not None:
            self.heading[1].append(data)
        if self.pre:
            parts = data.split("\n")
            for i, part in enumerate(parts):
                if i:
                    self._end_line()
                self.line.append(part)
        else:
            self.line.append(data)

    def close(self) -> None:
        super().close()
        self._end_block()


def html_text(markup: str) -> tuple[str, str]:
    """Markup -> ``(visible text, title)`` (layout rules in the module docstring).

    The text is not NFKC-normalised; the title is whitespace-collapsed ("" when none).
    """
    text, title, _ = _parsed(markup)
    return text, title


def _parsed(markup: str) -> tuple[str, str, list[tuple[int, str]]]:
    """``(visible text, title, headings)``: ``html_text`` plus the ``(level, title)`` of
    each visible h1..h6 in order."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return BLOCK_SEPARATOR.join(parser.blocks), _SPACES.sub(" ", parser.title).strip(), parser.headings


def _decode_html(data: bytes) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    m = _META_CHARSET.search(data[:4096])
    if m and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        name = m.group(1).decode("ascii").lower()
        try:
            text = data.decode(name)
            return text, {"encoding": name, "encodingConfidence": 1.0, "encodingMethod": "meta"}, ()
        except (LookupError, UnicodeDecodeError):
            pass
    d = decode(data)
    return d.text, {"encoding": d.encoding, "encodingConfidence": d.confidence, "encodingMethod": d.method}, d.notes


def read(path: Path, password: str | None, ocr: OcrSettings | None, max_pages: int) -> ExtractedText:
    """The reader's entry in ``engine.extract.READERS``: ``extract`` calls it with every
    option; HTML takes no password, OCR or page limit. ``engine.extract.extract`` documents the result and what it raises."""
    return extract_html(path)


def extract_html(path: Path) -> ExtractedText:
    """Read an HTML file (``engine.extract.extract`` documents the result).

    ``metadata``: ``encoding`` (+ confidence, method ``meta`` when the page
    declares it), ``title`` from ``<title>``. A page with no visible text is
    ``text == ""`` with the note ``"no visible text"``.

    Raises:
        ExtractError: ``"cannot read: ..."`` when the file cannot be read.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExtractError("unreadable", f"cannot read: {e}") from None
    markup, metadata, notes = _decode_html(data)
    text, title, headings = _parsed(markup)
    text = unicodedata.normalize("NFKC", text)
    if not text.strip():
        text, notes = "", notes + ("no visible text",)
    metadata = {"encrypted": False, **metadata}
    if title:
        metadata["title"] = unicodedata.normalize("NFKC", title)
    placed = place_headings(text, headings) if text else []
    if placed:
        metadata["headings"] = placed  # engine.search.headings
    return ExtractedText(text, words_of(text), (), path.suffix.lower().lstrip("."), notes, metadata)
