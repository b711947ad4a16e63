"""The portable archive: one file holding an index's collections, documents, chunks and vectors.

Owns: the archive format and both of its ends, as the two sides of
``engine.store.copy.migrate`` (the store-to-store copy does the work both
ways): ``ArchiveWriter`` is a copy target (``chunknav export``) and
``ArchiveReader`` a copy source (``chunknav import``), checked whole by
``ArchiveReader.verify`` before anything is written. Imports
``engine.errors``, ``engine.values`` and ``engine.store.sqlite.rows`` (the
chunk row format); never a face, never an embedding provider.

The file is a zip (``FORMAT``, ``VERSION``)::

    collections.json       [{collectionPath, root, passwordRef}]
    documents.jsonl        one line per document: {"document": {Document fields},
                           "text": extracted text, "chunks": [chunk row, ...]}
                           (a chunk row is ``CHUNK_COLUMNS`` from chunk_index on)
    vectors/<n>.f32        model n's vectors: float32 little-endian, shape (count, dim)
    vectors/<n>.ids        their chunk ids, one per line, in the same order
    manifest.json          written last: format, version, createdAt, counts,
                           models [{model, dim, vectors, data, ids}], ``extra``
                           (the exporter's model identity and settings key), and
                           members {name: {sha256, bytes}} of every other member

Every member's bytes are checked against the manifest (sha256 and length),
the manifest names every member, and the zip's own CRCs are read: a
truncated, tampered or incomplete archive is refused (``ArchiveError``)
before any row is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from engine.errors import ArchiveError
from engine.lazy import np
from engine.values import Chunk, Collection, Document

__all__ = ["ArchiveError", "ArchiveWriter", "ArchiveReader", "FORMAT", "VERSION"]

FORMAT = "chunknav-archive"
VERSION = 1
_MANIFEST = "manifest.json"
_BLOCK = 1 << 20


class _Hashing(io.RawIOBase):
    """A write-through wrapper counting and hashing what goes into one zip member."""

    def __init__(self, raw: IO[bytes]):
        self._raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        self.sha.update(data)
        self.size += len(data)
        self._raw.write(data)
        return len(data)


class ArchiveWriter:
    """A copy target (``engine.store.copy.migrate``) writing one archive file.

    The file appears at ``path`` only when ``close(ok=True)`` finishes (written to
    ``path + ".part"``, then renamed); anything else removes the partial file.

    Args:
        path: the archive to write (replaced if it exists).
        extra: JSON-able facts kept in the manifest (model identity, settings key).
    """

    read_only = False

    def __init__(self, path: str | os.PathLike[str], extra: dict[str, Any] | None = None):
        self.path = os.fspath(path)
        self._part = self.path + ".part"
        self._zip = zipfile.ZipFile(self._part, "w", zipfile.ZIP_DEFLATED, allowZip64=True)
        self._members: dict[str, dict[str, Any]] = {}
        self._collections: list[dict[str, Any]] = []
        self._open: tuple[str, IO[bytes], _Hashing] | None = None
        self._models: list[dict[str, Any]] = []
        self._ids: list[str] = []
        self.extra = dict(extra or {})
        self.counts = {"collections": 0, "documents": 0, "chunks": 0, "vectors": 0}

    # -- the copy target -----------------------------------------------------------------
    @contextmanager
    def index_lock(self) -> Iterator[None]:
        """Nothing to lock: the file is this writer's alone."""
        yield

    def add_collection(self, collection: Collection) -> None:
        self._collections.append(
            {
                "collectionPath": collection.collection_path,
                "root": collection.root,
                "passwordRef": collection.password_ref,
            }
        )
        self.counts["collections"] += 1

    def replace_document(self, document: Document, text: str, chunks: list[Chunk]) -> None:
        from engine.store.sqlite.rows import chunk_params

        line = {
            "document": dataclasses.asdict(document),
            "text": text,
            "chunks": [list(chunk_params(c)[2:]) for c in chunks],
        }
        self._member("documents.jsonl").write(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
        self.counts["documents"] += 1
        self.counts["chunks"] += len(chunks)

    def add_vectors(self, model: str, chunk_ids: list[str], vectors: np.ndarray) -> int:
        arr = np.ascontiguousarray(vectors, dtype="<f4")
        dim = int(arr.shape[1])
        cur = self._models[-1] if self._models else None
        if cur is None or cur["model"] != model or cur["dim"] != dim:
            self._end_model()
            n = len(self._models)
            cur = {"model": model, "dim": dim, "vectors": 0, "data": f"vectors/{n}.f32", "ids": f"vectors/{n}.ids"}
            self._models.append(cur)
        self._member(cur["data"], zipfile.ZIP_STORED).write(arr.tobytes())
        self._ids.extend(chunk_ids)
        cur["vectors"] += len(chunk_ids)
        self.counts["vectors"] += len(chunk_ids)
        return len(chunk_ids)

    def save_run(self, summary: dict[str, Any]) -> None:
        """Run records stay with the index they describe: not archived."""

    # -- the file ------------------------------------------------------------------------
    def _member(self, name: str, compress: int = zipfile.ZIP_DEFLATED) -> _Hashing:
        """The open member ``name`` (closing any other first: zip writes one at a time)."""
        if self._open is not None and self._open[0] == name:
            return self._open[2]
        self._close_member()
        info = zipfile.ZipInfo(name, time.localtime()[:6])
        info.compress_type = compress
        raw = self._zip.open(info, "w", force_zip64=True)
        self._open = (name, raw, _Hashing(raw))
        return self._open[2]

    def _close_member(self) -> None:
        if self._open is not None:
            name, raw, h = self._open
            raw.close()
            self._members[name] = {"sha256": h.sha.hexdigest(), "bytes": h.size}
            self._open = None

    def _end_model(self) -> None:
        """Write the ids of the model whose vectors were just written."""
        if self._models:
            self._close_member()
            self._member(self._models[-1]["ids"]).write("\n".join(self._ids).encode("ascii"))
            self._close_member()
            self._ids = []

    def _whole(self, name: str, data: bytes) -> None:
        self._member(name).write(data)
        self._close_member()

    def close(self, ok: bool = True) -> dict[str, Any]:
        """Finish the archive (``ok``) or drop it.

        Returns:
            The manifest written (``{}`` when dropped).
        """
        if not ok:
            self._zip.close()
            if os.path.exists(self._part):
                os.remove(self._part)
            return {}
        self._end_model()
        if "documents.jsonl" not in self._members:
            self._whole("documents.jsonl", b"")
        self._whole("collections.json", json.dumps(self._collections, ensure_ascii=False).encode("utf-8"))
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "counts": dict(self.counts),
            "models": self._models,
            "extra": self.extra,
            "members": self._members,
        }
        self._zip.writestr(_MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1))
        self._zip.close()
        os.replace(self._part, self.path)
        return manifest


