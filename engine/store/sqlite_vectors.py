"""The SQLite store's vector cache: per-model float32 matrices, and cosine scoring over them.

Owns: per model, a float32 matrix (n, dim) of every stored vector in
vectors-rowid order. For a file database it lives in ``<db>.<model>.f32`` with
``<db>.<model>.ids`` (32-byte chunk-id digests) and a small JSON state file,
is memory-mapped, and is only appended to (vectors are only added); for
``:memory:`` it is an in-RAM array. Beside it, per store object: one row per
chunk (chunk rowid, matrix row, collection code), rebuilt when chunks change.
The refresh follows the ``chunks_gen`` / ``vectors_gen:<model>`` counters the
store bumps on every write, so a change by this or another process is seen.
Scoring (``top_occurrences``): dot products of L2-normalised float32
vectors, i.e. cosine similarity, over every chunk row or a scoped subset.

Must not import: ``engine.store.sqlite`` (it imports this module and hands in
its read-connection factory), ``engine.model`` row types, ``sqlite_utils``,
extract/embed, or a face (streamlit, mcp, argparse). Imports ``numpy`` and the
standard library only.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

__all__ = ["Matrix", "Occurrences", "VectorCache", "scope_rows", "top_occurrences", "id_bytes"]

_BLOCK_ROWS = 16_384  # rows per block when scoring a scoped subset
_SUBSET_FRACTION = 0.5  # scope smaller than this share of chunks: score only its rows


@dataclass
class Matrix:
    """Every vector of one model: float32 (n, dim), L2-normalised, in vectors-rowid order."""

    dim: int
    matrix: np.ndarray  # (n, dim) float32: a memmap (file db) or a RAM array (":memory:")
    ids: list[str]  # chunk_id of each matrix row
    row_of: dict[str, int]  # chunk_id -> matrix row
    max_rowid: int  # highest vectors.rowid covered
    gen: int  # vectors_gen this covers


@dataclass
class Occurrences:
    """One row per stored chunk that has a vector: where it is and which matrix row scores it."""

    chunks_gen: int
    vectors_gen: int
    chunk_rowid: np.ndarray  # int64 (m,)
    matrix_row: np.ndarray  # int64 (m,)
    collection_code: np.ndarray  # int32 (m,)
    codes: dict[str, int]  # collection_path -> code
    scope_rows: dict[tuple[str, ...], np.ndarray]  # cached occurrence indices per scope


class VectorCache:
    """Every model's ``Matrix`` and ``Occurrences`` for one ``SqliteStore``.

    Thread-safe through ``lock``: ``prepare`` and ``forget_occurrences`` take
    it; ``clear`` expects the caller to hold it. The files of a file database
    are shared with other processes under a per-model ``flock``.
    """

    def __init__(self, path: str, db_id: str | None,
                 read: Callable[[], AbstractContextManager[sqlite3.Connection]]):
        """
        Args:
            path: the store's database path, or ``":memory:"`` (RAM arrays, no files).
            db_id: the database's ``meta.db_id``; cache files of another database are rebuilt.
            read: the store's read-connection factory (a context manager per call).
        """
        self.path = path
        self.memory = path == ":memory:"
        self.db_id = db_id
        self._read = read
        self.lock = threading.Lock()
        self.matrices: dict[str, Matrix] = {}
        self.occurrences: dict[str, Occurrences] = {}

    def prepare(self, model: str, chunks_gen: int, vectors_gen: int) -> tuple[Matrix | None, Occurrences | None]:
        """The model's matrix and chunk occurrences, refreshed to these generations.

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
        """Drop the model's occurrence table, so the next ``prepare`` rebuilds it."""
        with self.lock:
            self.occurrences.pop(model, None)

    def clear(self) -> None:
        """Drop every matrix and occurrence table (the caller holds ``lock``)."""
        self.matrices.clear()
        self.occurrences.clear()

    def _cache_paths(self, model: str) -> tuple[Path, Path, Path, Path]:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)
        base = f"{self.path}.{safe}"
        return (Path(base + ".f32"), Path(base + ".ids"), Path(base + ".json"), Path(base + ".lock"))

    def _fetch_vectors(self, model: str, after_rowid: int) -> tuple[list[int], list[str], list[bytes], int]:
        with self._read() as conn:
            rows = conn.execute("SELECT rowid, chunk_id, vec, dim FROM vectors WHERE model = ? "
                                "AND rowid > ? ORDER BY rowid", (model, after_rowid)).fetchall()
        dim = rows[0][3] if rows else 0
        return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], dim

    def _load_matrix(self, model: str, vectors_gen: int) -> Matrix | None:
        """The model's matrix, appended with rows added since it was last seen."""
        cur = self.matrices.get(model)
        if cur is not None and cur.gen == vectors_gen:
            return cur
        if self.memory:
            return self._load_matrix_ram(model, vectors_gen, cur)
        return self._load_matrix_file(model, vectors_gen)

    def _load_matrix_ram(self, model: str, gen: int, cur: Matrix | None) -> Matrix | None:
        rowids, ids, blobs, dim = self._fetch_vectors(model, cur.max_rowid if cur else 0)
        if cur is None and not ids:
            return None
        if cur is None:
            cur = Matrix(dim, np.empty((0, dim), np.float32), [], {}, 0, gen)
        if ids:
            new = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), cur.dim)
            cur.matrix = np.concatenate([cur.matrix, new]) if len(cur.ids) else new.copy()
            for cid in ids:
                cur.row_of.setdefault(cid, len(cur.ids))
                cur.ids.append(cid)
            cur.max_rowid = rowids[-1]
        cur.gen = gen
        self.matrices[model] = cur
        return cur

    def _load_matrix_file(self, model: str, gen: int) -> Matrix | None:
        f32, idsf, statef, lockf = self._cache_paths(model)
        with open(lockf, "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process updates the cache files at a time
            try:
                state = json.loads(statef.read_text()) if statef.exists() else None
            except (OSError, ValueError):
                state = None
            if state is not None:
                ok = (state.get("db_id") == self.db_id and f32.exists() and idsf.exists()
                      and f32.stat().st_size == state["rows"] * state["dim"] * 4
                      and idsf.stat().st_size == state["rows"] * 32)
                if not ok:
                    state = None
            if state is None:
                for p in (f32, idsf):
                    p.unlink(missing_ok=True)
                state = {"db_id": self.db_id, "rows": 0, "dim": 0, "max_rowid": 0}
            # Stream new rows into the files in blocks: never all blobs in memory at once.
            added = 0
            with self._read() as conn:
                cur = conn.execute("SELECT rowid, chunk_id, vec, dim FROM vectors WHERE model = ? "
                                   "AND rowid > ? ORDER BY rowid", (model, state["max_rowid"]))
                with open(f32, "ab") as fm, open(idsf, "ab") as fi:
                    while rows := cur.fetchmany(_BLOCK_ROWS):
                        dim = rows[0][3]
                        if state["dim"] and dim != state["dim"]:
                            raise ValueError(f"model {model!r}: cache dim {state['dim']} != stored dim {dim}")
                        fm.write(b"".join(r[2] for r in rows))
                        fi.write(b"".join(id_bytes(r[1]) for r in rows))
                        state.update(rows=state["rows"] + len(rows), dim=dim, max_rowid=rows[-1][0])
                        added += len(rows)
                    fm.flush()
                    fi.flush()
                    os.fsync(fm.fileno())
                    os.fsync(fi.fileno())
            if added:
                tmp = statef.with_suffix(".json.tmp")
                tmp.write_text(json.dumps(state))
                os.replace(tmp, statef)
            if state["rows"] == 0:
                return None
            cur = self.matrices.get(model)
            if cur is not None and cur.max_rowid == state["max_rowid"]:
                cur.gen = gen
                return cur
            matrix = np.memmap(f32, dtype=np.float32, mode="r", shape=(state["rows"], state["dim"]))
            raw = idsf.read_bytes()
        # Chunk ids are hex sha256 (64 chars); any other id was stored as its own digest,
        # so row_of maps both forms.
        all_ids = [raw[i:i + 32].hex() for i in range(0, len(raw), 32)]
        row_of: dict[str, int] = {}
        for i, cid in enumerate(all_ids):
            row_of.setdefault(cid, i)
        m = Matrix(state["dim"], matrix, all_ids, row_of, state["max_rowid"], gen)
        self.matrices[model] = m
        return m

    def _load_occurrences(self, model: str, m: Matrix, chunks_gen: int, vectors_gen: int) -> Occurrences:
        occ = self.occurrences.get(model)
        if occ is not None and occ.chunks_gen == chunks_gen and occ.vectors_gen == vectors_gen:
            return occ
        with self._read() as conn:
            rows = conn.execute("SELECT rowid, chunk_id, collection_path FROM chunks "
                                "ORDER BY collection_path").fetchall()
        row_of = m.row_of
        codes: dict[str, int] = {}
        rid = np.empty(len(rows), np.int64)
        mrow = np.empty(len(rows), np.int64)
        code = np.empty(len(rows), np.int32)
        n = 0
        hashed = not self.memory
        for rowid, cid, cp in rows:
            r = row_of.get(cid)
            if r is None and hashed:
                r = row_of.get(id_bytes(cid).hex())
            if r is None:
                continue
            rid[n] = rowid
            mrow[n] = r
            code[n] = codes.setdefault(cp, len(codes))
            n += 1
        occ = Occurrences(chunks_gen, vectors_gen, rid[:n].copy(), mrow[:n].copy(),
                           code[:n].copy(), codes, {})
        self.occurrences[model] = occ
        return occ


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

def top_occurrences(m: Matrix, occ: Occurrences, q: np.ndarray,
                    collection_paths: Iterable[str] | None, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices into ``occ`` of the best ``limit`` and their scores, best first."""
    scope = scope_rows(occ, collection_paths)
    total = len(occ.chunk_rowid)
    if scope is not None and len(scope) == 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    if scope is not None and len(scope) < _SUBSET_FRACTION * total:
        # Score only the scope's rows, a block at a time (no copy of the matrix).
        rows = occ.matrix_row[scope]
        scores = np.empty(len(scope), np.float32)
        for b in range(0, len(rows), _BLOCK_ROWS):
            scores[b:b + _BLOCK_ROWS] = m.matrix[rows[b:b + _BLOCK_ROWS]] @ q
        cand = scope
    else:
        all_scores = m.matrix @ q  # (n_vectors,) float32
        scores = all_scores[occ.matrix_row]  # (occurrences,)
        if scope is not None:
            scores = scores[scope]
            cand = scope
        else:
            cand = None
    k = min(limit, len(scores))
    top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    picked = top if cand is None else cand[top]
    return picked, scores[top]


def id_bytes(chunk_id: str) -> bytes:
    """32 bytes naming a chunk id in the cache file: a hex sha256 id as is, any other id's digest."""
    if len(chunk_id) == 64:
        try:
            return bytes.fromhex(chunk_id)
        except ValueError:
            pass
    return hashlib.sha256(chunk_id.encode("utf-8")).digest()
