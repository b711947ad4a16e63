"""The Store contract (engine/store/base.py), run on every backend via the ``store`` fixture."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from engine.chunk import chunk_id
from engine.errors import IndexBusyError
from engine.values import Bbox, Chunk, Collection, Document, Region
from engine.store.base import Store
from engine.store.sqlite.store import SqliteStore

REPO = Path(__file__).resolve().parents[2]


def _doc(cp: str, fp: str, content_hash: str, n: int, status: str = "indexed") -> Document:
    return Document(
        cp,
        fp,
        content_hash,
        "size=1000;overlap=150;extractor=1",
        "pdf",
        status,
        size_bytes=123,
        last_modified=1700000000.5,
        indexed_at=1700000001.0,
        page_count=2,
        chunk_count=n,
        text_length=10 * n,
        summary="summary",
        metadata={"title": "T", "notes": ["a"]},
    )


def _chunks(cp: str, fp: str, content_hash: str, texts: list[str]) -> list[Chunk]:
    out = []
    pos = 0
    for i, t in enumerate(texts):
        box = Bbox(0.125, 0.25 + i * 0.0625, 0.5, 0.0625)  # exact in 5 decimals (wire rounding)
        out.append(
            Chunk(
                cp,
                fp,
                i,
                chunk_id(content_hash, t),
                content_hash,
                pos,
                pos + len(t),
                t,
                page=1 + i % 2,
                page_label=["i", "ii"][i % 2],
                bbox=box,
                regions=(Region(1 + i % 2, box), Region(2 + i % 2, Bbox(0, 0, 1, 0.1))),
                metadata={"k": i},
                last_modified=1700000000.5,
            )
        )
        pos += len(t)
    return out


def _put(store: Store, cp: str, fp: str, content_hash: str, texts: list[str]) -> list[Chunk]:
    chunks = _chunks(cp, fp, content_hash, texts)
    store.replace_document(_doc(cp, fp, content_hash, len(chunks)), "".join(texts), chunks)
    return chunks


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_satisfies_protocol(store):
    assert isinstance(store, Store)


def test_collections_round_trip(store):
    store.add_collection(Collection("B/x", "/tmp/b", None))
    store.add_collection(Collection("A", "/tmp/a", "secret"))
    store.add_collection(Collection("A", "/tmp/a2", None))  # update
    assert store.collections() == [Collection("A", "/tmp/a2", None), Collection("B/x", "/tmp/b", None)]
    assert store.get_collection("B/x") == Collection("B/x", "/tmp/b", None)
    assert store.get_collection("nope") is None
    assert store.remove_collection("A") is True
    assert store.remove_collection("A") is False
    assert [c.collection_path for c in store.collections()] == ["B/x"]


def test_document_and_chunks_round_trip(store):
    store.add_collection(Collection("A", "/tmp/a"))
    texts = ["alpha beta ", "gamma délta ", "epsilon"]
    chunks = _put(store, "A", "dir/f.pdf", "h1", texts)
    doc = store.get_document("A", "dir/f.pdf")
    assert doc == _doc("A", "dir/f.pdf", "h1", 3)
    assert store.document_text("A", "dir/f.pdf") == "".join(texts)
    assert store.chunks("A", "dir/f.pdf") == chunks
    assert store.get_chunk("A", "dir/f.pdf", 1) == chunks[1]
    assert store.get_chunk("A", "dir/f.pdf", 3) is None
    assert store.chunk_count("A", "dir/f.pdf") == 3
    assert store.chunk_count("A", "other") == 0
    assert store.get_document("A", "other") is None and store.document_text("A", "other") is None
    _put(store, "A", "a.txt", "h2", ["x"])
    assert [d.file_path for d in store.documents()] == ["a.txt", "dir/f.pdf"]
    assert [d.file_path for d in store.documents("A")] == ["a.txt", "dir/f.pdf"]
    assert store.documents("B") == []
    store.remove_document("A", "dir/f.pdf")
    assert store.get_document("A", "dir/f.pdf") is None and store.chunks("A", "dir/f.pdf") == []


def test_failed_document_has_no_chunks(store):
    _put(store, "A", "f.pdf", "h1", ["one", "two"])
    failed = Document("A", "f.pdf", "h2", "k", "pdf", "failed", reason="corrupt: broken xref")
    store.replace_document(failed, "", [])
    assert store.get_document("A", "f.pdf").status == "failed"
    assert store.get_document("A", "f.pdf").reason == "corrupt: broken xref"
    assert store.chunks("A", "f.pdf") == []
    assert store.search_keyword("one", None, 10) == []


@pytest.mark.slow
def test_replace_is_atomic_for_a_concurrent_reader(store):
    """A reader thread never sees a mix of the old and the new chunk set."""
    versions = {
        "hA": ["old text %d " % i for i in range(7)],
        "hB": ["new words %d " % i for i in range(3)],
    }
    _put(store, "A", "f.txt", "hA", versions["hA"])
    stop = threading.Event()
    seen: list[tuple[set[str], int]] = []
    errors: list[BaseException] = []

    def reader():
        try:
            while not stop.is_set():
                rows = store.chunks("A", "f.txt")
                seen.append(({c.content_hash for c in rows}, len(rows)))
        except BaseException as e:  # surfaced below
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(500):
            h = "hB" if i % 2 == 0 else "hA"
            _put(store, "A", "f.txt", h, versions[h])
    finally:
        stop.set()
        t.join()
    assert not errors
    assert len(seen) > 10
    for hashes, n in seen:
        assert len(hashes) == 1, hashes
        (h,) = hashes
        assert n == len(versions[h])


def test_vectors_are_only_added_and_stale_is_counted(store):
    chunks = _put(store, "A", "f.txt", "h1", ["one ", "two ", "three"])
    ids = [c.chunk_id for c in chunks]
    rng = np.random.default_rng(1)
    v = _unit(rng, 3, 8)
    assert store.chunks_missing_vectors("m") == sorted((c.chunk_id, c.chunk_text) for c in chunks)
    assert store.add_vectors("m", ids[:2], v[:2]) == 2
    assert store.chunks_missing_vectors("m") == [(ids[2], "three")]
    assert store.chunks_missing_vectors("m", limit=0) == []
    assert store.add_vectors("m", ids, _unit(rng, 3, 8)) == 1  # the first two are kept
    hits = store.search_vectors("m", v[0], None, 1)
    assert hits[0].chunk.chunk_id == ids[0] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert store.vector_counts() == {"m": {"vectors": 3, "dim": 8, "stale": 0, "missing": 0}}
    # A second model adds rows; the first model's stay.
    assert store.add_vectors("m2", ids[:1], _unit(rng, 1, 4)) == 1
    counts = store.vector_counts()
    assert counts["m2"] == {"vectors": 1, "dim": 4, "stale": 0, "missing": 2}
    # The file changes: old chunks vanish, their vectors stay as stale.
    new = _put(store, "A", "f.txt", "h2", ["one "])
    counts = store.vector_counts()
    assert counts["m"] == {"vectors": 3, "dim": 8, "stale": 3, "missing": 1}
    assert store.chunks_missing_vectors("m") == [(new[0].chunk_id, "one ")]
    assert store.search_vectors("m", v[0], None, 5) == []  # stale vectors are never hits


def test_missing_vectors_are_distinct_chunk_ids(store):
    a = _put(store, "A", "f.txt", "same", ["dup ", "x"])
    _put(store, "B", "g.txt", "same", ["dup ", "x"])
    assert store.chunks_missing_vectors("m") == sorted((c.chunk_id, c.chunk_text) for c in a)


def test_search_vectors_is_exact_cosine_within_collections(store):
    rng = np.random.default_rng(7)
    dim = 16
    rows = []  # (collection, file, index, chunk_id)
    vecs = []
    for coll in ("A", "B", "C/d"):
        for f in range(4):
            chunks = _put(store, coll, f"f{f}.txt", f"{coll}-{f}", [f"{coll} {f} {i} " for i in range(6)])
            v = _unit(rng, len(chunks), dim)
            store.add_vectors("m", [c.chunk_id for c in chunks], v)
            rows += [(c.collection_path, c.file_path, c.chunk_index) for c in chunks]
            vecs.append(v)
    matrix = np.concatenate(vecs)
    q = _unit(rng, 1, dim)[0]
    truth = matrix @ q
    for scope in (None, ["A"], ["B", "C/d"], ["C/d", "nope"], ["nope"], []):
        hits = store.search_vectors("m", q, scope, 7)
        allowed = [i for i, r in enumerate(rows) if scope is None or r[0] in scope]
        want = sorted(allowed, key=lambda i: -truth[i])[:7]
        assert [(h.chunk.collection_path, h.chunk.file_path, h.chunk.chunk_index) for h in hits] == [
            rows[i] for i in want
        ]
        assert [h.score for h in hits] == pytest.approx([float(truth[i]) for i in want], abs=1e-5)
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    # Changing a file is seen by the next search (the cache refreshes).
    store.remove_document("A", "f0.txt")
    hits = store.search_vectors("m", q, ["A"], 100)
    assert {h.chunk.file_path for h in hits} == {"f1.txt", "f2.txt", "f3.txt"}
    with pytest.raises(ValueError):
        store.search_vectors("m", np.ones(3, np.float32), None, 3)
    assert store.search_vectors("unknown-model", q, None, 3) == []


def test_same_chunk_id_at_several_paths_gives_one_hit_per_path(store):
    a = _put(store, "A", "one.txt", "same", ["shared text"])
    _put(store, "A", "copy/one.txt", "same", ["shared text"])
    _put(store, "B", "one.txt", "same", ["shared text"])
    v = _unit(np.random.default_rng(3), 1, 8)
    assert store.add_vectors("m", [a[0].chunk_id], v) == 1
    hits = store.search_vectors("m", v[0], None, 10)
    assert sorted((h.chunk.collection_path, h.chunk.file_path) for h in hits) == [
        ("A", "copy/one.txt"),
        ("A", "one.txt"),
        ("B", "one.txt"),
    ]
    assert all(h.score == pytest.approx(1.0, abs=1e-5) for h in hits)
    assert len(store.search_vectors("m", v[0], ["B"], 10)) == 1


@pytest.mark.parametrize(
    "query",
    [
        "alpha",
        '"alpha',
        'alpha"',
        '"',
        "''",
        "AND",
        "alpha AND",
        "OR alpha",
        "NOT",
        "*",
        "alp*",
        "-alpha",
        "alpha -beta",
        "NEAR(alpha beta)",
        "col:alpha",
        "(alpha",
        "alpha)",
        "^alpha",
        "{alpha}",
        "a\x00b",
        "   ",
        "",
        "alpha + beta",
        "l'alpha",
        "ÄLPHÄ",
        "\\",
    ],
)
def test_keyword_search_never_raises_on_hostile_input(store, query):
    _put(store, "A", "f.txt", "h1", ["alpha beta gamma ", "delta AND epsilon ", "zeta eta"])
    hits = store.search_keyword(query, None, 5)
    assert isinstance(hits, list)
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_keyword_search_ranks_and_scopes(store):
    _put(store, "A", "f.txt", "h1", ["the pelican flies ", "pelican pelican pelican ", "nothing here"])
    _put(store, "B", "g.txt", "h2", ["a pelican in B"])
    hits = store.search_keyword("pelican", None, 10)
    assert hits[0].chunk.chunk_index == 1 and hits[0].chunk.collection_path == "A"
    assert {(h.chunk.collection_path, h.chunk.chunk_index) for h in hits} == {("A", 0), ("A", 1), ("B", 0)}
    assert [h.chunk.collection_path for h in store.search_keyword("pelican", ["B"], 10)] == ["B"]
    assert store.search_keyword("pelican", [], 10) == []
    assert store.search_keyword("absent-word", None, 10) == []
    assert store.search_keyword("pelican", None, 1)[0].chunk.chunk_index == 1
    # AND is searched as a word, not an operator
    _put(store, "C", "h.txt", "h3", ["this AND that"])
    assert [h.chunk.collection_path for h in store.search_keyword("AND", ["C"], 5)] == ["C"]


def test_runs(store):
    assert store.last_run() is None
    store.save_run({"indexed": 1, "failed": []})
    store.save_run({"indexed": 2, "failed": [{"filePath": "x"}]})
    assert store.last_run() == {"indexed": 2, "failed": [{"filePath": "x"}]}


def test_index_lock_is_exclusive_between_store_objects(store, store_backend, tmp_path):
    if store_backend == "sqlite":
        from engine.store.sqlite.store import SqliteStore

        other = SqliteStore(store.path)
    else:
        other = type(store)(store._test_dsn) if hasattr(store, "_test_dsn") else store
    try:
        with store.index_lock():
            with pytest.raises(IndexBusyError):
                with other.index_lock():
                    pass
        with other.index_lock():  # released
            pass
    finally:
        if other is not store:
            other.close()


_HOLDER = """
import sys
from engine.store.sqlite.store import SqliteStore
s = SqliteStore(sys.argv[1])
with s.index_lock():
    print("held", flush=True)
    sys.stdin.read()
