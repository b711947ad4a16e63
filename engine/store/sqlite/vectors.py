"""The SQLite store's vector cache: per-model float32 matrices, and cosine scoring over them.

Owns: per model, a float32 matrix (n, dim) of every stored vector in
vectors-rowid order, with per matrix row the vector's ``vectors.rowid`` and
the 32-byte digest of its chunk id (``id_bytes``). For a file database these
live in ``<db>.<model>.f32`` / ``.rowids`` / ``.ids`` with a small JSON state
file, are memory-mapped, and are only appended to (vectors are only added);
for ``:memory:`` they are in-RAM arrays. Beside them, the occurrence table:
one row per chunk that has a vector (chunk rowid, matrix row, collection
code), built with one join per collection and, for a file database, persisted
in ``<db>.<model>.occ.npz`` keyed by the database's ``db_id`` and the
``chunks_gen`` / ``vectors_gen:<model>`` counters, so a new process loads it
instead of rebuilding it. The store bumps those counters on every write, so a
change by this or another process is seen and the table rebuilt.
Scoring (``top_occurrences``): dot products of L2-normalised float32
vectors, i.e. cosine similarity, over every chunk row or a scoped subset; the
candidates are scored again row by row and equal scores go by (collection path,
file path, chunk index), so the answer does not depend on the matrix's row order.
Beside it, its int8 codes (``<db>.<model>.i8``, scale in the JSON state), written with
every append and rebuild (regenerated from the .f32 file when missing or short): a full
scan of >= ``int8_min_rows`` rows ranks by them and rescores in float32 (``int8_scan``).
A read-only store's cache writes nothing: it maps the files that are valid for this
database as they are and reads the rows they lack (all rows, when they are absent or
another database's) from SQL into memory, as ``:memory:`` does; the occurrence table it
builds stays in memory. A writable store whose disk has no room for the rows its files lack
(or whose write fails: a full disk) does the same for that model, touching no file; a
failed append is cut back so the files stay valid.

Must not import: ``engine.store.sqlite.store`` (it imports this module and hands in
its read-connection factory), ``engine.values`` row types, ``sqlite_utils``,
extract/embed, or a face (streamlit, mcp, argparse). Imports ``numpy``, the
standard library, ``engine.store.threads`` (BLAS threads per scan), ``engine.store.sqlite.int8``,
``engine.store.sqlite.top_k`` (the candidates of the best k, their exact scores and order) and ``engine.store.scan_share`` (a hybrid
search's shared full scan) only.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import json
import logging
import os
import sqlite3
import threading
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.store.threads import int8_threads, one_thread, scan_threads
from engine.store.scan_share import block_runner, full_scores
from engine.store.sqlite import int8 as int8_scan
from engine.store.sqlite.top_k import exact_scores, ranked, scan_margin, top_candidates

__all__ = ["Matrix", "Occurrences", "VectorCache", "scope_rows", "top_occurrences", "id_bytes", "APPEND_ROWS"]

log = logging.getLogger(__name__)

_BLOCK_ROWS = 16_384  # rows per block when scoring a scoped subset
_SUBSET_FRACTION = 0.5  # scope smaller than this share of chunks: score only its rows
_FORMAT = 2  # cache file layout version (JSON state and occurrence file)
#: Free bytes under which the room for new cache rows is checked before a file is touched.
_LOW_ROOM_BYTES = 256 << 20
#: Rows committed by this process that wait in memory before they are appended to the matrix files.
APPEND_ROWS = 16_384


@dataclass
class Matrix:
    """Every vector of one model: float32 (n, dim), L2-normalised, in vectors-rowid order."""

    dim: int
    matrix: np.ndarray  # (n, dim) float32: a memmap (file db) or a RAM array (":memory:")
    digests: np.ndarray  # (n, 32) uint8: id_bytes(chunk_id) of each matrix row
    vector_rowid: np.ndarray  # (n,) int64, ascending: vectors.rowid of each matrix row
    max_rowid: int  # highest vectors.rowid covered
    gen: int  # vectors_gen this covers
    codes: np.ndarray | None = None  # (n, dim) int8: int8_scan.quantise(matrix), None: not available

    def digest(self, row: int) -> bytes:
        """The 32-byte ``id_bytes`` of matrix row ``row``'s chunk id."""
        return self.digests[row].tobytes()


