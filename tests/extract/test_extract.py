"""engine/extract/ on real files: the ground truth of tests/corpus, PDFs built with PyMuPDF (always run), text, Markdown
and .docx files, and the chunk provenance contract on extracted PDFs."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from engine.chunk import chunk_text
from engine.errors import EncryptedError, ExtractError, UnsupportedFileError
from engine.extract import PAGE_SEPARATOR, SUPPORTED_SUFFIXES, extract, no_text_note
from engine.values import Bbox, ExtractedText
from tests.fixtures.fixtures_corpus import BUILT, REAL_CORPUS

TOL_X = 0.01  # x and w (EXPECTED.md "Tolerances")
TOL_Y = 0.02  # y and h
STRIP = "\"'“”‘’„«».,;:!?()"  # quotes and .,;:!?() (expected.json "matching")


# ------------------------------------------------------------------ helpers


def _expected_json() -> dict:
    path = REAL_CORPUS / "expected.json"
    return json.loads(path.read_text("utf-8")) if path.is_file() else {}


EXPECTED = _expected_json()
DOCUMENTS = EXPECTED.get("documents", [])
STRUCTURAL = EXPECTED.get("structural", [])


def _token(s: str) -> str:
    return unicodedata.normalize("NFKC", s).strip(STRIP)


def find_phrase(x: ExtractedText, phrase: str) -> list[tuple[int | None, Bbox | None, int, int]]:
    """Every occurrence of ``phrase`` as consecutive words (expected.json rule).

    Returns (page of the first word, union bbox, start, end) per occurrence, in text order.
    """
    want = [_token(t) for t in phrase.split()]
    have = [_token(x.text[w.start : w.end]) for w in x.words]
    n = len(want)
    hits = []
    for i in range(len(have) - n + 1):
        if have[i : i + n] == want:
            words = x.words[i : i + n]
            box = words[0].bbox
            for w in words[1:]:
                box = box.union(w.bbox) if box is not None and w.bbox is not None else box
            hits.append((words[0].page, box, words[0].start, words[-1].end))
    return hits


def assert_box(got: Bbox, want: list[float], what: str) -> None:
    gx = (got.x, got.y, got.w, got.h)
    tol = (TOL_X, TOL_Y, TOL_X, TOL_Y)
    bad = [k for k, g, w, t in zip("xywh", gx, want, tol) if abs(g - w) > t]
    assert not bad, f"{what}: bbox {[round(v, 4) for v in gx]} vs expected {want} (off in {bad})"


def assert_word_invariants(x: ExtractedText) -> None:
    """text[start:end] is the NFKC word (no whitespace inside), starts ascending,
    words never overlap, pages/bboxes valid."""
    prev_end = 0
    n_pages = len(x.pages)
    for w in x.words:
        s = x.text[w.start : w.end]
        assert w.start >= prev_end and w.end > w.start, (w, prev_end)
        assert s == unicodedata.normalize("NFKC", s) and s.strip() == s and s, repr(s)
        assert PAGE_SEPARATOR not in s
        prev_end = w.end
        if x.pages:  # PDF and the other page formats (EPUB, XPS, FB2, MOBI, CBZ)
            assert 1 <= w.page <= n_pages
            b = w.bbox
            assert 0.0 <= b.x <= 1.0 and 0.0 <= b.y <= 1.0 and b.w >= 0 and b.h >= 0
            assert b.x + b.w <= 1.0 + 1e-9 and b.y + b.h <= 1.0 + 1e-9
            assert type(b.x) is float  # plain floats: JSON-serialisable
        else:
            assert w.page is None and w.bbox is None
    if x.pages and x.text:
        # the form feed separates pages exactly
        pages = x.text.split(PAGE_SEPARATOR)
        assert len(pages) == n_pages
        offsets, pos = [], 0
        for chunk in pages:
            offsets.append(pos)
            pos += len(chunk) + 1
        for w in x.words:
            assert offsets[w.page - 1] <= w.start
            assert w.page == n_pages or w.end < offsets[w.page]


def _ink_box(page, zoom: float = 2.0) -> Bbox | None:
    """Bounding box of the dark pixels of a page rendering, as a display-frame Bbox."""
    import numpy as np
    import pymupdf

    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)[:, : pix.width]
    ys, xs = np.nonzero(img < 128)
    if not len(xs):
        return None
    return Bbox(
        xs.min() / pix.width,
        ys.min() / pix.height,
        (xs.max() + 1 - xs.min()) / pix.width,
        (ys.max() + 1 - ys.min()) / pix.height,
    )


# ------------------------------------------------ real corpus: ground truth


@pytest.mark.parametrize("doc", DOCUMENTS, ids=[d["file"] for d in DOCUMENTS])
def test_expected_document(real_corpus, doc):
    x = extract(real_corpus / doc["file"], doc["password"])
    assert x.file_type == "pdf"
    assert len(x.pages) == doc["page_count"]
    assert_word_invariants(x)
    for phrase in doc["phrases"]:
        hits = find_phrase(x, phrase["text"])
        assert len(hits) == phrase["count"], (phrase["text"], len(hits))
        by_page: dict[str, int] = {}
        for page, _, _, _ in hits:
            by_page[str(page)] = by_page.get(str(page), 0) + 1
        assert by_page == phrase["count_by_page"], phrase["text"]
        for i, ((page, box, _, _), occ) in enumerate(zip(hits, phrase["occurrences"])):
            assert page == occ["page"], (phrase["text"], i)
            assert_box(box, occ["bbox"], f"{doc['file']} {phrase['text']!r} #{i} p{page}")


@pytest.mark.parametrize("phrase", ["cell[0][0]", "cell[7][4]"])
def test_rotation_all_four_pages_same_display_box(real_corpus, phrase):
    """test-2812: /Rotate 0, 90, 180, 270 show the same table; display boxes agree."""
    x = extract(real_corpus / "pdf/test-2812.pdf")
    hits = find_phrase(x, phrase)
    assert [p for p, *_ in hits] == [1, 2, 3, 4]
    first = hits[0][1]
    for _, box, _, _ in hits[1:]:
        assert_box(box, [first.x, first.y, first.w, first.h], phrase)
    # the pages differ unrotated but all display the same landscape sheet
    assert {(round(p.width_pt), round(p.height_pt)) for p in x.pages} == {(842, 595)}


def test_rotated_twin_has_same_words_and_rotated_boxes(real_corpus):
    plain = extract(real_corpus / "pdf/nics-background-checks-2015-11.pdf")
    rotated = extract(real_corpus / "pdf/nics-background-checks-2015-11-rotated.pdf")
    assert plain.text == rotated.text
    ((_, a, _, _),) = find_phrase(plain, "Alabama")
    ((_, b, _, _),) = find_phrase(rotated, "Alabama")
    # /Rotate 90 (clockwise): display x = 1 - (y + h), display y = x
    assert_box(b, [1 - (a.y + a.h), a.x, a.h, a.w], "Alabama rotated")


def test_rotate_180_word_is_top_left(real_corpus):
    x = extract(real_corpus / "pdf/issue14415.pdf")
    ((_, box, _, _),) = find_phrase(x, "Authority")
    assert box.x < 0.2 and box.y < 0.2  # unrotated it sits bottom-right (0.81, 0.91)


def test_ligatures_expanded(real_corpus):
    x = extract(real_corpus / "pdf/text-find-ligatures.pdf")
    assert "\ufb02" not in x.text and "\ufb01" not in x.text
    assert len(find_phrase(x, "flag")) == 2
    tm = extract(real_corpus / "pdf/tracemonkey.pdf")
    assert not any(0xFB00 <= ord(ch) <= 0xFB06 for ch in tm.text)


# ------------------------------------------------ real corpus: structure


@pytest.mark.parametrize("entry", STRUCTURAL, ids=[f"{e['file']}:{e['password']}" for e in STRUCTURAL])
@pytest.mark.slow
def test_structural(real_corpus, entry):
    path = real_corpus / entry["file"]
    truth = entry["mupdf"]
    if isinstance(truth, str):
        if truth == "needs password":
            with pytest.raises(EncryptedError) as err:
                extract(path, entry["password"])
            want = "encrypted: wrong password" if entry["password"] else "encrypted: password required"
            assert err.value.reason == want
        else:
            assert truth.startswith("ERR")
            with pytest.raises(ExtractError) as err:
                extract(path, entry["password"])
            assert err.value.reason.startswith("corrupt: ")
        return
    x = extract(path, entry["password"])
    assert len(x.pages) == truth["pages"]
    assert_word_invariants(x)
    counts = [p.words for p in x.pages]
    if entry.get("mupdf_auth"):
        # recorded under EXPECTED.md trap 7 (0 words after reading needs_pass):
        # the truth is every page has text, as pdfplumber found
        plumber = entry["pdfplumber"]["words"]
        assert all(counts) and len(counts) == len(plumber)
        for ours, theirs in zip(counts, plumber):
            assert abs(ours - theirs) <= max(3, theirs // 10)
    else:
        assert counts[: len(truth["words"])] == truth["words"]
    assert x.metadata["repaired"] is truth["repaired"]
    first = " ".join((truth.get("first") or "").split())
    assert " ".join(x.text.split()).startswith(first)


def test_structural_table(real_corpus):
    """EXPECTED.md "Structural truth", row by row."""
    c = real_corpus
    with pytest.raises(ExtractError) as err:
        extract(c / "edge/empty.pdf")
    assert "empty" in err.value.reason.lower() and err.value.reason.startswith("corrupt: ")

    x = extract(c / "edge/issue18986.pdf")
    assert (x.text, x.words, x.pages, x.notes) == ("", (), (), ("no pages",))

    x = extract(c / "edge/helloworld-bad.pdf")
    assert x.text == "Hello, world!" and x.metadata["repaired"] is True
    x = extract(c / "edge/xref_command_missing.pdf")
    assert x.text == "Reduced test-case" and x.metadata["repaired"] is True

    pw = c / "edge/libreoffice-writer-password.pdf"
    with pytest.raises(EncryptedError, match="^encrypted: password required$"):
        extract(pw)
    with pytest.raises(EncryptedError, match="^encrypted: wrong password$"):
        extract(pw, "wrong")
    x = extract(pw, "openpassword")
    assert x.text.startswith("Lorem ipsum dolor sit amet") and 90 <= len(x.words) <= 110
    assert x.metadata["encrypted"] is True

    x = extract(c / "edge/password-example.pdf", "test")
    assert len(x.pages) == 4 and all(p.words > 0 for p in x.pages)

    x = extract(c / "edge/pr-138-example.pdf")  # owner password only
    assert len(x.pages) == 2 and [p.words for p in x.pages] == [889, 937]
    assert x.metadata["encrypted"] is True

    x = extract(c / "edge/test_4090.pdf")
    assert x.text == "" and x.words == () and len(x.pages) == 5
    assert x.notes == ("no text layer on pages 1-5",)

    x = extract(c / "pdf/cython.pdf")
    assert len(x.pages) == 11 and x.pages[1].words == 0 and x.pages[3].words == 1
    assert "no text layer on page 2" in x.notes

    assert len(extract(c / "pdf/test-3820.pdf").pages) == 155
    assert len(extract(c / "pdf/federal-register-2020-17221.pdf").pages) == 15
    x = extract(c / "pdf/issue-67-example.pdf")
    assert len(x.pages) == 22 and x.text.startswith("东北电气发展股份有限公司2018 年第一季度报告全文")


def test_cropped_and_offset_pages_are_relative_to_visible_box(real_corpus):
    x = extract(real_corpus / "pdf/test_3357.pdf")
    assert [(round(p.width_pt), round(p.height_pt)) for p in x.pages] == [(595, 878), (480, 707)]
    x = extract(real_corpus / "pdf/160F-2019.pdf")
    assert round(x.pages[0].width_pt) == 595


@pytest.mark.slow
def test_every_corpus_file_extracts_or_fails_cleanly(real_corpus):
    passwords = {"edge/libreoffice-writer-password.pdf": "openpassword", "edge/password-example.pdf": "test"}
    for path in sorted(real_corpus.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in SUPPORTED_SUFFIXES:
            continue
        rel = path.relative_to(real_corpus).as_posix()
        try:
            x = extract(path, passwords.get(rel))
        except ExtractError as e:
            assert rel == "edge/empty.pdf", (rel, e.reason)
            continue
        assert_word_invariants(x)
        assert x.text or x.notes, rel  # nothing silently empty


# ------------------------------------------------------------- built PDFs


def test_built_multi_page(built_pdfs):
    x = extract(built_pdfs / "multi.pdf")
    facts = BUILT["multi.pdf"]
    assert len(x.pages) == facts["pages"]
    assert [p.label for p in x.pages] == facts["labels"]
    assert all((p.width_pt, p.height_pt) == facts["size_pt"] for p in x.pages)
    assert x.text.split(PAGE_SEPARATOR) == [
        f"page {n} alpha bravo\n\nclosing words here" for n in ("one", "two", "three")
    ]
    assert x.notes == () and x.metadata["encrypted"] is False
    assert_word_invariants(x)
    for n, (page, box, _, _) in enumerate(find_phrase(x, "closing words here"), start=1):
        assert page == n
        assert abs(box.x - 72 / 612) < TOL_X
        assert abs((box.y + box.h) - 700 / 792) < TOL_Y  # baseline y=700 pt near the bottom edge


@pytest.mark.parametrize("page_no", [1, 2, 3, 4])
def test_built_rotated_word_box_covers_the_rendered_ink(built_pdfs, page_no):
    """The only word on each page: its display bbox must hold the ink of the
    rendered (displayed) page, whatever /Rotate is. Truth from pixels, not from
    our rotation arithmetic."""
    import pymupdf

    x = extract(built_pdfs / "rotated.pdf")
    (word,) = [w for w in x.words if w.page == page_no]
    assert x.text[word.start : word.end] == "north"
    with pymupdf.open(built_pdfs / "rotated.pdf") as doc:
        page = doc[page_no - 1]
        assert page.rotation == BUILT["rotated.pdf"]["rotations"][page_no - 1]
        ink = _ink_box(page)
    assert word.bbox.contains(ink, TOL_X, TOL_Y), (word.bbox, ink)
    assert ink.w > word.bbox.w * 0.7  # the box is not much larger than the word
    # drawn near the displayed top-left: x=40 pt, baseline y=60 pt
    p = x.pages[page_no - 1]
    assert abs(word.bbox.x - 40 / p.width_pt) < TOL_X
    assert word.bbox.y < 60 / p.height_pt < word.bbox.y + word.bbox.h


@pytest.mark.parametrize("page_no,word", [(1, "inside"), (2, "offset")])
def test_built_cropbox_and_offset_mediabox(built_pdfs, page_no, word):
    import pymupdf

    x = extract(built_pdfs / "cropped.pdf")
    assert "outside" not in x.text  # cut away by the CropBox
    ((page, box, _, _),) = find_phrase(x, word)
    assert page == page_no
    with pymupdf.open(built_pdfs / "cropped.pdf") as doc:
        ink = _ink_box(doc[page_no - 1])
    assert box.contains(ink, TOL_X, TOL_Y), (box, ink)
    if page_no == 1:
        assert (x.pages[0].width_pt, x.pages[0].height_pt) == (400, 500)
        assert abs(box.x - (150 - 100) / 400) < TOL_X


def test_built_encrypted(built_pdfs):
    path = built_pdfs / "encrypted.pdf"
    with pytest.raises(EncryptedError) as err:
        extract(path)
    assert err.value.reason == "encrypted: password required"
    with pytest.raises(EncryptedError) as err:
        extract(path, "not-it")
    assert err.value.reason == "encrypted: wrong password"
    x = extract(path, BUILT["encrypted.pdf"]["password"])
    assert x.text == "secret page one\fsecret page two"  # decryption survived (trap 7)
    assert x.metadata["encrypted"] is True
    assert_word_invariants(x)


def test_built_no_text_layer(built_pdfs):
    x = extract(built_pdfs / "image_only.pdf")
    assert x.notes == (BUILT["image_only.pdf"]["no_text_note"],)
    assert [p.words for p in x.pages] == [0, 2, 0]
    assert x.text == "\fcaption text\f"
    assert_word_invariants(x)
    x = extract(built_pdfs / "scan.pdf")
    assert x.text == "" and x.words == () and len(x.pages) == 2
    assert x.notes == (BUILT["scan.pdf"]["no_text_note"],)


def test_no_text_note_ranges():
    assert no_text_note([2]) == "no text layer on page 2"
    assert no_text_note([3, 4, 5]) == "no text layer on pages 3-5"
    assert no_text_note([1, 2, 4, 6, 7]) == "no text layer on pages 1-2, 4, 6-7"


def test_not_a_pdf_and_missing_and_unsupported(tmp_path):
    fake = tmp_path / "fake.pdf"
    fake.write_text("this is plain text, not a PDF")
    with pytest.raises(ExtractError) as err:
        extract(fake)
    assert err.value.reason.startswith("corrupt: ")
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(b"%PDF-1.7\n1 0 obj\n<<")
    with pytest.raises(ExtractError):
        extract(truncated)
    with pytest.raises(ExtractError, match="not a readable file"):
        extract(tmp_path / "missing.txt")
    bad_docx = tmp_path / "bad.docx"
    bad_docx.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ExtractError) as err:
        extract(bad_docx)
    assert err.value.reason.startswith("corrupt: ")
    odd = tmp_path / "notes.xyz"
    odd.write_text("x")
    with pytest.raises(UnsupportedFileError) as err:
        extract(odd)
    assert err.value.reason == "unsupported file type: .xyz"
    assert not isinstance(err.value, EncryptedError)


def test_upper_case_suffix(built_pdfs, tmp_path):
    copy = tmp_path / "MULTI.PDF"
    copy.write_bytes((built_pdfs / "multi.pdf").read_bytes())
    assert extract(copy).text == extract(built_pdfs / "multi.pdf").text


# ------------------------------------------------------- txt / md / docx


def test_txt_bom_crlf_nfkc_and_words(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffﬁrst line\r\nsecond  ＡＢＣ\r\n".encode("utf-8"))
    x = extract(path)
    assert x.text == "first line\nsecond  ABC\n"
    assert x.file_type == "txt" and x.pages == () and x.notes == ()
    assert [x.text[w.start : w.end] for w in x.words] == ["first", "line", "second", "ABC"]
    assert_word_invariants(x)


def test_text_fallback_decodings(tmp_path):
    cp = tmp_path / "cp.md"
    cp.write_bytes("café – 20 °C".encode("cp1252"))
    x = extract(cp)
    assert x.text == "café – 20 °C" and x.file_type == "md"
    assert x.notes[0].startswith("decoded as cp1252 (detected, confidence ")  # 3 bytes: low
    assert x.metadata["encoding"] == "cp1252" and x.metadata["encodingConfidence"] < 0.9
    assert "low-confidence decoding as cp1252" in x.notes[1]


def test_corpus_text_files(real_corpus):
    x = extract(real_corpus / "text/sample-english.bom.txt")
    assert not x.text.startswith("\ufeff") and x.notes == ()
    x = extract(real_corpus / "edge/test_markdown_bad_unicode.md")
    assert x.notes[0].startswith("decoded as cp1252") and "°" in x.text
    assert "low-confidence" in x.notes[1]  # one non-ASCII byte cannot name a code page
    assert "\ufffd" not in x.text
    x = extract(real_corpus / "text/sample-french-1.txt")
    assert "not UTF-8" in x.notes[0]
    x = extract(real_corpus / "text/sample-polish.txt")
    assert "\r" not in x.text and x.notes == ()
    assert_word_invariants(x)


def _docx(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.add_heading("Title here", level=1)
    d.add_paragraph("First paragraph.")
    table = d.add_table(rows=2, cols=3)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"r{r}c{c}"
    table.cell(1, 1).merge(table.cell(1, 2))
    table.cell(1, 1).text = "merged"
    d.add_paragraph("")
    d.add_paragraph("After the table.")
    d.core_properties.title = "Built docx"
    d.core_properties.author = "tests"
    d.save(path)
    return path


def test_docx_paragraphs_and_tables_in_order(tmp_path):
    x = extract(_docx(tmp_path / "t.docx"))
    assert x.text == ("Title here\n\nFirst paragraph.\n\nr0c0 | r0c1 | r0c2\nr1c0 | merged\n\nAfter the table.")
    assert x.file_type == "docx" and x.pages == ()
    assert x.metadata == {
        "encrypted": False,
        "title": "Built docx",
        "author": "tests",
        "headings": [[0, 1, "Title here"]],  # its Heading 1 paragraph (engine.search.headings)
    }
    assert_word_invariants(x)


def test_corpus_docx_tables_match_reference(real_corpus):
    """word_tables.docx vs docling's Markdown of it: every cell text appears,
    tables in order, one row per line."""
    x = extract(real_corpus / "docx/word_tables.docx")
    ref = (real_corpus / "text/word_tables.docx.md").read_text("utf-8")
    cells = []
    for line in ref.splitlines():
        if line.startswith("|") and not line.startswith("| -"):
            cells += [c.strip() for c in line.strip("|").split("|") if c.strip()]
    assert cells
    for cell in dict.fromkeys(cells):
        assert cell in x.text, cell
    lines = x.text.splitlines()
    assert "Cell 1.0 | Merged Cell 1.1 1.2" in lines  # a horizontal span written once
    headings = [
        "A uniform table",
        "A non-uniform table with horizontal spans",
        "A non-uniform table with a row starting late",
    ]
    assert [x.text.index(h + "\n") for h in headings] == sorted(x.text.index(h + "\n") for h in headings)
    assert x.text.index("Header 0.0 | Header 0.1 | Header 0.2") > x.text.index("A uniform table")


def test_corpus_docx_interleaved_and_empty(real_corpus):
    x = extract(real_corpus / "docx/blk-paras-and-tables.docx")
    # paragraph, one-cell table (its paragraphs and the table nested in it, rows joined
    # by " / ", on one row line), paragraph; the empty tables add nothing; then the
    # header and footer (tables in them) as labelled blocks after the body
    assert x.text == (
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n\n"
        "Text before Table / Between Text after\n\n"
        "Donec semper facilisis metus finibus malesuada.\n\n"
        "[Header] Left-side | Right-side\n\n[Footer] Copyright | Page-number"
    )
    assert_word_invariants(x)
    try:
        x = extract(real_corpus / "edge/doc-default.docx")
    except ExtractError as e:
        assert e.reason.startswith("corrupt: ")
    else:
        assert x.text.strip() == "" and x.notes == ("no text in document body",)


# --------------------------------------------------- chunk provenance contract


def _single_occurrences(x: ExtractedText, phrases):
    for phrase in phrases:
        hits = find_phrase(x, phrase)
        if len(hits) == 1 and hits[0][0] is not None:
            yield phrase, hits[0]


def _boxes_by_page(x: ExtractedText, start: int, end: int) -> dict[int, Bbox]:
    """Union bbox per page of the words inside text[start:end] (a phrase may
    cross a page break, e.g. into a running header)."""
    out: dict[int, Bbox] = {}
    for w in x.words:
        if start <= w.start and w.end <= end and w.page is not None:
            out[w.page] = out[w.page].union(w.bbox) if w.page in out else w.bbox
    return out


def assert_chunk_provenance(x: ExtractedText, phrases, size: int = 1000, overlap: int = 150) -> int:
    """For each phrase occurring once: every window holding its whole character
    span has, for each page the phrase is on, a region on that page whose bbox
    holds the phrase's box there (within tolerance); the window's own
    page/bbox is its first region. Works on any extracted PDF; returns how many
    (phrase, window) pairs it checked."""
    checked = 0
    windows = chunk_text(x, size, overlap)
    for phrase, (_, _, start, end) in _single_occurrences(x, phrases):
        holders = [w for w in windows if w.start <= start and end <= w.end]
        assert holders or end - start > size, phrase
        for win in holders:
            regions = {r.page: r.bbox for r in win.regions}
            assert (win.page, win.bbox) == (win.regions[0].page, win.regions[0].bbox)
            for page, box in _boxes_by_page(x, start, end).items():
                assert page in regions, (phrase, win.chunk_index, page, list(regions))
                assert regions[page].contains(box, TOL_X, TOL_Y), (phrase, page, regions[page], box)
            checked += 1
    return checked


@pytest.mark.parametrize("doc", DOCUMENTS, ids=[d["file"] for d in DOCUMENTS])
def test_chunk_provenance_on_expected_phrases(real_corpus, doc):
    x = extract(real_corpus / doc["file"], doc["password"])
    assert assert_chunk_provenance(x, [p["text"] for p in doc["phrases"]]) >= 0


def test_chunk_provenance_on_built_pdfs(built_pdfs):
    x = extract(built_pdfs / "multi.pdf")
    phrases = ["page one alpha", "page two alpha", "page three alpha"]
    assert assert_chunk_provenance(x, phrases, size=40, overlap=10) >= 3
    x = extract(built_pdfs / "cropped.pdf")
    assert assert_chunk_provenance(x, ["inside", "offset"], size=8, overlap=2) >= 2


@pytest.mark.slow
def test_chunk_provenance_on_unseen_documents(real_corpus):
    """Documents without ground truth: take words spread through the text as
    'phrases' (3 consecutive words) and check the same contract."""
    for name in ("pdf/federal-register-2020-17221.pdf", "pdf/cython.pdf", "pdf/small-table.pdf"):
        x = extract(real_corpus / name)
        step = max(1, len(x.words) // 40)
        phrases = [
            " ".join(x.text[w.start : w.end] for w in x.words[i : i + 3])
            for i in range(0, max(0, len(x.words) - 3), step)
        ]
        assert assert_chunk_provenance(x, phrases) > 0, name


# ------------------------------------------------------------- samples


def test_samples_extract(samples_dir):
    files = [p for p in sorted(samples_dir.iterdir()) if p.suffix.lower() in SUPPORTED_SUFFIXES]
    if not files:
        pytest.skip(f"no samples in {samples_dir}")
    for path in files:
        x = extract(path)
        assert x.text, path.name
        assert_word_invariants(x)


def test_samples_match_their_sources(samples_dir):
    """assets/SOURCES-samples.md lists every sample with its size and sha256
    prefix; the files are unedited copies, small, and one page is rotated."""
    import hashlib
    import re

    import pymupdf

    listed = {}
    for line in (samples_dir.parent / "SOURCES-samples.md").read_text("utf-8").splitlines():
        m = re.match(r"\| `([^`]+)` \|[^|]*\| (\d+) \| `([0-9a-f]{12})` \|", line)
        if m:
            listed[m.group(1)] = (int(m.group(2)), m.group(3))
    present = {p.name for p in samples_dir.iterdir()}
    assert set(listed) == present
    for name, (size, sha) in listed.items():
        data = (samples_dir / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()[:12]) == (size, sha), name
    assert sum(size for size, _ in listed.values()) < 2_000_000
    rotations = set()
    for name in present:
        if name.endswith(".pdf"):
            with pymupdf.open(samples_dir / name) as doc:
                rotations |= {page.rotation for page in doc}
    assert rotations - {0}, "one sample PDF should show a rotated page"


def test_rotation_affine_equals_pymupdf_rotation_matrix(built_pdfs, real_corpus):
    """Our shortcut for page.rotation_matrix gives the same matrix on every page
    (built rotated + cropped pages, and every readable corpus PDF)."""
    import pymupdf

    from engine.extract import rotation_affine

    files = sorted(built_pdfs.glob("*.pdf")) + sorted(real_corpus.glob("pdf/*.pdf"))
    checked = set()
    for path in files:
        doc = pymupdf.open(path)
        if doc.needs_pass and not doc.authenticate("s3cret"):
            continue
        for page in doc:
            r = page.rect
            assert rotation_affine(page.rotation, r.width, r.height) == pytest.approx(tuple(page.rotation_matrix)), (
                path.name,
                page.number,
            )
            checked.add(page.rotation)
    assert checked == {0, 90, 180, 270}
