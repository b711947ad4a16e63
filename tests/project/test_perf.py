"""Correctness of the performance paths: same answers, fewer costs. No timings here.

Validators built once, one snippet regex per query, BLAS pinned to one
thread with the two-thread choice made from measurements, scoped scans over
runs of matrix rows, and the read path importing neither sqlite_utils (nor
pandas) nor an embedding provider.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from engine.store import threads as blas
from engine.tools import registry as tools
from engine.config import Settings
from engine.values import Collection
from engine.search.snippets import _first_start
from engine.store.sqlite.store import SqliteStore
from engine.tools.registry import Engine, ToolArgumentError, call_tool
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]


# -- validators -------------------------------------------------------------------------
def test_each_tool_has_one_validator_built_on_first_use():
    engine = Engine(Settings(db=":memory:", embed_provider="none").validate())
    call_tool(engine, "get_chunk", {"collectionPath": "A", "filePath": "x.txt", "chunkIndex": 0})
    assert "get_chunk" in tools._VALIDATORS  # the first call builds the tool's validator
    with pytest.raises(ToolArgumentError, match="chunkIndex"):
        call_tool(engine, "get_chunk", {"collectionPath": "A", "filePath": "x.txt", "chunkIndex": 0.5})
    for tool in tools.REGISTRY.values():  # every schema is a valid schema (checked when built)
        tools._validator(tool)
    assert set(tools._VALIDATORS) == set(tools.REGISTRY)
    before = dict(tools._VALIDATORS)
    for _ in range(3):
        call_tool(engine, "get_chunk", {"collectionPath": "A", "filePath": "x.txt", "chunkIndex": 0})
    assert all(tools._VALIDATORS[k] is v for k, v in before.items())
    with pytest.raises(ToolArgumentError, match="chunkIndex"):
        call_tool(engine, "get_chunk", {"collectionPath": "A", "filePath": "x.txt", "chunkIndex": -1})
    with pytest.raises(ToolArgumentError, match="filePath"):
        call_tool(engine, "get_chunk", {"collectionPath": "A", "chunkIndex": 0})
    with pytest.raises(ToolArgumentError, match="bogus"):
        call_tool(engine, "search", {"query": "x", "bogus": 1})
    engine.close()


# -- snippets ----------------------------------------------------------------------------
def _first_per_term(text: str, terms: tuple[str, ...]) -> int:
    """A plain snippet anchor: one regex per term per hit (the reference)."""
    low = text.lower()
    pos = -1
    for t in sorted(terms, key=len, reverse=True):
        m = re.search(r"(?<!\w)" + re.escape(t), low)
        if m and (pos < 0 or m.start() < pos):
            pos = m.start()
    return pos


_WORDS = st.sampled_from(["king", "kin", "the", "he", "a.b", "naïve", "x+y", "über", "ing", "queen"])


@hsettings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_WORDS, st.text(" \n,.", min_size=1, max_size=3)), max_size=200),
    st.lists(_WORDS, max_size=4, unique=True),
)
def test_the_snippet_anchor_is_where_one_regex_per_term_found_it(parts, terms):
    text = " ".join(parts) * 3
    assert _first_start(text.lower(), tuple(terms)) == _first_per_term(text, tuple(terms))


# -- BLAS threads --------------------------------------------------------------------------
def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_scans_pin_blas_to_one_thread_and_only_large_full_scans_may_use_two():
    with blas.scan_threads(1000, full=False) as n:
        assert n == 1
    assert _blas_threads() == {1}
    with blas.scan_threads(blas.LARGE_SCAN_ROWS - 1, full=True) as n:
        assert n == 1
    with blas.scan_threads(blas.LARGE_SCAN_ROWS * 5, full=False) as n:
        assert n == 1
    assert _blas_threads() == {1}


def test_a_large_two_thread_scan_leaves_two_and_every_other_scan_sets_one(monkeypatch):
    """A large full scan on two threads leaves BLAS at two (no setter call after it); a small,
    scoped or int8 scan, and ``one_thread``, run with one (checked inside the block, where the
    product runs)."""
    monkeypatch.setattr(blas, "_choice", blas.FixedChoice(2))
    for entry in (
        lambda: blas.scan_threads(1000, full=False),
        lambda: blas.scan_threads(10**6, full=False),
        lambda: blas.int8_threads(10**6),
        None,
    ):
        with blas.scan_threads(blas.LARGE_SCAN_ROWS, full=True) as n:
            assert n == 2 and _blas_threads() == {2}
        assert _blas_threads() == {2}
        with blas.scan_threads(blas.LARGE_SCAN_ROWS * 2, full=True):  # back to back: still two
            assert _blas_threads() == {2}
        if entry is None:
            blas.one_thread()
            assert _blas_threads() == {1}
            continue
        with entry():
            assert _blas_threads() == {1}
        assert _blas_threads() == {1}


def test_thread_choice_uses_the_faster_count_and_retries_the_other():
    c = blas.ThreadChoice(cores=2)
    first, second = c.pick(), None
    c.record(first, 0.01, 100_000)
    second = c.pick()
    assert {first, second} == {1, 2}
    c.record(second, 0.05, 100_000)  # slower
    picks = []
    for _ in range(2 * blas.EXPLORE_EVERY):
        p = c.pick()
        picks.append(p)
        c.record(p, 0.01 if p == first else 0.05, 100_000)
    assert picks.count(first) > picks.count(second) >= 1
    assert blas.ThreadChoice(cores=1).pick() == 1


@pytest.mark.parametrize("scope_kind", ["one", "scattered", "all"])
def test_scoped_scans_over_runs_return_the_exact_top(tmp_path, scope_kind):
    """Collections interleaved in the matrix (files added in turns): the scan
    over runs and gathered blocks gives numpy's exact top 10."""
    store = SqliteStore(str(tmp_path / "x.db"))
    rng = np.random.default_rng(3)
    names = [f"C{i}" for i in range(4)]
    for n in names:
        store.add_collection(Collection(n, str(tmp_path)))
    conn = store._conn()
    conn.execute("BEGIN")
    k = 0
    owner = []
    for turn in range(40):
        for ci, name in enumerate(names):
            m = int(rng.integers(1, 150))  # runs shorter and longer than the gather threshold
            for j in range(m):
                cid = f"{k:064x}"
                conn.execute(
                    "INSERT INTO chunks(collection_path, file_path, chunk_index, chunk_id, content_hash, "
                    'start, "end", chunk_text, last_modified) VALUES (?, ?, ?, ?, ?, 0, 1, ?, 0)',
                    (name, f"f{turn}.txt", j, cid, "h", f"w{k}"),
                )
                owner.append(ci)
                k += 1
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_gen'")
    conn.execute("COMMIT")
    vecs = rng.standard_normal((k, 16), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.add_vectors("m", [f"{i:064x}" for i in range(k)], vecs)
    scope = {"one": ["C2"], "scattered": ["C0", "C3"], "all": None}[scope_kind]
    owner_arr = np.asarray(owner)
    allowed = np.ones(k, bool) if scope is None else np.isin(owner_arr, [names.index(c) for c in scope])
    for q in rng.standard_normal((5, 16), dtype=np.float32):
        q /= np.linalg.norm(q)
        s = vecs @ q
        s[~allowed] = -np.inf
        want = [f"{i:064x}" for i in np.argsort(-s)[:10]]
        got = [h.chunk.chunk_id for h in store.search_vectors("m", q, scope, 10)]
        assert got == want
    store.close()


# -- lazy imports on the read path ------------------------------------------------------------
def test_a_chunk_read_imports_no_sqlite_utils_pandas_or_provider(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.txt").write_text("hello world " * 200, "utf-8")
    db = tmp_path / "x.db"
    engine = Engine(Settings(db=str(db), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate())
    engine.add_collection("A", str(root))
    engine.run_index()
    engine.close()
    code = (
        "import sys\n"
        "from engine.faces.cli import main\n"
        f"assert main(['--db', {str(db)!r}, 'get-chunk', 'A', 'a.txt', '0']) == 0\n"
        "bad = [m for m in ('sqlite_utils', 'pandas', 'requests', 'wordllama', 'engine.embed') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)


def test_the_deferred_local_model_names_are_the_local_models():
    from engine import service
    from engine.embed import DEFAULT_LOCAL_MODEL, LOCAL_MODELS

    assert service._LOCAL_MODELS == tuple(LOCAL_MODELS)
    assert service._DEFAULT_LOCAL_MODEL == DEFAULT_LOCAL_MODEL


@pytest.mark.slow
def test_an_unchanged_index_run_imports_no_numpy_jsonschema_pymupdf_or_provider(tmp_path):
    """The no-op ``chunknav index`` (and a get-chunk of PDF chunks) keeps heavy imports off."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.txt").write_text("hello world " * 200, "utf-8")
    (root / "b.pdf").write_bytes((REPO / "tests/corpus/pdf/tracemonkey.pdf").read_bytes())
    db = tmp_path / "x.db"
    env = {**os.environ, "CHUNKNAV_DB": str(db), "CHUNKNAV_ALLOWED_ROOTS": ALLOWED_ROOTS}
    env.pop("EMBED_PROVIDER", None)  # the default provider: local
    add = [sys.executable, "-m", "engine", "collections", "add", "A", str(root)]
    subprocess.run(add, cwd=REPO, env=env, check=True, capture_output=True)
    subprocess.run(
        [sys.executable, "-m", "engine", "index"], cwd=REPO, env=env, check=True, capture_output=True
    )  # text and vectors (the local model)
    heavy = "('numpy', 'jsonschema', 'pymupdf', 'requests', 'sqlite_utils', 'pandas', 'wordllama', 'engine.embed')"
    code = (
        "import sys\n"
        "from engine.faces.cli import main\n"
        "assert main(['index']) == 0\n"
        f"bad = [m for m in {heavy} if m in sys.modules]\n"
        "assert not bad, bad\n"
        "assert main(['get-chunk', 'A', 'b.pdf', '3']) == 0\n"
        f"bad = [m for m in {heavy} if m in sys.modules and m != 'jsonschema']\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"regions"' in out.stdout or '"bbox"' in out.stdout  # the PDF chunk (with rects) was read


# -- warm first search: the embed pass appends to the matrix files -----------------------------
def _store_with_chunks(path: Path, n: int) -> SqliteStore:
    store = SqliteStore(str(path))
    store.add_collection(Collection("A", str(path.parent)))
    conn = store._conn()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO chunks(collection_path, file_path, chunk_index, chunk_id, content_hash, "
        'start, "end", chunk_text, last_modified) VALUES (?, ?, ?, ?, ?, 0, 1, ?, 0)',
        (("A", f"f{i // 100}.txt", i % 100, f"{i:064x}", "h", f"w{i}") for i in range(n)),
    )
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'chunks_gen'")
    conn.execute("COMMIT")
    return store


def _matrix_from_sql(path: Path, model: str) -> tuple[bytes, bytes, bytes]:
    import sqlite3

    from engine.store.sqlite.vectors import id_bytes

    conn = sqlite3.connect(str(path))
    rows = conn.execute("SELECT rowid, chunk_id, vec FROM vectors WHERE model = ? ORDER BY rowid", (model,)).fetchall()
    conn.close()
    return (
        b"".join(r[2] for r in rows),
        b"".join(id_bytes(r[1]) for r in rows),
        np.asarray([r[0] for r in rows], np.int64).tobytes(),
    )


def _cache_files(path: Path, model: str) -> tuple[bytes, bytes, bytes]:
    return tuple(Path(f"{path}.{model}.{k}").read_bytes() for k in ("f32", "ids", "rowids"))  # type: ignore


def test_embed_pass_appends_to_the_matrix_so_the_first_search_rebuilds_nothing(tmp_path):
    from engine.store.sqlite.vectors import APPEND_ROWS

    path = tmp_path / "x.db"
    n = APPEND_ROWS + 2500  # crosses the append threshold once, the rest waits for the run's end
    store = _store_with_chunks(path, n)
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((n, 8), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"{i:064x}" for i in range(n)]
    order = rng.permutation(n)  # the embed pass adds in its own order, 512 at a time
    for s in range(0, n, 512):
        part = order[s : s + 512]
        store.add_vectors("m", [ids[i] for i in part], vecs[part])
    store.add_vectors("m", ids[:10], vecs[:10])  # all present already: nothing added
    size = Path(f"{path}.m.f32").stat().st_size  # appended during the pass, the newest rows still pending
    assert APPEND_ROWS * 8 * 4 <= size < n * 8 * 4
    store.save_run({"done": True})  # the end of a run: the rest appended, the row table persisted
    assert _cache_files(path, "m") == _matrix_from_sql(path, "m")
    occ_file = Path(f"{path}.m.occ.npz")
    stamp = (occ_file.stat().st_mtime_ns, Path(f"{path}.m.json").read_bytes())
    store.close()

    other = SqliteStore(str(path))  # "another process": its first search
    q = vecs[123]
    hits = other.search_vectors("m", q, None, 10)
    assert hits[0].chunk.chunk_id == ids[123]
    assert [h.chunk.chunk_id for h in hits] == [ids[i] for i in np.argsort(-(vecs @ q))[:10]]
    assert (occ_file.stat().st_mtime_ns, Path(f"{path}.m.json").read_bytes()) == stamp  # nothing rebuilt
    other.close()


def test_an_index_run_leaves_the_matrix_files_so_the_first_search_rebuilds_nothing(tmp_path):
    """Through the real indexer and the local model: the embed pass stores vectors inside
    store.batch() (vectors + their text notes in one commit); the rows still reach the matrix
    files after that commit, so a new process's first search reads them and rewrites nothing."""
    import shutil

    from engine.embed import LOCAL_MODEL

    root = tmp_path / "docs"
    root.mkdir()
    for p in sorted((Path(__file__).resolve().parents[1] / "corpus" / "text").glob("*.txt"))[:6]:
        shutil.copy(p, root / p.name)
    db = tmp_path / "index.db"
    eng = Engine(
        Settings(
            embed_model="l2_supercat_256", db=str(db), allowed_roots=ALLOWED_ROOTS, embed_provider="local"
        ).validate()
    )
    eng.add_collection("Docs", str(root))
    summary = eng.run_index(["Docs"])
    assert summary["embedded"] > 0
    eng.close()
    assert _cache_files(db, LOCAL_MODEL) == _matrix_from_sql(db, LOCAL_MODEL)  # written by the run
    stamp = {k: Path(f"{db}.{LOCAL_MODEL}.{k}").stat().st_mtime_ns for k in ("f32", "json", "occ.npz")}
    eng = Engine(
        Settings(
            embed_model="l2_supercat_256", db=str(db), allowed_roots=ALLOWED_ROOTS, embed_provider="local"
        ).validate()
    )
    env = call_tool(eng, "search_chunks", {"query": "the", "scope": "*", "mode": "vector"})
    assert env["count"] > 0
    eng.close()
    assert {k: Path(f"{db}.{LOCAL_MODEL}.{k}").stat().st_mtime_ns for k in stamp} == stamp  # nothing rebuilt


def test_vectors_of_a_rolled_back_batch_never_reach_the_matrix_files(tmp_path):
    path = tmp_path / "x.db"
    store = _store_with_chunks(path, 40)
    vecs = np.eye(40, 8, dtype=np.float32) + 0.01
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"{i:064x}" for i in range(40)]
    store.add_vectors("m", ids[:20], vecs[:20])
    with pytest.raises(RuntimeError):
        with store.batch():
            store.add_vectors("m", ids[20:], vecs[20:])
            raise RuntimeError("the batch fails after the insert")
    with store.batch():  # a committed batch hands its rows over after the commit
        store.add_vectors("m", ids[20:30], vecs[20:30])
    store.save_run({})
    assert _cache_files(path, "m") == _matrix_from_sql(path, "m")
    assert len(Path(f"{path}.m.ids").read_bytes()) == 30 * 32
    store.close()


def test_appends_from_two_writers_still_match_sql(tmp_path):
    path = tmp_path / "x.db"
    n = 3000
    a = _store_with_chunks(path, n)
    b = SqliteStore(str(path))  # a second writer on the same file
    rng = np.random.default_rng(6)
    vecs = rng.standard_normal((n, 8), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"{i:064x}" for i in range(n)]
    for s in range(0, n, 300):
        w = a if (s // 300) % 2 == 0 else b
        w.add_vectors("m", ids[s : s + 300], vecs[s : s + 300])
        if s == 1200:
            a.save_run({})  # a's part so far goes to the files; b's rows are not a chain for a
    a.save_run({})
    b.save_run({})
    a.close()
    b.close()
    c = SqliteStore(str(path))
    q = vecs[2999]
    assert [h.chunk.chunk_id for h in c.search_vectors("m", q, None, 5)] == [
        ids[i] for i in np.argsort(-(vecs @ q))[:5]
    ]
    assert _cache_files(path, "m") == _matrix_from_sql(path, "m")
    c.close()


_UNI = st.sampled_from(["king", "kin", "ing", "é", "über", "ß", "İ", "ǅ", "٣", "_x", "x_", "東京", "京", "a1", "1a"])


@hsettings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(_UNI, st.text(" \n,._-·'’\u00a0\u200b", min_size=1, max_size=2)), max_size=120),
    st.lists(st.one_of(_UNI, st.text(min_size=1, max_size=3)), min_size=1, max_size=5, unique=True),
)
def test_the_first_term_start_is_the_regex_alternations_leftmost_match(parts, terms):
    """Snippets find the first term with str.find, not a compiled alternation;
    the position must be the regex's, for any text and any terms (Unicode word boundaries too)."""
    import re as _re

    from engine.search.searcher import _first_start

    low = "".join(parts).lower()
    alts = "|".join(_re.escape(t) for t in sorted(terms, key=len, reverse=True))
    m = _re.search(r"(?<!\w)(?:" + alts + ")", low)
    assert _first_start(low, tuple(terms)) == (m.start() if m else -1)