class ArchiveReader:
    """A copy source (``engine.store.copy.migrate``) reading a verified archive.

    Args:
        path: the archive.
        collections: only these collection paths (None: all).

    Attributes:
        roots: ``{collectionPath: directory}`` the copy binds those collections to
            instead of their archived roots (set by the importer).

    Raises:
        ArchiveError: not a readable zip, or no manifest of this format and version.
    """

    def __init__(self, path: str | os.PathLike[str], collections: list[str] | None = None):
        self.path = os.fspath(path)
        try:
            self._zip = zipfile.ZipFile(self.path, "r")
            self.manifest = json.loads(self._zip.read(_MANIFEST))
        except FileNotFoundError:
            raise ArchiveError(f"no archive at {self.path}", "not-found") from None
        except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError) as e:
            raise ArchiveError(f"{self.path} is not a readable chunknav archive (truncated or damaged): {e}") from None
        if self.manifest.get("format") != FORMAT or self.manifest.get("version") != VERSION:
            raise ArchiveError(
                f"{self.path}: format {self.manifest.get('format')!r} version {self.manifest.get('version')!r}; "
                f"this chunknav reads {FORMAT} version {VERSION}"
            )
        self.wanted = None if collections is None else {c.strip("/") for c in collections}
        self._current: tuple[tuple[str, str], str, list[Chunk]] | None = None
        self.roots: dict[str, str] = {}

    def close(self) -> None:
        self._zip.close()

    # -- checks --------------------------------------------------------------------------
    def verify(self) -> None:
        """Read every member and check it against the manifest.

        Raises:
            ArchiveError: a member missing, unlisted, of another length or sha256, a zip
                CRC error, a vector member whose length is not ``vectors * dim * 4``, or a
                collection asked for that the archive does not hold (code ``not-found``).
        """
        listed: dict[str, dict[str, Any]] = self.manifest.get("members") or {}
        present = {i.filename for i in self._zip.infolist()} - {_MANIFEST}
        if present != set(listed):
            extra, gone = sorted(present - set(listed)), sorted(set(listed) - present)
            raise ArchiveError(f"{self.path}: members not in the manifest {extra}, missing {gone}")
        for name, want in listed.items():
            h, size = hashlib.sha256(), 0
            try:
                with self._zip.open(name) as f:
                    while block := f.read(_BLOCK):
                        h.update(block)
                        size += len(block)
            except (zipfile.BadZipFile, EOFError, OSError) as e:
                raise ArchiveError(f"{self.path}: member {name} cannot be read: {e}") from None
            if size != want.get("bytes") or h.hexdigest() != want.get("sha256"):
                raise ArchiveError(f"{self.path}: member {name} does not match its checksum (tampered or damaged)")
        for m in self.manifest.get("models") or []:
            if listed[m["data"]]["bytes"] != int(m["vectors"]) * int(m["dim"]) * 4:
                raise ArchiveError(f"{self.path}: {m['data']} does not hold {m['vectors']} vectors of {m['dim']}")
        if self.wanted is not None:
            held = {c.collection_path for c in self.collections(every=True)}
            unknown = sorted(self.wanted - held)
            if unknown:
                raise ArchiveError(
                    f"the archive holds no collection {', '.join(map(repr, unknown))}; it holds "
                    f"{', '.join(sorted(held)) or 'none'}",
                    "not-found",
                )

    def models(self) -> dict[str, int]:
        """``{model: dim}`` of the archived vectors."""
        return {m["model"]: int(m["dim"]) for m in self.manifest.get("models") or []}

    # -- the copy source -----------------------------------------------------------------
    def collections(self, every: bool = False) -> list[Collection]:
        rows = json.loads(self._zip.read("collections.json"))
        out = [
            Collection(r["collectionPath"], self.roots.get(r["collectionPath"], r["root"]), r.get("passwordRef"))
            for r in rows
        ]
        return out if every or self.wanted is None else [c for c in out if c.collection_path in self.wanted]

    def documents(self) -> Iterator[Document]:
        """The archived documents in order; each one's text and chunks are then read with
        ``document_text`` / ``chunks`` (one line held at a time)."""
        from engine.store.sqlite.rows import chunk_of

        with self._zip.open("documents.jsonl") as f:
            for line in io.TextIOWrapper(f, encoding="utf-8"):
                if not line.strip():
                    continue
                rec = json.loads(line)
                doc = Document(**rec["document"])
                if self.wanted is not None and doc.collection_path not in self.wanted:
                    continue
                cp, fp = doc.collection_path, doc.file_path
                chunks = [chunk_of((cp, fp, *row)) for row in rec["chunks"]]
                self._current = ((cp, fp), rec["text"], chunks)
                yield doc
        self._current = None

    def document_text(self, collection_path: str, file_path: str) -> str | None:
        cur = self._current
        return cur[1] if cur is not None and cur[0] == (collection_path, file_path) else None

    def chunks(self, collection_path: str, file_path: str) -> list[Chunk]:
        cur = self._current
        return cur[2] if cur is not None and cur[0] == (collection_path, file_path) else []

    def iter_vectors(
        self, model: str | None = None, batch: int = 10_000
    ) -> Iterator[tuple[str, list[str], np.ndarray]]:
        """The archived vectors, in batches of at most ``batch``: ``(model, chunk_ids,
        vectors float32 (n, dim))`` (all of them: the copy keeps those of the chunks it copied)."""
        for m in self.manifest.get("models") or []:
            if model is not None and m["model"] != model:
                continue
            dim = int(m["dim"])
            ids = self._zip.read(m["ids"]).decode("ascii").split("\n") if m["vectors"] else []
            with self._zip.open(m["data"]) as f:
                for start in range(0, len(ids), batch):
                    part = ids[start : start + batch]
                    data = f.read(len(part) * dim * 4)
                    yield m["model"], part, np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(len(part), dim)

    def last_run(self) -> dict[str, Any] | None:
        """Run records are not archived."""
        return None
