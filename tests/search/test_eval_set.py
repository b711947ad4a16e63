"""The retrieval evaluation set is honest: every label checks out against the corpus.

Each question's answer phrase occurs exactly once in its file's extracted text
(whitespace folded) and lies on the labelled page; a ``paraphrase`` question
shares no content word (Porter stem, stopwords aside) with the 400
characters around its answer except the names it lists; the set is large and
mixed enough (>= 80 questions, >= half paraphrased, every kind and language).
"""

import pytest

from tests.fixtures.eval_text import _extracted, answer_offsets, answer_page, content_stems, load_questions

QUESTIONS = load_questions()


def test_the_set_is_large_and_mixed():
    kinds = [q["kind"] for q in QUESTIONS]
    assert len(QUESTIONS) >= 80
    assert kinds.count("paraphrase") * 2 >= len(QUESTIONS)
    assert {"paraphrase", "keyword", "numeric", "table", "non-english"} <= set(kinds)
    langs = {q.get("lang") for q in QUESTIONS if q["kind"] == "non-english"}
    assert {"zh", "ru", "fr", "de", "ar"} <= langs
    assert len({q["id"] for q in QUESTIONS}) == len(QUESTIONS)


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_answer_occurs_once_on_the_labelled_page(q):
    offsets = answer_offsets(q["file"], q["answer"])
    assert len(offsets) == 1, (q["answer"], len(offsets))
    assert answer_page(q["file"], offsets[0]) == q["page"]


@pytest.mark.parametrize(
    "q",
    [q for q in QUESTIONS if q["kind"] == "paraphrase"],
    ids=[q["id"] for q in QUESTIONS if q["kind"] == "paraphrase"],
)
def test_paraphrase_shares_no_content_word_with_the_passage(q):
    text = _extracted(q["file"]).text
    at = answer_offsets(q["file"], q["answer"])[0]
    passage = text[max(0, at - 400) : at + len(q["answer"]) + 400]
    shared = content_stems(q["query"]) & content_stems(passage) - content_stems(" ".join(q.get("names", [])))
    assert not shared, shared
