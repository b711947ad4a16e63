"""PDF passwords: tried as given, then SASLprep-normalised (RFC 4013); the index stores only a
reference (env:NAME / file:/path), never the password; a plain password found in a store
is blanked on open (SQLite here; Postgres in tests/store/test_postgres.py when configured);
``index_status`` never shows a password."""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine.faces.cli import main
from engine.config import Settings
from engine.errors import EncryptedError, SettingsError
from engine.extract import extract
from engine.extract.saslprep import saslprep
from engine.passwords import check_password_ref, resolve_password
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

TYPED = "S\u00aaSL\u00adprep"  # as the user knows it: feminine ordinal, soft hyphen
PREPARED = "SaSLprep"  # RFC 4013: NFKC(ª) = a, U+00AD mapped to nothing


def _r6_pdf(path, password: str) -> None:
    """An AES-256 (revision 6) PDF whose user password is ``password``."""
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "confidential turbine schedule")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw="owner-" + password)
    doc.close()


def test_saslprep_rfc4013_examples():
    assert saslprep("I\u00adX") == "IX"
    assert saslprep("user") == "user" and saslprep("USER") == "USER"
    assert saslprep("\u00aa") == "a" and saslprep("\u2168") == "IX"
    assert saslprep("a\u00a0b") == "a b"  # non-ASCII space -> space
    with pytest.raises(ValueError):
        saslprep("\u0007")
    with pytest.raises(ValueError):
        saslprep("\u0627\u0031")  # RandALCat must start and end the string
    assert saslprep(TYPED) == PREPARED


def test_r6_password_typed_as_known_opens(tmp_path):
    pdf = tmp_path / "r6.pdf"
    _r6_pdf(pdf, PREPARED)
    import pymupdf

    with pymupdf.open(pdf) as doc:  # MuPDF alone refuses the typed form
        assert doc.needs_pass and not doc.authenticate(TYPED)
    x = extract(pdf, TYPED)
    assert "confidential turbine schedule" in x.text and x.metadata["encrypted"] is True
    assert "confidential" in extract(pdf, PREPARED).text
    with pytest.raises(EncryptedError, match="wrong password"):
        extract(pdf, "SaSLprep-wrong")


def test_password_refs():
    assert check_password_ref("env:PDF_PW") == "env:PDF_PW"
    assert check_password_ref("file:rel/pw.txt").startswith("file:/")
    for bad in ("hunter2", "env:", "env:1X", "env:A-B", "file:"):
        with pytest.raises(SettingsError):
            check_password_ref(bad)


def test_resolve_reads_env_and_file_at_use(tmp_path, monkeypatch):
    monkeypatch.setenv("PDF_PW_TEST", "from-env")
    assert resolve_password("env:PDF_PW_TEST") == "from-env"
    assert resolve_password("env:PDF_PW_UNSET") is None
    secret = tmp_path / "pw.txt"
    secret.write_text("from-file\nsecond line ignored\n", "utf-8")
    assert resolve_password(f"file:{secret}") == "from-file"
    assert resolve_password(f"file:{tmp_path}/missing") is None
    assert resolve_password("plain-legacy") is None  # not a reference: never used as a password


def test_collection_with_password_file_indexes_and_stores_no_password(tmp_path):
    root = tmp_path / "files"
    root.mkdir()
    _r6_pdf(root / "r6.pdf", PREPARED)
    secret = tmp_path / "secrets" / "reports.pw"
    secret.parent.mkdir()
    secret.write_text(TYPED + "\n", "utf-8")
    db = tmp_path / "index" / "index.db"
    engine = Engine(Settings(allowed_roots=ALLOWED_ROOTS, db=str(db), embed_provider="none", ocr="off").validate())
    try:
        engine.add_collection("R", str(root), f"file:{secret}")
        summary = engine.run_index()
        assert summary["indexed"] == 1 and not summary["failed"], summary
        r = call_tool(engine, "search_chunks", {"query": "turbine schedule", "scope": "R", "mode": "keyword"})
        assert r["count"] == 1
        status = call_tool(engine, "index_status", {"probe": False})
        assert status["collections"][0]["passwordRef"] == f"file:{secret}"
        assert TYPED not in json.dumps(status) and PREPARED not in json.dumps(status)
    finally:
        engine.close()
    raw = db.read_bytes() + b"".join(p.read_bytes() for p in db.parent.iterdir() if p.is_file())
    for form in (TYPED, PREPARED):
        assert form.encode("utf-8") not in raw
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT password FROM collections").fetchone() == (f"file:{secret}",)


