"""The SQLite store's connections: one per thread, the write transactions, batches and counters.

Owns: ``Connections``, the connection state of one ``SqliteStore`` file (or
``":memory:"``): a ``sqlite3`` connection per thread (``threading.local``; one
shared connection behind the write lock for ``:memory:``), the write
transaction (``BEGIN IMMEDIATE``, or a savepoint inside ``batch``), the
counters in ``meta`` that every write bumps (``chunks_gen``,
``vectors_gen:<model>``), and reads remembered while nothing changed
(``unchanged``). Readers never wait for the writer (WAL) and every multi-row read
is one statement, so it sees one snapshot.

Read-only (``read_only_reason``): an existing file this process cannot write (the
file, its directory, or its ``-wal``/``-shm`` not writable: a shared snapshot, a
read-only mount) is opened with SQLite's ``mode=ro`` URI and nothing is written.
Where the ``-wal``/``-shm`` cannot be created (the directory is not writable) and
there is no write-ahead log to read (a checkpointed index has none), it is opened
``immutable=1`` too: no lock, no journal, no ``-shm``
(https://www.sqlite.org/wal.html#readonly). A log left with its ``-shm`` is read
through them as they are; a log without its ``-shm`` cannot be read there. Every
write on a read-only file raises ``StoreUnavailableError`` saying why.

Imports ``engine.errors`` only; no schema, no rows, never a face.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from engine.errors import DiskFullError, StoreBusyError, StoreFaultError, StoreUnavailableError

__all__ = ["Connections", "read_only_reason", "store_fault", "free_bytes", "CHECKPOINT_WAL_BYTES"]

_PAGE_SIZE = 16384
#: Bytes of the database file each connection reads through a memory map (SQLite's
#: ``mmap_size``; capped by the library at ~2 GB): pages come from the OS page cache
#: without a pread and a private copy per connection: keyword search at 100k chunks
#: measured ~20% faster with it, a 10-hit fetch 0.088 ms instead of 0.105 ms
#: (docs/decisions/sqlite-mmap.md).
_MMAP_BYTES = 0x7FFF0000


def read_only_reason(path: str) -> str | None:
    """Why this process cannot write the existing SQLite file ``path``, or None (it can, or
    ``path`` is new or ``":memory:"``). Asked of the kernel (``access``), so a read-only
    mount, file modes and a process without the capability to override them all count."""
    if path == ":memory:" or not os.path.exists(path):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its directory {folder} is not writable"
    for name in (path, path + "-wal", path + "-shm"):
        if os.path.exists(name) and not os.access(name, os.W_OK):
            return f"{name} is not writable"
    return None


#: Write-ahead log bytes from which a committed batch checkpoints and truncates it (measured in
#: docs/decisions/wal-checkpoints.md with bench/index_disk_peak.py).
CHECKPOINT_WAL_BYTES = 4 << 20
#: SQLite's primary result codes this module classifies (https://www.sqlite.org/rescode.html).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 5, 6, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26
#: Bytes of a ``-shm`` file's header (two copies of the WAL index header and the checkpoint info).
_SHM_HEADER_BYTES = 136
#: Free bytes under which an existing file is opened read-only at once: a writable open makes a
#: ``-shm`` (32 KiB) and a ``-wal`` that grows by pages, and would fail half-way on a full disk.
_OPEN_NEEDS_BYTES = 256 * 1024
#: Free bytes under which an I/O error of a write is taken for a full disk (a few pages).
_FULL_BELOW_BYTES = 4 * _PAGE_SIZE


def free_bytes(path: str) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem holding ``path`` (a file
    or directory; ``statvfs`` ``f_bavail``), or None when it cannot be asked."""
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def store_fault(e: BaseException, path: str) -> StoreFaultError | None:
    """The classified fault of a SQLite error raised by a write or an open of ``path``, or None
    for an error that is a bug (a constraint, bad SQL): that one is raised as it is.

    ``SQLITE_FULL``, or an I/O error (``disk I/O error``: a ``-shm`` or journal that cannot
    grow) while the filesystem has less than a few pages free, or ``OSError`` ENOSPC/EDQUOT:
    ``DiskFullError``. Busy/locked: ``StoreBusyError``. Another I/O error, a read-only,
    corrupt or unopenable file: ``StoreUnavailableError``. The message names the file and
    SQLite's own words.
    """
    if isinstance(e, StoreFaultError):
        return e
    if isinstance(e, OSError):
        import errno

        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return DiskFullError(f"the disk holding the index at {path} is full ({e.strerror or e})")
        return StoreUnavailableError(f"the index at {path} cannot be written: {e.strerror or e}")
    if not isinstance(e, sqlite3.Error):
        return None
    code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF
    if code == _SQLITE_FULL or (code == _SQLITE_IOERR and (free_bytes(path) or 0) < _FULL_BELOW_BYTES):
        return DiskFullError(f"the disk holding the index at {path} is full ({e})")
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreBusyError(f"the index {path} is locked by another writer: {e}")
    if code in (_SQLITE_IOERR, _SQLITE_READONLY, _SQLITE_CORRUPT, _SQLITE_CANTOPEN, _SQLITE_NOTADB):
        return StoreUnavailableError(f"the index at {path} failed: {e}")
    return None