@dataclass
class Occurrences:
    """One row per stored chunk that has a vector: where it is and which matrix row scores it.

    ``key_rank``: each row's place in (collection path, file path, chunk index) order, the
    order in which equal scores are answered (``top_occurrences``).
    """

    chunks_gen: int
    vectors_gen: int
    chunk_rowid: np.ndarray  # int64 (m,)
    matrix_row: np.ndarray  # int64 (m,)
    collection_code: np.ndarray  # int32 (m,)
    codes: dict[str, int]  # collection_path -> code
    scope_rows: dict[tuple[str, ...], np.ndarray]  # cached occurrence indices per scope
    key_rank: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # int64 (m,): see below
    scope_runs: dict = field(default_factory=dict)  # id(scope rows) -> (scope rows, spans to score)
    by_row: int8_scan.RowIndex | None = None  # for the int8 scan, built on its first use
    identity_rows: int | None = None  # n when matrix_row == arange(n) (checked once: full scans skip the gather)


class VectorCache:
    """Every model's ``Matrix`` and ``Occurrences`` for one ``SqliteStore``.

    Thread-safe through ``lock``: ``prepare`` and ``forget_occurrences`` take
    it; ``clear`` expects the caller to hold it. The files of a file database
    are shared with other processes: the matrix files under a per-model
    ``flock``, the occurrence file by atomic replacement (temp file +
    ``os.replace``) and a key checked on every load.
    """

    def __init__(
        self,
        path: str,
        db_id: str | None,
        read: Callable[[], AbstractContextManager[sqlite3.Connection]],
        read_only: bool = False,
    ):
        """
        Args:
            path: the store's database path, or ``":memory:"`` (RAM arrays, no files).
            db_id: the database's ``meta.db_id``; cache files of another database are rebuilt.
            read: the store's read-connection factory (a context manager per call).
            read_only: write no file: valid cache files are only mapped, the rest is read into memory.
        """
        self.path = path
        self.memory = path == ":memory:"
        self.read_only = read_only
        self.db_id = db_id
        self._read = read
        self.lock = threading.Lock()
        self.matrices: dict[str, Matrix] = {}
        self.occurrences: dict[str, Occurrences] = {}
        self._distrust: set[str] = set()  # models whose occurrence file must not be loaded
        self._no_room: set[str] = set()  # models whose cache files could not be written: kept in memory
        # Vectors this process committed but has not yet written to the matrix files:
        # model -> [(vectors.rowid before the insert, rowids, digests, float32 rows)].
        self._pending: dict[str, list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = {}

    def prepare(self, model: str, chunks_gen: int, vectors_gen: int) -> tuple[Matrix | None, Occurrences | None]:
        """The model's matrix and chunk occurrences, refreshed to these generations.

        The caller reads the counters and calls this inside one read
        transaction, so what is rebuilt here matches the counters exactly.

        Args:
            model: the vectors' model name.
            chunks_gen, vectors_gen: the store's counters read as one snapshot.

        Returns:
            (None, None) when the model has no vectors.

        Raises:
            ValueError: the cache file's dim differs from a stored vector's dim.
        """
        with self.lock:
            m = self._load_matrix(model, vectors_gen)
            if m is None:
                return None, None
            return m, self._load_occurrences(model, m, chunks_gen, vectors_gen)

    def forget_occurrences(self, model: str) -> None:
        """Drop the model's occurrence table, so the next ``prepare`` rebuilds it from SQL
        (not from the occurrence file, which may be what went wrong)."""
        with self.lock:
            self.occurrences.pop(model, None)
            self._distrust.add(model)

    def appended(
        self,
        model: str,
        prev_max_rowid: int,
        rowids: np.ndarray,
        chunk_ids: list[str],
        vectors: np.ndarray,
        vectors_gen: int,
    ) -> None:
        """Take rows the store just committed, to append to the matrix files
        without reading their blobs back from SQLite (the embed pass feeds the
        matrix as it goes, so the first search after an index run finds it whole).

        Rows wait in memory until ``APPEND_ROWS`` are pending, then go to the
        files (under the per-model lock, fsynced, the JSON state replaced
        atomically, as a rebuild does); ``flush`` writes the rest. A file
        state that does not end exactly at ``prev_max_rowid`` (another
        process wrote meanwhile) drops them: the next load streams from SQL.

        Args:
            model: the vectors' model.
            prev_max_rowid: the model's highest ``vectors.rowid`` before the insert (0: none).
            rowids: int64 (n,) ascending rowids of the rows added.
            chunk_ids: their n chunk ids; vectors: float32 (n, dim) in the same order.
            vectors_gen: the model's counter after the insert.
        """
        if self.memory or self.read_only or len(rowids) == 0:
            return
        digests = np.frombuffer(b"".join(id_bytes(c) for c in chunk_ids), np.uint8).reshape(len(chunk_ids), 32)
        with self.lock:
            segs = self._pending.setdefault(model, [])
            if segs and int(segs[-1][1][-1]) != prev_max_rowid:
                segs.clear()  # not a chain: let SQL fill the gap
            segs.append(
                (prev_max_rowid, np.asarray(rowids, np.int64), digests, np.ascontiguousarray(vectors, np.float32))
            )
            if sum(len(x[1]) for x in segs) >= APPEND_ROWS:
                self._write_pending(model)
                self.matrices.pop(model, None)  # remapped on the next search

    def flush(self, model: str | None = None) -> None:
        """Write pending rows of ``model`` (None: every model) to the matrix files."""
        with self.lock:
            for m in [model] if model is not None else list(self._pending):
                if self._pending.get(m):
                    self._write_pending(m)
                    self.matrices.pop(m, None)

    def _write_pending(self, model: str) -> None:
        """The caller holds ``lock``. Failures only log (the files are a cache)."""
        segs = self._pending.pop(model, [])
        p = self._cache_paths(model)
        try:
            with open(p["lock"], "a+b") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                valid = self._valid_state(p)
                fresh = valid is None  # no usable files: start them when the chain starts at the first row
                state = self._new_state() if valid is None else valid
                chain = []
                end = state["max_rowid"]
                for prev, rowids, digests, vecs in segs:
                    if prev != end or (state["dim"] and vecs.shape[1] != state["dim"]):
                        break
                    chain.append((rowids, digests, vecs))
                    end = int(rowids[-1])
                if not chain:
                    return
                if fresh:
                    for path in (p["f32"], p["ids"], p["rowids"], p["i8"]):
                        path.unlink(missing_ok=True)
                else:
                    _ensure_codes(p, state)
                dim = int(chain[0][2].shape[1])
                scale = int8_scan.int8_scale(dim)
                with (
                    open(p["f32"], "ab") as fm,
                    open(p["ids"], "ab") as fi,
                    open(p["rowids"], "ab") as fr,
                    open(p["i8"], "ab") as f8,
                ):
                    for rowids, digests, vecs in chain:
                        fm.write(vecs.tobytes())
                        fi.write(digests.tobytes())
                        fr.write(rowids.tobytes())
                        f8.write(int8_scan.quantise(vecs, scale).tobytes())
                    for f in (fm, fi, fr, f8):
                        f.flush()
                        os.fsync(f.fileno())
                state.update(rows=state["rows"] + sum(len(c[0]) for c in chain), dim=dim, max_rowid=end, i8_scale=scale)
                _write_atomic(p["json"], json.dumps(state).encode())
        except OSError as e:
            log.log(_quiet(e), "could not append to the vector cache of %s: %s", model, e)

    def _new_state(self) -> dict[str, Any]:
        """The JSON state of empty cache files of this database."""
        return {"format": _FORMAT, "db_id": self.db_id, "rows": 0, "dim": 0, "max_rowid": 0}

    def _valid_state(self, p: dict[str, Path]) -> dict[str, Any] | None:
        """The JSON state when it matches this database and the files' sizes, else None."""
        files = (p["f32"], p["ids"], p["rowids"])
        try:
            state = json.loads(p["json"].read_text()) if p["json"].exists() else None
        except (OSError, ValueError):
            return None
        if state is None:
            return None
        rows, dim = state.get("rows", -1), state.get("dim", -1)
        ok = (
            state.get("format") == _FORMAT
            and state.get("db_id") == self.db_id
            and all(f.exists() for f in files)
            and p["f32"].stat().st_size == rows * dim * 4
            and p["ids"].stat().st_size == rows * 32
            and p["rowids"].stat().st_size == rows * 8
        )
        return state if ok else None

    def drop(self, model: str) -> None:
        """Forget the model's matrix and occurrences and delete its cache files (under their
        ``flock``, which other processes take too), so the next search rebuilds them from
        SQL: what a store does after deleting vector rows (the matrix files only grow)."""
        with self.lock:
            self.matrices.pop(model, None)
            self.occurrences.pop(model, None)
            self._pending.pop(model, None)
            if self.memory or self.read_only:
                return
            paths = self._cache_paths(model)
            with open(paths["lock"], "a+b") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                for key, path in paths.items():
                    if key != "lock":
                        path.unlink(missing_ok=True)

    def clear(self) -> None:
        """Drop every matrix and occurrence table (the caller holds ``lock``)."""
        self.matrices.clear()
        self.occurrences.clear()

    def _cache_paths(self, model: str) -> dict[str, Path]:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)
        base = f"{self.path}.{safe}"
        return {k: Path(base + "." + k) for k in ("f32", "ids", "rowids", "json", "lock", "occ.npz", "i8")}

    # -- matrix ---------------------------------------------------------------------
    def _load_matrix(self, model: str, vectors_gen: int) -> Matrix | None:
        """The model's matrix, appended with rows added since it was last seen."""
        cur = self.matrices.get(model)
        if cur is not None and cur.gen == vectors_gen:
            return cur
        if self.memory:
            return self._load_matrix_ram(model, vectors_gen, cur)
        if self.read_only or model in self._no_room:  # the valid files as they are, the rows they lack in memory
            return self._load_matrix_ram(model, vectors_gen, cur or self._map_valid_files(model, vectors_gen))
        try:
            if not self._room_for_files(model):
                raise OSError(errno.ENOSPC, "not enough free space for the vector cache files")
            return self._load_matrix_file(model, vectors_gen)
        except OSError as e:  # a full disk, a directory gone read-only: read it into memory, write nothing
            log.log(_quiet(e), "vector cache of %s not written (%s): the rows it lacks are read into memory", model, e)
            self._no_room.add(model)
            return self._load_matrix_ram(model, vectors_gen, self._map_valid_files(model, vectors_gen))

    def _room_for_files(self, model: str) -> bool:
        """False when the disk holding the cache files lacks the room for the rows they miss
        (asked only when under ``_LOW_ROOM_BYTES`` are free): the rows are then read into
        memory and no file is made or touched."""
        try:
            st = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        except OSError:
            return True
        free = st.f_bavail * st.f_frsize
        if free >= _LOW_ROOM_BYTES:
            return True
        state = self._valid_state(self._cache_paths(model))
        with self._read() as conn:
            n, dim = conn.execute(
                "SELECT count(*), max(dim) FROM vectors WHERE model = ? AND rowid > ?",
                (model, state["max_rowid"] if state else 0),
            ).fetchone()
        return bool(free >= int(n) * (int(dim or 0) * 5 + 40) + _LOW_ROOM_BYTES // 64)

    def _load_matrix_ram(self, model: str, gen: int, cur: Matrix | None) -> Matrix | None:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT rowid, chunk_id, vec, dim FROM vectors WHERE model = ? AND rowid > ? ORDER BY rowid",
                (model, cur.max_rowid if cur else 0),
            ).fetchall()
        if cur is None and not rows:
            return None
        if cur is None:
            dim = rows[0][3]
            cur = Matrix(
                dim,
                np.empty((0, dim), np.float32),
                np.empty((0, 32), np.uint8),
                np.empty(0, np.int64),
                0,
                gen,
                np.empty((0, dim), np.int8),
            )
        if rows:
            new = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), cur.dim)
            digests = np.frombuffer(b"".join(id_bytes(r[1]) for r in rows), np.uint8).reshape(len(rows), 32)
            cur.matrix = np.concatenate([cur.matrix, new])
            if cur.codes is not None:
                cur.codes = np.concatenate([cur.codes, int8_scan.quantise(new, int8_scan.int8_scale(cur.dim))])
            cur.digests = np.concatenate([cur.digests, digests])
            cur.vector_rowid = np.concatenate(
                [cur.vector_rowid, np.fromiter((r[0] for r in rows), np.int64, len(rows))]
            )
            cur.max_rowid = rows[-1][0]
        cur.gen = gen
        self.matrices[model] = cur
        return cur

    def _load_matrix_file(self, model: str, gen: int) -> Matrix | None:
        p = self._cache_paths(model)
        files = (p["f32"], p["ids"], p["rowids"])
        if self._pending.get(model):
            self._write_pending(model)  # this process's newest rows, without re-reading them
        with open(p["lock"], "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process updates the cache files at a time
            valid = self._valid_state(p)
            if valid is None:
                for path in (*files, p["i8"]):
                    path.unlink(missing_ok=True)
                state = self._new_state()
            else:
                state = valid
                _ensure_codes(p, state)
            # Stream new rows into the files in blocks: never all blobs in memory at once.
            added = 0
            with _cut_back_on_error(p, state), self._read() as conn:
                stream = conn.execute(
                    "SELECT rowid, chunk_id, vec, dim FROM vectors WHERE model = ? AND rowid > ? ORDER BY rowid",
                    (model, state["max_rowid"]),
                )
                with (
                    open(p["f32"], "ab") as fm,
                    open(p["ids"], "ab") as fi,
                    open(p["rowids"], "ab") as fr,
                    open(p["i8"], "ab") as f8,
                ):
                    while rows := stream.fetchmany(_BLOCK_ROWS):
                        dim = rows[0][3]
                        if state["dim"] and dim != state["dim"]:
                            raise ValueError(f"model {model!r}: cache dim {state['dim']} != stored dim {dim}")
                        blob = b"".join(r[2] for r in rows)
                        fm.write(blob)
                        f8.write(
                            int8_scan.quantise(
                                np.frombuffer(blob, np.float32).reshape(len(rows), dim), int8_scan.int8_scale(dim)
                            ).tobytes()
                        )
                        fi.write(b"".join(id_bytes(r[1]) for r in rows))
                        fr.write(np.fromiter((r[0] for r in rows), np.int64, len(rows)).tobytes())
                        state.update(
                            rows=state["rows"] + len(rows),
                            dim=dim,
                            max_rowid=rows[-1][0],
                            i8_scale=int8_scan.int8_scale(dim),
                        )
                        added += len(rows)
                    for f in (fm, fi, fr, f8):
                        f.flush()
                        os.fsync(f.fileno())
            if added:
                _write_atomic(p["json"], json.dumps(state).encode())
            if state["rows"] == 0:
                return None
            cur = self.matrices.get(model)
            if cur is not None and cur.max_rowid == state["max_rowid"]:
                cur.gen = gen
                return cur
            m = _mapped(p, state, gen, codes=True)
        self.matrices[model] = m
        return m

    def _map_valid_files(self, model: str, gen: int) -> Matrix | None:
        """The cache files mapped as they are when they are valid for this database (their
        int8 codes too when those match), else None; no lock taken, nothing written."""
        p = self._cache_paths(model)
        state = self._valid_state(p)
        if state is None or state["rows"] == 0:
            return None
        rows, dim = state["rows"], state["dim"]
        try:
            codes = p["i8"].stat().st_size == rows * dim and state.get("i8_scale") == int8_scan.int8_scale(dim)
        except OSError:
            codes = False
        return _mapped(p, state, gen, codes)

    # -- occurrences ------------------------------------------------------------------
    def _load_occurrences(self, model: str, m: Matrix, chunks_gen: int, vectors_gen: int) -> Occurrences:
        occ = self.occurrences.get(model)
        if occ is not None and occ.chunks_gen == chunks_gen and occ.vectors_gen == vectors_gen:
            return occ
        occ = None
        if not self.memory and model not in self._distrust:
            occ = self._read_occurrence_file(model, m, chunks_gen, vectors_gen)
        if occ is None:
            occ = self._build_occurrences(model, m, chunks_gen, vectors_gen)
            if not self.memory and not self.read_only and model not in self._no_room:
                self._write_occurrence_file(model, occ)
            self._distrust.discard(model)
        self.occurrences[model] = occ
        return occ

    def _build_occurrences(self, model: str, m: Matrix, chunks_gen: int, vectors_gen: int) -> Occurrences:
        """Rebuild from SQL: per collection, one join of chunks to this model's vectors.

        Rows come back as (chunk rowid, vectors rowid) integer pairs straight into
        numpy; the vectors rowid becomes a matrix row by binary search in
        ``m.vector_rowid`` (ascending). Vectors newer than the matrix are skipped.
        Order: by collection code, then matrix row. Rows come in key order (collections
        sorted, each in its primary key's order: the join walks that index, no sort), which
        gives ``key_rank``.
        """
        sql = (
            "SELECT c.rowid, v.rowid FROM chunks c JOIN vectors v "
            "ON v.chunk_id = c.chunk_id AND v.model = ? WHERE c.collection_path = ? "
            "ORDER BY c.file_path, c.chunk_index"
        )
        rids, vrids, codes_out = [], [], []
        codes: dict[str, int] = {}
        with self._read() as conn:
            paths = [r[0] for r in conn.execute("SELECT DISTINCT collection_path FROM chunks ORDER BY collection_path")]
            for cp in paths:
                pairs = np.fromiter(itertools.chain.from_iterable(conn.execute(sql, (model, cp))), np.int64)
                if len(pairs) == 0:
                    continue
                pairs = pairs.reshape(-1, 2)
                code = codes.setdefault(cp, len(codes))
                rids.append(pairs[:, 0])
                vrids.append(pairs[:, 1])
                codes_out.append(np.full(len(pairs), code, np.int32))
        if not rids:
            e = np.empty(0, np.int64)
            return Occurrences(chunks_gen, vectors_gen, e, e.copy(), np.empty(0, np.int32), codes, {}, e.copy())
        rid, vrid, code_arr = np.concatenate(rids), np.concatenate(vrids), np.concatenate(codes_out)
        rank = np.arange(len(rid), dtype=np.int64)
        vr = np.asarray(m.vector_rowid)
        mrow = np.searchsorted(vr, vrid)
        ok = mrow < len(vr)
        ok[ok] = vr[mrow[ok]] == vrid[ok]
        if not ok.all():
            rid, mrow, code_arr, rank = rid[ok], mrow[ok], code_arr[ok], rank[ok]
        # Within each collection, matrix order: a scoped search then reads the matrix forwards.
        order = np.lexsort((mrow, code_arr))
        rid, mrow, code_arr, rank = rid[order], mrow[order], code_arr[order], rank[order]
        return Occurrences(chunks_gen, vectors_gen, rid, mrow.astype(np.int64, copy=False), code_arr, codes, {}, rank)

    def _occurrence_key(self, chunks_gen: int, vectors_gen: int, m: Matrix) -> str:
        return json.dumps(
            {
                "format": _FORMAT,
                "db_id": self.db_id,
                "chunks_gen": chunks_gen,
                "vectors_gen": vectors_gen,
                "dim": m.dim,
            },
            sort_keys=True,
        )

    def _read_occurrence_file(self, model: str, m: Matrix, chunks_gen: int, vectors_gen: int) -> Occurrences | None:
        """The persisted table when its key matches these counters exactly, else None."""
        import zipfile  # here, not at import: the no-op index run never reads this file (~3 ms)

        path = self._cache_paths(model)["occ.npz"]
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["key"]) != self._occurrence_key(chunks_gen, vectors_gen, m):
                    return None
                rid, mrow, code = z["chunk_rowid"], z["matrix_row"], z["collection_code"]
                rank = z["key_rank"]
                paths = [str(x) for x in z["paths"]]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # missing, damaged, other layout
            return None
        n = len(rid)
        if not (
            len(mrow) == n == len(code) == len(rank)
            and rid.dtype == np.int64
            and mrow.dtype == np.int64
            and code.dtype == np.int32
            and rank.dtype == np.int64
        ):
            return None
        if n and (
            int(mrow.max()) >= len(m.matrix)
            or int(mrow.min()) < 0
            or int(code.min()) < 0
            or int(code.max()) >= len(paths)
        ):
            return None
        return Occurrences(chunks_gen, vectors_gen, rid, mrow, code, {cp: i for i, cp in enumerate(paths)}, {}, rank)

    def _write_occurrence_file(self, model: str, occ: Occurrences) -> None:
        """Persist the table under its key (temp file + ``os.replace``); failures only log."""
        m = self.matrices[model]
        path = self._cache_paths(model)["occ.npz"]
        paths = sorted(occ.codes, key=occ.codes.__getitem__)
        arrays = {
            "key": np.array(self._occurrence_key(occ.chunks_gen, occ.vectors_gen, m)),
            "chunk_rowid": occ.chunk_rowid,
            "matrix_row": occ.matrix_row,
            "collection_code": occ.collection_code,
            "key_rank": occ.key_rank,
            "paths": np.array(paths, dtype=str) if paths else np.empty(0, "U1"),
        }
        try:
            _replace_with(path, lambda f: np.savez(f, **arrays))
        except OSError as e:
            log.log(_quiet(e), "could not write the occurrence file %s: %s", path, e)


