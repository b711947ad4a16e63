"""The store's embedding notes on every backend (engine/store/sqlite/notes.py,
postgres_notes.py): vectors found by window-text hash (stale ones too), truncation
and failure notes over live chunks, the missing-vector cursor, and the one-time
backfill of an index made before text hashes were kept."""

from __future__ import annotations

import numpy as np

from engine.index.embed_pass import text_hash
from engine.values import Collection
from tests.store.test_store import _chunks, _doc


def _unit(n, dim=8, seed=0):
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _put(store, fp, h, texts):
    chunks = _chunks("C", fp, h, texts)
    store.replace_document(_doc("C", fp, h, len(chunks)), " ".join(texts), chunks)
    return chunks


def test_notes_and_reuse_by_text(store, tmp_path):
    store.add_collection(Collection("C", str(tmp_path)))
    texts = ["alpha window", "beta window", "gamma window"]
    chunks = _put(store, "a.txt", "h1", texts)
    ids = [c.chunk_id for c in chunks]
    assert store.vector_dim("m") is None and store.vectors_by_text("m", [text_hash(t) for t in texts]) == {}
    assert store.embed_notes() == {}
    # the missing-vector cursor
    missing = store.chunks_missing_vectors("m")
    assert [cid for cid, _ in missing] == sorted(ids)
    assert store.chunks_missing_vectors("m", after=sorted(ids)[0]) == missing[1:]
    assert store.chunks_missing_vectors("m", limit=1, after=sorted(ids)[1]) == missing[2:]
    vecs = _unit(2)
    store.add_vectors("m", ids[:2], vecs)
    store.note_vectors("m", ids[:2], [text_hash(t) for t in texts[:2]], [None, 7])
    store.record_embed_failures("m", [(ids[2], "embedding-request-rejected", "too long even cut")])
    assert store.vector_dim("m") == 8
    notes = store.embed_notes()["m"]
    assert (notes["truncated"], notes["failed"]) == (1, 1)
    (f,) = notes["failures"]
    assert (f["filePath"], f["chunkIndex"], f["chunkId"], f["error"]) == (
        "a.txt",
        2,
        ids[2],
        "embedding-request-rejected",
    )
    # the file is re-saved: other bytes (new chunk ids), same text; old vectors are stale now
    new = _put(store, "a.txt", "h2", texts)
    assert not {c.chunk_id for c in new} & set(ids)
    found = store.vectors_by_text("m", [text_hash(t) for t in texts])
    assert set(found) == {text_hash(texts[0]), text_hash(texts[1])}
    assert np.allclose(found[text_hash(texts[1])][0], vecs[1], atol=1e-6) and found[text_hash(texts[1])][1] == 7
    assert store.embed_notes().get("m", {"failed": 0, "truncated": 0})["failed"] == 0  # notes of live chunks only
    # a vector arriving clears the failure note of that chunk
    store.add_vectors("m", [ids[2]], _unit(1, seed=3))
    store.note_vectors("m", [ids[2]], [text_hash(texts[2])], [None])
    _put(store, "a.txt", "h1", texts)  # back to the first version
    assert store.embed_notes()["m"]["failed"] == 0


def test_backfill_of_an_index_made_before_text_hashes(store, tmp_path):
    store.add_collection(Collection("C", str(tmp_path)))
    texts = ["one old window", "two old windows"]
    chunks = _put(store, "b.txt", "h1", texts)
    store.add_vectors("m", [c.chunk_id for c in chunks], _unit(2, seed=5))  # no note_vectors: an old index
    assert store.vectors_by_text("m", [text_hash(texts[0])]) == {}
    assert store.backfill_vector_texts("m", text_hash) == 2
    assert store.backfill_vector_texts("m", text_hash) == 0  # once per model
    assert set(store.vectors_by_text("m", [text_hash(t) for t in texts])) == {text_hash(t) for t in texts}
