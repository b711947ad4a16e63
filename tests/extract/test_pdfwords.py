"""The compiled PDF word walker (engine/extract/_pdfwords.c) reads every corpus page exactly
as PyMuPDF's ``get_text("words")``, and the reader gives the same ``ExtractedText`` with it
as without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from engine.errors import ExtractError
from engine.extract import pdfwords
from engine.extract.pdf import extract_pdf

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
PDFS = sorted(p for p in CORPUS.rglob("*.pdf"))
FLAGS = pymupdf.TEXTFLAGS_WORDS

needs_walker = pytest.mark.skipif(
    pdfwords.walker() is None,
    reason=("engine.extract._pdfwords is not built for this PyMuPDF (setup.py builds it: `pip install -e .`)"),
)


def _columns(w: pdfwords.PageWords) -> tuple:
    return (w.corners.tobytes(), w.block.tobytes(), w.line.tobytes(), w.lengths.tobytes(), w.codes.tobytes())


#: The corpus's encrypted PDFs and their user passwords (tests/corpus/SOURCES.md), so the walker
#: is compared on their pages too.
PASSWORDS = {"libreoffice-writer-password.pdf": "openpassword", "password-example.pdf": "test"}


def _openable(path: Path) -> bool:
    try:
        pymupdf.open(path).close()
        return True
    except Exception:  # e.g. edge/empty.pdf: no page, nothing to compare (the reader's own tests cover it)
        return False


def _open(path: Path):
    doc = pymupdf.open(path)
    if doc.needs_pass:
        assert doc.authenticate(PASSWORDS[path.name]), path.name
    return doc


@needs_walker
@pytest.mark.parametrize("path", [p for p in PDFS if _openable(p)], ids=lambda p: p.name)
def test_compiled_words_equal_pymupdf_words_on_every_page(path):
    doc = _open(path)
    with doc:
        for page in doc:
            raw = page.get_text("words", flags=FLAGS)
            got = pdfwords.page_words(page, FLAGS)
            assert _columns(got) == _columns(pdfwords.tuple_words(raw)), page.number
            # and the strings decode to exactly PyMuPDF's words
            ends = np.cumsum(got.lengths).tolist()
            text = got.codes.tobytes().decode("utf-32-le")
            assert [text[a - n : a] for a, n in zip(ends, got.lengths.tolist())] == [w[4] for w in raw]


@needs_walker
@pytest.mark.parametrize("setting", ["set_small_glyph_heights", "unset_quad_corrections"])
def test_compiled_words_follow_pymupdf_box_settings(setting):
    """PyMuPDF's global glyph-box switches change the boxes of both readers alike."""
    toggle = getattr(pymupdf.TOOLS, setting)
    toggle(True)
    try:
        for path in [p for p in PDFS if _openable(p)][:12]:
            doc = _open(path)
            with doc:
                for page in doc:
                    raw = page.get_text("words", flags=FLAGS)
                    assert _columns(pdfwords.page_words(page, FLAGS)) == _columns(pdfwords.tuple_words(raw))
    finally:
        toggle(False)


def _outcome(path: Path):
    try:
        x = extract_pdf(path)
    except ExtractError as e:
        return (type(e).__name__, e.reason)
    w = x.words
    return (
        x.text,
        w.starts.tobytes(),
        w.ends.tobytes(),
        w.pages.tobytes(),
        np.asarray(w.boxes).tobytes(),
        x.pages,
        x.file_type,
        x.notes,
        x.metadata,
    )


@pytest.mark.slow
@needs_walker
def test_reader_gives_the_same_text_with_and_without_the_compiled_walker(monkeypatch):
    with_walker = {p.name: _outcome(p) for p in PDFS}
    monkeypatch.setattr(pdfwords, "_walk", False)  # as when the extension is not built
    assert pdfwords.walker() is None
    without = {p.name: _outcome(p) for p in PDFS}
    assert with_walker == without


def test_tuple_words_columns():
    raw = [(1.0, 2.0, 3.0, 4.0, "ab", 0, 0, 0), (5.5, 6.0, 7.0, 8.0, "ﬂé", 1, 2, 0)]
    w = pdfwords.tuple_words(raw)
    assert len(w) == 2
    assert w.corners.tolist() == [[1.0, 2.0, 3.0, 4.0], [5.5, 6.0, 7.0, 8.0]]
    assert w.block.tolist() == [0, 1] and w.line.tolist() == [0, 2] and w.lengths.tolist() == [2, 2]
    assert w.codes.tobytes().decode("utf-32-le") == "abﬂé"


