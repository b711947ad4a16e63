"""The vector search's hit fetch (engine/store/sqlite/search.py) on a real SQLite file.

The hits of ``search_vectors`` / ``search_vector_refs`` must be exactly what a plain fetch
gives: the scan's picks, their rows read by ``rowid IN (...)`` and put back
in the picks' order in Python, ``Chunk`` / ``VectorHit`` built by their dataclass
``__init__`` (``_reference``, written out here independently of the store's code). Same
ids, order, scores (bit for bit), every ``Chunk`` field and the ``search_chunks``
envelope; also after writes by another connection (the cache's counters move) and
after a write that changed a row without moving them (the chunk id check refuses it).
The scan itself is checked against numpy in float64.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from engine.tools.answers import _search_envelope
from engine.chunk import chunk_id
from engine.values import Bbox, Chunk, Document, Region, VectorHit
from engine.search.searcher import RankedChunk, SearchOutcome
from engine.store.sqlite.store import SqliteStore
from engine.store.sqlite.rows import CHUNK_COLUMNS
from engine.store.sqlite.vectors import scope_rows, top_occurrences

DIM = 16
MODEL = "m"


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _file(store: SqliteStore, cp: str, fp: str, content_hash: str, texts: list[str], rich: bool) -> list[Chunk]:
    """One document of ``texts``; ``rich``: pages, labels, boxes, regions (with line rectangles)
    and metadata on its chunks, else the bare columns (NULLs in the row)."""
    chunks, pos = [], 0
    for i, t in enumerate(texts):
        extra = {}
        if rich:
            box = Bbox(0.125, 0.25 + i * 0.0625, 0.5, 0.0625)
            extra = dict(
                page=1 + i % 3,
                page_label=["i", "ii", None][i % 3],
                bbox=box,
                regions=(
                    Region(1 + i % 3, box, rects=(Bbox(0.125, 0.25, 0.375, 0.03125),)),
                    Region(2 + i % 3, Bbox(0, 0, 1, 0.1)),
                ),
                metadata={"k": i, "ocr": i % 2 == 0},
            )
        chunks.append(
            Chunk(
                cp,
                fp,
                i,
                chunk_id(content_hash, t),
                content_hash,
                pos,
                pos + len(t),
                t,
                last_modified=1700000000.25 + i,
                **extra,
            )
        )
        pos += len(t)
    doc = Document(cp, fp, content_hash, "s", "pdf" if rich else "txt", "indexed", chunk_count=len(chunks))
    store.replace_document(doc, "".join(texts), chunks)
    return chunks


def _index(path: str, rng: np.random.Generator) -> None:
    """Four collections of rich and bare files; one file's text stored twice (the same chunk
    ids at two paths: one hit per path, equal scores); vectors for all but a few chunks, added
    in chunk order (Org/C0, Org/C3: runs of consecutive matrix rows, scanned on views) or in
    id order (Org/C1, Org/C2: scattered rows, gathered)."""
    s = SqliteStore(path)
    mixed: list[str] = []
    for c in range(4):
        ids: list[str] = []
        for f in range(3):
            n = 20 + 5 * f
            texts = [f"collection {c} file {f} chunk {i} " + "word " * (i % 5) for i in range(n)]
            ids += [x.chunk_id for x in _file(s, f"Org/C{c}", f"f{f}.txt", f"h{c}{f}", texts, rich=f != 1)]
        if c in (0, 3):
            s.add_vectors(MODEL, ids[:-1], _unit(rng, len(ids) - 1))  # the last chunk without a vector
        else:
            mixed += ids[1:]
    mixed.sort()  # Org/C1 and Org/C2 interleaved in the matrix
    s.add_vectors(MODEL, mixed, _unit(rng, len(mixed)))
    twin = ["the same text, chunk 0 ", "the same text, chunk 1 "]
    ids = [x.chunk_id for x in _file(s, "Org/C0", "copy-a.pdf", "hsame", twin, rich=True)]
    _file(s, "Org/C2", "copy-b.pdf", "hsame", twin, rich=True)  # same ids: their vectors are shared
    s.add_vectors(MODEL, ids, _unit(rng, len(ids)))
    s.close()


def _reference(store: SqliteStore, q: np.ndarray, scope, limit: int) -> list[VectorHit]:
    """The hits as the plain fetch builds them (see the module docstring)."""
    m, occ = store._prepare(MODEL)
    picked, scores = top_occurrences(m, occ, q, scope, limit, store._int8_min_rows)
    rowids = occ.chunk_rowid[picked].tolist()
    with sqlite3.connect(store.path) as conn:
        rows = {
            r[0]: r[1:]
            for r in conn.execute(
                f"SELECT rowid, {CHUNK_COLUMNS} FROM chunks WHERE rowid IN ({','.join('?' * len(rowids))})", rowids
            )
        }
    conn.close()
    hits = []
    for rid, score in zip(rowids, scores.tolist()):
        (cp, fp, idx, cid, ch, start, end, text, page, label, bbox, regions, meta, mtime) = rows[rid]
        box = Bbox.from_dict(json.loads(bbox)) if bbox else None
        parts = tuple(Region.from_dict(r) for r in json.loads(regions)) if regions else ()
        hits.append(
            VectorHit(
                Chunk(
                    cp,
                    fp,
                    idx,
                    cid,
                    ch,
                    start,
                    end,
                    text,
                    page,
                    label,
                    box,
                    parts,
                    json.loads(meta) if meta else {},
                    mtime or 0.0,
                ),
                score,
            )
        )
    return hits


def _envelope(hits: list[VectorHit]) -> str:
    outcome = SearchOutcome(
        True, "q", "vector", ("Org/C0",), tuple(RankedChunk(h.chunk, h.score) for h in hits), "cosine", MODEL
    )
    return json.dumps(_search_envelope(outcome, per_file=False), sort_keys=True)


def _same(got: list[VectorHit], want: list[VectorHit]) -> None:
    assert got == want
    assert [type(h) for h in got] == [VectorHit] * len(want) and all(type(h.chunk) is Chunk for h in got)
    assert [repr(h) for h in got] == [repr(h) for h in want]
    assert [type(h.score) for h in got] == [float] * len(want)
    assert _envelope(got) == _envelope(want)
    for h in got:
        with pytest.raises(AttributeError):
            h.chunk.chunk_text = "x"  # still frozen
        with pytest.raises(AttributeError):
            h.score = 0.0


_SCOPES = [None, ["Org/C0"], ["Org/C3"], ["Org/C1", "Org/C3"], ["Org/C2", "Org/C0", "Org/C1"], ["Org/none"], []]


def _check_all(store: SqliteStore, qs: np.ndarray) -> int:
    """Every query x scope x limit: ``search_vectors`` and ``search_vector_refs`` equal the
    reference; the scan's ranking equals numpy's float64 one. Returns the hits compared."""
    compared = 0
    for q in qs:
        for scope in _SCOPES:
            for limit in (1, 3, 10, 500):
                want = _reference(store, q, scope, limit)
                got = store.search_vectors(MODEL, q, scope, limit)
                _same(got, want)
                refs = store.search_vector_refs(MODEL, q, scope, limit)
                m, occ = store._prepare(MODEL)
                digests = [bytes(d) for d in m.digests]
                assert refs == [
                    (int(occ.chunk_rowid[i]), h.chunk.chunk_id, h.score)
                    for i, h in zip(top_occurrences(m, occ, q, scope, limit)[0], want)
                ]
                compared += len(got)
                # the scan against float64 numpy: same chunks, scores within float32 rounding, best first
                rows = scope_rows(occ, scope)
                cand = np.arange(len(occ.chunk_rowid)) if rows is None else rows
                exact = m.matrix[occ.matrix_row[cand]].astype(np.float64) @ q.astype(np.float64)
                assert len(got) == min(limit, len(cand))
                assert np.allclose([h.score for h in got], np.sort(exact)[::-1][: len(got)], atol=1e-6)
                own = [m.matrix[digests.index(bytes.fromhex(h.chunk.chunk_id))].astype(np.float64) @ q for h in got]
                assert np.allclose([h.score for h in got], own, atol=1e-6)  # each hit scored by its own vector
    return compared


@pytest.fixture()
def index(tmp_path):
    path = str(tmp_path / "index.db")
    rng = np.random.default_rng(15)
    _index(path, rng)
    return path, rng


def test_hits_equal_the_reference_fetch_on_every_scope_and_limit(index):
    path, rng = index
    store = SqliteStore(path)
    qs = _unit(rng, 6)
    store.search_vectors(MODEL, qs[0], None, 1)  # the cache built: later searches take the trusted path
    m, occ = store._prepare(MODEL)
    from engine.store.sqlite.vectors import _scope_runs

    spans = {c: _scope_runs(occ, scope_rows(occ, [c])) for c in ("Org/C1", "Org/C3")}
    assert (
        [r for _, _, r in spans["Org/C1"]] == [None] and len(spans["Org/C3"]) == 1 and spans["Org/C3"][0][2] is not None
    )
    mixed = _scope_runs(occ, scope_rows(occ, ["Org/C1", "Org/C3"]))
    assert {r is None for _, _, r in mixed} == {True, False}
    assert len(scope_rows(occ, ["Org/C1", "Org/C3"])) < 0.5 * len(occ.chunk_rowid)  # scored as a subset
    assert _check_all(store, qs) > 500
    # the two stored copies tie (same vector): both paths come back, in occurrence order
    m, occ = store._prepare(MODEL)
    both = store.search_vectors(
        MODEL, m.matrix[m.digests.tobytes().hex().index(chunk_id("hsame", "the same text, chunk 0 ")) // 64], None, 2
    )
    assert {h.chunk.file_path for h in both} == {"copy-a.pdf", "copy-b.pdf"} and both[0].score == both[1].score
    store.close()


@pytest.mark.slow
def test_hits_follow_writes_by_another_connection(index):
    """A second store object (its own connection) writes; the first one's next searches
    see each write (the counters in the fetch move), equal to the reference."""
    path, rng = index
    store, writer = SqliteStore(path), SqliteStore(path)
    qs = _unit(rng, 3)
    _check_all(store, qs)
    # a new best hit for qs[0] in Org/C1
    new = _file(writer, "Org/C1", "new.pdf", "hnew", ["a brand new chunk "], rich=True)
    writer.add_vectors(MODEL, [new[0].chunk_id], qs[:1])
    hits = store.search_vectors(MODEL, qs[0], ["Org/C1"], 3)
    assert hits[0].chunk == writer.get_chunk("Org/C1", "new.pdf", 0) and hits[0].chunk.chunk_id == new[0].chunk_id
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)
    _same(hits, _reference(store, qs[0], ["Org/C1"], 3))
    # a file removed: its chunks are gone from every answer
    gone = store.search_vectors(MODEL, qs[1], ["Org/C2"], 1)[0].chunk
    writer.remove_document(gone.collection_path, gone.file_path)
    hits = store.search_vectors(MODEL, qs[1], ["Org/C2"], 500)
    assert all(h.chunk.file_path != gone.file_path for h in hits)
    _same(hits, _reference(store, qs[1], ["Org/C2"], 500))
    # a file replaced by new text (new chunk ids, vectors for some): the old rows do not come back
    old = store.search_vectors(MODEL, qs[2], None, 1)[0].chunk
    fresh = _file(
        writer, old.collection_path, old.file_path, "hfresh", ["fresh text one ", "fresh text two "], rich=False
    )
    writer.add_vectors(MODEL, [fresh[1].chunk_id], qs[2:3])
    hits = store.search_vectors(MODEL, qs[2], None, 10)
    assert hits[0].chunk == fresh[1] and all(
        h.chunk.content_hash != old.content_hash or h.chunk.file_path != old.file_path for h in hits
    )
    _same(hits, _reference(store, qs[2], None, 10))
    _check_all(store, qs)
    writer.close()
    store.close()


def test_a_row_changed_without_moving_the_counters_is_refused(index):
    """A chunk row rewritten behind the store's back (its counters not bumped, as no chunknav
    writer does): the fetch's chunk id check refuses the cached table, which is rebuilt from SQL,
    so the rewritten row never comes back under its old vector."""
    path, rng = index
    store = SqliteStore(path)
    q = _unit(rng, 1)[0]
    best = store.search_vectors(MODEL, q, ["Org/C3"], 1)[0].chunk
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE chunks SET chunk_id = ?, chunk_text = 'rewritten' WHERE collection_path = ? AND "
            "file_path = ? AND chunk_index = ?",
            ("f" * 64, best.collection_path, best.file_path, best.chunk_index),
        )
    conn.close()
    hits = store.search_vectors(MODEL, q, ["Org/C3"], 500)
    assert all(h.chunk.chunk_text != "rewritten" for h in hits) and hits[0].chunk.chunk_id != best.chunk_id
    _same(hits, _reference(store, q, ["Org/C3"], 500))
    store.close()


def test_a_search_inside_a_transaction_sees_its_own_writes(index):
    """Inside ``batch()`` the fetch does not trust the cache: the search reads the counters
    in the transaction and finds the batch's own new chunk; after a rollback it is gone."""
    path, rng = index
    store = SqliteStore(path)
    q = _unit(rng, 1)[0]
    before = store.search_vectors(MODEL, q, ["Org/C0"], 3)

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback):
        with store.batch():
            new = _file(store, "Org/C0", "inside.txt", "hin", ["written inside the batch "], rich=False)
            store.add_vectors(MODEL, [new[0].chunk_id], q[None, :])
            inside = store.search_vectors(MODEL, q, ["Org/C0"], 3)
            assert inside[0].chunk == new[0]
            raise Rollback
    after = store.search_vectors(MODEL, q, ["Org/C0"], 3)
    _same(after, before)
    _same(after, _reference(store, q, ["Org/C0"], 3))
    store.close()
