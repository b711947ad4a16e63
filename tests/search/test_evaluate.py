"""``chunknav eval``: the questions format, the hit rule, the metrics, saved runs and their comparison.

Real parts: a real SQLite index of text files written in the test (keyword mode; no
provider, so vector and hybrid rows say why they did not run), the real CLI ``main``.
"""

import json
from pathlib import Path

import pytest

from engine.config import Settings
from engine.faces.cli import main
from engine.search.evaluate import (
    Question,
    answer_rank,
    append_question,
    compare_runs,
    load_questions,
    load_run,
    metrics,
    phrase_span,
)
from engine.service import Engine
from engine.values import Chunk, RankedChunk, Region, Bbox
from tests.conftest import ALLOWED_ROOTS

DOCS = {
    "boats.txt": "The ferry crossed the harbour at dawn. Gulls followed the wake of the old steamer.",
    "bread.txt": "Knead the dough for ten minutes, then let it rise in a warm place until doubled.",
    "stars.txt": "A pulsar is a rotating neutron star that emits beams of radiation like a lighthouse.",
}
LINES = [
    {"id": "b1", "question": "ferry harbour", "file": "boats.txt", "phrase": "crossed the  harbour", "kind": "lexical"},
    {"id": "d1", "question": "knead dough", "file": "bread.txt", "kind": "lexical"},
    {"id": "s1", "question": "spinning collapsed sun", "file": "stars.txt", "phrase": "neutron star", "kind": "para"},
]


def _chunk(file_path: str, start: int, end: int, page: int | None = None, pages: tuple[int, ...] = ()) -> Chunk:
    regions = tuple(Region(p, Bbox(0, 0, 1, 1)) for p in pages)
    return Chunk("C", file_path, 0, "id", "h", start, end, "x" * (end - start), page, regions=regions)


def _write(path: Path, lines: list) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", "utf-8")
    return path


def test_bad_lines_are_named_not_dropped_silently(tmp_path):
    qs, problems = load_questions(
        _write(
            tmp_path / "q.jsonl",
            [
                LINES[0],
                "# a comment",
                "{not json",
                {"question": "no file"},
                {"question": "q", "file": "f", "page": 0},
                {"question": "q", "file": "f", "colour": "red"},
                LINES[0],
                {"question": "unnamed", "file": "/f.txt"},
            ],
        )
    )
    assert [q.id for q in qs] == ["b1", "line-8"] and qs[1].file == "f.txt"
    assert [p.split(":")[0] for p in problems] == ["line 3", "line 4", "line 5", "line 6", "line 7"]
    assert "'file'" in problems[1] and "page" in problems[2] and "colour" in problems[3] and "repeats" in problems[4]


def test_append_question_gives_a_free_id_and_reads_back(tmp_path):
    path = _write(tmp_path / "q.jsonl", [LINES[0]])
    path.write_text(path.read_text().rstrip("\n"), "utf-8")  # no final newline: a line is still started
    a = append_question(path, Question("b1", "boat at dawn", "boats.txt", phrase="at dawn"))
    b = append_question(path, Question("b1", "old steamer", "boats.txt", page=2, scope=("C", "D")))
    assert (a.id, b.id) == ("b1-2", "b1-3")
    qs, problems = load_questions(path)
    assert not problems and [q.id for q in qs] == ["b1", "b1-2", "b1-3"]
    assert qs[2] == Question("b1-3", "old steamer", "boats.txt", page=2, scope=("C", "D"))
    assert append_question(tmp_path / "new" / "q.jsonl", Question("x", "y", "z")).id == "x"


def test_phrase_span_folds_whitespace_and_falls_back_to_case():
    text = "Alpha  beta\n gamma. Delta"
    assert phrase_span(text, "beta gamma") == (7, 18)
    assert phrase_span(text, "delta") == (20, 25)
    assert phrase_span(text, "epsilon") is None


