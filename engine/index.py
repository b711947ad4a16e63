"""The indexing service: walk collection roots, hash-gate, extract, chunk, store, embed.

Owns: one index run (DESIGN.md "Indexing"): the content-hash gate, forced
rebuilds, removal of vanished files, extraction once per duplicate content,
per-file failures recorded as data, the embedding pass over chunks without a
vector for the current model, progress events and the run summary. Imports
``engine.extract``, ``engine.chunk``, ``engine.store`` and ``engine.model``;
never a face (streamlit, mcp, argparse). The embedder is passed in.

Summary (camelCase, JSON-able, saved with ``store.save_run``)::

    {"force", "filesSeen", "indexed", "skipped", "empty": [...], "failed": [...],
     "unsupported": [...], "removed", "chunksWritten", "embedded", "reused",
     "embedError", "seconds", "startedAt", "finishedAt"}

``empty``/``failed``/``unsupported`` entries are ``{"collectionPath",
"filePath", "reason"}``; ``embedError`` is ``EmbedFailure.to_fields()`` or None.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engine.chunk import chunk_id, chunk_text
from engine.config import Settings
from engine.errors import EmbedError, EncryptedError, ExtractError, UnsupportedFileError
from engine.extract.reasons import reason_code
from engine.model import Chunk, Collection, Document, ExtractedText
from engine.paths import document_path, resolve_inside
from engine.store.base import Store

__all__ = ["Indexer", "walk", "file_hash", "document_path", "resolve_inside", "SUMMARY_CHARS"]

log = logging.getLogger(__name__)

#: Characters of text kept as a document's summary.
SUMMARY_CHARS = 300
_HASH_BLOCK_BYTES = 1 << 20


def file_hash(path: Path) -> str:
    """Hex sha256 of the file's bytes (the ``content_hash``).

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_HASH_BLOCK_BYTES):
            h.update(block)
    return h.hexdigest()


def walk(root: str | Path) -> list[str]:
    """POSIX ``filePath``s of the regular files under ``root``, sorted.

    Hidden files and directories (leading ``.``) are skipped; symlinked
    directories are not descended; a symlinked file is kept only when it
    resolves inside ``root``.
    """
    base = Path(root).resolve()
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = Path(dirpath).relative_to(base)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            if full.is_symlink():
                try:
                    resolve_inside(base, rel)
                except Exception:  # PathEscapeError, or a loop
                    log.info("skipping symlink %s: it leaves the collection root", full)
                    continue
            if full.is_file():
                out.append(rel)
    return sorted(out)


@dataclass
class _File:
    collection: Collection
    file_path: str
    path: Path
    content_hash: str
    size_bytes: int
    last_modified: float
    password: str | None = None  # resolved from the collection's password_ref; memory only


def _password_key(password: str | None, content_hash: str) -> str:
    """Which password a failed encrypted file was tried with: a per-file salted
    digest (the password itself is never stored)."""
    return hashlib.sha256(f"{content_hash}\0{password or ''}".encode("utf-8")).hexdigest()[:16]


#: Seconds of extraction grouped into one store commit (other writers wait at
#: most about this long; readers are never blocked).
BATCH_SECONDS = 1.0


