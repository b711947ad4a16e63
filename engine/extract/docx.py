""".docx -> ``ExtractedText``, read from the package's XML (no pages, no boxes).

Owns: reading a Word document's text completely and in order, straight from
the zip members (``zipfile`` + ``xml.etree``; python-docx is not used, so
ISO/IEC 29500 *Strict* files, whose ``http://purl.oclc.org/ooxml/...``
namespaces python-docx rejects, read like transitional ones). Every member
is read through ``_member`` (one place for a size / zip-bomb guard).
Imports ``engine.values``, ``engine.errors`` and ``engine.extract.common``.

Layout (the offsets index into it):

    * the body in document order: each paragraph one block (``"\\n\\n"``
      between blocks, a ``<w:br/>`` a ``"\\n"``, a tab ``"\\t"``); a table one
      block with one row per line, cells joined by ``" | "``, a cell spanning
      several grid columns written once, a vertically merged cell repeating
      its first cell's text, a cell's paragraphs joined by ``" "``, a nested
      table's rows inside the cell joined by ``" / "``;
    * text boxes (``w:txbxContent``) as blocks right after the paragraph that
      anchors them; of ``mc:AlternateContent`` only ``mc:Choice`` is read
      (``mc:Fallback`` repeats it);
    * equations (OMML ``m:oMath``) inline as linear text: ``(a+b)/(2c)``,
      ``x^(2)``, ``x_(i)``, ``√(x)``, ``∑_(i=1)^(n) i``, matrices ``[a, b; c, d]``;
    * content controls (``w:sdt``), smart tags, simple fields and hyperlinks
      are read through; deleted text (``w:delText``) and field codes
      (``w:instrText``) are not;
    * after the body, as labelled blocks: footnotes ``[Footnote 1] ...``,
      endnotes ``[Endnote 1] ...``, comments ``[Comment 1] ...``, then each
      distinct header ``[Header] ...`` and footer ``[Footer] ...`` (in
      section order, repeated ones once). The labels make clear in the text
      (and so in every chunk and snippet) where a passage came from.

Images, charts and embedded objects are not read; they are counted in a note
(``"not read: 2 images, 1 embedded object"``) and in ``metadata``.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET

from engine.errors import ExtractError
from engine.extract.common import BLOCK_SEPARATOR, LINE_SEPARATOR, place_headings, words_of
from engine.values import ExtractedText

if TYPE_CHECKING:
    from engine.extract.ocr import OcrSettings

__all__ = ["read", "extract_docx", "omml_text"]

# Strict namespaces -> transitional ones (ISO/IEC 29500-1 Strict vs ECMA-376 transitional).
_STRICT = {
    "http://purl.oclc.org/ooxml/wordprocessingml/main": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/officeDocument/math": "http://schemas.openxmlformats.org/officeDocument/2006/math",
    "http://purl.oclc.org/ooxml/officeDocument/relationships": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/drawingml/main": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing": "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing",
    "http://purl.oclc.org/ooxml/drawingml/picture": "http://schemas.openxmlformats.org/drawingml/2006/picture",
}
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_REL_TYPES = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/",
    "http://purl.oclc.org/ooxml/officeDocument/relationships/",
)
_DC = "{http://purl.org/dc/elements/1.1/}"

# Elements read through (their children hold runs / blocks).
_THROUGH = {
    W + "hyperlink",
    W + "smartTag",
    W + "customXml",
    W + "fldSimple",
    W + "ins",
    W + "moveTo",
    W + "sdtContent",
    W + "dir",
    W + "bdo",
}
_SKIP = {
    W + "delText",
    W + "instrText",
    W + "del",
    W + "moveFrom",
    W + "rPr",
    W + "pPr",
    W + "sdtPr",
    W + "sdtEndPr",
    W + "footnoteReference",
    W + "endnoteReference",
    W + "commentReference",
}
_NOTE_SKIP_TYPES = {"separator", "continuationSeparator", "continuationNotice"}


def _member(zf: zipfile.ZipFile, name: str) -> bytes:
    """The bytes of one zip member (KeyError when absent). Every read goes
    through here, so a size / compression-ratio guard can be added in one place."""
    return zf.read(name)


def _xml(zf: zipfile.ZipFile, name: str) -> ET.Element:
    """Parse one XML member, Strict namespaces mapped to transitional ones."""
    data = _member(zf, name)
    for strict, transitional in _STRICT.items():
        if strict.encode() in data:
            data = data.replace(strict.encode(), transitional.encode())
    return ET.fromstring(data)


def _rels(zf: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str]]:
    """Relationship id -> (type tail, target member) of ``part`` ({} when none)."""
    folder, name = posixpath.split(part)
    rels_name = posixpath.join(folder, "_rels", name + ".rels")
    try:
        root = ET.fromstring(_member(zf, rels_name))
    except KeyError:
        return {}
    out = {}
    for rel in root.iter(_PKG_RELS + "Relationship"):
        kind = rel.get("Type", "")
        for prefix in _REL_TYPES:
            if kind.startswith(prefix):
                kind = kind[len(prefix) :]
        target = rel.get("Target", "")
        if rel.get("TargetMode") == "External":
            continue
        member = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        out[rel.get("Id", "")] = (kind, member)
    return out


def _main_part(zf: zipfile.ZipFile) -> str:
    for kind, member in _rels(zf, "").values():
        if kind == "officeDocument":
            return member
    if "word/document.xml" in zf.namelist():
        return "word/document.xml"
    raise ExtractError("corrupt", "corrupt: no main document part (word/document.xml)")


class _Reader:
    """Walks WordprocessingML elements into blocks; counts what it does not read."""

    def __init__(self) -> None:
        self.images = 0
        self.objects = 0
        self.headings: list[tuple[int, str]] = []  # (level, title) of heading paragraphs, in order

    # -- blocks ------------------------------------------------------------------
    def blocks(self, container: ET.Element, cell_separator: str = " | ") -> list[str]:
        """Block-level content (body, cell, text box, note, header) -> blocks in order;
        tables found here join their cells with ``cell_separator``."""
        out: list[str] = []
        for el in container:
            tag = el.tag
            if tag == W + "p":
                text, boxes = self.paragraph(el)
                if text.strip():
                    out.append(text.strip())
                    level = _heading_level(el)
                    if level:
                        self.headings.append((level, text.strip()))
                out.extend(boxes)
            elif tag == W + "tbl":
                rows = self.table(el, cell_separator)
                if rows:
                    out.append(LINE_SEPARATOR.join(rows))
            elif tag in (W + "sdt", W + "customXml", W + "sdtContent", W + "ins", W + "moveTo"):
                inner = el.find(W + "sdtContent") if tag == W + "sdt" else el
                if inner is not None:
                    out.extend(self.blocks(inner, cell_separator))
            elif tag == MC + "AlternateContent":
                choice = el.find(MC + "Choice")
                if choice is not None:
                    out.extend(self.blocks(choice, cell_separator))
            elif tag in (M + "oMathPara", M + "oMath"):
                line = omml_text(el).strip()
                if line:
                    out.append(line)
        return out

    def paragraph(self, p: ET.Element) -> tuple[str, list[str]]:
        """One paragraph -> (its text, blocks of the text boxes it anchors)."""
        parts: list[str] = []
        boxes: list[str] = []
        self._inline(p, parts, boxes)
        return "".join(parts), boxes

    def _inline(self, el: ET.Element, parts: list[str], boxes: list[str]) -> None:
        for child in el:
            tag = child.tag
            if tag in _SKIP:
                continue
            if tag == W + "t":
                parts.append(child.text or "")
            elif tag == W + "tab" or tag == W + "ptab":
                parts.append("\t")
            elif tag in (W + "br", W + "cr"):
                parts.append("\n")
            elif tag == W + "noBreakHyphen":
                parts.append("-")
            elif tag == W + "softHyphen":
                continue
            elif tag == W + "sym":
                char = child.get(W + "char")
                if char:
                    try:
                        parts.append(chr(int(char, 16) - 0xF000 if int(char, 16) >= 0xF000 else int(char, 16)))
                    except ValueError:
                        pass
            elif tag in (M + "oMath", M + "oMathPara"):
                parts.append(" " + omml_text(child).strip() + " ")
            elif tag == MC + "AlternateContent":
                choice = child.find(MC + "Choice")
                if choice is not None:
                    self._inline(choice, parts, boxes)
            elif tag == W + "txbxContent":
                boxes.extend(self.blocks(child))
            elif tag in (W + "object", W + "pict", W + "drawing") or tag.endswith("}OLEObject"):
                self._counted(child, parts, boxes)
            else:  # runs, hyperlinks, fields, content controls, ins...
                self._inline(child, parts, boxes)

    def _counted(self, el: ET.Element, parts: list[str], boxes: list[str]) -> None:
        """A drawing / picture / object: text boxes inside are read, the rest counted."""
        has_box = False
        for box in el.iter(W + "txbxContent"):
            boxes.extend(self.blocks(box))
            has_box = True
        if el.tag == W + "object" or any(e.tag.endswith("}OLEObject") for e in el.iter()):
            self.objects += 1
        elif any(e.tag.endswith("}blip") or e.tag.endswith("}imagedata") for e in el.iter()):
            self.images += 1
        elif not has_box and any(e.tag.endswith("}chart") for e in el.iter()):
            self.objects += 1

    # -- tables ------------------------------------------------------------------
    def table(self, tbl: ET.Element, cell_separator: str = " | ") -> list[str]:
        """One string per row: cell texts joined by ``cell_separator``; a horizontal
        span once; a vertically merged cell repeats its first cell's text."""
        rows: list[str] = []
        above: dict[int, str] = {}  # grid column -> text of the cell a vMerge continues
        for tr in self._rows(tbl):
            col = 0
            before = tr.find(f"{W}trPr/{W}gridBefore")
            if before is not None:
                col += int(before.get(W + "val", "0") or 0)
            cells: list[str] = []
            for tc in self._cells(tr):
                props = tc.find(W + "tcPr")
                span = 1
                merge = None
                if props is not None:
                    gs = props.find(W + "gridSpan")
                    if gs is not None:
                        span = max(1, int(gs.get(W + "val", "1") or 1))
                    vm = props.find(W + "vMerge")
                    if vm is not None:
                        merge = vm.get(W + "val", "continue")
                if merge == "continue":
                    text = above.get(col, "")
                else:
                    text = self.cell(tc)
                    above[col] = text
                cells.append(text)
                col += span
            if any(cells):
                rows.append(cell_separator.join(cells))
        return rows

    def _rows(self, tbl: ET.Element):
        for el in tbl:
            if el.tag == W + "tr":
                yield el
            elif el.tag in (W + "sdt", W + "customXml"):
                inner = el.find(W + "sdtContent") if el.tag == W + "sdt" else el
                if inner is not None:
                    yield from self._rows(inner)

    def _cells(self, tr: ET.Element):
        for el in tr:
            if el.tag == W + "tc":
                yield el
            elif el.tag in (W + "sdt", W + "customXml"):
                inner = el.find(W + "sdtContent") if el.tag == W + "sdt" else el
                if inner is not None:
                    yield from self._cells(inner)

    def cell(self, tc: ET.Element) -> str:
        """A cell's blocks on one line: paragraphs joined by " ", a nested table's
        cells by "; " and its rows by " / "."""
        pieces = []
        for block in self.blocks(tc, "; "):
            pieces.append(" / ".join(line for line in block.split(LINE_SEPARATOR) if line.strip()))
        return " ".join(" ".join(p.split()) for p in pieces if p.strip())


