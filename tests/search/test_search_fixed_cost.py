"""The fixed cost around a vector search's scan: each shorter path gives exactly what the
plain computation gives.

* ``engine.store.sqlite.top_k.top_candidates``: every score within a margin of the k-th
  best, through a lower bound from block maxima, against a full sort (written out here as
  ``_reference_candidates``): the same indices, ties and NaN included.
* ``LocalEmbedder.embed_query``: one query's vector, bit for bit ``embed([text])[0]``, and
  every failure of ``embed`` unchanged.
* On a real SQLite file large enough for those paths (>= ``TOP_K_MIN_ROWS`` vectors): the
  hits of ``search_vectors`` (ids, order, scores bit for bit) against the reference top-k:
  every occurrence scored row by row in float64, rounded to float32, equal scores by
  (collection path, file path, chunk index).
"""

from __future__ import annotations

import json
import random
import sqlite3

import numpy as np
import pytest

from engine import embed as E
from engine.chunk import chunk_id
from engine.embed.base import BaseEmbedder
from engine.errors import EmbedError
from engine.values import Chunk, Document
from engine.store.sqlite import vectors as SV
from engine.store.sqlite import top_k as VT
from engine.store.sqlite.store import SqliteStore
from engine.store.sqlite.rows import CHUNK_COLUMNS

MODEL = "m"
DIM = 16


def _reference_candidates(scores: np.ndarray, limit: int, margin: float) -> np.ndarray:
    """Every index scoring at least the k-th best number minus ``margin`` (all when fewer
    than k scores are numbers), from a full sort."""
    k = min(limit, len(scores))
    numbers = np.sort(scores[~np.isnan(scores)])[::-1]
    if len(numbers) < k:
        return np.arange(len(scores))
    return np.flatnonzero(scores >= numbers[k - 1] - np.float32(margin))


