"""Run records of the indexer: the summary's shape, its outcome, and a run that never ended.

Owns: ``new_summary`` (the summary dict every run starts from, saved with
``Store.save_run`` at the start as ``status: "running"`` and again at the
end), ``record`` (one skipped/failed/stale file entry), ``run_outcome``
(the last run as ``index_status`` shows it: a ``running`` record whose
process is gone is ``interrupted``), ``exit_code``, and cancel from any
face (``request_cancel``: the event of a run of this process, registered by
``running_here``, and for a run of any process a ``cancelRequested`` written
into its record, which the run reads at most every half second:
``engine.index.context``). Imports nothing from the engine; no face.

Summary keys (camelCase, JSON-able)::

    runId, status, pid, host, force, collections, filesSeen,
    indexed, unchanged (files the hash gate passed over),
    counts {indexed, empty, unchanged, failed, skipped, stale, removed, missing, renamed},
    empty [...], failed [...], skippedFiles [...], stale [...],
    removedFiles [...] (documents removed: their file is gone),
    missing [...] (documents kept, marked ``missing``: their file is gone and
    ``keep_missing`` is on), renamed [{collectionPath, from, to}] (documents
    moved to the new path of their bytes: chunks and vectors kept),
    failedKept [...] (documents an earlier run recorded failed, unchanged since:
        counted unchanged, still failing, and keeping the exit code non-zero),
    unsupported [...] (the skippedFiles with code unsupported-type),
    rootErrors [...] (collection roots that could not be listed),
    removed, statGated (files whose hash came from their stored row: size,
    mtime and ctime as indexed), chunksWritten, embedded, reused, embedError, error,
    seconds, startedAt, finishedAt, summarySaved (false only: the end record
    could not be saved, said in ``error.message`` too),
    progress {...} (while running: the last snapshot of ``engine.index.progress``),
    cancelRequested (a cancel was asked: by a face of this process or through the record)

There is no top-level ``skipped``: files skipped with a reason are
``counts.skipped`` / ``skippedFiles``. A stored record without ``unchanged``
carries that count as a top-level ``skipped``; ``unchanged_of`` reads either.

``status``: ``running`` (saved at the start), ``finished`` (with
``cancelRequested: true`` and a ``message`` when the cancel request came
while the last file or embedding batch was read: no boundary was left),
``cancelled`` (a cancel request stopped it at a file boundary, work left), ``stopped`` (``error``
says why: ``store-busy``, ``disk-full``, ``index-unavailable``, its ``message``
ending with what was kept, ``kept_phrase``); ``run_outcome`` adds ``interrupted``.
Each file list entry is ``{"collectionPath", "filePath", "code", "reason"}``
(``reason`` the message for people). A ``rootErrors`` entry is
``{"collectionPath", "root", "code", "reason"}`` (code ``root-missing``: the
root vanished or is not a folder; ``unreadable``: it cannot be listed); every
document of that collection is then in ``stale`` with the same code (the root
is not a walk entry: it is in no count). ``filesSeen`` counts every entry the
walk reported: ``counts.indexed + empty + unchanged + failed + skipped +
stale == filesSeen`` once the run finished (``removed``, ``missing`` and
``renamed`` count stored documents, not walk entries: a renamed file's new
path is also counted ``unchanged``), less the stale documents under a
folder that could not be entered (the folder is the one skipped entry). A
file that cannot be read but has a stored document is ``stale`` only, never
also ``skipped``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "new_summary",
    "record",
    "run_outcome",
    "exit_code",
    "unchanged_of",
    "roots_not_listed",
    "kept_phrase",
    "space_needed",
    "DISK_PER_TEXT_BYTE",
    "DISK_PER_OTHER_BYTE",
    "RUN_STATUSES",
    "running_here",
    "request_cancel",
]

#: Peak bytes of index (database, write-ahead log, vector cache) per byte of a plain-text file
#: read (``.txt``, ``.md``, ``.html``): measured ``peak / text`` of a first index is 4.8 without
#: vectors and 7.1 with the local model's (bench/index_disk_peak.py, docs/operations.md).
DISK_PER_TEXT_BYTE = 8.0
#: The same per byte of any other file (PDF, DOCX, OCR'd pages), whose text is a fraction of it.
DISK_PER_OTHER_BYTE = 1.0
_TEXT_SUFFIXES = (".txt", ".md", ".html", ".htm")

#: Every ``status`` a run record can carry (``interrupted`` only as shown by run_outcome).
RUN_STATUSES = ("running", "finished", "cancelled", "stopped", "interrupted")


def _host() -> str:
    """This machine's host name: what ``socket.gethostname()`` answers on POSIX (both read
    uname's nodename), without importing socket (~2 ms of every index run)."""
    return os.uname().nodename


def new_summary(force: bool, collections: list[str], started_at: str) -> dict[str, Any]:
    """A fresh summary: status ``running``, every count 0, this process's pid and host."""
    return {
        "runId": os.urandom(6).hex(),
        "status": "running",
        "pid": os.getpid(),
        "host": _host(),
        "force": bool(force),
        "collections": list(collections),
        "startedAt": started_at,
        "filesSeen": 0,
        "indexed": 0,
        "unchanged": 0,
        "counts": {
            "indexed": 0,
            "empty": 0,
            "unchanged": 0,
            "failed": 0,
            "skipped": 0,
            "stale": 0,
            "removed": 0,
            "missing": 0,
            "renamed": 0,
        },
        "empty": [],
        "failed": [],
        "skippedFiles": [],
        "stale": [],
        "failedKept": [],
        "unsupported": [],
        "rootErrors": [],
        "removedFiles": [],
        "missing": [],
        "renamed": [],
        "removed": 0,
        "statGated": 0,
        "chunksWritten": 0,
        "embedded": 0,
        "reused": 0,
        "embedError": None,
        "error": None,
    }


