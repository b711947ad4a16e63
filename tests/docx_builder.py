"""Builds the .docx test files of tests/corpus/docx/built/ (python-docx, then raw XML edits).

``python -m tests.docx_builder tests/corpus/docx/built`` writes:

* ``complete.docx``: a heading and body paragraphs, a text box (``mc:AlternateContent``
  whose ``mc:Choice`` holds a DrawingML text box and whose ``mc:Fallback`` repeats it as
  VML), an equation (OMML), a table with a nested table and a vertical merge, a footnote,
  an endnote, a header and a footer, and one picture;
* ``strict.docx``: the same package with every transitional namespace replaced by its
  ISO/IEC 29500 Strict one (``http://purl.oclc.org/ooxml/...``) and
  ``w:conformance="strict"`` (python-docx cannot open it).

Each known phrase is listed in ``PHRASES`` (where it lives -> phrase).
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

#: Where each phrase lives in complete.docx -> the phrase (unique in the document).
PHRASES = {
    "body": "ordinary body paragraph about turbines",
    "textbox": "sidebar inside the floating text box",
    "equation": "(a+b)/(2c)",
    "nested": "deep nested cell value",
    "merged": "vertically merged origin",
    "footnote": "footnote explaining the turbine rating",
    "endnote": "endnote citing the maintenance manual",
    "header": "quarterly header line",
    "footer": "confidential footer line",
}

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

_TEXTBOX = f"""<w:r><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"
 xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
 xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
 xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"
 xmlns:v="urn:schemas-microsoft-com:vml"><mc:Choice Requires="wps"><w:drawing><wp:anchor distT="0" distB="0"
 distL="114300" distR="114300" simplePos="0" relativeHeight="1" behindDoc="0" locked="0" layoutInCell="1"
 allowOverlap="1"><wp:simplePos x="0" y="0"/><wp:positionH relativeFrom="column"><wp:posOffset>0</wp:posOffset>
</wp:positionH><wp:positionV relativeFrom="paragraph"><wp:posOffset>0</wp:posOffset></wp:positionV>
<wp:extent cx="2000000" cy="600000"/><wp:wrapSquare wrapText="bothSides"/><wp:docPr id="10" name="Text Box 1"/>
<a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp>
<wps:cNvSpPr txBox="1"/><wps:spPr/><wps:txbx><w:txbxContent><w:p><w:r><w:t>{PHRASES['textbox']}</w:t></w:r></w:p>
</w:txbxContent></wps:txbx><wps:bodyPr/></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice>
<mc:Fallback><w:pict><v:shape id="tb1" style="width:160pt;height:48pt"><v:textbox><w:txbxContent><w:p><w:r>
<w:t>{PHRASES['textbox']}</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback>
</mc:AlternateContent></w:r>"""

# (a+b)/(2c) = x^2 as OMML
_EQUATION = """<m:oMathPara xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"><m:oMath>
<m:f><m:num><m:r><m:t>a+b</m:t></m:r></m:num><m:den><m:r><m:t>2c</m:t></m:r></m:den></m:f>
<m:r><m:t>=</m:t></m:r><m:sSup><m:e><m:r><m:t>x</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup>
</m:oMath></m:oMathPara>"""

_FOOTNOTES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:footnotes xmlns:w="{W_NS}"><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>
<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>
<w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> {PHRASES['footnote']}.</w:t></w:r></w:p></w:footnote>
</w:footnotes>"""