def _quiet(e: OSError) -> int:
    """The log level of a cache file that could not be written: INFO for a full disk or a
    directory that cannot be written (the cache is then kept in memory, as designed), else WARNING."""
    return logging.INFO if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES) else logging.WARNING


@contextmanager
def _cut_back_on_error(p: dict[str, Path], state: dict[str, Any]) -> Iterator[None]:
    """On an ``OSError`` in the block (a full disk mid-append), cut the matrix files back to the
    rows ``state`` (as it was on entry) describes, so they stay valid, then raise it."""
    rows, dim = state["rows"], state["dim"]
    try:
        yield
    except OSError:
        for key, size in (("f32", rows * dim * 4), ("ids", rows * 32), ("rowids", rows * 8), ("i8", rows * dim)):
            try:
                with open(p[key], "r+b") as f:
                    f.truncate(size)
            except OSError:
                pass
        raise


def _mapped(p: dict[str, Path], state: dict[str, Any], gen: int, codes: bool) -> Matrix:
    """The ``Matrix`` of the valid cache files ``p`` described by ``state``, memory-mapped read-only
    (``codes``: the int8 file too, else None)."""
    n, dim = state["rows"], state["dim"]
    return Matrix(
        dim,
        # plain ndarray views of the maps: indexing a np.memmap builds a memmap
        # object per slice (~µs each, several per search)
        np.asarray(np.memmap(p["f32"], dtype=np.float32, mode="r", shape=(n, dim))),
        np.asarray(np.memmap(p["ids"], dtype=np.uint8, mode="r", shape=(n, 32))),
        np.asarray(np.memmap(p["rowids"], dtype=np.int64, mode="r", shape=(n,))),
        state["max_rowid"],
        gen,
        np.asarray(np.memmap(p["i8"], dtype=np.int8, mode="r", shape=(n, dim))) if codes else None,
    )