"""


def test_sqlite_index_lock_is_exclusive_across_processes(tmp_path):
    from engine.store.sqlite.store import SqliteStore

    path = str(tmp_path / "index.db")
    store = SqliteStore(path)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, path], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(IndexBusyError):
            with store.index_lock():
                pass
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    with store.index_lock():
        pass
    store.close()


def test_memory_store_works():
    from engine.store.sqlite.store import SqliteStore

    s = SqliteStore(":memory:")
    _put(s, "A", "f.txt", "h", ["alpha beta"])
    ids = [c.chunk_id for c in s.chunks("A", "f.txt")]
    s.add_vectors("m", ids, np.eye(1, 4, dtype=np.float32))
    assert s.search_vectors("m", np.eye(1, 4, dtype=np.float32)[0], ["A"], 3)[0].score == pytest.approx(1.0)
    assert s.search_keyword("beta", None, 3)[0].chunk.chunk_id == ids[0]
    with s.index_lock():
        with pytest.raises(IndexBusyError):
            with s.index_lock():
                pass
    s.close()


def test_sqlite_other_process_writes_are_seen_by_the_vector_cache(tmp_path):
    """Two store objects on one file: vectors and chunks written by one are searched by the other."""
    from engine.store.sqlite.store import SqliteStore

    path = str(tmp_path / "index.db")
    reader, writer = SqliteStore(path), SqliteStore(path)
    rng = np.random.default_rng(5)
    a = _put(writer, "A", "a.txt", "ha", ["a0 ", "a1"])
    va = _unit(rng, 2, 8)
    writer.add_vectors("m", [c.chunk_id for c in a], va)
    assert len(reader.search_vectors("m", va[0], None, 10)) == 2
    b = _put(writer, "A", "b.txt", "hb", ["b0"])
    vb = _unit(rng, 1, 8)
    writer.add_vectors("m", [b[0].chunk_id], vb)
    hits = reader.search_vectors("m", vb[0], None, 10)
    assert len(hits) == 3 and hits[0].chunk.file_path == "b.txt"
    # A brand-new store object on the same file reuses the matrix file.
    third = SqliteStore(path)
    assert third.search_vectors("m", vb[0], None, 1)[0].chunk.file_path == "b.txt"
    for s in (reader, writer, third):
        s.close()


def test_sqlite_file_settings(tmp_path):
    from engine.store.sqlite.store import SqliteStore

    s = SqliteStore(str(tmp_path / "deep" / "dir" / "index.db"))
    conn = s._conn()
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    s.close()


_SEARCHER = """
import sys, json
import numpy as np
from engine.store.sqlite.store import SqliteStore
s = SqliteStore(sys.argv[1])
q = np.asarray(json.loads(sys.argv[2]), dtype=np.float32)
print(json.dumps([[h.chunk.file_path, h.chunk.chunk_index, round(h.score, 5)]
                  for h in s.search_vectors("m", q, None, 10)]))
