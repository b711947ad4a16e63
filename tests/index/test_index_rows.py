"""engine/index/rows.py and the extract workers' join: rows built ahead equal the rows built here.

Real corpus files, in this process (the worker functions are plain functions);
the pool itself, forked, is tested in tests/index/test_extract_pool.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.extract import extract
from engine.extract.pdf import PdfPart, extract_pdf_part
from engine.index.pool import ExtractPool, _extract_part_in_worker
from engine.index.rows import ReadyText, RowChunks, ready_text
from engine.values import Collection
from engine.index.files import HashedFile, LazyChunks
from engine.store.fts import is_cjk
from engine.store.sqlite.rows import chunk_of, chunk_params

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
FILES = (
    sorted((CORPUS / "pdf").glob("*.pdf"))[:8]
    + [CORPUS / "pdf" / "test-3820.pdf"]
    + sorted((CORPUS / "text").glob("*.txt"))[:3]
    + sorted((CORPUS / "edge").glob("*.md"))
)
H = "ab" * 32


def _file(path: Path) -> HashedFile:
    return HashedFile(
        Collection("C/D", str(path.parent)), path.name, str(path), H, path.stat().st_size, 1_700_000_000_123_456_789
    )


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_ready_rows_are_the_rows_of_the_chunks_made_here(path):
    from engine.chunk import chunk_text

    ex = extract(path)
    ready = ready_text(ex, H, 1000, 150)
    assert ready.extracted.text == ex.text and ready.extracted.pages == ex.pages
    assert len(ready.extracted.words) == 0  # the word columns stay in the worker
    f = _file(path)
    labels = {p.number: p.label for p in ex.pages if p.label}
    ocr_pages = {int(k): v for k, v in (ex.metadata.get("ocrPages") or {}).items()}
    lazy = LazyChunks(f, ex.text, chunk_text(ex, 1000, 150), labels, ocr_pages)
    rows = RowChunks(f, ex.text, ready.rows)
    key = ("C/D", path.name)
    assert list(rows.sqlite_params(key)) == [chunk_params(c) for c in lazy]
    assert list(rows) == [chunk_of(chunk_params(c)) for c in lazy] and len(rows) == len(lazy)
    assert rows[0:2] == list(rows)[0:2]
    assert rows.has_cjk() == any(is_cjk(c.chunk_text) for c in lazy)
    with pytest.raises(ValueError):
        list(rows.sqlite_params(("C/D", "other.pdf")))


def test_blank_text_and_repaired_empty_pdfs_have_no_rows():
    from engine.values import ExtractedText, WordArray

    assert ready_text(ExtractedText(" \n\f ", WordArray.empty(), (), "txt", (), {}), H, 1000, 150).rows == ()
    repaired = ExtractedText("text", WordArray.empty(), (), "pdf", (), {"repaired": True})
    assert ready_text(repaired, H, 1000, 150).rows == ()  # the indexer reports it corrupt


def _parts(tmp_path: Path, path: Path, order: list[int], parts: int = 2):
    stem = str(tmp_path / "r")
    return {k: _extract_part_in_worker(str(path), None, None, k, parts, 0, (stem, (H, 1000, 150))) for k in order}, stem


@pytest.mark.parametrize("order", [[0, 1], [1, 0], [2, 0, 1]], ids=str)
def test_the_range_read_last_joins_and_chunks_the_pdf(tmp_path, order):
    path = CORPUS / "pdf" / "tracemonkey.pdf"
    answers, stem = _parts(tmp_path, path, order, parts=len(order))
    last = answers[order[-1]]
    assert last[0] == "joined" and isinstance(last[1], ReadyText)
    assert all(answers[k][0] == "spilled" for k in order[:-1])
    whole = ready_text(extract(path), H, 1000, 150)
    assert last[1] == whole  # the same text, pages, notes, metadata and rows as one read
    assert sorted(os.listdir(tmp_path)) == ["r.claim"]  # the ranges' files are gone


def test_a_claimed_join_is_left_to_its_claimer_and_an_unwritable_spill_goes_back_whole(tmp_path):
    path = CORPUS / "pdf" / "tracemonkey.pdf"
    (tmp_path / "r.claim").touch()  # another range already joins them
    answers, _stem = _parts(tmp_path, path, [0, 1])
    assert [a[0] for a in answers.values()] == ["spilled", "spilled"]
    gone = str(tmp_path / "missing" / "r")
    kind, value = _extract_part_in_worker(str(path), None, None, 0, 2, 0, (gone, (H, 1000, 150)))
    assert kind == "ok" and isinstance(value, PdfPart)


def test_spilled_ranges_without_a_joiner_are_joined_here(tmp_path):
    from engine.extract.pdf import merge_pdf_parts

    path = CORPUS / "pdf" / "tracemonkey.pdf"
    (tmp_path / "r.claim").touch()
    answers, _stem = _parts(tmp_path, path, [0, 1])
    pool = ExtractPool(1)
    kind, value = pool._joined([answers[0], answers[1]])
    assert kind == "ok" and value == merge_pdf_parts([extract_pdf_part(path, None, None, k, 2) for k in (0, 1)])
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".pickle")]
    answers, _stem = _parts(tmp_path, path, [0])
    kind, _value = pool._joined([answers[0], ("error", ValueError("x"))])
    assert kind == "bug"  # ranges answered differently: read again, whole


@pytest.mark.parametrize("size, overlap", [(1000, 150), (180, 60), (6000, 0)])
def test_plain_rows_equal_the_rows_of_chunk_objects_on_every_corpus_pdf(size, overlap):
    """``chunk_rows`` (no Chunk/Region/Bbox objects) == ``chunk_params`` of the ``LazyChunks``
    chunks, on every corpus PDF, with windows that reach over pages (asserted) and labels."""
    from engine.chunk import chunk_plain, chunk_text
    from engine.index.rows import _row, chunk_rows

    multi = labelled = 0
    for path in sorted((CORPUS / "pdf").glob("*.pdf")):
        try:
            ex = extract(path)
        except Exception:  # password-only files
            continue
        if ex.metadata.get("ocrPages"):
            continue
        f = _file(path)
        labels = {p.number: p.label for p in ex.pages if p.label}
        windows = chunk_text(ex, size, overlap)
        want = tuple(_row(chunk_params(c)) for c in LazyChunks(f, ex.text, windows, labels))
        assert chunk_rows(ex, H, size, overlap) == want, path.name
        multi += sum(len(w.regions) > 1 for w in windows)
        labelled += bool(labels)
        plain = chunk_plain(ex, size, overlap)
        assert [(w.chunk_index, w.start, w.end, w.page) for w in windows] == [p[:4] for p in plain]
    assert multi > 0 and labelled > 0