def _ensure_codes(p: dict[str, Path], state: dict[str, Any]) -> None:
    """Make ``p["i8"]`` the int8 codes of the valid float32 file ``p["f32"]`` (caller holds the
    model's flock): when the state has no matching scale or the file has the wrong size (missing,
    or an interrupted append), regenerate it from the float32 rows a block at a time into a temp
    file, ``os.replace`` it, and record the scale in the state."""
    rows, dim = state["rows"], state["dim"]
    scale = int8_scan.int8_scale(dim) if dim else None
    try:
        ok = p["i8"].stat().st_size == rows * dim and (rows == 0 or state.get("i8_scale") == scale)
    except OSError:
        ok = False
    if ok:
        return
    f32 = np.memmap(p["f32"], dtype=np.float32, mode="r", shape=(rows, dim)) if rows else None

    def fill(f: BinaryIO) -> None:
        if f32 is None or scale is None:
            return
        for i in range(0, rows, _BLOCK_ROWS):
            f.write(int8_scan.quantise(f32[i : i + _BLOCK_ROWS], scale).tobytes())

    _replace_with(p["i8"], fill)
    if scale is not None:
        state["i8_scale"] = scale
        _write_atomic(p["json"], json.dumps(state).encode())


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a unique temp file beside ``path``, then ``os.replace`` it."""
    _replace_with(path, lambda f: f.write(data))


def _replace_with(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Atomically replace ``path``: ``write`` fills a unique temp file beside it (mode
    from the umask, like the other cache files), which is fsynced and ``os.replace``d."""
    import uuid  # here, not at import (~1.7 ms of every process start)

    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def scope_rows(occ: Occurrences, collection_paths: Iterable[str] | None) -> np.ndarray | None:
    """Occurrence indices inside the scope (None: everything), cached per scope."""
    if collection_paths is None:
        return None
    key = tuple(sorted(set(collection_paths)))
    cached = occ.scope_rows.get(key)
    if cached is None:
        wanted = [occ.codes[c] for c in key if c in occ.codes]
        if len(wanted) == len(occ.codes):
            return None
        cached = np.flatnonzero(np.isin(occ.collection_code, np.asarray(wanted, np.int32)))
        if len(occ.scope_rows) > 64:
            occ.scope_rows.clear()
        occ.scope_rows[key] = cached
    return cached


