"""A PDF read in page ranges and joined equals one read; the page limit checked on the
document opened for reading equals the separate check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.errors import ExtractError
from engine.extract import extract
from engine.extract.limits import check_pdf_pages
from engine.extract.pdf import PdfPart, extract_pdf, extract_pdf_part, merge_pdf_parts

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
PDFS = sorted((CORPUS / "pdf").glob("*.pdf")) + sorted((CORPUS / "edge").glob("*.pdf"))


def _outcome(fn):
    try:
        x = fn()
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


@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.name)
def test_page_ranges_joined_equal_one_read(path):
    whole = _outcome(lambda: extract_pdf(path))
    for parts in (2, 3, 7):

        def joined():
            got = [extract_pdf_part(path, None, None, k, parts) for k in range(parts)]
            if not all(isinstance(g, PdfPart) for g in got):  # no pages: each part is the whole answer
                assert all(_outcome(lambda g=g: g) == _outcome(lambda: got[0]) for g in got)
                return got[0]
            return merge_pdf_parts(got)

        assert _outcome(joined) == whole, parts


@pytest.mark.slow
@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.name)
def test_the_page_limit_on_the_open_document_equals_the_separate_check(path):
    try:
        n = extract_pdf(path).pages.__len__()
    except ExtractError:
        n = 3
    for password in (None, "wrong", "test", "openpassword"):  # the edge files' passwords
        for limit in {max(1, n - 1), max(1, n), n + 1}:

            def before():
                check_pdf_pages(path, limit)
                return extract(path, password)

            assert _outcome(lambda: extract(path, password, max_pages=limit)) == _outcome(before), (password, limit)