def _exact(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's dot product with ``q``: float64 products summed along the row, then float32."""
    return (matrix[rows].astype(np.float64) * q.astype(np.float64)).sum(axis=1).astype(np.float32)


def _cases(rng: np.random.Generator):
    """(name, float32 scores): random, clustered, sorted (the bound at its loosest), ties at and
    inside the top, NaN, signed zeros, all equal, lengths not a multiple of the block count."""
    for n in (VT.TOP_K_MIN_ROWS - 1, VT.TOP_K_MIN_ROWS, VT.TOP_K_MIN_ROWS + 37, 100_003):
        yield f"random{n}", rng.standard_normal(n).astype(np.float32)
    s = rng.standard_normal(50_000).astype(np.float32)
    yield "ascending", np.sort(s)
    yield "descending", np.sort(s)[::-1].copy()
    yield "coarse", (rng.integers(0, 2000, 40_000) / 1000).astype(np.float32)  # many equal scores
    for where in (0, 4, 9, 10, 11, 31, 32):  # an equal pair straddling or inside the best k
        t = rng.standard_normal(30_000).astype(np.float32)
        order = np.argsort(-t)
        t[order[where + 1]] = t[order[where]]
        yield f"tie{where}", t
    t = rng.standard_normal(30_000).astype(np.float32)
    t[rng.integers(0, len(t), 5)] = np.nan
    yield "nan5", t
    t = rng.standard_normal(30_000).astype(np.float32)
    t[::100] = np.nan
    yield "nan-many", t
    t = np.full(30_000, np.nan, np.float32)
    t[:3] = 1.0
    yield "nan-mostly", t
    t = -np.abs(rng.standard_normal(30_000).astype(np.float32))
    t[5], t[700] = 0.0, -0.0
    yield "signed-zeros", t
    yield "equal", np.full(20_000, 0.5, np.float32)


def test_top_candidates_equal_the_reference():
    rng = np.random.default_rng(15)
    compared = 0
    for name, scores in _cases(rng):
        for limit in (1, 2, 3, 10, 20, 31, 32, 33, 100, 10**6):
            for margin in (0.0, 1e-3):
                got, want = VT.top_candidates(scores, limit, margin), _reference_candidates(scores, limit, margin)
                assert got.tolist() == want.tolist(), (name, limit, margin)
                assert got.dtype == np.int64 or got.dtype == np.intp
                compared += 1
    assert compared == 380


def test_top_candidates_take_the_bound_for_distinct_and_equal_scores(monkeypatch):
    """The shorter path really runs (no partition of the whole array), with a tie at the cut
    too (every tied score is a candidate), and the partition runs when NaN hides the bound."""
    calls = []
    real = VT._candidates_partition
    monkeypatch.setattr(VT, "_candidates_partition", lambda s, k, m: calls.append(len(s)) or real(s, k, m))
    rng = np.random.default_rng(3)
    s = rng.standard_normal(100_000).astype(np.float32)
    assert VT.top_candidates(s, 10).tolist() == _reference_candidates(s, 10, 0.0).tolist() and calls == []
    order = np.argsort(-s)
    s[order[10]] = s[order[9]]
    got = VT.top_candidates(s, 10)
    assert got.tolist() == _reference_candidates(s, 10, 0.0).tolist() and len(got) == 11 and calls == []
    s[:: len(s) // 64] = np.nan  # every block's maximum is NaN
    assert VT.top_candidates(s, 10).tolist() == _reference_candidates(s, 10, 0.0).tolist() and calls == [100_000]


def test_exact_scores_do_not_depend_on_where_a_row_sits():
    """Equal rows score the same (bit for bit) at any place of the matrix and in any batch,
    which a float32 matrix-vector product does not promise."""
    rng = np.random.default_rng(4)
    for dim in (16, 64, 256, 384):
        m = rng.standard_normal((301, dim)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        twins = rng.choice(len(m), 40, replace=False)
        m[twins] = m[twins[0]]
        q = rng.standard_normal(dim).astype(np.float32)
        got = {
            *VT.exact_scores(m, twins, q).tolist(),
            *VT.exact_scores(m, twins[:1], q).tolist(),
            *VT.exact_scores(m, np.arange(len(m)), q)[twins].tolist(),
        }
        assert len(got) == 1, (dim, got)
        assert abs(got.pop() - float(m[twins[0]].astype(np.float64) @ q)) < 1e-6


def test_the_margin_covers_the_scans_rounding():
    """A float32 scan's scores stay within half the margin of the exact scores."""
    rng = np.random.default_rng(5)
    for dim in (16, 256, 1024):
        m = rng.standard_normal((5000, dim)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        q = m[7] + 0.01 * rng.standard_normal(dim).astype(np.float32)
        exact = m.astype(np.float64) @ q.astype(np.float64)
        assert np.abs((m @ q) - exact).max() < VT.scan_margin(dim, q) / 2


# --------------------------------------------------------------------------- one query's embedding


@pytest.fixture(scope="module")
def local():
    e = E.LocalEmbedder()
    e.embed(["warm up: load and probe"])
    return e


def _texts() -> list[str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "corpus" / "text" / "tinyshakespeare-input.txt").read_text("utf-8")
    rng = random.Random(15)
    out = [
        "what does the contract say about termination",
        "東北電気 血小板",
        "ñandú über straße",
        "🙂 emoji",
        "   spaces   x  ",
        "\u00a0x",
        " ",
        " \t ",
        "\n",
        "\u200b",
        "a" * 31_999,
        "x",
        "42",
        "?",
    ]
    for _ in range(400):
        a = rng.randrange(len(text))
        out.append(text[a : a + rng.choice([1, 3, 12, 60, 300, 1000, 6000])])
    return [t for t in out if t]


def test_embed_query_is_embed_of_one_text(local):
    for t in _texts():
        got, want = local.embed_query(t), BaseEmbedder.embed_query(local, t)
        assert got.dtype == np.float32 and got.shape == (256,) == want.shape
        assert got.tobytes() == want.tobytes(), t[:40]


def test_embed_query_fails_as_embed(local):
    with pytest.raises(ValueError):
        local.embed_query("")
    with pytest.raises(TypeError):
        local.embed_query(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(EmbedError) as long:
        local.embed_query("a" * 32_001)
    with pytest.raises(EmbedError) as batch:
        local.embed(["a" * 32_001])
    assert long.value.failure == batch.value.failure and long.value.failure.code == "embedding-request-rejected"


def test_embed_query_probes_first():
    e = E.LocalEmbedder()
    assert not e._probed
    v = e.embed_query("the first call probes")
    assert e._probed and e.probe_seconds is not None
    assert v.tobytes() == BaseEmbedder.embed_query(e, "the first call probes").tobytes()


def test_a_question_asked_again_gets_the_same_vector_as_its_own_array(local):
    texts = _texts()[:60]
    first = [local.embed_query(t) for t in texts]
    for t, v in zip(texts, first):
        again = local.embed_query(t)
        assert again.tobytes() == v.tobytes() == BaseEmbedder.embed_query(local, t).tobytes(), t[:40]
        assert again is not v and not np.shares_memory(again, v)
    v = local.embed_query("termination of the contract")
    v[:] = 0.0  # a caller writing into its answer changes no later answer
    assert (
        local.embed_query("termination of the contract").tobytes()
        == BaseEmbedder.embed_query(local, "termination of the contract").tobytes()
    )


def test_the_query_memo_is_bounded_least_recently_asked_first():
    e = E.LocalEmbedder(query_memo=3)
    e.embed_query("warm up")
    for t in ("a river", "a mountain", "a forest"):
        e.embed_query(t)
    assert list(e._queries) == ["a river", "a mountain", "a forest"]  # "warm up" dropped first
    e.embed_query("a river")  # asked again: now the most recent
    e.embed_query("a desert")
    assert list(e._queries) == ["a forest", "a river", "a desert"]
    assert all(
        e.embed_query(t).tobytes() == BaseEmbedder.embed_query(e, t).tobytes() for t in ("a mountain", "a desert")
    )
    none = E.LocalEmbedder(query_memo=0)
    none.embed_query("nothing kept")
    assert none.embed_query("nothing kept").shape == (256,) and none._queries == {}


def test_a_refused_question_is_not_kept(local):
    for bad in ("", "a" * 32_001):
        with pytest.raises((ValueError, EmbedError)):
            local.embed_query(bad)
        assert bad not in local._queries


# --------------------------------------------------------------------------- on a real SQLite file


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def big_index(tmp_path_factory):
    """Two collections, 20,480 chunks with vectors (a full scan takes ``top_candidates``' bound);
    one text stored at two paths (equal scores: the key decides their order), and one vector
    stored twice under two chunk ids (rows far apart in the matrix: equal scores too)."""
    path = str(tmp_path_factory.mktemp("fixed") / "index.db")
    rng = np.random.default_rng(15)
    s = SqliteStore(path)
    ids: list[str] = []
    for c in range(2):
        for f in range(8):
            texts = [f"collection {c} file {f} chunk {i} " + "word " * (i % 7) for i in range(1280)]
            h = f"h{c}-{f}"
            pos, chunks = 0, []
            for i, t in enumerate(texts):
                chunks.append(Chunk(f"Org/C{c}", f"f{f}.txt", i, chunk_id(h, t), h, pos, pos + len(t), t))
                pos += len(t)
            s.replace_document(
                Document(f"Org/C{c}", f"f{f}.txt", h, "s", "txt", "indexed", chunk_count=len(chunks)),
                "".join(texts),
                chunks,
            )
            ids += [x.chunk_id for x in chunks]
    s.add_vectors(MODEL, ids, _unit(rng, len(ids)))
    twin = ["the same text stored twice "]
    for cp, fp in (("Org/C0", "copy-a.txt"), ("Org/C1", "copy-b.txt")):
        c = Chunk(cp, fp, 0, chunk_id("hsame", twin[0]), "hsame", 0, len(twin[0]), twin[0])
        s.replace_document(Document(cp, fp, "hsame", "s", "txt", "indexed", chunk_count=1), twin[0], [c])
    s.add_vectors(MODEL, [chunk_id("hsame", twin[0])], _unit(rng, 1))
    # the first chunk's vector again, under a chunk id of its own (another file, the same text)
    c = Chunk("Org/C0", "again.txt", 0, chunk_id("hagain", "again"), "hagain", 0, 5, "again")
    s.replace_document(Document("Org/C0", "again.txt", "hagain", "s", "txt", "indexed", chunk_count=1), "again", [c])
    first = s._prepare(MODEL)[0].matrix[0].copy()
    s.add_vectors(MODEL, [c.chunk_id], first[None, :])
    s.close()
    return path


def _reference_hits(store: SqliteStore, q: np.ndarray, scope, limit: int) -> list[tuple]:
    """(rowid, chunk row, score) of the plain scan: every occurrence scored exactly, sorted by
    score, then (collection path, file path, chunk index), its top-k."""
    m, occ = store._prepare(MODEL)
    rows = SV.scope_rows(occ, scope)
    cand = np.arange(len(occ.chunk_rowid)) if rows is None else rows
    scores = _exact(m.matrix, occ.matrix_row[cand], q)
    rowids = occ.chunk_rowid[cand].tolist()
    with sqlite3.connect(store.path) as conn:
        got = {r[0]: r[1:] for r in conn.execute(f"SELECT rowid, {CHUNK_COLUMNS} FROM chunks")}
    conn.close()
    ranked = sorted(zip(rowids, scores.tolist()), key=lambda x: (-x[1], *got[x[0]][:3]))[:limit]
    return [(rid, got[rid], s) for rid, s in ranked]


def test_big_scan_hits_equal_the_reference_top_k(big_index):
    store = SqliteStore(big_index)
    rng = np.random.default_rng(7)
    m, occ = store._prepare(MODEL)
    assert len(occ.chunk_rowid) >= VT.TOP_K_MIN_ROWS
    digests = [m.digest(i) for i in range(len(m.matrix))]
    twin = m.matrix[digests.index(SV.id_bytes(chunk_id("hsame", "the same text stored twice ")))]
    for q in [*_unit(rng, 12), twin]:
        for scope in (None, ["Org/C0"], ["Org/C1"], ["Org/C0", "Org/C1"]):
            for limit in (1, 10, 20, 40):
                want = _reference_hits(store, q, scope, limit)
                got = store.search_vectors(MODEL, q, scope, limit)
                assert [
                    (h.chunk.chunk_id, h.chunk.collection_path, h.chunk.file_path, h.chunk.chunk_index) for h in got
                ] == [(w[1][3], w[1][0], w[1][1], w[1][2]) for w in want]
                assert [h.score for h in got] == [w[2] for w in want]
                assert [type(h.score) for h in got] == [float] * len(want)
                refs = store.search_vector_refs(MODEL, q, scope, limit)
                assert refs == [(w[0], w[1][3], w[2]) for w in want]
    both = store.search_vectors(MODEL, twin, None, 2)
    assert [h.chunk.file_path for h in both] == ["copy-a.txt", "copy-b.txt"] and both[0].score == both[1].score
    again = store.search_vectors(MODEL, m.matrix[0], None, 2)  # two rows, one vector: the key decides
    assert [h.chunk.file_path for h in again] == ["again.txt", "f0.txt"] and again[0].score == again[1].score
    store.close()


# --------------------------------------------------------------------------- call_tool's envelope


def _round_trip(engine, name: str, arguments: dict) -> dict:
    """A tool's envelope through ``to_json`` and ``json.loads``, every string redacted."""
    from engine.secrets import redact_obj
    from engine.tools.registry import REGISTRY, _integers, _validate, to_json

    tool = REGISTRY[name]
    arguments = dict(arguments)
    _validate(tool, arguments)
    return redact_obj(json.loads(to_json(tool.fn(engine, **_integers(tool, arguments)))))


_CALLS = [
    ("search_chunks", {"query": "namespace:Samples scope:subtree background checks", "limit": 10, "mode": "vector"}),
    ("search_chunks", {"query": "table of firearms", "scope": "Samples", "mode": "hybrid", "limit": 7}),
    ("search_chunks", {"query": "pdfplumber extracts tables", "scope": "*", "mode": "keyword"}),
    ("search_chunks", {"query": "résumé français author:x", "scope": ["Samples"], "minScore": 0.1, "mode": "vector"}),
    ("search_chunks", {"query": "multi column layout", "scope": "Samples", "vectorWeight": 0.3}),
    ("search_chunks", {"query": "no scope given"}),
    ("search_chunks", {"query": "namespace:Nowhere pages", "mode": "vector"}),
    ("search", {"query": "namespace:Samples document with four pages", "limit": 3}),
    ("search", {"query": "tables", "scope": "Samples", "mode": "keyword", "limit": 20}),
]


def _check_calls(engine) -> int:
    from engine.tools.registry import call_tool, to_json

    hits = 0
    for name, args in _CALLS:
        got, want = call_tool(engine, name, args), _round_trip(engine, name, args)
        assert got == want, (name, args)
        assert to_json(got) == to_json(want)  # same keys in the same order, same JSON types
        hits += len(got.get("hits", []))
    return hits


def test_call_tool_search_envelopes_equal_the_json_round_trip(sample_engine):
    """The search tools' envelopes equal, key order and JSON types included, their JSON round
    trip with every string redacted; with a secret registered too. Each call hands out a
    new envelope (the caller's own copy)."""
    from engine import secrets as S
    from engine.tools.registry import call_tool

    assert _check_calls(sample_engine) > 40
    S.register("sk-live-Q7f9ZkLmN2pR8sT4")  # tests/project/test_secrets.py's KEY: found in no sample
    assert _check_calls(sample_engine) > 40
    got = call_tool(sample_engine, "search_chunks", {"query": "tables", "scope": "Samples", "mode": "keyword"})
    got["hits"][0]["snippet"] = "changed by the caller"  # the caller's own copy
    again = call_tool(sample_engine, "search_chunks", {"query": "tables", "scope": "Samples", "mode": "keyword"})
    assert again["hits"][0]["snippet"] != "changed by the caller"


# --------------------------------------------------------------------------- scope answers


def test_scope_answers_follow_the_known_collections(tmp_path):
    """``_resolve`` matches against the collections stored now: the caller gets its own list,
    and a collection added (a real SQLite write) changes the answers that name it."""
    from engine.values import Collection
    from engine.search.searcher import ContentChunkSearch, parse_query

    store = SqliteStore(str(tmp_path / "i.db"))
    for cp in ("Org", "Org/A", "Org/A/B", "Org/C", "Other"):
        store.add_collection(Collection(cp, str(tmp_path)))
    search = ContentChunkSearch(store, lambda: None)
    parsed = parse_query("namespace:Org scope:subtree w")
    before = search._resolve(parsed, None)
    assert type(before[0]) is list and before[0] == ["Org", "Org/A", "Org/A/B", "Org/C"]
    before[0].append("changed by the caller")
    assert search._resolve(parsed, None)[0] == ["Org", "Org/A", "Org/A/B", "Org/C"]
    store.add_collection(Collection("Org/D", str(tmp_path)))
    after = search._resolve(parsed, None)
    assert "Org/D" not in before[0] and "Org/D" in after[0]
    store.close()