def _rollback(conn: sqlite3.Connection, *statements: str) -> None:
    """Run the rollback ``statements`` where a transaction is still open, ignoring their own
    errors (``no such savepoint``, ``cannot rollback - no transaction is active``: SQLite may
    have rolled back already): the first cause is what the caller raises."""
    for sql in statements:
        if not conn.in_transaction:
            return
        try:
            conn.execute(sql)
        except sqlite3.Error:
            return


def _read_only_uri(path: str, can_create: bool | None = None) -> str:
    """The ``file:`` URI that opens ``path`` for reading only (``mode=ro``), ``immutable=1`` when
    the ``-wal``/``-shm`` files cannot be made and no write-ahead log waits to be read.

    ``can_create``: whether SQLite may make files beside ``path`` (None: its directory is
    writable; False on a full disk).

    Raises:
        StoreUnavailableError: a write-ahead log with content but no ``-shm`` beside it, in a
            directory where SQLite cannot make one: its commits cannot be read from here.
    """
    full = os.path.abspath(path)
    uri = "file:" + full.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    if can_create is None:
        can_create = os.access(os.path.dirname(full), os.W_OK | os.X_OK)
    if can_create:
        return uri  # SQLite makes the -wal/-shm it needs (and sees another process's writes)
    try:
        wal = os.path.getsize(full + "-wal")
    except OSError:
        wal = 0
    if wal == 0:
        return uri + "&immutable=1"
    try:
        shm = os.path.getsize(full + "-shm")
    except OSError:
        shm = 0
    if shm < _SHM_HEADER_BYTES:  # absent, or cut short by a full disk: the log's index is not there
        raise StoreUnavailableError(
            f"the index at {path} is read-only and its write-ahead log {full}-wal holds commits "
            f"that cannot be read without {full}-shm: open it once where it can be written "
            "(chunknav status) to checkpoint it, or copy the index with its -wal file"
        )
    return uri


class _Reading:
    """``Connections.read()``: the thread's connection for the ``with`` block (a class, not a
    generator: a search enters it several times, ~1 us less each); ``:memory:``'s shared
    connection is held under the write lock."""

    __slots__ = ("_db", "_locked")

    def __init__(self, db: Connections):
        self._db = db
        self._locked = False

    def __enter__(self) -> sqlite3.Connection:
        db = self._db
        shared = db.shared
        if shared is None:
            return db.conn()
        db.write_lock.acquire()
        self._locked = True
        if db.shared is None:  # closed meanwhile: the thread's own connection
            return db.conn()
        return db.shared

    def __exit__(self, *exc: object) -> None:
        if self._locked:
            self._locked = False
            self._db.write_lock.release()