def test_plain_password_of_an_old_index_is_blanked(tmp_path):
    db = tmp_path / "index.db"
    root = tmp_path / "files"
    root.mkdir()
    e = Engine(Settings(allowed_roots=ALLOWED_ROOTS, db=str(db), embed_provider="none").validate())
    e.store.collections()  # opens the store: creates the schema
    e.close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO collections(collection_path, root, password) VALUES ('Old', ?, 'hunter2')", (str(root),)
        )
        conn.execute(
            "INSERT INTO collections(collection_path, root, password) VALUES ('New', ?, 'env:PW')", (str(root),)
        )
    engine = Engine(Settings(allowed_roots=ALLOWED_ROOTS, db=str(db), embed_provider="none").validate())
    try:
        got = {c.collection_path: c.password_ref for c in engine.store.collections()}
        assert got == {"Old": None, "New": "env:PW"}
    finally:
        engine.close()
    with sqlite3.connect(db) as conn:
        assert dict(conn.execute("SELECT collection_path, password FROM collections")) == {"Old": None, "New": "env:PW"}


def test_cli_refuses_a_plain_password(tmp_path, capsys):
    root = tmp_path / "files"
    root.mkdir()
    db = str(tmp_path / "i.db")
    assert main(["--db", db, "collections", "add", "X", str(root), "--password", "hunter2"]) == 2
    assert "--password-env" in capsys.readouterr().err
    assert main(["--db", db, "collections", "add", "X", str(root), "--password-env", "PDF_PW"]) == 0
    assert json.loads(capsys.readouterr().out)["passwordRef"] == "env:PDF_PW"


def test_legacy_plain_password_blanked_on_open_on_every_store(store, store_backend, tmp_path):
    """Both stores: a plain password found in the collections table is blanked when the store
    opens again; references survive; the schema keeps working (add/list collections)."""
    from engine.values import Collection

    store.add_collection(Collection("Ref", str(tmp_path), "env:PDF_PW"))
    store.add_collection(Collection("Old", str(tmp_path), None))
    if store_backend == "sqlite":
        from engine.store.sqlite.store import SqliteStore

        path = str(tmp_path / "db" / "index.db")
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE collections SET password = 'hunter2' WHERE collection_path = 'Old'")
        store.close()
        again = SqliteStore(path)
    else:
        import psycopg

        from engine.store.postgres.store import PostgresStore

        with psycopg.connect(store._test_dsn, autocommit=True) as conn:
            conn.execute("UPDATE chunknav.collections SET password = 'hunter2' WHERE collection_path = 'Old'")
        again = PostgresStore(store._test_dsn)
    try:
        assert {c.collection_path: c.password_ref for c in again.collections()} == {"Old": None, "Ref": "env:PDF_PW"}
        again.add_collection(Collection("New", str(tmp_path), "file:/etc/chunknav/pw"))
        assert again.get_collection("New").password_ref == "file:/etc/chunknav/pw"
        if store_backend == "postgres":
            import psycopg

            with psycopg.connect(store._test_dsn) as conn:
                raw = dict(conn.execute("SELECT collection_path, password FROM chunknav.collections").fetchall())
            assert raw["Old"] is None
        else:
            with sqlite3.connect(str(tmp_path / "db" / "index.db")) as conn:
                assert conn.execute("SELECT password FROM collections WHERE collection_path = 'Old'").fetchone() == (
                    None,
                )
    finally:
        if store_backend == "postgres":
            again.close()