_MIN_RUN_ROWS = 64  # shorter runs of consecutive rows are gathered with their neighbours


def _scope_runs(occ: Occurrences, scope: np.ndarray) -> list[tuple[int, int, int | None]]:
    """``(start, end, row)`` spans of ``scope`` (occurrence indices), cached per scope: a run of
    >= _MIN_RUN_ROWS consecutive matrix rows is scored on a view from matrix row ``row``; what
    lies between runs (``row`` None) is gathered in blocks of at most _BLOCK_ROWS."""
    key = id(scope)
    hit = occ.scope_runs.get(key)
    if hit is not None and hit[0] is scope:
        return hit[1]
    rows = occ.matrix_row[scope]
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate(([0], cuts)).tolist()
    ends = np.concatenate((cuts, [len(rows)])).tolist()
    spans: list[tuple[int, int, int | None]] = []
    pending = -1  # start of rows waiting to be gathered
    for a, b in zip(starts, ends):
        if b - a >= _MIN_RUN_ROWS:
            if pending >= 0:
                spans += [(x, min(x + _BLOCK_ROWS, a), None) for x in range(pending, a, _BLOCK_ROWS)]
                pending = -1
            spans.append((a, b, int(rows[a])))
        elif pending < 0:
            pending = a
    if pending >= 0:
        spans += [(x, min(x + _BLOCK_ROWS, len(rows)), None) for x in range(pending, len(rows), _BLOCK_ROWS)]
    if len(occ.scope_runs) > 64:
        occ.scope_runs.clear()
    occ.scope_runs[key] = (scope, spans)
    return spans


