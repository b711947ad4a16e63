"""The Postgres store's faults: a lost server, a full disk and a pool that cannot hand out a connection.

Owns: ``pg_fault`` (one psycopg error -> the engine's ``StoreFaultError``, or None for a
bug such as a constraint or bad SQL) and ``StorePool``, the store's connection pool:
every connection it hands out is checked first (a connection the server dropped, by a
restart at night for example, is replaced, so a server that is back is reconnected to),
a wait for a connection that lasts ``PROBE_AFTER_S`` asks the server directly whether it
answers at all (it does not: ``index-unavailable`` at once, not after the pool's 30 s),
and an error raised while a connection is used is classified here, once: the server gone
(``57P01`` admin shutdown, ``57P02`` crash, ``57P03`` starting, class ``08`` connection
errors, a connection that broke) is ``StoreUnavailableError``, ``53100`` disk full is
``DiskFullError``. The same words as the SQLite store's (``engine.store.sqlite.connections``).

Imports psycopg, psycopg_pool, ``engine.errors`` and the schema module's connection type; never a face.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Any, Iterator

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from engine.errors import DiskFullError, StoreFaultError, StoreUnavailableError
from engine.store.postgres.schema import DictConnection

__all__ = ["StorePool", "pg_fault", "where", "PROBE_AFTER_S"]

#: Seconds a wait for a pooled connection lasts before the server is asked directly.
PROBE_AFTER_S = 2.0
#: Seconds the direct question may take (libpq ``connect_timeout``, whole seconds).
_PROBE_TIMEOUT_S = 2


def where(dsn: str) -> str:
    """The server and database of ``dsn`` for people (``host:port/db``), never its password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "the configured database"
    host = info.get("host") or "localhost"
    port = f":{info['port']}" if info.get("port") else ""
    return f"{host}{port}/{info.get('dbname') or ''}"


def pg_fault(e: BaseException, dsn: str) -> StoreFaultError | None:
    """The classified fault of a psycopg (or pool) error on the database of ``dsn``, or None."""
    if isinstance(e, StoreFaultError):
        return e
    at = where(dsn)
    if isinstance(e, PoolTimeout):
        return StoreUnavailableError(f"the database at {at} handed out no connection in time: {e}")
    if not isinstance(e, psycopg.Error):
        return None
    state = getattr(e, "sqlstate", None) or ""
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if state == "53100":
        return DiskFullError(f"the disk of the database at {at} is full ({first})")
    if state.startswith(("08", "57P")) or (isinstance(e, psycopg.OperationalError) and not state):
        return StoreUnavailableError(f"the database at {at} was lost ({first})")
    return None


class StorePool(ConnectionPool[DictConnection]):
    """The store's ``ConnectionPool``: connections checked when handed out, a server that does
    not answer told within about ``PROBE_AFTER_S`` + 2 s, errors classified (``pg_fault``).

    Args:
        dsn: the database (also asked directly when a wait for a connection lasts).
        **kwargs: as for ``psycopg_pool.ConnectionPool``.
    """

    def __init__(self, dsn: str, **kwargs: Any) -> None:
        pool_log = logging.getLogger("psycopg.pool")
        if pool_log.level == logging.NOTSET:  # its reconnect attempts: the store says it once, classified
            pool_log.setLevel(logging.ERROR)
        super().__init__(dsn, check=ConnectionPool.check_connection, **kwargs)
        self._dsn = dsn

    def getconn(self, timeout: float | None = None) -> DictConnection:
        """A connection, waiting up to ``timeout`` (default the pool's) while the pool is busy.

        Raises:
            StoreUnavailableError: the server does not answer (asked after ``PROBE_AFTER_S``
                of waiting), or no connection came in time.
        """
        total = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + total
        try:
            return super().getconn(timeout=min(PROBE_AFTER_S, total))
        except PoolTimeout as e:
            if not self._answers():
                raise StoreUnavailableError(
                    f"the database at {where(self._dsn)} does not answer: no connection in "
                    f"{PROBE_AFTER_S:g} s and a direct connection was refused"
                ) from e
        try:
            return super().getconn(timeout=max(0.1, deadline - time.monotonic()))
        except PoolTimeout as e:
            raise StoreUnavailableError(
                f"the database at {where(self._dsn)} answers but handed out no connection in {total:g} s "
                "(every pooled connection stayed busy)"
            ) from e

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[DictConnection]:
        """``ConnectionPool.connection`` with every psycopg error of a lost server or a full disk
        raised as its ``StoreFaultError`` (``pg_fault``); others as they are."""
        try:
            with super().connection(timeout=timeout) as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as e:
            fault = pg_fault(e, self._dsn)
            if fault is None:
                raise
            raise fault from e

    def _answers(self) -> bool:
        """True when a direct connection to the server succeeds within ``_PROBE_TIMEOUT_S``."""
        try:
            psycopg.connect(self._dsn, connect_timeout=_PROBE_TIMEOUT_S, autocommit=True).close()
        except psycopg.Error:
            return False
        return True
