"""The portable archive: export from SQLite, import into Postgres and back with the same hits
and scores; a truncated or tampered archive and a model mismatch are refused with nothing
written; an import that fails midway leaves nothing behind.

Real parts: files indexed with the bundled local model into a real SQLite index, the
private Postgres of tests/fixtures/pg.py, ``chunknav`` run in-process (``main``).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from engine.config import Settings
from engine.errors import ArchiveError
from engine.faces.cli import main
from engine.service import Engine
from engine.store.sqlite.store import SqliteStore
from engine.tools.registry import call_tool
from tests.fixtures.fixtures_store import ALLOWED_ROOTS
from tests.fixtures.pg import fresh_database, pg_dsn, pg_skip_reason

QUERIES = ("heavy iron anvils for smiths", "rockets carry satellites", "tides of the ocean moon")


def _corpus(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "anvils.md").write_text("# Anvils\n" + "Anvils are heavy iron blocks for blacksmiths. " * 40, "utf-8")
    (root / "rockets.txt").write_text("Rockets carry satellites into orbit on fuel. " * 50, "utf-8")
    (root / "sub" / "tides.txt").write_text("The moon pulls the ocean into tides twice a day. " * 45, "utf-8")


def _answers(engine: Engine, modes: tuple[str, ...] = ("keyword", "vector", "hybrid")) -> list[dict]:
    out = []
    for q in QUERIES:
        for mode in modes:
            r = call_tool(engine, "search_chunks", {"query": q, "scope": "*", "mode": mode, "limit": 10})
            assert r["searched"] is True, r
            out.append([(h["collectionPath"], h["filePath"], h["chunkIndex"], h["score"]) for h in r["hits"]])
    return out


@pytest.fixture
def exported(tmp_path):
    """``(settings, answers, archive)``: an index of three files with local vectors, the
    search answers it gives, and its archive."""
    root = tmp_path / "docs"
    _corpus(root)
    settings = Settings(db=str(tmp_path / "src.db"), embed_model="l2_supercat_256", allowed_roots=ALLOWED_ROOTS)
    eng = Engine(settings)
    try:
        eng.add_collection("Docs", str(root))
        eng.add_collection("Other", str(root / "sub"))
        s = eng.run_index()
        assert s["embedded"] > 0 and not s["embedError"]
        answers = _answers(eng)
        archive = str(tmp_path / "docs.chunknav")
        out = eng.export_archive(archive)
    finally:
        eng.close()
    assert out["documents"] == 4 and out["vectors"] > 0 and out["models"][0]["model"] == "l2_supercat_256"
    return settings, answers, archive


def _engine(**kw) -> Engine:
    return Engine(Settings(allowed_roots=ALLOWED_ROOTS, **{"embed_model": "l2_supercat_256", **kw}))


def test_export_then_import_into_sqlite_gives_the_same_hits_and_no_embedding(exported, tmp_path, monkeypatch):
    settings, answers, archive = exported
    dst = _engine(db=str(tmp_path / "dst.db"))
    try:
        out = dst.import_archive(archive)
        assert out["documents"] == 4 and out["vectorsAdded"] == out["vectors"] > 0
        assert out["settingsKeyMatches"] is True
        assert _answers(dst) == answers
        run = dst.run_index()  # the files are where the archive says: nothing to read or embed
        assert run["indexed"] == 0 and run["embedded"] == 0 and run["counts"]["unchanged"] == 4
    finally:
        dst.close()


@pytest.mark.postgres
def test_sqlite_to_postgres_and_back_gives_the_same_hits(exported, tmp_path):
    """SQLite -> archive -> Postgres -> archive -> SQLite: vector hits equal on Postgres,
    every mode equal back on SQLite."""
    if pg_dsn() is None:
        pytest.skip(f"no Postgres: {pg_skip_reason()}")
    dsn, drop = fresh_database()
    try:
        _, answers, archive = exported
        pg = _engine(dsn=dsn)
        try:
            out = pg.import_archive(archive)
            assert out["documents"] == 4 and out["vectors"] > 0
            # cosine scores are the store's own vectors: the same on both backends (keyword
            # scores are each backend's own BM25 / ts_rank, compared after the way back)
            assert _answers(pg, ("vector",)) == answers[1::3]
            back = str(tmp_path / "back.chunknav")
            assert pg.export_archive(back)["vectors"] == out["vectors"]
        finally:
            pg.close()
        again = _engine(db=str(tmp_path / "again.db"))
        try:
            again.import_archive(back)
            assert _answers(again) == answers
        finally:
            again.close()
    finally:
        drop()


def _tampered(archive: str, target: str, member: str) -> None:
    """A copy of ``archive`` with one byte of ``member`` flipped (the manifest kept)."""
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == member:
                data = data[:10] + bytes([data[10] ^ 1]) + data[11:]
            dst.writestr(info, data)


def _untouched(db: str) -> tuple[int, int, dict]:
    s = SqliteStore(db)
    try:
        return len(s.collections()), len(s.documents()), s.vector_counts()
    finally:
        s.close()


@pytest.mark.parametrize("damage", ["truncated", "tampered-chunks", "tampered-vectors", "not-an-archive"])
def test_a_damaged_archive_is_refused_and_nothing_is_written(exported, tmp_path, capsys, damage):
    _, _, archive = exported
    bad = str(tmp_path / "bad.chunknav")
    data = Path(archive).read_bytes()
    if damage == "truncated":
        Path(bad).write_bytes(data[: len(data) * 2 // 3])
    elif damage == "not-an-archive":
        Path(bad).write_bytes(b"hello")
    else:
        _tampered(archive, bad, "documents.jsonl" if damage == "tampered-chunks" else "vectors/0.f32")
    db = str(tmp_path / "dst.db")
    other = tmp_path / "other"
    other.mkdir()
    assert main(["--db", db, "collections", "add", "Mine", str(other)]) == 0
    before = _untouched(db)
    capsys.readouterr()
    assert main(["--db", db, "import", bad]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["error"] == "archive-corrupt", answer
    assert _untouched(db) == before


def test_a_model_or_dimension_mismatch_is_refused_and_nothing_is_written(exported, tmp_path, embed_stub):
    _, _, archive = exported
    db = str(tmp_path / "dst.db")
    eng = _engine(db=db, embed_provider="ollama", embed_model="other-model", embed_url=embed_stub.url)
    try:
        with pytest.raises(ArchiveError) as e:
            eng.import_archive(archive)
        assert e.value.code == "archive-model-mismatch" and "other-model" in str(e.value)
        assert eng.store.documents() == [] and eng.store.collections() == []
    finally:
        eng.close()
    # the same model name with vectors of another dimension stored here
    eng = _engine(db=db)
    try:
        import numpy as np

        v = np.ones((1, 8), np.float32) / np.sqrt(8)
        eng.store.add_vectors("l2_supercat_256", ["x"], v)
        with pytest.raises(ArchiveError) as e:
            eng.import_archive(archive)
        assert e.value.code == "archive-model-mismatch" and "256" in str(e.value) and "8" in str(e.value)
        assert eng.store.documents() == []
    finally:
        eng.close()


def test_an_import_that_fails_midway_leaves_nothing(exported, tmp_path, monkeypatch):
    _, _, archive = exported
    dst = _engine(db=str(tmp_path / "dst.db"))
    calls = {"n": 0}
    real = dst.store.replace_document

    def failing(doc, text, chunks):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        real(doc, text, chunks)

    monkeypatch.setattr(dst.store, "replace_document", failing)
    try:
        with pytest.raises(OSError):
            dst.import_archive(archive)
        assert dst.store.documents() == [] and dst.store.collections() == []
    finally:
        dst.close()


def test_export_of_one_collection_holds_only_its_rows(exported, tmp_path, capsys):
    settings, _, _ = exported
    one = str(tmp_path / "one.chunknav")
    assert main(["--db", settings.db, "export", one, "--collection", "Other"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["collections"] == ["Other"] and out["documents"] == 1
    with zipfile.ZipFile(one) as z:
        manifest = json.loads(z.read("manifest.json"))
        assert set(manifest["members"]) == {"documents.jsonl", "collections.json", "vectors/0.f32", "vectors/0.ids"}
        ids = z.read("vectors/0.ids").decode().split("\n")
    store = SqliteStore(settings.db)
    try:
        assert sorted(ids) == sorted(c.chunk_id for c in store.chunks("Other", "tides.txt"))
    finally:
        store.close()
    assert main(["--db", settings.db, "export", one, "--collection", "Nope"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == "not-found"
