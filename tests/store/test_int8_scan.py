"""The int8 scan of large full vector searches: same hits, float32 scores, fresh files.

Real parts: the real local WordLlama model on windows of the test corpus
text, real SQLite files, the real int8 files; the int8 path is forced with
``vector_scan="int8"`` (the threshold of ``auto`` is 200k vectors). That the
int8 codes are what a search reads is shown by overwriting them (same size,
so the files still look valid): the int8 search then changes, the exact and
scoped ones do not. No timings here (bench/vector_scan.py measures them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.store.threads import FixedChoice
from engine.config import Settings
from engine.errors import SettingsError
from engine.values import Chunk, Collection, Document
from engine.store.sqlite import int8 as int8_scan
from engine.store import open_store
from engine.store.sqlite.store import SqliteStore
from engine.store.sqlite.vectors import APPEND_ROWS
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]
TEXT = REPO / "tests" / "corpus" / "text"
QUERIES = [q["query"] for q in json.loads((REPO / "tests/data/search_queries.json").read_text())["queries"]]
QUERIES += [
    "what did the king say to his daughters",
    "a changelog entry about table extraction",
    "how are words grouped into lines",
    "a speech about mercy and justice",
    "install with pip",
]


def _files(path: Path, model: str) -> dict[str, Path]:
    return {k: Path(f"{path}.{model}.{k}") for k in ("f32", "ids", "rowids", "i8", "json")}


@pytest.fixture(scope="module")
def corpus_index(tmp_path_factory):
    """A real index of tests/corpus/text (400-character windows: ~4,000 chunks), local model.

    Returns (db path, model name, query vectors float32 (q, 256))."""
    base = tmp_path_factory.mktemp("int8")
    root = base / "text"
    root.mkdir()
    for p in TEXT.iterdir():
        if p.is_file() and p.suffix in (".txt", ".md"):
            shutil.copy(p, root / p.name)
    settings = Settings(
        embed_model="l2_supercat_256",
        db=str(base / "index.db"),
        embed_provider="local",
        chunk_size=400,
        chunk_overlap=100,
        allowed_roots=ALLOWED_ROOTS,
    ).validate()
    engine = Engine(settings)
    engine.add_collection("Text", str(root))
    summary = engine.run_index()
    assert summary["indexed"] > 0 and not summary.get("embedError"), summary
    emb = engine.embedder()
    qs = np.stack([emb.embed_query(q) for q in QUERIES]).astype(np.float32)
    model = emb.model
    engine.close()
    return base / "index.db", model, qs


def _ids(hits) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


@pytest.mark.slow
def test_int8_search_of_real_vectors_finds_the_exact_top_10_with_float32_scores(corpus_index):
    db, model, qs = corpus_index
    exact = SqliteStore(str(db), vector_scan="exact")
    fast = SqliteStore(str(db), vector_scan="int8")
    m, _occ = fast._prepare(model)
    assert len(m.matrix) > 8 * int8_scan.RESCORE * 1.5  # the int8 path applies
    assert m.codes is not None and m.codes.dtype == np.int8 and m.codes.shape == m.matrix.shape
    row_of = {m.digest(i): i for i in range(len(m.matrix))}
    found = total = 0
    for q in qs:
        want = exact.search_vectors(model, q, None, 10)
        got = fast.search_vectors(model, q, None, 10)
        found += len(set(_ids(got)) & set(_ids(want)))
        total += len(want)
        by_id = {h.chunk.chunk_id: h.score for h in want}
        for h in got:  # the score is the float32 cosine of that chunk, whichever scan found it
            vec = m.matrix[row_of[bytes.fromhex(h.chunk.chunk_id)]]
            assert h.score == pytest.approx(float(vec.astype(np.float64) @ q), abs=1e-6)
            if h.chunk.chunk_id in by_id:
                assert h.score == pytest.approx(by_id[h.chunk.chunk_id], abs=1e-6)
        assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    print(f"int8 vs exact on {len(m.matrix)} real vectors, {len(qs)} questions: recall@10 {found / total:.4f}")
    assert found / total >= 0.99, found / total  # measured 1.0 here
    # Overwrite the codes (same size): the int8 search now ranks by garbage, the exact one does not.
    f8 = _files(db, model)["i8"]
    saved = f8.read_bytes()
    try:
        f8.write_bytes(np.full(len(saved), 1, np.int8).tobytes())
        for s in (exact, fast):
            s.close()
        exact = SqliteStore(str(db), vector_scan="exact")
        fast = SqliteStore(str(db), vector_scan="int8")
        auto = SqliteStore(str(db))  # ~4,000 vectors: under the 200k threshold, exact
        changed = 0
        for q in qs[:5]:
            want = _ids(exact.search_vectors(model, q, None, 10))
            assert want == _ids(auto.search_vectors(model, q, None, 10))
            changed += _ids(fast.search_vectors(model, q, ["Text"], 10)) != want  # every collection: full
        assert changed >= 4  # the int8 codes are what a full int8 scan ranks by
    finally:
        f8.write_bytes(saved)
        for s in (exact, fast, auto):
            s.close()


def test_scoped_searches_stay_exact_float32(tmp_path):
    path = tmp_path / "x.db"
    n = 6000
    store = _store(path, n, collections=3, vector_scan="int8")
    vecs = _vectors(n, 16, 21)
    ids = [f"{i:064x}" for i in range(n)]
    store.add_vectors("m", ids, vecs)
    store.save_run({})
    f8 = _files(path, "m")["i8"]
    f8.write_bytes(bytes(f8.stat().st_size))  # zero codes: any search that used them would go wrong
    store.close()
    store = SqliteStore(str(path), vector_scan="int8")
    owner = np.arange(n) % 3
    for scope in (["C0"], ["C0", "C2"]):  # a third (rows scored alone), two thirds (full scan, then subset)
        allowed = np.isin(owner, [int(c[1]) for c in scope])
        for q in vecs[:4]:
            s = vecs @ q
            s[~allowed] = -np.inf
            assert _ids(store.search_vectors("m", q, scope, 10)) == [ids[i] for i in np.argsort(-s)[:10]]
    store.close()


def _store(path: Path, n: int, collections: int = 1, **kw) -> SqliteStore:
    """A store with n chunks (ids ``f"{i:064x}"``), chunk i in collection ``C{i % collections}``,
    file ``f{i // 100}.txt``, stored through ``replace_document`` (FTS rows and all)."""
    store = SqliteStore(str(path), **kw)
    for c in range(collections):
        store.add_collection(Collection(f"C{c}", str(Path(path).parent)))
    files: dict[tuple[str, str], list[int]] = {}
    for i in range(n):
        files.setdefault((f"C{i % collections}", f"f{i // 100}.txt"), []).append(i)
    for (cp, fp), members in files.items():
        chunks = [Chunk(cp, fp, j, f"{i:064x}", "h", 0, 1, f"w{i}") for j, i in enumerate(members)]
        store.replace_document(
            Document(cp, fp, "h", "k", "txt", "indexed", chunk_count=len(chunks)),
            " ".join(c.chunk_text for c in chunks),
            chunks,
        )
    return store


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _codes_from_sql(path: Path, model: str) -> bytes:
    import sqlite3

    conn = sqlite3.connect(str(path))
    rows = conn.execute("SELECT vec, dim FROM vectors WHERE model = ? ORDER BY rowid", (model,)).fetchall()
    conn.close()
    dim = rows[0][1]
    m = np.frombuffer(b"".join(r[0] for r in rows), np.float32).reshape(len(rows), dim)
    return int8_scan.quantise(m, int8_scan.int8_scale(dim)).tobytes()


def test_codes_appended_in_the_embed_pass_equal_codes_rebuilt_from_sql(tmp_path):
    path = tmp_path / "x.db"
    n = APPEND_ROWS + 2500
    store = _store(path, n)
    vecs = _vectors(n, 24, 7)
    ids = [f"{i:064x}" for i in range(n)]
    order = np.random.default_rng(8).permutation(n)
    for s in range(0, n, 512):
        part = order[s : s + 512]
        store.add_vectors("m", [ids[i] for i in part], vecs[part])
    f = _files(path, "m")
    assert APPEND_ROWS * 24 <= f["i8"].stat().st_size < n * 24  # appended during the pass
    store.save_run({})
    appended = f["i8"].read_bytes()
    assert appended == _codes_from_sql(path, "m")
    assert json.loads(f["json"].read_text())["i8_scale"] == int8_scan.int8_scale(24)
    store.close()
    for k in ("f32", "ids", "rowids", "i8", "json"):  # rebuilt from SQL by the first search
        f[k].unlink()
    other = SqliteStore(str(path), vector_scan="int8")
    q = vecs[77]
    assert _ids(other.search_vectors("m", q, None, 10)) == [ids[i] for i in np.argsort(-(vecs @ q))[:10]]
    assert f["i8"].read_bytes() == appended
    other.close()


def test_a_cache_without_codes_gets_them_from_the_float32_file(tmp_path):
    """A cache without its int8 file (or with a short one: an interrupted append): regenerated, same bytes."""
    path = tmp_path / "x.db"
    n = 4000
    store = _store(path, n, vector_scan="int8")
    vecs = _vectors(n, 16, 9)
    ids = [f"{i:064x}" for i in range(n)]
    store.add_vectors("m", ids, vecs)
    store.save_run({})
    store.close()
    f = _files(path, "m")
    want = f["i8"].read_bytes()
    state = json.loads(f["json"].read_text())
    for damage in ("missing", "short"):
        if damage == "missing":
            f["i8"].unlink()
            del state["i8_scale"]
            f["json"].write_text(json.dumps(state))
        else:
            f["i8"].write_bytes(want[:-16])
        s = SqliteStore(str(path), vector_scan="int8")
        q = vecs[5]
        assert _ids(s.search_vectors("m", q, None, 10)) == [ids[i] for i in np.argsort(-(vecs @ q))[:10]]
        assert f["i8"].read_bytes() == want
        s.add_vectors("m", [f"{n:064x}"], _vectors(1, 16, 10))  # appends after the repair stay aligned
        s.save_run({})
        assert f["i8"].read_bytes() == _codes_from_sql(path, "m")
        s.close()
        want = f["i8"].read_bytes()


def test_a_deleted_chunk_or_a_new_database_never_returns_a_stale_row(tmp_path):
    path = tmp_path / "x.db"
    n = 6000
    store = _store(path, n, collections=2, vector_scan="int8")
    vecs = _vectors(n, 32, 11)
    ids = [f"{i:064x}" for i in range(n)]
    store.add_vectors("m", ids, vecs)
    q = vecs[4321]
    assert _ids(store.search_vectors("m", q, None, 1)) == [ids[4321]]
    store.remove_document("C1", f"f{4321 // 100}.txt")  # its chunks go, their vectors stay (dead rows)
    gone = {i for i in range(n) if i // 100 == 4321 // 100 and i % 2 == 1}
    s = vecs @ q
    s[list(gone)] = -np.inf
    want = [ids[i] for i in np.argsort(-s)[:10]]
    assert _ids(store.search_vectors("m", q, None, 10)) == want
    assert not set(_ids(store.search_vectors("m", q, None, 50))) & {ids[i] for i in gone}
    # Deleted chunks crowding the query's neighbourhood (more than the rows rescored): never returned,
    # and the live rows behind them still found.
    d = vecs[0]
    assert _ids(store.search_vectors("m", d, None, 1)) == [ids[0]]
    for f in range(8):  # chunks 0..799 (files f0..f7 in both collections)
        for c in ("C0", "C1"):
            store.remove_document(c, f"f{f}.txt")
    near = vecs[:800] * 0.3 + d  # model "n": their vectors sit closest to d
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    store.add_vectors("n", ids, np.concatenate([near, vecs[800:]]))
    live = np.concatenate([near, vecs[800:]]) @ d
    live[:800] = -np.inf
    live[list(gone)] = -np.inf
    assert _ids(store.search_vectors("n", d, None, 10)) == [ids[i] for i in np.argsort(-live)[:10]]
    # A chunk id stored in a second collection: one hit per occurrence, the same float32 score.
    top = int(want[0], 16)
    store.replace_document(
        Document("C0", "dup.txt", "h", "k", "txt", "indexed", chunk_count=1),
        "dup",
        [Chunk("C0", "dup.txt", 0, want[0], "h", 0, 1, "dup")],
    )
    hits = store.search_vectors("m", q, None, 3)
    assert [h.chunk.chunk_id for h in hits[:2]] == [want[0], want[0]] and hits[0].score == hits[1].score
    assert {h.chunk.file_path for h in hits[:2]} == {"dup.txt", f"f{top // 100}.txt"}
    store.close()

    # The same path, a new database with another dimension: the old files (another db_id) are not read.
    for p in tmp_path.glob("x.db*"):
        if p.suffix in (".db", ".db-wal", ".db-shm"):
            p.unlink()
    fresh = _store(path, 3000, vector_scan="int8")
    v16 = _vectors(3000, 16, 12)
    fresh.add_vectors("m", [f"{i:064x}" for i in range(3000)], v16)
    q16 = v16[9]
    assert _ids(fresh.search_vectors("m", q16, None, 10)) == [f"{i:064x}" for i in np.argsort(-(v16 @ q16))[:10]]
    assert _files(path, "m")["i8"].stat().st_size == 3000 * 16
    # Another model in the same database: its own matrix and codes.
    v8 = _vectors(3000, 8, 13)
    fresh.add_vectors("other", [f"{i:064x}" for i in range(3000)], v8)
    assert _ids(fresh.search_vectors("other", v8[1], None, 5)) == [f"{i:064x}" for i in np.argsort(-(v8 @ v8[1]))[:5]]
    fresh.close()


def test_memory_store_int8_scan_matches_exact(tmp_path):
    n = 5000
    store = _store(":memory:", n, vector_scan="int8")  # type: ignore[arg-type]
    vecs = _vectors(n, 32, 14)
    store.add_vectors("m", [f"{i:064x}" for i in range(2000)], vecs[:2000])
    store.search_vectors("m", vecs[0], None, 10)
    store.add_vectors("m", [f"{i:064x}" for i in range(2000, n)], vecs[2000:])  # codes grow with the matrix
    m, _ = store._prepare("m")
    assert m.codes.tobytes() == int8_scan.quantise(vecs, int8_scan.int8_scale(32)).tobytes()
    for i in (3, 4999):
        assert _ids(store.search_vectors("m", vecs[i], None, 10)) == [
            f"{j:064x}" for j in np.argsort(-(vecs @ vecs[i]))[:10]
        ]
    store.close()


def test_settings_choose_the_scan_and_a_bad_value_is_refused(tmp_path):
    for name, kw, want in (
        ("a", {}, 200_000),
        ("b", {"vector_scan": "exact"}, None),
        ("c", {"vector_scan": "int8"}, 0),
        ("d", {"vector_int8_min_rows": 5}, 5),
    ):
        store = open_store(Settings(db=str(tmp_path / f"{name}.db"), **kw).validate())
        assert store._int8_min_rows == want
        store.close()
    with pytest.raises(SettingsError, match="CHUNKNAV_VECTOR_SCAN"):
        Settings(vector_scan="fast").validate()
    with pytest.raises(SettingsError, match="CHUNKNAV_VECTOR_INT8_MIN_ROWS"):
        Settings(vector_int8_min_rows=-1).validate()


def test_without_simsimd_the_scan_is_exact_and_says_why(tmp_path):
    path = tmp_path / "x.db"
    n = 4000
    store = _store(path, n)
    vecs = _vectors(n, 16, 15)
    store.add_vectors("m", [f"{i:064x}" for i in range(n)], vecs)
    store.save_run({})
    store.close()
    f8 = _files(path, "m")["i8"]
    f8.write_bytes(bytes(f8.stat().st_size))  # all-zero codes: used, they would rank nothing right
    want = [f"{i:064x}" for i in np.argsort(-(vecs @ vecs[3]))[:10]]
    code = (
        "import sys, logging, json\n"
        "sys.modules['simsimd'] = None  # an install without it: the import fails\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "import numpy as np\n"
        "from engine.store.sqlite.store import SqliteStore\n"
        f"s = SqliteStore({str(path)!r}, vector_scan='int8')\n"
        f"v = np.frombuffer(open({str(path) + '.m.f32'!r}, 'rb').read(), np.float32).reshape(-1, 16)\n"
        "print(json.dumps([h.chunk.chunk_id for h in s.search_vectors('m', v[3], None, 10)]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(r.stdout) == want
    assert "int8 vector scan off" in r.stderr and "simsimd" in r.stderr


def test_a_shared_int8_scan_gives_the_exact_float32_hits(corpus_index, monkeypatch):
    """Under a hybrid search's ``ScanShare`` the int8 scan runs in blocks taken by the
    scanning thread and a helper thread; the hits are the exact float32 search's (same ids,
    same order) with the unshared int8 search's float32 scores, bit for bit. The corpus is
    small, so the sharing threshold is lowered and blocks are 400 rows (~10 blocks)."""
    import itertools
    import threading

    import engine.store.scan_share as scan_share

    db, model, qs = corpus_index
    monkeypatch.setattr(scan_share, "MIN_ROWS", 1)
    monkeypatch.setattr(int8_scan, "_SHARE_BYTES", 1)  # 2 * RESCORE rows per block
    exact = SqliteStore(str(db), vector_scan="exact")
    fast = SqliteStore(str(db), vector_scan="int8")
    helped = 0
    try:
        m, _occ = fast._prepare(model)
        assert len(m.matrix) > 4 * int8_scan.share_rows(m.dim, int8_scan.RESCORE)
        # The helper thread's scheduling is up to the OS (a loaded machine may not run it
        # before the scan ends): the questions are asked again until it has helped, bounded.
        for q in itertools.chain(qs, (q for _ in range(20) if not helped for q in qs)):  # lazy
            want = exact.search_vectors(model, q, None, 10)
            alone = fast.search_vectors(model, q, None, 10)
            share = scan_share.ScanShare()
            t = threading.Thread(target=share.help)
            t.start()
            with share.active():
                got = fast.search_vectors(model, q, None, 10)
            t.join(5)
            assert not t.is_alive() and share.shared and share.rows == len(m.matrix)
            helped += share.helped
            assert _ids(got) == _ids(alone) == _ids(want)
            assert [h.score for h in got] == [h.score for h in alone]  # the same float32 rescoring
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)
    finally:
        exact.close()
        fast.close()
    assert helped > 0  # the helper took blocks


def test_hybrid_over_int8_scans_ranks_as_over_exact_float32(corpus_index, monkeypatch):
    """Hybrid search with the int8 scan, one list after the other or with the keyword
    thread helping the int8 scan's blocks, gives the hits, order, fused scores and ranks of a
    hybrid search over exact float32 scans (vector scores equal within float32 rounding)."""
    import engine.search.hybrid as hybrid
    import engine.store.scan_share as scan_share

    db, _model, _qs = corpus_index
    monkeypatch.setattr(hybrid, "LARGE_SCAN_ROWS", 1)
    monkeypatch.setattr(scan_share, "MIN_ROWS", 1)
    monkeypatch.setattr(int8_scan, "_SHARE_BYTES", 1)
    shares: list = []
    real_share = hybrid.ScanShare

    def spy(*a, **k):
        shares.append(real_share(*a, **k))
        return shares[-1]

    monkeypatch.setattr(hybrid, "ScanShare", spy)
    engines = {
        s: Engine(
            Settings(
                embed_model="l2_supercat_256",
                db=str(db),
                embed_provider="local",
                allowed_roots=ALLOWED_ROOTS,
                vector_scan=s,
            ).validate()
        )
        for s in ("exact", "int8")
    }

    def breakdown(out):
        return [(r.chunk.chunk_id, r.score, r.vector_rank, r.keyword_score, r.keyword_rank) for r in out.hits]

    try:
        for e in engines.values():
            e.search.search(QUERIES[0], "*", 10, "hybrid")  # records the matrix size: later searches may share
        for q in QUERIES:
            monkeypatch.setattr(hybrid, "_HYBRID_CHOICE", FixedChoice(1))
            want = engines["exact"].search.search(q, "*", 10, "hybrid")
            one = engines["int8"].search.search(q, "*", 10, "hybrid")
            monkeypatch.setattr(hybrid, "_HYBRID_CHOICE", FixedChoice(2))
            shares.clear()
            shared = engines["int8"].search.search(q, "*", 10, "hybrid")
            assert shares and shares[-1].shared, "the int8 scan was not shared"
            assert want.hits and breakdown(shared) == breakdown(one) == breakdown(want), q
            assert [r.vector_score for r in shared.hits] == [r.vector_score for r in one.hits]
            for a, b in zip(shared.hits, want.hits):
                assert (a.vector_score is None) == (b.vector_score is None)
                if a.vector_score is not None:
                    assert a.vector_score == pytest.approx(b.vector_score, abs=1e-6)
    finally:
        for e in engines.values():
            e.close()


def test_hybrid_takes_the_keyword_list_before_the_helper_leaves_and_sees_its_failure(corpus_index, monkeypatch):
    """With the keyword thread helping the int8 scan, the calling thread takes
    the keyword list from a future set before the thread helps (so it never waits for the
    helper's way out of the scan); a keyword search that raises still raises in the calling
    thread, and the next hybrid search on the same pool answers as before."""
    import engine.search.hybrid as hybrid
    import engine.store.scan_share as scan_share

    db, _model, _qs = corpus_index
    monkeypatch.setattr(hybrid, "LARGE_SCAN_ROWS", 1)
    monkeypatch.setattr(scan_share, "MIN_ROWS", 1)
    monkeypatch.setattr(int8_scan, "_SHARE_BYTES", 1)
    monkeypatch.setattr(hybrid, "_HYBRID_CHOICE", FixedChoice(2))
    eng = Engine(
        Settings(
            embed_model="l2_supercat_256",
            db=str(db),
            embed_provider="local",
            allowed_roots=ALLOWED_ROOTS,
            vector_scan="int8",
        ).validate()
    )
    try:
        eng.search.search(QUERIES[0], "*", 10, "hybrid")  # records the matrix size: later searches share
        want = [(r.chunk.chunk_id, r.score) for r in eng.search.search(QUERIES[1], "*", 10, "hybrid").hits]
        real = eng.store.search_keyword_refs

        def broken(*a, **k):
            raise RuntimeError("keyword store failed")

        monkeypatch.setattr(eng.store, "search_keyword_refs", broken)
        with pytest.raises(RuntimeError, match="keyword store failed"):
            eng.search.search(QUERIES[1], "*", 10, "hybrid")
        monkeypatch.setattr(eng.store, "search_keyword_refs", real)
        again = [(r.chunk.chunk_id, r.score) for r in eng.search.search(QUERIES[1], "*", 10, "hybrid").hits]
        assert want and again == want
    finally:
        eng.close()
