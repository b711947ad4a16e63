"""The shipped evaluation set (tests/data/eval/questions.jsonl) is honest.

Every phrase occurs exactly once in its file's extracted text (whitespace
folded) and lies on the labelled page; at least half of the questions are
paraphrases, and a paraphrase shares no content word with its passage (the
phrase and the 500 characters either side of it): neither after the light
stemming of ``engine.search.words`` nor after Porter stemming.
"""

import json
from pathlib import Path

import pytest

from engine.search.words import content_words
from tests.fixtures.eval_text import _extracted, answer_offsets, answer_page, content_stems

SET = Path(__file__).resolve().parents[1] / "data" / "eval" / "questions.jsonl"
QUESTIONS = [json.loads(line) for line in SET.read_text("utf-8").splitlines() if line.strip()]
PARAPHRASES = [q for q in QUESTIONS if q["kind"] == "paraphrase"]
#: Characters either side of the phrase that a paraphrase may not share a word with.
PASSAGE_REACH = 500


def test_the_set_is_large_and_half_paraphrased():
    assert len(QUESTIONS) >= 100
    assert len(PARAPHRASES) * 2 >= len(QUESTIONS)
    assert {q["kind"] for q in QUESTIONS} == {"paraphrase", "lexical"}
    assert len({q["id"] for q in QUESTIONS}) == len(QUESTIONS)
    for q in QUESTIONS:
        assert (
            {"id", "question", "file", "phrase", "kind"}
            <= set(q)
            <= {"id", "question", "file", "phrase", "kind", "page", "scope"}
        ), q


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_phrase_occurs_once_on_the_labelled_page(q):
    offsets = answer_offsets(q["file"], q["phrase"])
    assert len(offsets) == 1, (q["phrase"], len(offsets))
    assert answer_page(q["file"], offsets[0]) == q.get("page")


def _passage(q: dict) -> str:
    text = _extracted(q["file"]).text
    at = answer_offsets(q["file"], q["phrase"])[0]
    return text[max(0, at - PASSAGE_REACH) : at + len(q["phrase"]) + PASSAGE_REACH]


@pytest.mark.parametrize("q", PARAPHRASES, ids=[q["id"] for q in PARAPHRASES])
def test_paraphrase_shares_no_content_word_with_its_passage(q):
    passage = _passage(q)
    assert not content_words(q["question"]) & content_words(passage)
    assert not content_stems(q["question"]) & content_stems(passage)


def test_the_check_sees_a_shared_word():
    """The overlap check can fail: a question reusing one passage word is caught."""
    q = PARAPHRASES[0]
    word = sorted(content_words(_passage(q)) - {""}, key=len)[-1]
    assert content_words(q["question"] + " " + word) & content_words(_passage(q))