# -- equations (OMML) -------------------------------------------------------------


_HEADING_STYLE = re.compile(r"^(?:heading|berschrift|titre|titolo|kop)\s*([1-9])$", re.I)


def _heading_level(p: ET.Element) -> int:
    """1..9 for a heading paragraph (style ``Heading N`` / ``Title``, or an outline level), else 0."""
    ppr = p.find(W + "pPr")
    if ppr is None:
        return 0
    style = ppr.find(W + "pStyle")
    name = (style.get(W + "val") or "") if style is not None else ""
    m = _HEADING_STYLE.match(name.replace("Ü", "").replace("ü", "").strip())
    if m:
        return int(m.group(1))
    if name.lower() == "title":
        return 1
    outline = ppr.find(W + "outlineLvl")
    value = (outline.get(W + "val") or "") if outline is not None else ""
    return int(value) + 1 if value.isdigit() and int(value) < 9 else 0


def _arg(el: ET.Element | None) -> str:
    """An OMML argument as linear text, parenthesised unless it is one token."""
    text = omml_text(el).strip() if el is not None else ""
    if len(text) <= 1 or re.fullmatch(r"\d+(?:\.\d+)?|[^\W\d_]+", text) or _wrapped(text):
        return text
    return f"({text})"


def _wrapped(text: str) -> bool:
    """True when the first bracket of ``text`` closes at its last character: ``(a+b)`` yes, ``(a)+(b)`` no."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    if text[0] not in pairs or text[-1] != pairs[text[0]]:
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == text[0]
        depth -= ch == text[-1]
        if depth == 0:
            return i == len(text) - 1
    return False


def _val(el: ET.Element | None, name: str, default: str) -> str:
    if el is None:
        return default
    node = el.find(M + name)
    if node is None:
        return default
    return node.get(M + "val", default)


def omml_text(el: ET.Element | None) -> str:
    """An OMML element (``m:oMath``, ``m:oMathPara`` or any part) as linear text
    (UnicodeMath-like): fractions ``(a)/(b)``, scripts ``x^(2)`` / ``x_(i)``,
    radicals ``√(x)``, n-ary operators ``∑_(i=1)^(n) e``, delimiters, functions
    ``sin(x)``, matrices ``[a, b; c, d]``, equation arrays joined by ``"; "``."""
    if el is None:
        return ""
    tag = el.tag
    if tag == M + "t" or tag == W + "t":
        return el.text or ""
    if tag in (M + "rPr", M + "ctrlPr", W + "rPr") or tag.endswith("Pr") and tag.startswith(M):
        return ""
    f = el.find
    if tag == M + "f":
        return f"{_arg(f(M + 'num'))}/{_arg(f(M + 'den'))}"
    if tag == M + "sSup":
        return f"{omml_text(f(M + 'e'))}^{_arg(f(M + 'sup'))}"
    if tag == M + "sSub":
        return f"{omml_text(f(M + 'e'))}_{_arg(f(M + 'sub'))}"
    if tag == M + "sSubSup":
        return f"{omml_text(f(M + 'e'))}_{_arg(f(M + 'sub'))}^{_arg(f(M + 'sup'))}"
    if tag == M + "sPre":
        return f"_{_arg(f(M + 'sub'))}^{_arg(f(M + 'sup'))}{omml_text(f(M + 'e'))}"
    if tag == M + "rad":
        deg = omml_text(f(M + "deg")).strip()
        return f"{'(' + deg + ')' if deg else ''}√{_arg(f(M + 'e'))}"
    if tag == M + "nary":
        op = _val(f(M + "naryPr"), "chr", "∫")
        sub = omml_text(f(M + "sub")).strip()
        sup = omml_text(f(M + "sup")).strip()
        return op + (f"_({sub})" if sub else "") + (f"^({sup})" if sup else "") + " " + omml_text(f(M + "e")).strip()
    if tag == M + "d":
        props = f(M + "dPr")
        beg, end, sep = _val(props, "begChr", "("), _val(props, "endChr", ")"), _val(props, "sepChr", "|")
        return beg + sep.join(omml_text(e).strip() for e in el.findall(M + "e")) + end
    if tag == M + "func":
        name = omml_text(f(M + "fName")).strip()
        arg = omml_text(f(M + "e")).strip()
        return f"{name}{arg}" if arg[:1] in "([{" else f"{name}({arg})"
    if tag == M + "limLow":
        return f"{omml_text(f(M + 'e'))}_{_arg(f(M + 'lim'))}"
    if tag == M + "limUpp":
        return f"{omml_text(f(M + 'e'))}^{_arg(f(M + 'lim'))}"
    if tag == M + "eqArr":
        return "; ".join(omml_text(e).strip() for e in el.findall(M + "e"))
    if tag == M + "m":
        rows = [", ".join(omml_text(e).strip() for e in mr.findall(M + "e")) for mr in el.findall(M + "mr")]
        return "[" + "; ".join(rows) + "]"
    if tag == M + "oMathPara":
        return "\n".join(omml_text(m).strip() for m in el.findall(M + "oMath"))
    return "".join(omml_text(child) for child in el)


# -- the package ------------------------------------------------------------------


def _notes(zf: zipfile.ZipFile, member: str, kind: str, label: str, reader: _Reader) -> list[str]:
    try:
        root = _xml(zf, member)
    except KeyError:
        return []
    out = []
    for i, note in enumerate(root.findall(f"{W}{kind}"), start=1):
        if note.get(W + "type") in _NOTE_SKIP_TYPES:
            continue
        text = " ".join(b.replace(LINE_SEPARATOR, " ") for b in reader.blocks(note)).strip()
        if text:
            out.append(f"[{label} {note.get(W + 'id', str(i))}] {text}")
    return out


def _core(zf: zipfile.ZipFile) -> dict[str, str]:
    try:
        root = ET.fromstring(_member(zf, "docProps/core.xml"))
    except (KeyError, ET.ParseError):
        return {}
    out = {}
    for key, tag in (("title", _DC + "title"), ("author", _DC + "creator")):
        node = root.find(tag)
        value = (node.text or "").strip() if node is not None else ""
        if value:
            out[key] = value
    return out


def _read(zf: zipfile.ZipFile) -> tuple[list[str], list[str], _Reader, dict[str, str]]:
    main = _main_part(zf)
    root = _xml(zf, main)
    body = root.find(W + "body")
    if body is None:
        raise ExtractError("corrupt", f"corrupt: {main} has no w:body")
    reader = _Reader()
    blocks = reader.blocks(body)
    rels = _rels(zf, main)
    extra: list[str] = []
    kinds = {kind: member for kind, member in rels.values()}
    if "footnotes" in kinds:
        extra += _notes(zf, kinds["footnotes"], "footnote", "Footnote", reader)
    if "endnotes" in kinds:
        extra += _notes(zf, kinds["endnotes"], "endnote", "Endnote", reader)
    if "comments" in kinds:
        extra += _notes(zf, kinds["comments"], "comment", "Comment", reader)
    # headers and footers in section order (references in each w:sectPr), repeated ones once
    seen: set[str] = set()
    for label, ref in (("Header", "headerReference"), ("Footer", "footerReference")):
        for el in root.iter(W + ref):
            rid = el.get(f"{{{R_NS}}}id", "")
            if rid not in rels:
                continue
            try:
                part = _xml(zf, rels[rid][1])
            except KeyError:
                continue
            text = LINE_SEPARATOR.join(reader.blocks(part)).strip()
            if text and (label, text) not in seen:
                seen.add((label, text))  # type: ignore[arg-type]
                extra.append(f"[{label}] {text}")
    return blocks, extra, reader, _core(zf)


def read(path: Path, password: str | None, ocr: OcrSettings | None, max_pages: int) -> ExtractedText:
    """The reader's entry in ``engine.extract.READERS``: ``extract`` calls it with every
    option; a .docx takes no password, OCR or page limit. ``engine.extract.extract`` documents the result and what it raises."""
    return extract_docx(path)


def extract_docx(path: Path) -> ExtractedText:
    """Read a .docx (``engine.extract.extract`` documents the result; the
    layout is in this module's docstring).

    ``metadata``: ``encrypted`` False, ``title`` / ``author`` when the core
    properties have them, ``strict`` True for an ISO-Strict file, ``images`` /
    ``embeddedObjects`` counts when there are some. Notes: ``"no text in
    document body"`` when the body is empty, ``"not read: 2 images"`` when
    something was skipped.

    Raises:
        ExtractError: ``"corrupt: <type>: <reason>"`` (not a zip, no document
            part, bad XML); a password-protected .docx (an OLE container, not
            a zip) is ``"corrupt: BadZipFile: ..."``.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            strict = b"purl.oclc.org/ooxml/wordprocessingml" in _member(zf, _main_part(zf))
            blocks, extra, reader, core = _read(zf)
    except ExtractError:
        raise
    except Exception as e:  # BadZipFile, KeyError, ParseError, OSError...
        raise ExtractError("corrupt", f"corrupt: {type(e).__name__}: {e}") from None
    text = unicodedata.normalize("NFKC", BLOCK_SEPARATOR.join(blocks + extra))
    metadata: dict[str, Any] = {"encrypted": False, **core}
    notes: list[str] = []
    if strict:
        metadata["strict"] = True
    if not "".join(blocks).strip():
        notes.append("no text in document body")
    skipped = []
    if reader.images:
        metadata["images"] = reader.images
        skipped.append(f"{reader.images} image{'s' if reader.images != 1 else ''}")
    if reader.objects:
        metadata["embeddedObjects"] = reader.objects
        skipped.append(f"{reader.objects} embedded object{'s' if reader.objects != 1 else ''}")
    if skipped:
        notes.append(f"not read: {', '.join(skipped)}")
    if not text.strip():
        text = ""
    placed = place_headings(text, reader.headings) if text else []
    if placed:
        metadata["headings"] = placed  # engine.search.headings
    return ExtractedText(text, words_of(text), (), "docx", tuple(notes), metadata)