s.close()
"""


def _search_in_child(path: str, q: np.ndarray) -> list[list]:
    import json

    out = subprocess.run(
        [sys.executable, "-c", _SEARCHER, path, json.dumps(q.tolist())],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return json.loads(out)


def test_sqlite_second_process_sees_vectors_added_by_the_first(tmp_path):
    """A new process reuses the cache files (matrix, occurrence file) and still sees every write."""
    from engine.store.sqlite.store import SqliteStore

    path = str(tmp_path / "index.db")
    s = SqliteStore(path)
    rng = np.random.default_rng(11)
    a = _put(s, "A", "a.txt", "ha", ["a0 ", "a1"])
    va = _unit(rng, 2, 8)
    s.add_vectors("m", [c.chunk_id for c in a], va)
    assert s.search_vectors("m", va[1], None, 1)[0].chunk.chunk_index == 1  # writes the cache files
    assert _search_in_child(path, va[1])[0][:2] == ["a.txt", 1]
    # Vectors added after the files were written: the child must see them.
    b = _put(s, "B", "b.txt", "hb", ["b0"])
    vb = _unit(rng, 1, 8)
    s.add_vectors("m", [b[0].chunk_id], vb)
    hits = _search_in_child(path, vb[0])
    assert len(hits) == 3 and hits[0][0] == "b.txt" and hits[0][2] == pytest.approx(1.0)
    # And the first process sees what a second one wrote after it cached everything.
    c = _put(s, "C", "c.txt", "hc", ["c0"])
    vc = _unit(rng, 1, 8)
    writer = SqliteStore(path)
    writer.add_vectors("m", [c[0].chunk_id], vc)
    writer.close()
    assert s.search_vectors("m", vc[0], None, 1)[0].chunk.file_path == "c.txt"
    s.close()


def test_sqlite_stale_occurrence_file_is_never_used(tmp_path):
    """After chunks change, a fresh store object rebuilds the persisted chunk -> matrix row table.

    The replacement reuses the chunk rowid and the chunk id (same content at another
    collection), so only the collection scope can tell a stale table from a fresh one.
    """
    from engine.store.sqlite.store import SqliteStore

    path = str(tmp_path / "index.db")
    s = SqliteStore(path)
    v = np.eye(2, 4, dtype=np.float32)
    old = _put(s, "A", "f.txt", "h1", ["same text"])
    s.add_vectors("m", [old[0].chunk_id], v[:1])
    assert [h.chunk.collection_path for h in s.search_vectors("m", v[0], ["A"], 5)] == ["A"]
    occ_file = Path(path + ".m.occ.npz")
    assert occ_file.exists()
    before = occ_file.stat().st_mtime_ns, occ_file.stat().st_ino
    # Nothing changed: a new store object loads the file as it is.
    fresh = SqliteStore(path)
    assert fresh.search_vectors("m", v[0], None, 5)[0].chunk.collection_path == "A"
    fresh.close()
    assert (occ_file.stat().st_mtime_ns, occ_file.stat().st_ino) == before
    # Move the chunk to collection B (same content, so same chunk id, same rowid).
    s.remove_document("A", "f.txt")
    moved = _put(s, "B", "f.txt", "h1", ["same text"])
    assert moved[0].chunk_id == old[0].chunk_id
    fresh = SqliteStore(path)
    assert fresh.search_vectors("m", v[0], ["A"], 5) == []
    hits = fresh.search_vectors("m", v[0], ["B"], 5)
    assert [(h.chunk.collection_path, h.score) for h in hits] == [("B", pytest.approx(1.0))]
    fresh.close()
    # Replace the document's text: a fresh store object finds the new chunk, never the old one.
    new = _put(s, "B", "f.txt", "h2", ["new text"])
    s.add_vectors("m", [new[0].chunk_id], v[1:])
    fresh = SqliteStore(path)
    hits = fresh.search_vectors("m", v[1], None, 5)
    assert [(h.chunk.chunk_id, h.chunk.chunk_text) for h in hits] == [(new[0].chunk_id, "new text")]
    assert hits[0].score == pytest.approx(1.0)
    assert [h.chunk.chunk_id for h in fresh.search_vectors("m", v[0], None, 5)] == [new[0].chunk_id]
    fresh.close()
    assert (occ_file.stat().st_mtime_ns, occ_file.stat().st_ino) != before
    s.close()


def test_sqlite_occurrence_file_of_another_database_is_rebuilt(tmp_path):
    """A database recreated at the same path (new db_id, same counters) never reuses old cache files."""
    from engine.store.sqlite.store import SqliteStore

    path = str(tmp_path / "index.db")
    v = np.eye(2, 4, dtype=np.float32)
    first = SqliteStore(path)
    c = _put(first, "A", "f.txt", "h1", ["one"])
    first.add_vectors("m", [c[0].chunk_id], v[:1])
    assert first.search_vectors("m", v[0], None, 1)[0].chunk.collection_path == "A"
    first.close()
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    second = SqliteStore(path)
    c2 = _put(second, "B", "g.txt", "h2", ["two"])
    second.add_vectors("m", [c2[0].chunk_id], v[1:])
    hits = second.search_vectors("m", v[1], None, 5)
    assert [(h.chunk.collection_path, h.score) for h in hits] == [("B", pytest.approx(1.0))]
    assert second.search_vectors("m", v[1], ["A"], 5) == []
    second.close()


def test_scoped_search_with_repeated_and_contiguous_matrix_rows_is_exact(store):
    """A small scope (scored row by row) holding a run of matrix rows and a chunk id at two paths."""
    rng = np.random.default_rng(21)
    big = _put(store, "Big", "b.txt", "hb", [f"b{i} " for i in range(12)])
    a1 = _put(store, "A", "a1.txt", "ha", ["x ", "y ", "z"])
    _put(store, "A", "a2.txt", "ha", ["x ", "y ", "z"])  # same content: same chunk ids
    ids = [c.chunk_id for c in big + a1]
    v = _unit(rng, len(ids), 8)
    store.add_vectors("m", ids, v)
    q = _unit(rng, 1, 8)[0]
    hits = store.search_vectors("m", q, ["A"], 10)
    want = sorted(((float(v[12 + i] @ q), f, i) for i in range(3) for f in ("a1.txt", "a2.txt")), key=lambda t: -t[0])
    assert [h.score for h in hits] == pytest.approx([w[0] for w in want], abs=1e-5)
    assert sorted((h.chunk.file_path, h.chunk.chunk_index) for h in hits) == sorted((w[1], w[2]) for w in want)
    c = _put(store, "C", "c.txt", "hc", ["c0 ", "c1 ", "c2"])  # a run of matrix rows: scored through a view
    vc = _unit(rng, 3, 8)
    store.add_vectors("m", [x.chunk_id for x in c], vc)
    hits = store.search_vectors("m", q, ["C"], 10)
    assert [h.chunk.chunk_index for h in hits] == list(np.argsort(-(vc @ q), kind="stable"))
    assert [h.score for h in hits] == pytest.approx(sorted(vc @ q, reverse=True), abs=1e-5)


def test_sqlite_batch_commits_together_and_rolls_back_whole(tmp_path):
    """Store.batch on SQLite: a reader sees nothing of the block until it ends;
    an exception in the block leaves the index as it was."""
    path = str(tmp_path / "b.db")
    writer, reader = SqliteStore(path), SqliteStore(path)
    writer.add_collection(Collection("C", str(tmp_path)))
    with writer.batch():
        _put(writer, "C", "a.txt", "h1", ["alpha one", "alpha two"])
        _put(writer, "C", "b.txt", "h2", ["beta"])
        assert writer.chunk_count("C", "a.txt") == 2  # the writer reads its own block
        assert reader.chunk_count("C", "a.txt") == 0 and reader.get_document("C", "b.txt") is None
    assert reader.chunk_count("C", "a.txt") == 2 and reader.chunk_count("C", "b.txt") == 1
    with pytest.raises(RuntimeError):
        with writer.batch():
            _put(writer, "C", "a.txt", "h3", ["new alpha"])
            raise RuntimeError("extractor bug")
    assert [c.chunk_text for c in reader.chunks("C", "a.txt")] == ["alpha one", "alpha two"]
    assert [h.chunk.file_path for h in reader.search_keyword("alpha", ["C"], 5)] == ["a.txt", "a.txt"]


def test_purge_stale_vectors_deletes_only_vectors_without_a_chunk(store):
    from engine.store.purge import purge_stale_vectors

    chunks = _put(store, "A", "f.txt", "h1", ["one ", "two ", "three"])
    keep = _put(store, "B", "g.txt", "k1", ["kept words"])
    ids = [c.chunk_id for c in chunks]
    rng = np.random.default_rng(2)
    v = _unit(rng, 4, 8)
    store.add_vectors("m", ids + [keep[0].chunk_id], v)
    store.add_vectors("m2", ids[:1], _unit(rng, 1, 4))
    assert store.search_vectors("m", v[0], None, 1)[0].chunk.chunk_id == ids[0]  # the matrix is loaded
    assert purge_stale_vectors(store) == {}  # nothing stale yet
    _put(store, "A", "f.txt", "h2", ["changed"])  # the old chunks vanish: 3 + 1 stale vectors
    assert store.vector_counts()["m"]["stale"] == 3
    assert purge_stale_vectors(store) == {"m": 3, "m2": 1}
    counts = store.vector_counts()
    assert counts["m"] == {"vectors": 1, "dim": 8, "stale": 0, "missing": 1}
    assert "m2" not in counts  # its only vector was stale
    hits = store.search_vectors("m", v[3], None, 5)
    assert [h.chunk.chunk_id for h in hits] == [keep[0].chunk_id]
    # the old text comes back: its vectors are gone, so they are missing and embedded again
    _put(store, "A", "f.txt", "h1", ["one ", "two ", "three"])
    assert [cid for cid, _ in store.chunks_missing_vectors("m")] == sorted(ids)
    store.add_vectors("m", ids, v[:3])
    hits = store.search_vectors("m", v[0], None, 5)
    assert [h.chunk.chunk_id for h in hits].count(ids[0]) == 1 and hits[0].chunk.chunk_id == ids[0]


_WRITER = """
import sys
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore
s = SqliteStore(sys.argv[1])
s.add_collection(Collection(sys.argv[2], "/tmp"))
s.close()
"""


@pytest.mark.parametrize("where", ["file", "memory"])
def test_sqlite_reads_remembered_while_nothing_changed_see_every_change(tmp_path, where):
    """collections / get_collection / vector_dim / has_vectors / the counters are read again after
    any commit: this store's own (same or another thread), a rolled-back one, another store
    object's and another process's; and never remembered inside a transaction."""
    path = ":memory:" if where == "memory" else str(tmp_path / "index.db")
    s = SqliteStore(path)
    assert s.collections() == [] and s.vector_dim("m") is None and not s.has_vectors("m")
    s.add_collection(Collection("A", "/a"))
    assert [c.collection_path for c in s.collections()] == ["A"] and s.get_collection("A").root == "/a"
    gens = s._db.gens("m")
    a = _put(s, "A", "a.txt", "ha", ["a0 ", "a1"])
    assert s._db.gens("m")[0] > gens[0]
    s.add_vectors("m", [c.chunk_id for c in a], _unit(np.random.default_rng(1), 2, 8))
    assert s.vector_dim("m") == 8 and s.has_vectors("m") and s._db.gens("m")[1] > gens[1]
    t = threading.Thread(target=lambda: s.add_collection(Collection("B", "/b")))
    t.start()
    t.join()
    assert [c.collection_path for c in s.collections()] == ["A", "B"]
    with pytest.raises(RuntimeError):
        with s._write() as conn:
            conn.execute("INSERT INTO collections(collection_path, root) VALUES ('C', '/c')")
            with s._read():  # inside the transaction: read, not remembered
                assert "C" in [c.collection_path for c in s.collections()]
            raise RuntimeError("roll back")
    assert [c.collection_path for c in s.collections()] == ["A", "B"] and s.get_collection("C") is None
    if where == "file":
        other = SqliteStore(path)
        other.add_collection(Collection("D", "/d"))
        other.close()
        assert s.get_collection("D") is not None
        subprocess.run([sys.executable, "-c", _WRITER, path, "E"], cwd=REPO, check=True, timeout=60)
        assert [c.collection_path for c in s.collections()] == ["A", "B", "D", "E"]
    s.close()


def test_sqlite_vector_search_of_an_unchanged_index_is_one_statement(tmp_path):
    """Warm and unchanged: the hit fetch alone (it reads the counters in the same statement);
    after a commit by another connection the search checks the counters again and finds the new rows."""
    path = str(tmp_path / "index.db")
    s, writer = SqliteStore(path), SqliteStore(path)
    rng = np.random.default_rng(3)
    a = _put(writer, "A", "a.txt", "ha", ["a0 ", "a1 ", "a2"])
    v = _unit(rng, 3, 8)
    writer.add_vectors("m", [c.chunk_id for c in a], v)
    assert len(s.search_vectors("m", v[0], None, 2)) == 2
    seen: list[str] = []
    s._conn().set_trace_callback(seen.append)
    hits = s.search_vectors("m", v[1], ["A"], 2)
    assert hits[0].chunk.chunk_index == 1 and len(seen) == 1 and "FROM meta" in seen[0], seen
    b = _put(writer, "A", "b.txt", "hb", ["b0"])
    writer.add_vectors("m", [b[0].chunk_id], v[1:2] * -1 + 0)  # a new best hit for -v[1]
    seen.clear()
    hits = s.search_vectors("m", -v[1], ["A"], 1)
    assert hits[0].chunk.file_path == "b.txt" and len(seen) > 1
    s._conn().set_trace_callback(None)
    s.close()
    writer.close()


def test_chunk_rows_built_through_the_slots_equal_the_dataclass_init():
    import pickle

    from engine.values import VectorHit
    from engine.store.sqlite import rows as R

    R._build_twins()
    assert R._CHUNK_SLOTS is not None and R._HIT_SLOTS[VectorHit] is not None  # the fast path is the one taken
    for c in _chunks("A", "f.txt", "h", ["one ", "two"]) + [Chunk("B", "g", 0, "i", "h", 0, 1, "x")]:
        row = R.chunk_params(c)
        built = R.chunk_of(row)
        assert built == c and repr(built) == repr(c) and type(built) is Chunk
        assert pickle.loads(pickle.dumps(built)) == c
        with pytest.raises(AttributeError):
            built.page = 9  # still frozen
        (hit,) = R.hits_of(VectorHit, [(7, *row)], [0.5])
        assert hit == VectorHit(c, 0.5) and type(hit) is VectorHit and repr(hit) == repr(VectorHit(c, 0.5))
        with pytest.raises(AttributeError):
            hit.score = 1.0


def test_slot_twin_refuses_classes_it_cannot_stand_for():
    from dataclasses import dataclass, field

    from engine.store.sqlite import rows as R

    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclass(frozen=True, slots=True)
    class NotInit:
        a: int
        b: int = field(init=False, default=0)

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self):
            assert self.a >= 0

    assert [R._slots_twin(c) for c in (NoSlots, NotFrozen, NotInit, Checked)] == [None] * 4


def test_move_document_keeps_text_chunks_and_vectors(store):
    import dataclasses

    store.add_collection(Collection("C", "/srv/c"))
    chunks = _chunks("C", "old/a.pdf", "h1", ["alpha words", "beta words", "gamma words"])
    store.replace_document(_doc("C", "old/a.pdf", "h1", 3), "alpha words beta words gamma words", chunks)
    vectors = np.eye(3, 4, dtype=np.float32)
    store.add_vectors("m", [c.chunk_id for c in chunks], vectors)
    moved = dataclasses.replace(_doc("C", "new/b.pdf", "h1", 3), last_modified=1700000099.5)
    assert store.move_document("old/a.pdf", moved) is True
    assert store.get_document("C", "old/a.pdf") is None and store.chunks("C", "old/a.pdf") == []
    assert store.get_document("C", "new/b.pdf").last_modified == 1700000099.5
    got = store.chunks("C", "new/b.pdf")
    assert [c.chunk_id for c in got] == [c.chunk_id for c in chunks]
    assert [(c.chunk_text, c.regions, c.last_modified) for c in got] == [
        (c.chunk_text, c.regions, 1700000099.5) for c in chunks
    ]
    assert store.document_text("C", "new/b.pdf") == "alpha words beta words gamma words"
    assert store.vector_counts()["m"]["stale"] == 0 and store.vector_counts()["m"]["missing"] == 0
    assert store.vectors_per_file("m") == {("C", "new/b.pdf"): 3}
    assert store.move_document("nothing.pdf", moved) is False
