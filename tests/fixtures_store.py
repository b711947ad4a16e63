"""Fixtures: ``settings`` and ``store`` (see tests/conftest.py).

``store`` runs every contract test on SQLite, and on Postgres when a DSN is
available: ``CHUNKNAV_TEST_DSN`` read before ``clean_env`` drops it, or
``tests.pg.pg_dsn()`` (a private pgserver) when that module exists. A
missing ``tests/pg.py`` or ``engine/store/postgres/store.py`` only skips the
Postgres half, never breaks the SQLite tests.
"""

from __future__ import annotations

import importlib
import os

import pytest

from engine.config import Settings
from tests.conftest import ALLOWED_ROOTS

# Read once at import: the autouse clean_env fixture drops CHUNKNAV_* for each test.
_TEST_DSN = os.environ.get("CHUNKNAV_TEST_DSN", "")


def _pg_dsn() -> str | None:
    if _TEST_DSN:
        return _TEST_DSN
    try:
        pg = importlib.import_module("tests.pg")
    except ImportError:
        return None
    fn = getattr(pg, "pg_dsn", None)
    return fn() if fn else None


@pytest.fixture
def settings(tmp_path) -> Settings:
    """Default settings with the SQLite index in this test's tmp dir and no embedding."""
    return Settings(db=str(tmp_path / "db" / "index.db"), embed_provider="none", ocr="off",  # OCR: tests/test_ocr.py
                    allowed_roots=ALLOWED_ROOTS).validate()


@pytest.fixture(params=["sqlite", "postgres"])
def store_backend(request) -> str:
    """Backend name of the ``store`` fixture's current parameter."""
    return request.param


@pytest.fixture
def store(store_backend, tmp_path):
    """A fresh, empty store on each backend (Postgres: its own schema, dropped after)."""
    if store_backend == "sqlite":
        from engine.store.sqlite.store import SqliteStore

        s = SqliteStore(str(tmp_path / "db" / "index.db"))
        yield s
        s.close()
        return
    dsn = _pg_dsn()
    if not dsn:
        pytest.skip("no Postgres: set CHUNKNAV_TEST_DSN or provide tests/pg.py pg_dsn()")
    postgres = pytest.importorskip("engine.store.postgres.store")
    s = _open_pg(postgres, dsn, tmp_path)
    yield s
    _drop_pg(s)


def _open_pg(postgres, dsn: str, tmp_path):
    """A PostgresStore on a throwaway database of its own (the store's schemas are fixed)."""
    psycopg = pytest.importorskip("psycopg")
    name = "chunknav_t_" + os.urandom(6).hex()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as e:
        pytest.skip(f"cannot create a throwaway Postgres database: {e}")
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    test_dsn = make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})
    s = postgres.PostgresStore(test_dsn)
    s._test_cleanup = (dsn, name)
    s._test_dsn = test_dsn
    return s


def _drop_pg(store) -> None:
    dsn, name = store._test_cleanup
    store.close()
    try:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except Exception:  # best effort cleanup of a throwaway database
        pass