class Indexer:
    """One index run over a store; hold no state between runs.

    Args:
        store: any ``Store`` backend.
        settings: chunk size/overlap (``settings_key`` gates re-chunking) and
            ``embed_batch`` (texts per ``embed`` call).
        embedder: an object with ``model``, ``probe()`` and ``embed(texts)``
            (float32, shape (n, dim), L2-normalised), or None: text only.
    """

    def __init__(self, store: Store, settings: Settings, embedder: Any | None = None):
        self.store = store
        self.settings = settings
        self.embedder = embedder
        from engine.extract.ocr import OcrSettings

        self._ocr = OcrSettings(settings.ocr, settings.ocr_languages, settings.ocr_dpi)

    def run(self, collections: list[str] | None = None, force: bool = False,
            on_progress: Callable[[dict], None] | None = None) -> dict:
        """Index the given collections (None: all) and return the summary.

        Args:
            collections: collection paths to walk; None walks every collection.
            force: re-extract and re-store every file, ignoring the hash gate.
            on_progress: called with ``{"phase": "extract"|"embed"|"done",
                "done", "total", "file", "elapsedS"}`` (counts of files in the
                extract phase, of chunks in the embed phase).

        Returns:
            The summary dict (module docstring), also saved with ``store.save_run``.
            Per-file failures and the embedding failure are data in it.

        Raises:
            IndexBusyError: another run holds the index lock.
            ValueError: a named collection does not exist.
        """
        started = time.time()
        t0 = time.perf_counter()
        emit = on_progress or (lambda _e: None)
        with self.store.index_lock():
            targets = self._targets(collections)
            summary: dict[str, Any] = {
                "force": bool(force), "collections": [c.collection_path for c in targets],
                "filesSeen": 0, "indexed": 0, "skipped": 0, "empty": [], "failed": [],
                "unsupported": [], "removed": 0, "chunksWritten": 0, "embedded": 0,
                "reused": 0, "embedError": None,
            }
            files = self._scan(targets, summary)
            self._text_pass(files, force, summary, emit, t0)
            if self.embedder is not None:
                self._embed_pass(summary, emit, t0)
            summary["seconds"] = round(time.perf_counter() - t0, 3)
            summary["startedAt"] = _iso(started)
            summary["finishedAt"] = _iso(time.time())
            self.store.save_run(summary)
            emit({"phase": "done", "done": summary["filesSeen"], "total": summary["filesSeen"],
                  "file": "", "elapsedS": summary["seconds"]})
        return summary

    # -- steps -------------------------------------------------------------------
    def _targets(self, names: list[str] | None) -> list[Collection]:
        known = {c.collection_path: c for c in self.store.collections()}
        if names is None:
            return [known[k] for k in sorted(known)]
        out = []
        for name in names:
            c = known.get(name.strip("/"))
            if c is None:
                raise ValueError(f"unknown collection {name!r}; known: {', '.join(sorted(known)) or 'none'}")
            out.append(c)
        return out

    def _scan(self, targets: list[Collection], summary: dict) -> list[_File]:
        """Walk every root, hash every supported file, drop vanished documents."""
        from engine.extract import SUPPORTED_SUFFIXES

        from engine.passwords import resolve_password

        files: list[_File] = []
        for coll in targets:
            seen: set[str] = set()
            password = resolve_password(coll.password_ref)
            root = Path(coll.root)
            if not root.is_dir():
                summary["failed"].append({"collectionPath": coll.collection_path, "filePath": "",
                                          "reason": f"collection root {coll.root} is not a directory"})
                continue
            for rel in walk(root):
                full = root / rel
                if full.suffix.lower() not in SUPPORTED_SUFFIXES:
                    summary["unsupported"].append({
                        "collectionPath": coll.collection_path, "filePath": rel,
                        "reason": f"unsupported file type: {full.suffix.lower() or '(no suffix)'}"})
                    continue
                try:
                    st = full.stat()
                    digest = file_hash(full)
                except OSError as e:
                    summary["failed"].append({"collectionPath": coll.collection_path, "filePath": rel,
                                              "reason": f"unreadable: {e.strerror or e}"})
                    continue
                seen.add(rel)
                files.append(_File(coll, rel, full, digest, st.st_size, st.st_mtime, password))
            for doc in self.store.documents(coll.collection_path):
                if doc.file_path not in seen:
                    self.store.remove_document(coll.collection_path, doc.file_path)
                    summary["removed"] += 1
        summary["filesSeen"] = len(files) + len(summary["unsupported"])
        return files

    def _is_current(self, f: _File) -> bool:
        doc = self.store.get_document(f.collection.collection_path, f.file_path)
        if doc is None or doc.content_hash != f.content_hash or doc.settings_key != self.settings.settings_key:
            return False
        # An encrypted file is retried once its collection's password changes.
        if doc.status == "failed" and doc.metadata.get("encrypted"):
            return doc.metadata.get("passwordKey") == _password_key(f.password, f.content_hash)
        return True

    def _text_pass(self, files: list[_File], force: bool, summary: dict,
                   emit: Callable[[dict], None], t0: float) -> None:
        from engine.extract import extract

        # Content seen at several paths is extracted once; kept only until its last use.
        remaining: dict[tuple[str, str | None], int] = {}
        todo = []
        for f in files:
            if not force and self._is_current(f):
                summary["skipped"] += 1
                continue
            todo.append(f)
            key = (f.content_hash, f.password)
            remaining[key] = remaining.get(key, 0) + 1
        cache: dict[tuple[str, str | None], ExtractedText | ExtractError] = {}  # memory only
        total = len(files)
        done = summary["skipped"]
        i = 0
        while i < len(todo):
            # Files are committed in groups of up to BATCH_SECONDS of work: one
            # commit per group instead of per file (each file is still atomic).
            with self.store.batch():
                started = time.perf_counter()
                while i < len(todo):
                    f = todo[i]
                    i += 1
                    key = (f.content_hash, f.password)
                    outcome = cache.get(key)
                    if outcome is None:
                        try:
                            outcome = extract(f.path, f.password, self._ocr)
                        except ExtractError as e:
                            outcome = e
                        except Exception as e:  # a library bug on one file must not stop the run
                            log.exception("extracting %s failed", f.path)
                            outcome = ExtractError(f"extractor error: {type(e).__name__}: {e}")
                    remaining[key] -= 1
                    if remaining[key] > 0:
                        cache[key] = outcome
                    else:
                        cache.pop(key, None)
                    self._store_one(f, outcome, summary)
                    done += 1
                    emit({"phase": "extract", "done": done, "total": total,
                          "file": f"{f.collection.collection_path}/{f.file_path}",
                          "elapsedS": round(time.perf_counter() - t0, 3)})
                    if time.perf_counter() - started >= BATCH_SECONDS:
                        break

    def _store_one(self, f: _File, outcome: ExtractedText | ExtractError, summary: dict) -> None:
        cp = f.collection.collection_path
        base = dict(collection_path=cp, file_path=f.file_path, content_hash=f.content_hash,
                    settings_key=self.settings.settings_key, size_bytes=f.size_bytes,
                    last_modified=f.last_modified, indexed_at=time.time())
        entry = {"collectionPath": cp, "filePath": f.file_path}
        if isinstance(outcome, UnsupportedFileError):
            summary["unsupported"].append({**entry, "reason": outcome.reason})
            if self.store.get_document(cp, f.file_path) is not None:
                self.store.remove_document(cp, f.file_path)
            return
        if isinstance(outcome, ExtractError):
            meta: dict[str, Any] = {}
            if isinstance(outcome, EncryptedError):
                meta = {"encrypted": True, "passwordKey": _password_key(f.password, f.content_hash)}
            meta["reasonCode"] = reason_code("failed", outcome.reason)
            doc = Document(**base, file_type=f.path.suffix.lower().lstrip("."), status="failed",
                           reason=outcome.reason, metadata=meta)
            self.store.replace_document(doc, "", [])
            summary["failed"].append({**entry, "reason": outcome.reason})
            return
        ex = outcome
        meta = dict(ex.metadata)
        if ex.notes:
            meta["notes"] = list(ex.notes)
        if not ex.text.strip():  # empty means empty: no chunk for whitespace
            reason = "; ".join(ex.notes) or "no text"
            meta["reasonCode"] = reason_code("empty", reason)
            doc = Document(**base, file_type=ex.file_type, status="empty", reason=reason,
                           page_count=len(ex.pages), metadata=meta)
            self.store.replace_document(doc, "", [])
            summary["empty"].append({**entry, "reason": reason})
            return
        labels = {p.number: p.label for p in ex.pages if p.label}
        windows = chunk_text(ex, self.settings.chunk_size, self.settings.chunk_overlap)
        text = ex.text
        ocr_pages = {int(k): v for k, v in (ex.metadata.get("ocrPages") or {}).items()}
        chunks = []
        for w in windows:
            body = text[w.start:w.end]
            chunks.append(Chunk(
                cp, f.file_path, w.chunk_index, chunk_id(f.content_hash, body), f.content_hash,
                w.start, w.end, body, w.page, labels.get(w.page) if w.page is not None else None,
                w.bbox, w.regions, _ocr_metadata(w, ocr_pages), f.last_modified))
        doc = Document(**base, file_type=ex.file_type, status="indexed",
                       reason="; ".join(ex.notes) or None, page_count=len(ex.pages),
                       chunk_count=len(chunks), text_length=len(text),
                       summary=text[:SUMMARY_CHARS], metadata=meta)
        self.store.replace_document(doc, text, chunks)
        summary["indexed"] += 1
        summary["chunksWritten"] += len(chunks)

    def _embed_pass(self, summary: dict, emit: Callable[[dict], None], t0: float) -> None:
        """Embed chunks without a vector for the embedder's model; failures become data."""
        emb = self.embedder
        try:
            emb.probe()  # wrong dim / unreachable: stop before any vector is written
        except EmbedError as e:
            summary["embedError"] = e.failure.to_fields()
            log.warning("embedding skipped, probe failed: %s", e.failure.message)
            return
        model = emb.model
        before = self.store.vector_counts().get(model, {})
        summary["reused"] = int(before.get("vectors", 0)) - int(before.get("stale", 0))
        missing = self.store.chunks_missing_vectors(model)
        total = len(missing)
        batch = max(1, int(self.settings.embed_batch))
        done = 0
        for i in range(0, total, batch):
            part = missing[i:i + batch]
            try:
                vectors = emb.embed([t for _cid, t in part])
            except EmbedError as e:
                summary["embedError"] = e.failure.to_fields()
                log.warning("embedding stopped after %d of %d chunks: %s", done, total, e.failure.message)
                return
            summary["embedded"] += self.store.add_vectors(model, [cid for cid, _t in part], vectors)
            done += len(part)
            emit({"phase": "embed", "done": done, "total": total, "file": "",
                  "elapsedS": round(time.perf_counter() - t0, 3)})


def _ocr_metadata(w: Any, ocr_pages: dict[int, float | None]) -> dict[str, Any]:
    """Chunk metadata for a window touching OCR'd pages: ``{"ocr": True,
    "ocrPages": [page, ...], "ocrConfidence": {"<page>": mean 0..100 or None}}``; {} otherwise."""
    if not ocr_pages:
        return {}
    pages = sorted({r.page for r in w.regions if r.page in ocr_pages})
    if not pages:
        return {}
    return {"ocr": True, "ocrPages": pages, "ocrConfidence": {str(p): ocr_pages[p] for p in pages}}


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat(timespec="seconds")
