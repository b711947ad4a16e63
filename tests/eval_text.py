"""Helpers for the retrieval evaluation set (tests/data/eval_questions.json).

Owns: loading the set, the whitespace-folded view of a file's extracted text
that answer phrases are matched against, the page an answer lies on, and the
content-word check that tells a paraphrased question from a lexical one.
Shared by ``tests/test_eval_set.py``, ``tests/test_search_quality.py`` and
``bench/retrieval_quality.py``; imports the engine's extractor only.
"""

from __future__ import annotations

import json
import re
import sqlite3
from functools import lru_cache
from pathlib import Path

import numpy as np

from engine.extract import extract

__all__ = ["CORPUS", "EVAL_PATH", "load_questions", "fold", "folded_text", "answer_offsets",
           "answer_page", "content_stems", "hit_holds_answer", "STOPWORDS", "rank_of_answer", "metrics", "answer_span"]

CORPUS = Path(__file__).resolve().parent / "corpus"
EVAL_PATH = Path(__file__).resolve().parent / "data" / "eval_questions.json"

#: English function words (and question words) that do not count as content words.
STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from as into onto over under about above below
is are was were be been being am do does did done have has had having can could should would will
shall may might must this that these those it its they them their there here what which who whom
whose when where why how all any each both few more most other some such no nor not only own same so
than too very s t just don now one two than then also up down out off again further once i me my we
our you your he him his she her get got via per vs between among versus while during before after
""".split())


def load_questions(path: Path = EVAL_PATH) -> list[dict]:
    """The labelled questions: dicts with id, kind, query, file, page (1-based or None),
    answer (a phrase occurring once in the file's folded text), names (words a
    paraphrase may share with the passage)."""
    return json.loads(path.read_text("utf-8"))["questions"]


def fold(text: str) -> str:
    """Whitespace runs -> one space, stripped (answers match across line breaks)."""
    return " ".join(text.split())


@lru_cache(maxsize=None)
def _extracted(rel: str):
    return extract(CORPUS / rel)


def corpus_windows() -> list[str]:
    """Every 1000-character window (step 850) of the corpus files the evaluation set uses:
    the chunk texts the 100k benches and the keyword-merge test repeat to build large indexes."""
    out = []
    for rel in sorted({q["file"] for q in load_questions()}):
        text = _extracted(rel).text
        out.extend(text[i:i + 1000] for i in range(0, max(1, len(text)), 850) if text[i:i + 1000].strip())
    return out


@lru_cache(maxsize=None)
def folded_text(rel: str) -> tuple[str, tuple[int, ...]]:
    """(folded extracted text of a corpus file, raw offset of each folded character)."""
    raw = _extracted(rel).text
    out: list[str] = []
    where: list[int] = []
    for m in re.finditer(r"\S+", raw):
        if out:
            out.append(" ")
            where.append(m.start())
        out.append(m.group())
        where.extend(range(m.start(), m.end()))
    return "".join(out), tuple(where)


def answer_offsets(rel: str, answer: str) -> list[int]:
    """Raw character offsets of every occurrence of the folded ``answer`` in the file."""
    text, where = folded_text(rel)
    a = fold(answer)
    out, i = [], text.find(a)
    while i >= 0:
        out.append(where[i])
        i = text.find(a, i + 1)
    return out


def answer_page(rel: str, offset: int) -> int | None:
    """1-based page of the word at raw ``offset`` (None for files without pages)."""
    words = _extracted(rel).words
    if len(words) == 0 or not int(words.pages.max()):
        return None
    i = int(np.searchsorted(words.starts, offset, side="right")) - 1
    return int(words.pages[max(i, 0)]) or None


def content_stems(text: str) -> set[str]:
    """Porter stems (SQLite FTS5 ``porter`` tokenizer) of the non-stopword words of ``text``."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, row)")
        words = [w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS and not w.isdigit()]
        conn.execute("INSERT INTO t(x) VALUES (?)", (" ".join(words),))
        return {r[0] for r in conn.execute("SELECT term FROM v")}
    finally:
        conn.close()


def hit_holds_answer(hit_text: str, answer: str) -> bool:
    """True when a hit's text holds the whole answer phrase (whitespace folded)."""
    return fold(answer) in fold(hit_text)


def rank_of_answer(engine, q: dict, mode: str, depth: int = 10, collection: str = "Corpus",
                   extra: dict | None = None) -> int | None:
    """0-based rank of the first ``search_chunks`` hit that touches ``q``'s answer, or None.

    One registry call (``search_chunks``, ``limit=depth``, the mode, any
    ``extra`` arguments) over ``collection``; a hit counts when it comes from the
    question's file and its ``[start, end)`` overlaps the answer phrase's span
    (a window holding part of the answer passage counts; its neighbour in the
    overlap holds the rest).

    Raises:
        AssertionError: the search did not run (``searched`` false).
    """
    from engine.tools.registry import call_tool

    env = call_tool(engine, "search_chunks", {"query": q["query"], "scope": collection, "limit": depth,
                                              "mode": mode, **(extra or {})})
    assert env["searched"], env
    start, end = answer_span(q["file"], q["answer"])
    for h in env["hits"]:
        if h["filePath"] != q["file"]:
            continue
        chunk = engine.store.get_chunk(h["collectionPath"], h["filePath"], h["chunkIndex"])
        if chunk is not None and chunk.start < end and chunk.end > start:
            return h["rank"]
    return None


def answer_span(rel: str, answer: str) -> tuple[int, int]:
    """Raw ``(start, end)`` character offsets of the (first) answer occurrence, end exclusive.

    Raises:
        ValueError: the answer does not occur in the file.
    """
    text, where = folded_text(rel)
    i = text.find(fold(answer))
    if i < 0:
        raise ValueError(f"answer {answer!r} not in {rel}")
    return where[i], where[i + len(fold(answer)) - 1] + 1


def metrics(ranks: list[int | None]) -> dict[str, float]:
    """recall@5, recall@10 and MRR@10 of answer ranks (None = not in the top 10)."""
    n = max(1, len(ranks))
    return {"r5": sum(r is not None and r < 5 for r in ranks) / n,
            "r10": sum(r is not None and r < 10 for r in ranks) / n,
            "mrr10": sum(1.0 / (r + 1) for r in ranks if r is not None and r < 10) / n}