def unchanged_of(summary: dict[str, Any]) -> int:
    """Files the hash gate passed over in a run: ``unchanged``, or the top-level
    ``skipped`` of a record without ``unchanged`` (the same count under that key)."""
    if "unchanged" in summary:
        return int(summary["unchanged"] or 0)
    return int(summary.get("skipped") or 0)


def roots_not_listed(summary: dict[str, Any]) -> str:
    """``", N collection root(s) not listed"`` for a run summary (or record) with
    ``rootErrors``, else ``""``: the phrase the CLI's run and status lines and the
    explorer's sidebar append to their counts."""
    n = len(summary.get("rootErrors") or [])
    return f", {n} collection root{'' if n == 1 else 's'} not listed" if n else ""


def kept_phrase(summary: dict[str, Any]) -> str:
    """What a run that stopped on a store fault kept, for people: ``"30 documents committed;
    rerun `chunknav index` to finish"`` (documents written this run: indexed, empty or failed;
    and the vectors stored, once the embedding pass began)."""
    counts = summary.get("counts") or {}
    docs = sum(int(counts.get(k) or 0) for k in ("indexed", "empty", "failed"))
    said = f"{docs} document{'' if docs == 1 else 's'} committed"
    if summary.get("embedded"):
        said += f", {summary['embedded']} vectors stored"
    return f"{said}; rerun `chunknav index` to finish"


def space_needed(files: list[tuple[str, int]]) -> int:
    """Bytes of disk a run may need at its peak for ``files`` (``(suffix, size in bytes)`` of
    each file it will read): ``DISK_PER_TEXT_BYTE`` per byte of plain text,
    ``DISK_PER_OTHER_BYTE`` per byte of any other file."""
    return int(
        sum(size * (DISK_PER_TEXT_BYTE if suffix in _TEXT_SUFFIXES else DISK_PER_OTHER_BYTE) for suffix, size in files)
    )


def record(collection_path: str, file_path: str, code: str | None, reason: str) -> dict[str, Any]:
    """One file entry of a summary list."""
    return {"collectionPath": collection_path, "filePath": file_path, "code": code, "reason": reason}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_outcome(run: dict[str, Any] | None) -> dict[str, Any] | None:
    """The last run record as shown to people.

    A record without ``status`` is ``finished``. A ``running``
    record written on this host by a process that no longer exists is
    ``interrupted`` (killed, power loss): what it committed stays, the next
    run carries on. A ``running`` record of another host is shown as is.
    """
    if run is None:
        return None
    out = dict(run)
    out.setdefault("status", "finished")
    if (
        out["status"] == "running"
        and out.get("host") == _host()
        and isinstance(out.get("pid"), int)
        and not _alive(out["pid"])
    ):
        out["status"] = "interrupted"
        out["message"] = (
            f"the run started at {out.get('startedAt')} (pid {out['pid']}) never finished: "
            "it was killed; what it committed is kept"
        )
    return out


def exit_code(summary: dict[str, Any]) -> int:
    """CLI exit code of a run: 1 when a file failed (this run, or an earlier one whose failed
    documents are still in the index: ``failedKept``), a collection root could not be listed,
    the run did not finish, or embedding failed; else 0."""
    if (
        summary.get("failed")
        or summary.get("failedKept")
        or summary.get("rootErrors")
        or summary.get("embedError")
        or summary.get("error")
    ):
        return 1
    return 0 if summary.get("status", "finished") == "finished" else 1


_HERE: dict[str, threading.Event] = {}  # runId -> cancel event of the runs of this process
_HERE_LOCK = threading.Lock()


@contextlib.contextmanager
def running_here(run_id: str, cancel: threading.Event) -> Iterator[None]:
    """Within the block, ``request_cancel`` of this process sets ``cancel`` for run ``run_id``."""
    with _HERE_LOCK:
        _HERE[run_id] = cancel
    try:
        yield
    finally:
        with _HERE_LOCK:
            _HERE.pop(run_id, None)


def request_cancel(store: Any) -> dict[str, Any]:
    """Ask the active index run of ``store`` to stop, whichever process runs it.

    A run of this process is told at once (its event); a run of any process also finds
    ``cancelRequested`` in its record (``Store.save_run`` keeps it) within half a second.
    Either way the run abandons the files it is reading, keeps what it committed, and
    ends ``cancelled``.

    Returns:
        ``{"requested", "status", "message"}`` and, when a run was found, its ``runId``
        and ``startedAt``: ``requested`` is True when a running run was asked to stop;
        ``status`` is that run's status (``running``), or the last run's (``finished``,
        ``cancelled``, ``interrupted``, ...), or ``none`` without any run.
    """
    run = run_outcome(store.last_run())
    if run is None:
        return {"requested": False, "status": "none", "message": "no index run has been recorded: nothing to cancel"}
    found = {"runId": run.get("runId", ""), "startedAt": run.get("startedAt", "")}
    if run["status"] != "running":
        return {
            "requested": False,
            "status": run["status"],
            **found,
            "message": f"no index run is active (the last one is {run['status']}): nothing to cancel",
        }
    with _HERE_LOCK:
        event = _HERE.get(str(run.get("runId")))
    if event is not None:
        event.set()
    if not run.get("cancelRequested"):
        store.save_run({**run, "cancelRequested": True})
    return {
        "requested": True,
        "status": "running",
        **found,
        "message": "the run was asked to stop: it abandons the files it is reading within seconds, "
        "keeps what it committed and is recorded cancelled",
    }
