"""Cancel stops a run within seconds, even inside an OCR job, through every face.

A real corpus with a slow file (a PDF read with OCR forced: seconds a page),
a real SQLite index, real subprocesses (the CLI, the MCP server with the
official client). Each test waits until the slow file is named in flight
(a progress event, or a progress line of the CLI), then cancels and times
the stop. The index is intact afterwards and the next run finishes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.config import Settings
from engine.errors import RunCancelled
from engine.extract import extract
from engine.extract.common import interruptible
from engine.index.indexer import Indexer
from engine.store.sqlite.store import SqliteStore
from engine.values import Collection
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]
#: The limit: from the request to the end of the run (2 cores, shared).
LIMIT_S = 3.0


def _scan_pdf(path: Path, pages: int = 4) -> None:
    """A PDF whose every page is OCR'd when OCR is forced (seconds a page at 300 dpi)."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        text = "\n".join(f"page {i} line {j}: the quick brown fox jumps over the lazy dog" for j in range(40))
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 760), text, fontsize=10)
    doc.save(path)


def _corpus(root: Path) -> None:
    root.mkdir()
    for i in range(3):
        (root / f"a{i}.txt").write_text(f"a small file {i} before the scan " * 20, "utf-8")
    _scan_pdf(root / "scan.pdf")
    (root / "z.txt").write_text("a small file after the scan " * 20, "utf-8")


def _intact(db: str, indexed: int) -> None:
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert c.execute("SELECT count(*) FROM documents").fetchone()[0] == indexed


def test_checkpoint_stops_a_pdf_between_pages(tmp_path):
    """A read in this process stops at the next page once its check raises."""
    _scan_pdf(tmp_path / "book.pdf", pages=40)
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 5:
            raise RunCancelled("cancel requested")

    with pytest.raises(RunCancelled), interruptible(check):
        extract(tmp_path / "book.pdf", None, None)
    assert len(calls) == 5
    assert extract(tmp_path / "book.pdf", None, None).text  # outside the block: read whole


@pytest.mark.parametrize("workers", [1, 2])
def test_cancel_inside_an_ocr_job_stops_within_the_limit(tmp_path, workers):
    """The engine's own cancel (what the explorer's button sets), from another thread."""
    root = tmp_path / "root"
    _corpus(root)
    settings = Settings(db=str(tmp_path / "i.db"), ocr="force", embed_provider="none", extract_workers=workers)
    store = SqliteStore(settings.db)
    store.add_collection(Collection("C", str(root)))
    cancel = threading.Event()
    asked: dict[str, float] = {}

    def progress(ev: dict) -> None:
        if not cancel.is_set() and any(f["file"] == "C/scan.pdf" for f in ev.get("inFlight") or []):
            asked["at"] = time.monotonic()
            cancel.set()

    summary = Indexer(store, settings).run(on_progress=progress, cancel=cancel)
    took = time.monotonic() - asked["at"]
    assert summary["status"] == "cancelled" and took < LIMIT_S, (summary["status"], took)
    assert store.last_run()["status"] == "cancelled" and store.last_run()["counts"] == summary["counts"]
    assert store.get_document("C", "scan.pdf") is None
    _intact(settings.db, summary["indexed"])
    store.close()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.update(EMBED_PROVIDER="none", PYTHONPATH=str(REPO), CHUNKNAV_ALLOWED_ROOTS=ALLOWED_ROOTS, **extra)
    return env


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engine", "--db", str(db), *args], cwd=REPO, env=_env(), capture_output=True, text=True
    )


class _Run:
    """``chunknav index --json`` on ``db`` with OCR forced, its stderr lines read as they come."""

    def __init__(self, db: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "--db", str(db), "index", "--json"],
            cwd=REPO,
            env=_env(CHUNKNAV_OCR="force"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reading = threading.Event()  # a progress line names the scan in flight
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "reading C/scan.pdf" in line:
                self.reading.set()
        self.proc.wait()
        self.exited_at = time.monotonic()

    def wait_reading(self) -> None:
        assert self.reading.wait(120), "".join(self.lines)

    def end(self) -> tuple[dict, float]:
        """The summary printed, and the time the process took to exit from now."""
        t0 = time.monotonic()
        self.proc.wait(60)
        took = time.monotonic() - t0
        assert self.proc.stdout is not None
        self._reader.join(10)
        assert "Traceback" not in "".join(self.lines), "".join(self.lines)
        return json.loads(self.proc.stdout.read()), took


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_cancels_a_cli_run_inside_an_ocr_job(tmp_path, sig):
    root = tmp_path / "root"
    _corpus(root)
    db = tmp_path / "i.db"
    _cli(db, "collections", "add", "C", str(root))
    run = _Run(db)
    run.wait_reading()
    run.proc.send_signal(sig)
    summary, took = run.end()
    assert run.proc.returncode == 1 and summary["status"] == "cancelled" and took < LIMIT_S, took
    assert "stopping: the files being read are abandoned" in "".join(run.lines)
    _intact(str(db), summary["indexed"])
    st = json.loads(_cli(db, "status", "--json").stdout)
    assert st["lastRun"]["status"] == "cancelled" and st["lastRun"]["counts"] == summary["counts"]
    again = subprocess.run(
        [sys.executable, "-m", "engine", "--db", str(db), "index", "--json"],
        cwd=REPO,
        env=_env(CHUNKNAV_OCR="off"),
        capture_output=True,
        text=True,
    )
    assert json.loads(again.stdout)["status"] == "finished"


def test_the_cancel_index_tool_stops_a_cli_run_from_an_mcp_client(tmp_path):
    """Another process (an MCP client through the official SDK) cancels a CLI run."""
    from tests.fixtures.mcp_session import call, run_script

    root = tmp_path / "root"
    _corpus(root)
    db = tmp_path / "i.db"
    _cli(db, "collections", "add", "C", str(root))
    run = _Run(db)
    run.wait_reading()
    asked: dict[str, float] = {}

    async def script(session):
        asked["at"] = time.monotonic()
        return await call(session, "cancel_index", {})

    answer, _stderr = run_script(str(db), script, env={"EMBED_PROVIDER": "none"})
    env = answer.envelope
    assert env["requested"] is True and env["status"] == "running" and env["runId"], env
    summary, _ = run.end()
    took = run.exited_at - asked["at"]
    assert summary["status"] == "cancelled" and summary["cancelRequested"] is True and took < LIMIT_S, took
    _intact(str(db), summary["indexed"])
    after, _ = run_script(str(db), lambda s: call(s, "cancel_index", {}), env={"EMBED_PROVIDER": "none"})
    assert after.envelope["requested"] is False and after.envelope["status"] == "cancelled"


def test_status_during_a_run_counts_what_is_written_and_shows_progress(tmp_path):
    root = tmp_path / "root"
    _corpus(root)
    db = tmp_path / "i.db"
    _cli(db, "collections", "add", "C", str(root))
    run = _Run(db)
    try:
        run.wait_reading()
        deadline = time.monotonic() + 30
        while True:  # the run saves its progress every 2 s
            st = json.loads(_cli(db, "status", "--json").stdout)
            if (st["lastRun"] or {}).get("progress", {}).get("inFlight") or time.monotonic() > deadline:
                break
        assert st["lastRun"]["status"] == "running" and st["documents"] >= 3
        human = _cli(db, "status").stdout
        assert "running" in human and "reading C/scan.pdf" in human, human
        assert "run chunknav index" not in human, human
    finally:
        run.proc.send_signal(signal.SIGTERM)
        run.end()