_ENDNOTES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:endnotes xmlns:w="{W_NS}"><w:endnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:endnote>
<w:endnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:endnote>
<w:endnote w:id="1"><w:p><w:r><w:endnoteRef/></w:r><w:r><w:t xml:space="preserve"> {PHRASES['endnote']}.</w:t></w:r></w:p></w:endnote>
</w:endnotes>"""

_STRICT = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main": "http://purl.oclc.org/ooxml/wordprocessingml/main",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships":
        "http://purl.oclc.org/ooxml/officeDocument/relationships",
    "http://schemas.openxmlformats.org/officeDocument/2006/math": "http://purl.oclc.org/ooxml/officeDocument/math",
    "http://schemas.openxmlformats.org/drawingml/2006/main": "http://purl.oclc.org/ooxml/drawingml/main",
    "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing":
        "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing",
    "http://schemas.openxmlformats.org/drawingml/2006/picture": "http://purl.oclc.org/ooxml/drawingml/picture",
}


def _png() -> bytes:
    import pymupdf

    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pix.clear_with(200)
    return pix.tobytes("png")


def _python_docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_heading("Turbine service record", level=1)
    d.add_paragraph(f"This is the {PHRASES['body']}.")
    d.add_paragraph("TEXTBOX-ANCHOR before the box.")
    d.add_paragraph("EQUATION-HERE")
    outer = d.add_table(rows=3, cols=2)
    outer.cell(0, 0).text = "outer left"
    outer.cell(0, 1).text = "outer right"
    outer.cell(1, 0).text = PHRASES["merged"]
    outer.cell(1, 0).merge(outer.cell(2, 0))
    outer.cell(1, 1).text = "row two right"
    outer.cell(2, 1).text = "row three right"
    inner = outer.cell(0, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = PHRASES["nested"]
    inner.cell(0, 1).text = "inner second"
    d.add_paragraph("FOOTNOTE-HERE a sentence with a note.")
    d.add_picture(io.BytesIO(_png()))
    section = d.sections[0]
    section.header.paragraphs[0].text = PHRASES["header"]
    section.footer.paragraphs[0].text = PHRASES["footer"]
    d.save(path)


def _edit(src: Path, dest: Path) -> None:
    """Insert the raw-XML parts python-docx cannot make."""
    with zipfile.ZipFile(src) as zin:
        parts = {n: zin.read(n) for n in zin.namelist()}
    doc = parts["word/document.xml"].decode("utf-8")
    doc = doc.replace("<w:t>TEXTBOX-ANCHOR before the box.</w:t></w:r>",
                      "<w:t>Anchor paragraph before the box.</w:t></w:r>" + _TEXTBOX, 1)
    doc = doc.replace("<w:r><w:t>EQUATION-HERE</w:t></w:r>", _EQUATION, 1)
    doc = doc.replace("<w:t>FOOTNOTE-HERE a sentence with a note.</w:t></w:r>",
                      "<w:t>A sentence with a note.</w:t></w:r><w:r><w:footnoteReference w:id=\"1\"/></w:r>"
                      "<w:r><w:endnoteReference w:id=\"1\"/></w:r>", 1)
    assert "HERE" not in doc and "ANCHOR" not in doc, "a placeholder was not replaced"
    parts["word/document.xml"] = doc.encode("utf-8")
    parts["word/footnotes.xml"] = _FOOTNOTES.encode("utf-8")
    parts["word/endnotes.xml"] = _ENDNOTES.encode("utf-8")
    rels = parts["word/_rels/document.xml.rels"].decode("utf-8")
    rels = rels.replace("</Relationships>",
                        '<Relationship Id="rIdFn1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                        'relationships/footnotes" Target="footnotes.xml"/>'
                        '<Relationship Id="rIdEn1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                        'relationships/endnotes" Target="endnotes.xml"/></Relationships>')
    parts["word/_rels/document.xml.rels"] = rels.encode("utf-8")
    ct = parts["[Content_Types].xml"].decode("utf-8")
    ct = ct.replace("</Types>",
                    '<Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-'
                    'officedocument.wordprocessingml.footnotes+xml"/><Override PartName="/word/endnotes.xml" '
                    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.endnotes+xml"/>'
                    '</Types>')
    parts["[Content_Types].xml"] = ct.encode("utf-8")
    _write(dest, parts)


def _strict(src: Path, dest: Path) -> None:
    with zipfile.ZipFile(src) as zin:
        parts = {n: zin.read(n) for n in zin.namelist()}
    for name, data in parts.items():
        if name.endswith((".xml", ".rels")):
            text = data.decode("utf-8")
            for old, new in _STRICT.items():
                text = text.replace(old, new)
            if name == "word/document.xml":
                text = text.replace("<w:document ", '<w:document w:conformance="strict" ', 1)
            parts[name] = text.encode("utf-8")
    _write(dest, parts)


def _write(dest: Path, parts: dict[str, bytes]) -> None:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in parts.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(info, data)


def build(directory: Path) -> tuple[Path, Path]:
    """Write ``complete.docx`` and ``strict.docx`` into ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    plain = directory / "_plain.docx"
    _python_docx(plain)
    complete = directory / "complete.docx"
    _edit(plain, complete)
    plain.unlink()
    strict = directory / "strict.docx"
    _strict(complete, strict)
    return complete, strict


if __name__ == "__main__":
    print(*build(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/corpus/docx/built")))
