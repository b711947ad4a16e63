"""Exact words win, honestly scored: the fusion's exact-word tier and its ties, content
words, and each hit's ``match``.

Pure parts (``engine.search.fusion``, ``engine.search.words``,
``engine.search.confidence``) with lists built here; the same rules on the real
corpus are in tests/search/test_eval_floors.py.
"""

import pytest

from engine.search.confidence import COSINE_RANGE_DEFAULT, MATCH_FLOOR, calibrated_cosine, match
from engine.search.fusion import EXACT_COVERAGE, fuse, in_tie_order, rank_key, tie_span, with_coverage
from engine.search.words import content_words, coverage, light_stem


def test_a_tie_goes_to_the_chunk_holding_every_word():
    """Both first in their list: 1/61 each. The chunk holding the words wins, whatever the keys;
    without a tier between them the chunk key decides, as it always did."""
    held = {"z-keyword": 1.0, "a-vector-only": 0.0}
    fused = fuse([("a-vector-only", 0.9)], [("z-keyword", 7.0)], tie=lambda item: item, coverage=held.get)
    assert [f.item for f in fused] == ["z-keyword", "a-vector-only"]
    assert fused[0].score == fused[1].score
    partial = {"z-keyword": 0.5, "a-vector-only": 0.0}
    fused = fuse([("a-vector-only", 0.9)], [("z-keyword", 7.0)], tie=lambda item: item, coverage=partial.get)
    assert [f.item for f in fused] == ["a-vector-only", "z-keyword"]


def test_a_chunk_holding_every_word_ranks_above_one_holding_none():
    vector = [("v0", 0.9), ("v1", 0.8), ("both", 0.2)]
    keyword = [("v0", 3.0), ("both", 2.0)]
    held = {"both": 1.0, "v0": 0.5, "v1": 0.0}
    fused = fuse(vector, keyword, coverage=held.get)
    assert [f.item for f in fused] == ["both", "v0", "v1"]
    assert fused[1].score > fused[0].score  # the tier, not the fused score, put "both" first
    assert [f.coverage for f in fused] == [1.0, 0.5, 0.0]
    # without coverage (not measured) the fused score alone orders
    assert [f.item for f in fuse(vector, keyword)] == ["v0", "both", "v1"]


def test_with_coverage_ranks_a_fusion_again_and_tie_span_follows_the_key():
    fused = fuse([("a", 0.9), ("b", 0.8)], [("c", 1.0), ("d", 0.5)])
    again = with_coverage(fused, {"d": EXACT_COVERAGE}.get)
    assert [f.item for f in again] == ["d", "a", "c", "b"]  # equal keys keep their order
    assert tie_span(again, 1) == 1 and rank_key(again[0])[0] == 0
    tied = fuse([("x", 0.9)], [("y", 1.0)]) + fuse([("w", 0.9)], [])
    ordered = in_tie_order(tied, lambda item: item)
    assert [f.item for f in ordered] == ["w", "x", "y"]  # all at 1/61: the key
    assert tie_span(ordered, 2) == 3


@pytest.mark.parametrize(
    "a, b",
    [("pipelines", "pipeline"), ("running", "run"), ("caused", "cause"), ("studies", "study"), ("Café", "cafe")],
)
def test_light_stems_fold_endings_case_and_marks(a, b):
    assert content_words(a) == content_words(b)


def test_content_words_leave_out_function_words_and_keep_cjk_runs():
    assert content_words("What is the capital of the country?") == {"capital", "country"}
    assert content_words("违规对外担保情况 2018") == {"违规对外担保情况", "2018"}
    assert light_stem("class") == "class" and light_stem("2019") == "2019"


def test_coverage_is_the_share_of_query_words_held():
    words = content_words("Erdgasleitung Vreden pipeline")
    assert coverage(words, "Die Erdgasleitung bei Vreden.") == pytest.approx(2 / 3)
    assert coverage(words, "Erdgasleitung, Vreden: pipelines") == 1.0
    assert coverage(content_words("担保情况"), "公司报告期无违规对外担保情况。") == 1.0
    assert coverage(set(), "anything") == 0.0


def test_match_is_the_better_of_coverage_and_calibrated_cosine():
    lo, hi = COSINE_RANGE_DEFAULT
    assert calibrated_cosine(lo, "some-new-model") == 0.0 and calibrated_cosine(hi + 0.1, None) == 1.0
    assert match(1.0, None, None) == 1.0  # every word held, keyword only
    assert match(0.0, (lo + hi) / 2, None) == 0.5
    assert match(0.25, lo - 0.1, None) == 0.25
    assert 0.0 < MATCH_FLOOR <= 1.0