def test_chunker_rect_codes_and_objects_equal_the_plain_ones():
    """engine.chunk builds boxes, regions and windows without the dataclass __init__ and
    carries each region's rects_code on its ``Rects``: both equal the plain computation."""
    from engine.chunk import chunk_text
    from engine.values import Bbox, Rects, Region, Window, rects_code

    seen = 0
    for path in sorted((CORPUS / "pdf").glob("*.pdf")):
        for w in chunk_text(extract_pdf(path), 1000, 150):
            if not w.regions:
                continue
            plain = Window(
                w.chunk_index,
                w.start,
                w.end,
                w.page,
                Bbox(w.bbox.x, w.bbox.y, w.bbox.w, w.bbox.h),
                tuple(
                    Region(
                        r.page,
                        Bbox(r.bbox.x, r.bbox.y, r.bbox.w, r.bbox.h),
                        tuple(Bbox(b.x, b.y, b.w, b.h) for b in r.rects),
                    )
                    for r in w.regions
                ),
            )
            assert w == plain and hash(w) == hash(plain) and repr(w) == repr(plain)
            for r in w.regions:
                assert isinstance(r.rects, Rects) and r.rects.code == rects_code(tuple(r.rects))
                seen += 1
    assert seen > 500


def test_the_walker_is_built_where_a_compiler_and_mupdf_headers_are():
    """Where the install could build the extension (a C compiler on PATH and the MuPDF headers
    the PyMuPDF wheel ships), it was built and is used: a skipped build must not pass silently
    and leave every PDF on the slower reader. Elsewhere the fallback is the documented path."""
    import shutil

    here = Path(pymupdf.__file__).parent
    if not (shutil.which("cc") or shutil.which("gcc")) or not (here / "mupdf-devel" / "include").is_dir():
        pytest.skip("no C compiler or no MuPDF headers here: the extractWORDS fallback is the reader")
    assert pdfwords.walker() is not None, "engine.extract._pdfwords is not built: run `make setup` again"
    assert pdfwords.PDFWORDS == "compiled"


def test_build_requirement_pins_the_runtime_pymupdf():
    """The extension is compiled against the PyMuPDF pyproject asks for: it must be the one
    requirements.txt installs (else the walker is built for another MuPDF and never used)."""
    import re

    root = Path(__file__).resolve().parents[2]
    build = re.search(r"PyMuPDF==([\w.]+)", (root / "pyproject.toml").read_text()).group(1)
    runtime = re.search(r"(?im)^PyMuPDF==([\w.]+)", (root / "requirements.txt").read_text()).group(1)
    assert build == runtime


def test_reader_in_another_thread_equals_the_main_thread():
    """PyMuPDF keeps a MuPDF context per thread (the explorer indexes in a thread): the walker
    asks for the calling thread's, and reads the same words there."""
    import threading

    paths = sorted((CORPUS / "pdf").glob("*.pdf"))[:8]
    here = [_outcome(p) for p in paths]
    there: list = []
    t = threading.Thread(target=lambda: there.extend(_outcome(p) for p in paths))
    t.start()
    t.join()
    assert there == here


@pytest.mark.parametrize("seed", range(6))
def test_line_breaks_equal_the_search_over_every_break(seed):
    """engine.chunk._line_breaks (first/last character of short gaps, else a running count)
    == the plain rule: a new line where the text between two words holds "\\n" or "\\f",
    or their boxes do not overlap."""
    from engine.chunk import _line_breaks

    rng = np.random.default_rng(seed)
    n = 400
    seps = [" ", "\n", "\n\n", "\f", " \n", "\n ", "\f\f\f", "  ", "é"] if seed % 2 else [" ", "\n", "\n\n", "\f"]
    parts, starts, ends, at = [], [], [], 0
    for i in range(n):
        word = "w" * int(rng.integers(1, 6)) + ("ü" if rng.random() < 0.1 else "")
        sep = seps[int(rng.integers(len(seps)))] if i else ""
        parts += [sep, word]
        at += len(sep)
        starts.append(at)
        at += len(word)
        ends.append(at)
    text = "".join(parts)
    boxes = rng.random((n, 4)) * [1, 1, 0.2, 0.05]
    starts, ends = np.array(starts), np.array(ends)
    brk = np.flatnonzero([c in "\n\f" for c in text])
    text_break = np.searchsorted(brk, starts[1:]) != np.searchsorted(brk, ends[:-1])
    x0, y0, x1, y1 = boxes[:, 0], boxes[:, 1], boxes[:, 0] + boxes[:, 2], boxes[:, 1] + boxes[:, 3]
    overlap = ((y0[1:] < y1[:-1]) & (y0[:-1] < y1[1:])) | ((x0[1:] < x1[:-1]) & (x0[:-1] < x1[1:]))
    want = np.flatnonzero(text_break | ~overlap) + 1
    assert _line_breaks(text, starts, ends, boxes).tolist() == want.tolist()