def test_the_hit_rule_phrase_then_page_then_file():
    q_phrase = Question("p", "?", "a.txt", phrase="x")
    hits = [
        RankedChunk(_chunk("b.txt", 0, 100), 1.0),
        RankedChunk(_chunk("a.txt", 0, 50), 0.9),
        RankedChunk(_chunk("a.txt", 40, 120), 0.8),
    ]
    assert answer_rank(hits, q_phrase, (60, 70)) == 2  # only the chunk overlapping the span
    assert answer_rank(hits, q_phrase, (50, 60)) == 2  # end exclusive: [0, 50) does not overlap
    assert answer_rank(hits, q_phrase, None) is None  # phrase not in the file: never answered
    paged = [RankedChunk(_chunk("a.txt", 0, 9, page=1, pages=(1, 2)), 1.0)]
    assert answer_rank(paged, Question("g", "?", "a.txt", page=2), None) == 0
    assert answer_rank(paged, Question("g", "?", "a.txt", page=3), None) is None
    assert answer_rank(hits, Question("f", "?", "a.txt"), None) == 1


def test_metrics():
    m = metrics([0, 4, 9, None])
    assert m == {"n": 4, "recall1": 0.25, "recall5": 0.5, "recall10": 0.75, "mrr": (1 + 1 / 5 + 1 / 10) / 4}
    assert metrics([])["n"] == 0


@pytest.fixture
def keyword_index(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, "utf-8")
    db = tmp_path / "ix" / "index.db"
    engine = Engine(Settings(db=str(db), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate())
    engine.add_collection("C", str(root))
    engine.run_index()
    yield engine, _write(tmp_path / "q.jsonl", LINES)
    engine.close()


def test_a_run_scores_modes_saves_its_settings_and_says_what_did_not_run(keyword_index):
    engine, questions = keyword_index
    run = engine.evaluate(str(questions), models=["other-model"])
    kw = next(r for r in run["results"] if r["mode"] == "keyword")
    assert (kw["n"], kw["recall1"], kw["recall10"]) == (3, 2 / 3, 2 / 3)
    assert kw["byKind"]["lexical"]["recall1"] == 1.0 and kw["byKind"]["para"]["recall10"] == 0.0
    assert run["ranks"]["keyword"] == {"b1": 0, "d1": 0, "s1": None}
    failed = {(r["mode"], r["model"]): r["error"] for r in run["results"] if "error" in r}
    assert failed == {
        ("vector", None): "search-not-performed",
        ("hybrid", None): "search-not-performed",
        ("vector", "other-model"): "no-vectors",
        ("hybrid", "other-model"): "no-vectors",
    }
    saved = Path(run["savedTo"])
    assert saved.parent == Path(engine.settings.db).parent / "evals"
    again = load_run(saved)
    assert again["settings"]["provider"] == "none" and again["settings"]["rrfK"] == 60
    assert again["questions"]["count"] == 3 and again["ranks"] == run["ranks"]


def test_compare_names_the_questions_that_moved(keyword_index, tmp_path):
    engine, questions = keyword_index
    a = engine.evaluate(str(questions), modes=["keyword"], save=False)
    b = json.loads(json.dumps(a))
    b["ranks"]["keyword"].update(b1=3, s1=1)
    cmp = compare_runs(a, b)
    (row,) = cmp["rows"]
    assert (row["better"], row["worse"], row["unchanged"]) == (["s1"], ["b1"], 1)
    assert cmp["same"] and row["delta"]["recall1"] == 0.0


def test_cli_eval_and_compare(keyword_index, tmp_path, capsys, monkeypatch):
    engine, questions = keyword_index
    db = engine.settings.db
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["--db", db, "eval", str(questions), "--mode", "keyword", "--save", str(a)]) == 0
    out = capsys.readouterr().out
    assert "keyword" in out and "0.667" in out and f"saved to {a}" in out
    assert main(["--db", db, "eval", str(questions), "--mode", "keyword", "--save", str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ranks"]["keyword"]["b1"] == 0
    assert main(["eval", "--compare", str(a), str(b), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["unchanged"] == 3
    assert main(["eval", "--compare", str(a), str(questions)]) == 2  # not a saved run
    assert main(["--db", db, "eval", str(questions), "--no-save"]) == 1  # the local model has no vectors here
    assert "  vector l2_supercat_256: no-vectors" in capsys.readouterr().out
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    assert main(["--db", db, "eval", str(questions), "--no-save"]) == 1  # vector/hybrid could not run
    assert "search-not-performed" in capsys.readouterr().out
    assert main(["--db", db, "eval"]) == 2
    assert main(["--db", str(tmp_path / "none.db"), "eval", str(questions)]) == 2
    assert not (tmp_path / "none.db").exists()
