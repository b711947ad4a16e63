"""The keyword index merged into one segment after a large index run.

Real SQLite files, real FTS5 indexes built from the real corpus text
(the evaluation questions' files cut into windows), the real indexer; no mocks.
The merge (FTS5 ``optimize``) must not change any keyword ranking or score:
compared bit for bit over the 116 evaluation questions and the 27 queries of tests/data/search_queries.json,
all-terms and any-term passes alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config import Settings
from engine.values import Chunk, Document
from engine.store.sqlite.store import SqliteStore
from engine.store.sqlite.keyword import FTS_MAX_SEGMENTS, fts_segments
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.eval_text import CORPUS, corpus_windows, load_questions

QUERIES = [q["query"] for q in load_questions()] + [
    q["query"]
    for q in json.loads((Path(__file__).resolve().parents[1] / "data" / "search_queries.json").read_text("utf-8"))[
        "queries"
    ]
]


def _fragmented(path: str, files: int = 240, per_file: int = 8) -> SqliteStore:
    """A store whose files were written one commit each (every commit adds FTS5 segments)."""
    store = SqliteStore(path)
    windows = corpus_windows()
    made = 0
    for f in range(files):
        texts = [f"{windows[(made + k) % len(windows)]} u{made + k}" for k in range(per_file)]
        h = f"{f:064x}"
        chunks, pos = [], 0
        for k, t in enumerate(texts):
            chunks.append(Chunk(f"C{f % 3}", f"f{f:04d}.txt", k, f"id-{f}-{k}", h, pos, pos + len(t), t))
            pos += len(t)
        store.replace_document(
            Document(f"C{f % 3}", f"f{f:04d}.txt", h, "t", "txt", "indexed", chunk_count=per_file, text_length=pos),
            "".join(texts),
            chunks,
        )
        made += per_file
    return store


def _rankings(store: SqliteStore) -> list:
    out = []
    for q in QUERIES:
        out.append(store.search_keyword_refs(q, None, 20))
        out.append(store.search_keyword_refs(q, ["C0", "C2"], 20))
        out.append([(h.chunk.chunk_id, h.score) for h in store.search_keyword(q, None, 10)])
    return out


def _segments(store: SqliteStore) -> int:
    with store._read() as conn:
        return fts_segments(conn)


def test_merging_the_keyword_index_changes_no_ranking_or_score(tmp_path, monkeypatch):
    import engine.store.sqlite.keyword as sk

    # FTS5 answers every pass: the per-term lists (engine.store.sqlite.term_scores) would answer repeated any-term
    # passes from what they read before the merge (the index state does not change with it)
    monkeypatch.setattr(sk, "any_term_refs", lambda *a, **k: None)
    store = _fragmented(str(tmp_path / "i.db"))
    before_segments = _segments(store)
    assert before_segments > FTS_MAX_SEGMENTS, before_segments  # the test needs a fragmented index
    before = _rankings(store)
    assert sum(1 for r in before if r) > len(QUERIES)  # most questions find something
    total = 240 * 8
    assert store.tidy_keyword_index(total) is True
    assert _segments(store) == 1
    assert _rankings(store) == before  # same rowids, same order, same float scores
    assert store.tidy_keyword_index(total) is False  # one segment: nothing to do
    store.close()


def test_a_small_run_on_a_large_index_leaves_the_merge_to_fts5(tmp_path):
    store = _fragmented(str(tmp_path / "i.db"))
    segments = _segments(store)
    assert store.tidy_keyword_index(0) is False
    assert store.tidy_keyword_index(240 * 8 // 20) is False  # under 1/16 of the chunks
    assert _segments(store) == segments
    store.close()


@pytest.fixture()
def corpus_engine(tmp_path):
    engine = Engine(
        Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate()
    )
    engine.add_collection("Text", str(CORPUS / "text"))
    yield engine
    engine.close()


def test_an_index_run_that_wrote_chunks_merges_and_an_unchanged_run_does_not_try(corpus_engine):
    store = corpus_engine.store
    calls: list[int] = []
    real = store.tidy_keyword_index

    def spy(written: int) -> bool:  # the real method, counted
        calls.append(written)
        return real(written)

    store.tidy_keyword_index = spy
    first = corpus_engine.run_index()
    assert first["chunksWritten"] > 0 and calls == [first["chunksWritten"]]
    assert _segments(store) <= FTS_MAX_SEGMENTS
    again = corpus_engine.run_index()
    assert again["chunksWritten"] == 0 and calls == [first["chunksWritten"]]