@needs_walker
def test_join_pages_mixes_compiled_and_tuple_pages():
    """An OCR'd page (tuples) between text pages (compiled buffers) joins in page order."""
    doc = _open(CORPUS / "pdf" / "pdflatex-4-pages.pdf")
    with doc:
        pages = list(doc)[:3]
        raw = [pdfwords.read_page(p, FLAGS) for p in pages]
        assert all(type(r) is pdfwords.CompiledWords for r in raw)
        mixed = [raw[0], pdfwords.tuple_words(pages[1].get_text("words", flags=FLAGS)), raw[2]]
        want = [pdfwords.page_words(p, FLAGS) for p in pages]
    got = pdfwords.join_pages(mixed)
    for i in range(5):
        assert np.concatenate([w[i] for w in want]).tobytes() == got[i].tobytes()
    assert len(pdfwords.join_pages([])) == 0


@needs_walker
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_text_fill_equals_the_numpy_layout(monkeypatch, seed):
    """``_pdfwords.fill_text`` / ``fill_boxes`` write the code points and boxes the numpy path of
    ``_place_words`` does: random words over pages with empty pages between (several form
    feeds), blocks, lines, every rotation, corners past the page edges."""
    from engine.extract import pdf

    rng = np.random.default_rng(seed)
    page_count = 9
    raw_counts = [int(k) for k in rng.integers(0, 40, page_count)]
    raw_counts[int(rng.integers(page_count))] = 0
    n = sum(raw_counts)
    lengths = rng.integers(1, 8, n).astype(np.int64)
    codes = rng.integers(33, 127, int(lengths.sum())).astype(np.uint32)
    block = np.cumsum(rng.random(n) < 0.1).astype(np.int64)
    line = np.cumsum(rng.random(n) < 0.3).astype(np.int64)
    corners = rng.random((n, 4)) * 800 - 100  # past the page edges: clamped
    corners[rng.random((n, 4)) < 0.05] = 0.0
    affine = np.zeros((page_count, 6))
    for i in range(page_count):  # every rotation, as _read_pdf makes the rows
        w, h = 600.0, 800.0
        a, b, c, d, e, f = pdf.rotation_affine(90 * (i % 4), w, h)
        affine[i] = (a / w, 0, 0, d / h, e / w, f / h) if b == 0 else (0, b / h, c / w, 0, e / w, f / h)
    args = (corners, codes, lengths, block, line, raw_counts, affine, page_count)
    assert pdfwords.text_filler() is not None and pdfwords.box_filler() is not None
    compiled = pdf._place_words(*args)
    monkeypatch.setattr(pdfwords, "_walk", False)
    assert pdfwords.text_filler() is None and pdfwords.box_filler() is None
    plain = pdf._place_words(*args)
    assert compiled[1] == plain[1] and compiled[2] == plain[2] and "\f\f" in plain[1]
    assert compiled[0].starts.tolist() == plain[0].starts.tolist()
    boxes = plain[0].boxes
    assert compiled[0].boxes.tobytes() == boxes.tobytes()  # bit for bit
    assert (boxes == 0).any() and (boxes[:, 0] + boxes[:, 2] == 1).any()  # clamped at both edges


@needs_walker
def test_compiled_text_fill_rejects_columns_that_do_not_fit():
    from engine.extract import _pdfwords

    out = np.empty(3, np.uint32)
    with pytest.raises(ValueError):
        _pdfwords.fill_text(
            out, np.arange(5, dtype=np.uint32), np.array([5], np.int64), np.zeros(1, np.int8), np.zeros(1, np.int64)
        )
    with pytest.raises(ValueError):  # per-page counts past the words
        _pdfwords.fill_boxes(np.empty((2, 4)), np.zeros((2, 4)), np.zeros((1, 6)), np.array([3], np.int64))