class Connections:
    """The connections of one SQLite file; safe to share between threads.

    Class attribute ``checkpoint_wal_bytes``: the write-ahead log size from which a committed
    ``batch`` checkpoints it (0: never; SQLite's own every 1000 pages only).

    Args:
        path: the database file (its directory exists) or ``":memory:"``.
        busy_timeout_ms: how long one write waits for another process's writer
            lock before ``StoreBusyError``.

    Raises:
        StoreUnavailableError: a read-only file whose write-ahead log cannot be read
            (``_read_only_uri``).

    Attributes:
        write_lock: one writer per process at a time (reentrant); ``:memory:``
            readers take it too.
        shared: ``:memory:``'s one connection (None for a file, and once closed).
        read_only: why this process cannot write the file (``read_only_reason``), or
            None; set, every connection is opened read-only and ``write`` raises.
    """

    checkpoint_wal_bytes = CHECKPOINT_WAL_BYTES

    def __init__(self, path: str, busy_timeout_ms: int) -> None:
        self.path = path
        self.memory = path == ":memory:"
        self.busy_timeout_ms = busy_timeout_ms
        self.read_only = read_only_reason(path)
        self._uri = _read_only_uri(path) if self.read_only else None
        self._refusal: type[StoreFaultError] = StoreUnavailableError
        if self.read_only is None and not self.memory and os.path.exists(path):
            room = free_bytes(path)
            if room is not None and room < _OPEN_NEEDS_BYTES:  # not even a -shm fits: read it as it is
                self.read_only = f"no space left on the disk holding it: {room} bytes free"
                self._refusal = DiskFullError
                self._uri = _read_only_uri(path, can_create=False)
        self.write_lock = threading.RLock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._memo: dict[int, tuple[tuple[int, int], dict[tuple[Any, ...], Any]]] = {}  # id(conn) -> (token, reads)
        self.shared: sqlite3.Connection | None = self._connect() if self.memory else None

    def fall_back_read_only(self, cause: BaseException) -> bool:
        """After the writable open of an existing file failed with ``cause``: when that is a
        full disk or an I/O error (the ``-wal``/``-shm`` could not be made or grown), close
        what was opened and read the file read-only from now on (``read_only`` says why,
        writes raise ``DiskFullError`` / ``StoreUnavailableError``), making no file beside it.

        Returns:
            True when it fell back; False for any other cause (the caller raises it).

        Raises:
            StoreUnavailableError: a write-ahead log that cannot be read without making files.
        """
        if self.memory or self.read_only or not os.path.exists(self.path):
            return False
        fault = store_fault(cause, self.path)
        code = (getattr(cause, "sqlite_errorcode", None) or 0) & 0xFF
        if isinstance(fault, DiskFullError):
            self._refusal = DiskFullError
            reason = f"no space left on the disk holding it: {cause}"
        elif isinstance(cause, OSError) or code in (_SQLITE_IOERR, _SQLITE_READONLY, _SQLITE_CANTOPEN):
            self._refusal = StoreUnavailableError
            reason = f"it cannot be written here: {cause}"
        else:
            return False
        self.close()
        self.read_only = reason
        self._uri = _read_only_uri(self.path, can_create=False)
        return True

    def refusal(self) -> StoreFaultError:
        """The error a write on a read-only file raises (``DiskFullError`` on a full disk)."""
        return self._refusal(self.read_only_message())

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._uri or self.path,
            isolation_level=None,
            check_same_thread=False,
            timeout=self.busy_timeout_ms / 1000,
            uri=self._uri is not None,
        )
        conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        if self._uri is None:  # read-only: the file's page size and journal mode are as they are
            conn.execute(f"PRAGMA page_size={_PAGE_SIZE}")  # only takes effect on a new file
        if self._uri is None and not self.memory:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        if not self.memory:
            conn.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
        conn.execute("PRAGMA foreign_keys=OFF")
        self._connections.append(conn)
        return conn

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use; ``:memory:``: the shared one)."""
        if self.shared is not None:
            return self.shared
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def read(self) -> _Reading:
        """A connection for reading (a context manager); ``:memory:`` serialises on the write lock."""
        return _Reading(self)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on error).

        Inside ``batch()`` on this thread it is a SAVEPOINT of the batch's
        transaction instead: atomic on its own, committed with the batch.

        Raises:
            StoreBusyError: another process held the writer lock past the busy timeout.
            StoreUnavailableError: the file is read-only for this process.
        """
        if self.read_only:
            raise self.refusal()
        with self.write_lock:
            conn = self.conn()
            if getattr(self._local, "batch", False):
                conn.execute("SAVEPOINT write")
                try:
                    yield conn
                except BaseException as e:
                    _rollback(conn, "ROLLBACK TO write", "RELEASE write")
                    self._raise_fault(e)
                    raise
                conn.execute("RELEASE write")
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:  # another process holds the writer lock, or no room for a -shm
                fault = store_fault(e, self.path)
                if fault is None:
                    raise
                raise fault from e
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as e:
                _rollback(conn, "ROLLBACK")
                self._raise_fault(e)
                raise

    def _raise_fault(self, e: BaseException) -> None:
        """Raise the classified fault of ``e`` (``store_fault``) in its place; return for
        anything else (a bug, a signal), which the caller raises as it is."""
        if isinstance(e, StoreFaultError):
            return
        fault = store_fault(e, self.path) if isinstance(e, sqlite3.Error) else None
        if fault is not None:
            raise fault from e

    def read_only_message(self) -> str:
        """The one line a refused write answers on a read-only file."""
        if self._refusal is DiskFullError:
            return (
                f"the disk holding the index at {self.path} is full ({self.read_only}): it was opened "
                "read-only; searching and reading work, indexing or changing it needs free space there"
            )
        return (
            f"the index at {self.path} is read-only ({self.read_only}): searching and reading "
            "work; indexing or changing it needs write access to the file and its directory"
        )

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group this thread's writes in the block into one transaction (one WAL
        commit). Each write stays atomic as a savepoint; other writers in this
        process wait for the block, other processes' writers wait up to the busy
        timeout; readers are never blocked (WAL). Nested blocks join the outer one.
        What ``after_commit`` was given in the block runs once the block commits.

        Raises:
            Whatever the block raises, after rolling back the block's writes.
        """
        if getattr(self._local, "batch", False):
            yield
            return
        after: list[Callable[[], None]] = []
        with self.write():
            self._local.batch = True
            self._local.after_commit = after
            try:
                yield
            finally:
                self._local.batch = False
                self._local.after_commit = None
        for fn in after:  # only once the batch committed: a rollback drops them
            fn()
        if self.checkpoint_wal_bytes and not self.memory:
            self.checkpoint_if_grown()

    def checkpoint_if_grown(self) -> None:
        """When the write-ahead log holds ``checkpoint_wal_bytes`` or more, copy it into the
        database and truncate it to 0 bytes; where a reader still reads from it, copy what it
        can (passive) and leave the file for the next one. Never waits for a reader; a failure
        (a full disk) is left to the next write to raise. SQLite's own checkpoint runs only
        every 1000 pages (16 MiB at this page size) and never shrinks the file, so without this
        the log of a first index reaches about twice the database
        (docs/decisions/wal-checkpoints.md)."""
        try:
            if os.path.getsize(self.path + "-wal") < self.checkpoint_wal_bytes:
                return
        except OSError:
            return
        with self.write_lock:
            conn = self.conn()
            try:
                conn.execute("PRAGMA busy_timeout=0")  # a reader in the log: passive, at once
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error:
                pass
            finally:
                conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once this thread's ``batch`` commits, or now outside a batch."""
        pending = getattr(self._local, "after_commit", None) if getattr(self._local, "batch", False) else None
        if pending is not None:
            pending.append(fn)
        else:
            fn()

    def meta_get(self, key: str) -> str | None:
        """One ``meta`` value, or None."""
        with self.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @staticmethod
    def bump(conn: sqlite3.Connection, key: str) -> None:
        """Add 1 to the ``meta`` counter ``key`` (from 0), inside the caller's write."""
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (key,),
        )

    def gens(self, model: str) -> tuple[int, int]:
        """(chunks_gen, vectors_gen of model) as one snapshot."""

        def read(conn: sqlite3.Connection) -> tuple[int, int]:
            rows = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN (?, ?)", ("chunks_gen", f"vectors_gen:{model}")
                ).fetchall()
            )
            return int(rows.get("chunks_gen", 0)), int(rows.get(f"vectors_gen:{model}", 0))

        gens: tuple[int, int] = self.unchanged(("gens", model), read)
        return gens

    def unchanged(self, key: tuple[Any, ...], read: Callable[[sqlite3.Connection], Any]) -> Any:
        """``read(conn)``, or what it returned last time on this connection when nothing
        can have changed since: the connection's ``PRAGMA data_version`` (it moves when
        any other connection, of this process or another, commits) and its own
        ``total_changes`` (its own writes, rolled back ones too) are both the same. One
        ~2 us statement instead of the read (collections, vector dim, counters: ~40-60 us
        each with caches cold after a vector scan). Inside a transaction: always read.
        Values must be immutable (they are shared by the calls of this connection).
        See docs/decisions/sqlite-remembered-reads.md.
        """
        with self.read() as conn:
            if conn.in_transaction:
                return read(conn)
            token = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
            memo = self._memo.get(id(conn))
            if memo is None or memo[0] != token:
                memo = self._memo[id(conn)] = (token, {})
            values = memo[1]
            if key not in values:
                values[key] = read(conn)
                if token[1] != conn.total_changes:  # read() wrote (it never should): keep nothing
                    values.pop(key)
            return values[key]

    def close(self) -> None:
        """Close every connection opened here (the caller holds ``write_lock``); a thread's
        next call opens a new one."""
        for conn in self._connections:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._connections.clear()
        self._memo.clear()
        self._local = threading.local()
        self.shared = None
