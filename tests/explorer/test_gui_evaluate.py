"""The Evaluate page under ``streamlit.testing.v1.AppTest``, on a real index.

A real SQLite index of text files written in the test (the local model), a questions
file beside it: the page runs ``Engine.evaluate`` and shows the table and the bars, a
second run makes the comparison appear, and marking a hit as right appends the question
to the file named on the page. The Explore page says "no confident match" above hits
that match nothing.
"""

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.config import Settings
from engine.search.evaluate import load_questions
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "explorer" / "app.py")
DOCS = {
    "boats.txt": "The ferry crossed the harbour at dawn. Gulls followed the wake of the old steamer.",
    "bread.txt": "Knead the dough for ten minutes, then let it rise in a warm place until doubled.",
}


@pytest.fixture
def index(tmp_path, monkeypatch):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, "utf-8")
    db = tmp_path / "ix" / "index.db"
    engine = Engine(
        Settings(
            db=str(db), embed_provider="local", embed_model="l2_supercat_256", allowed_roots=ALLOWED_ROOTS
        ).validate()
    )
    engine.add_collection("C", str(root))
    assert engine.run_index()["embedded"] == 2
    engine.close()
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "b1", "question": "ferry harbour", "file": "boats.txt", "phrase": "the harbour"}) + "\n",
        "utf-8",
    )
    monkeypatch.setenv("CHUNKNAV_DB", str(db))
    monkeypatch.setenv("EMBED_PROVIDER", "local")
    st.cache_resource.clear()
    yield db, questions
    st.cache_resource.clear()


def _evaluate_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("../pages/evaluate.py").run()
    assert not at.exception, at.exception
    return at


def test_run_shows_table_and_bars_and_a_second_run_compares(index):
    db, questions = index
    at = _evaluate_page()
    assert at.title[0].value == "Evaluate"
    at.text_input(key="eval_file").input(str(questions))
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception, at.exception
    text = "\n".join(m.value for m in at.markdown)
    assert "| keyword |" in text and "| hybrid |" in text and "R@5" in text
    bars = [p.proto.text for p in at.get("progress")]
    assert any(b.startswith("keyword · - · all: 1.000") for b in bars), bars
    assert len(list((db.parent / "evals").glob("eval-*.json"))) == 1
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception, at.exception
    assert any(s.value == "Compare two saved runs" for s in at.subheader)
    assert any("better in B: -" in c.value for c in at.caption)


def test_marking_a_hit_right_appends_the_question(index, tmp_path):
    _db, _questions = index
    target = tmp_path / "grown.jsonl"
    at = _evaluate_page()
    at.text_input(key="eval_target").input(str(target))
    at.text_input(key="eval_q").input("dough rising").run()
    assert not at.exception, at.exception
    (hit0,) = [b for b in at.button if b.key == "eval-right0"]
    hit0.click().run()
    assert not at.exception, at.exception
    (q,), problems = load_questions(target)
    assert not problems and (q.question, q.file, q.scope) == ("dough rising", "bread.txt", "C")
    assert q.phrase and q.phrase in DOCS["bread.txt"]
    assert any("Added" in s.value for s in at.success)


def test_explore_says_no_confident_match_above_unrelated_hits(index):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.query_params["q"] = "quantum chromodynamics lattice"
    at.query_params["scope"] = "C"
    at.switch_page("../pages/explore.py").run()
    assert not at.exception, at.exception
    assert any("No confident match" in w.value for w in at.warning), [w.value for w in at.warning]
