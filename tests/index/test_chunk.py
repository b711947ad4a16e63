"""Property tests for engine/chunk.py: window arithmetic and provenance on synthetic words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from engine.chunk import chunk_id, chunk_text, window_count, windows
from engine.values import Bbox, ExtractedText, Word

sizes = st.integers(min_value=1, max_value=300).flatmap(
    lambda size: st.tuples(st.just(size), st.integers(min_value=0, max_value=size - 1))
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=2000), so=sizes)
def test_windows_cover_step_and_slice(text, so):
    size, overlap = so
    ws = windows(text, size, overlap)
    assert len(ws) == window_count(len(text), size, overlap)
    if not text:
        assert ws == []
        return
    step = size - overlap
    covered = [0] * len(text)
    for i, w in enumerate(ws):
        assert w.chunk_index == i and w.start == i * step
        assert text[w.start : w.end] == text[w.start : w.start + size][: w.end - w.start]
        assert 0 < w.end - w.start <= size
        assert w.end == min(w.start + size, len(text))
        for k in range(w.start, w.end):
            covered[k] += 1
    assert all(covered), "every character lies in >= 1 window"
    assert ws[-1].end == len(text)
    assert all(w.end - w.start == size for w in ws[:-1]), "only the last may be shorter"
    if len(ws) > 1:
        assert ws[-2].end < len(text), "no window is redundant"


@pytest.mark.parametrize("length, count", [(0, 0), (1, 1), (1000, 1), (1001, 2), (1850, 2), (1851, 3)])
def test_default_counts(length, count):
    assert window_count(length, 1000, 150) == count
    assert len(windows("x" * length, 1000, 150)) == count


@pytest.mark.parametrize("size, overlap", [(0, 0), (-1, 0), (10, 10), (10, -1)])
def test_bad_settings_raise(size, overlap):
    with pytest.raises(ValueError):
        windows("abc", size, overlap)


@given(st.text(min_size=1, max_size=50), st.text(max_size=50))
def test_chunk_id_is_content_addressed(body, other):
    a = chunk_id("h" * 64, body)
    assert a == chunk_id("h" * 64, body) and len(a) == 64
    assert chunk_id("g" * 64, body) != a
    if other != body:
        assert chunk_id("h" * 64, other) != a


def _synthetic(n_words: int, per_page: int, word_len: int) -> ExtractedText:
    """Words 'wNNN' separated by one space, ``per_page`` per page, each with a box on a grid."""
    parts, words, pos = [], [], 0
    for i in range(n_words):
        w = f"w{i:0{word_len - 1}d}"
        page = 1 + i // per_page
        row, col = divmod(i % per_page, 5)
        words.append(Word(pos, pos + len(w), page, Bbox(col * 0.2, row * 0.05, 0.1, 0.04)))
        parts.append(w)
        pos += len(w) + 1
    return ExtractedText(" ".join(parts), tuple(words), (), "pdf")


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(n_words=st.integers(1, 120), per_page=st.integers(1, 40), word_len=st.integers(3, 6), so=sizes)
def test_provenance_on_synthetic_words(n_words, per_page, word_len, so):
    size, overlap = so
    ex = _synthetic(n_words, per_page, word_len)
    out = chunk_text(ex, size, overlap)
    assert [(w.start, w.end) for w in out] == [(w.start, w.end) for w in windows(ex.text, size, overlap)]
    for win in out:
        inside = [w for w in ex.words if w.end > win.start and w.start < win.end]
        if not inside:  # the window holds only a separator
            assert win.page is None and win.regions == ()
            continue
        starting = [w for w in inside if w.start >= win.start]
        assert win.page == (starting[0].page if starting else inside[0].page)
        assert win.regions[0].page == win.page and win.regions[0].bbox == win.bbox
        pages = []
        for w in inside:
            if w.page not in pages:
                pages.append(w.page)
        assert sorted(r.page for r in win.regions) == sorted(pages)
        assert [r.page for r in win.regions[1:]] == [p for p in pages if p != win.page]
        for r in win.regions:
            boxes = [w.bbox for w in inside if w.page == r.page]
            union = boxes[0]
            for b in boxes[1:]:
                union = union.union(b)
            assert (r.bbox.x, r.bbox.y, r.bbox.w, r.bbox.h) == pytest.approx(
                (union.x, union.y, union.w, union.h), abs=1e-9
            )


def test_text_without_pages_has_no_provenance():
    text = "plain words " * 300
    ex = ExtractedText(text, tuple(Word(i, i + 5, None, None) for i in range(0, len(text), 6)), (), "txt")
    out = chunk_text(ex, 1000, 150)
    assert out == windows(text, 1000, 150)
    assert all(w.page is None and w.bbox is None and w.regions == () for w in out)


def test_region_per_page_across_a_page_break():
    ex = _synthetic(20, 10, 4)  # words 0-9 on page 1, 10-19 on page 2
    (win,) = chunk_text(ex, len(ex.text), 0)
    assert win.page == 1 and [r.page for r in win.regions] == [1, 2]
    b = win.regions[1].bbox
    assert (b.x, b.y, b.w, b.h) == pytest.approx((0.0, 0.0, 0.9, 0.09))