def top_occurrences(
    m: Matrix,
    occ: Occurrences,
    q: np.ndarray,
    collection_paths: Iterable[str] | None,
    limit: int,
    int8_min_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Indices into ``occ`` of the best ``limit`` and their float32 scores, best first.

    The scan (float32, or int8 codes) chooses candidates: every occurrence within the
    scan's rounding of the ``limit``-th best (``top_k.top_candidates``), or every
    occurrence of the int8 scan's best rows. They are scored again with
    ``top_k.exact_scores`` (the same score for the same vector wherever its row sits in
    the matrix) and ranked by that score, equal scores by ``key_rank`` (collection path,
    file path, chunk index): the answer does not depend on the order in which the
    vectors were stored.

    ``int8_min_rows``: a full scan of a matrix with at least this many rows uses
    ``int8_scan.candidate_entries`` (None: never); without simsimd or on its failure, exact (logged).
    """
    scope = scope_rows(occ, collection_paths)
    total = len(occ.chunk_rowid)
    if scope is not None and len(scope) == 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    if (
        scope is None
        and int8_min_rows is not None
        and m.codes is not None
        and total
        and len(m.matrix) >= max(int8_min_rows, 8 * max(int8_scan.RESCORE, 4 * limit))
        and int8_scan.kernel() is not None
    ):
        try:
            if occ.by_row is None or occ.by_row.n != len(m.matrix):
                occ.by_row = int8_scan.row_index(occ.matrix_row, len(m.matrix))
            run = block_runner(len(m.matrix))  # a hybrid search's keyword thread helps (engine/store/scan_share.py)
            if run is not None:
                one_thread()  # as in int8_threads
                return _best(m, occ, q, int8_scan.candidate_entries(m.codes, q, occ.by_row, limit, run=run), limit)
            with int8_threads(len(m.matrix)) as threads:
                entries = int8_scan.candidate_entries(m.codes, q, occ.by_row, limit, threads=threads)
            return _best(m, occ, q, entries, limit)
        except Exception as e:  # never fail a search for the faster path
            log.warning("int8 vector scan failed, exact float32 scan instead: %s: %s", type(e).__name__, e)
    if scope is not None and len(scope) < _SUBSET_FRACTION * total:
        # Score only the scope's rows, a block at a time (no copy of the matrix).
        spans = _scope_runs(occ, scope)
        with scan_threads(len(scope), full=False):
            if len(spans) == 1 and spans[0][2] is not None:  # one run of consecutive rows: one view
                scores = m.matrix[spans[0][2] : spans[0][2] + len(scope)] @ q
            else:
                scores = np.empty(len(scope), np.float32)
                for a, b, r in spans:
                    if r is None:  # scattered rows: copy them (a block at a time)
                        scores[a:b] = m.matrix[occ.matrix_row[scope[a:b]]] @ q
                    else:  # a run of consecutive matrix rows: a view, no copy
                        scores[a:b] = m.matrix[r : r + (b - a)] @ q
        cand = scope
    else:
        all_scores = full_scores(m.matrix, q)  # a hybrid search's keyword thread helps (engine/store/scan_share.py)
        if all_scores is None:
            with scan_threads(len(m.matrix), full=True):
                all_scores = m.matrix @ q  # (n_vectors,) float32
        n = len(all_scores)
        if occ.identity_rows is None:  # one chunk per matrix row, in order: the scores need no gather
            occ.identity_rows = (
                n
                if len(occ.matrix_row) == n
                and bool(np.array_equal(occ.matrix_row, np.arange(n, dtype=occ.matrix_row.dtype)))
                else -1
            )
        scores = all_scores if occ.identity_rows == n else all_scores[occ.matrix_row]  # (occurrences,)
        if scope is not None:
            scores = scores[scope]
            cand = scope
        else:
            cand = None
    top = top_candidates(scores, limit, scan_margin(m.dim, q))
    return _best(m, occ, q, top if cand is None else cand[top], limit)


def _best(m: Matrix, occ: Occurrences, q: np.ndarray, picked: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``limit`` of the candidate occurrences ``picked`` by ``exact_scores``, best first,
    equal scores in ``key_rank`` order: (occurrence indices, float32 scores)."""
    exact = exact_scores(m.matrix, occ.matrix_row[picked], q)
    order = ranked(exact, occ.key_rank[picked], limit)
    return picked[order], exact[order]


def id_bytes(chunk_id: str) -> bytes:
    """32 bytes naming a chunk id in the cache file: a hex sha256 id as is, any other id's digest."""
    if len(chunk_id) == 64:
        try:
            return bytes.fromhex(chunk_id)
        except ValueError:
            pass
    return hashlib.sha256(chunk_id.encode("utf-8")).digest()
