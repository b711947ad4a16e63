"""``StoreBase``'s defaults (engine/store/base.py) give what a backend's own capability methods give."""

from __future__ import annotations

import numpy as np

from engine.store.base import Store, StoreBase
from engine.store.sqlite.store import SqliteStore
from engine.values import Chunk, Collection, Document

TEXTS = {
    "a.txt": ["alpha beta gamma", "beta delta", "gamma epsilon alpha"],
    "b.txt": ["delta zeta", "alpha alpha theta"],
    "c.txt": ["eta theta beta"],
}


def _fill(store: Store) -> dict[str, np.ndarray]:
    store.add_collection(Collection("C", "/tmp/c"))
    store.add_collection(Collection("D", "/tmp/d"))
    rng = np.random.default_rng(7)
    vectors: dict[str, np.ndarray] = {}
    for i, (fp, texts) in enumerate(TEXTS.items()):
        cp = "C" if i < 2 else "D"
        chunks = [
            Chunk(cp, fp, n, f"id-{fp}-{n}", f"h-{fp}", 0, len(t), t, None, None, None, (), {}, 0.0)
            for n, t in enumerate(texts)
        ]
        doc = Document(cp, fp, f"h-{fp}", "k", "txt", "indexed", None, 1, 0.0, 0.0, 0, len(chunks), 1, "", {})
        store.replace_document(doc, "", chunks)
        v = rng.normal(size=(len(chunks), 8)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        store.add_vectors("m", [c.chunk_id for c in chunks], v)
        vectors.update({c.chunk_id: v[k] for k, c in enumerate(chunks)})
    return vectors


def _key(c: Chunk) -> tuple[str, str, int]:
    return (c.collection_path, c.file_path, c.chunk_index)


class Plain(StoreBase):
    """A backend with the core methods only (the SQLite store's), so every capability is the default."""

    def __init__(self, inner: SqliteStore) -> None:
        self._inner = inner

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def test_the_defaults_rank_and_read_as_the_sqlite_store_does(tmp_path):
    store = SqliteStore(str(tmp_path / "i.db"))
    plain = Plain(store)
    try:
        vectors = _fill(store)
        q = vectors["id-a.txt-0"]
        for scope in (None, ["C"], ["D"]):
            native = store.search_vector_refs("m", q, scope, 4)
            default = plain.search_vector_refs("m", q, scope, 4)
            rows = store.chunks_at([r for r, _c, _s in native])
            assert [(_key(rows[r]), c, s) for r, c, s in native] == list(default)
            assert store.file_count(scope) == plain.file_count(scope)
            kw = store.search_keyword_refs("alpha theta", scope, 5)
            kw_default = plain.search_keyword_refs("alpha theta", scope, 5)
            kw_rows = store.chunks_at([r for r, _s in kw])
            assert [(_key(kw_rows[r]), s) for r, s in kw] == list(kw_default)
        refs = [r for r, _c, _s in plain.search_vector_refs("m", q, None, 6)]
        by_key = plain.chunks_at(refs)
        assert all(by_key[r] == store.get_chunk(*r) for r in refs)
        files = plain.chunk_files(refs)
        assert files == {r: (c.collection_path, c.file_path, c.chunk_id) for r, c in by_key.items()}
        assert plain.row_refs is False and store.row_refs is True
        assert plain.vector_coverage("m") == store.vector_coverage("m") == (6, 0)
        assert plain.vector_coverage("other") == store.vector_coverage("other") == (0, 6)
        assert plain.tidy_keyword_index(10) is False
    finally:
        store.close()


def test_the_default_metadata_update_and_orphan_repair_change_only_what_they_name(tmp_path):
    store = SqliteStore(str(tmp_path / "i.db"))
    plain = Plain(store)
    try:
        _fill(store)
        before = store.chunks("C", "a.txt")
        assert plain.set_document_metadata("C", "a.txt", {"stale": True}) is True
        assert plain.set_document_metadata("C", "nope.txt", {}) is False
        doc = store.get_document("C", "a.txt")
        assert doc is not None and doc.metadata == {"stale": True}
        assert store.chunks("C", "a.txt") == before
        with store._write() as conn:  # a remove that raced a run: documents without their collection
            conn.execute("DELETE FROM collections WHERE collection_path = 'D'")
        assert plain.repair_orphans() == 1
        assert [d.collection_path for d in store.documents()] == ["C", "C"]
        assert store.repair_orphans() == 0
    finally:
        store.close()


def test_both_backends_declare_every_capability(store):
    assert isinstance(store, Store) and isinstance(store, StoreBase)
    assert isinstance(store.row_refs, bool) and isinstance(store.takes_chunk_rows, bool)
    assert store.repair_orphans() == 0
    assert store.file_count(None) == 0 and store.vector_coverage("m") == (0, 0)
    assert list(store.iter_vectors()) == [] and store.purge_stale_vectors() == {}


def test_repair_orphans_drops_the_documents_of_a_collection_row_that_is_gone(store):
    _fill(store)
    if isinstance(store, SqliteStore):
        with store._write() as conn:  # a remove that raced a run: documents without their collection
            conn.execute("DELETE FROM collections WHERE collection_path = 'D'")
    else:
        with store._pool.connection() as conn:
            conn.execute("DELETE FROM chunknav.collections WHERE collection_path = 'D'")
    assert [c.collection_path for c in store.collections()] == ["C"]
    assert store.repair_orphans() == 1
    assert sorted({d.collection_path for d in store.documents()}) == ["C"]
    assert store.chunks("D", "c.txt") == [] and store.repair_orphans() == 0
