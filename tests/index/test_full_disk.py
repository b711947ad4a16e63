"""A full disk during ``chunknav index``: one classified line, exit 1, no traceback, an intact
index that keeps what was committed, and a rerun (with room again) that finishes it.

Real parts: a tmpfs (``tests/fixtures/small_disk.py``; skipped with the reason
when it cannot be mounted) holds the index; the collection (a few MB of text) lives on the
ordinary temp disk; ``python -m engine`` runs as a subprocess.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path


from tests.fixtures.waits import wait_until
from tests.fixtures.small_disk import fill, small_disk

REPO = Path(__file__).resolve().parents[2]


def _docs(folder: Path, first: int, n: int) -> None:
    """Text files ``first`` .. ``first + n - 1`` of ~30 KB of made-up words each (no two alike:
    nothing is deduplicated)."""
    rng = random.Random(first)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(4000)]
    folder.mkdir(exist_ok=True)
    for i in range(first, first + n):
        (folder / f"f{i:03}.md").write_text(" ".join(rng.choice(words) for _ in range(4000)), "utf-8")


def _run(db: Path, *argv: str, verbose: bool = False) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "EMBED_PROVIDER": "none"}
    return subprocess.run(
        [sys.executable, "-m", "engine", *(["-v"] if verbose else []), "--db", str(db), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _documents(db: Path) -> int:
    """Documents committed (a read-only connection beside the running writer)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def test_a_disk_that_fills_during_a_run_ends_it_in_one_classified_line_and_keeps_what_was_committed(tmp_path):
    docs = tmp_path / "docs"
    _docs(docs, 0, 40)
    with small_disk(tmp_path / "disk", "160m") as disk:
        db = disk / "i.db"
        assert _run(db, "collections", "add", "C", str(docs), "--allow-any-root").returncode == 0
        assert _run(db, "index").returncode == 0  # 40 documents indexed with room to spare
        _docs(docs, 40, 400)  # 12 MB more text: room for it, until the disk is filled meanwhile
        env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "EMBED_PROVIDER": "none"}
        run = subprocess.Popen(
            [sys.executable, "-m", "engine", "--db", str(db), "index"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )

        def first_group() -> bool:  # the event: the run committed its first group
            assert run.poll() is None, run.communicate()
            return _documents(db) > 40

        wait_until(first_group, 120, "the run's first group committed")
        filler = fill(disk)
        out, err = run.communicate(timeout=300)
        assert run.returncode == 1, err
        assert out == ""
        assert err.count("\n") == 1, err  # one line, nothing chained
        assert "Traceback" not in err and "savepoint" not in err and "cannot rollback" not in err
        assert err.startswith("chunknav: index run stopped: disk-full: "), err
        kept = re.search(r"(\d+) documents? committed; rerun `chunknav index` to finish", err)
        assert kept is not None, err
        assert _integrity(db) == "ok"
        status = json.loads(_run(db, "status", "--json").stdout)
        assert status["documents"] == 40 + int(kept.group(1)) > 40  # what the line says was kept is there
        assert status["lastRun"]["status"] == "stopped" or "summary was not saved" in err, (status["lastRun"], err)
        again = _run(db, "index", "--json")  # still full: refused up front, the class named
        assert again.returncode == 1 and "disk-full" in again.stdout, again.stdout
        verbose = _run(db, "index", verbose=True)  # -v shows where it failed
        assert verbose.returncode == 1 and "disk-full" in verbose.stderr
        filler.unlink()  # the operator frees space
        done = _run(db, "index")
        assert done.returncode == 0, done.stderr
        assert json.loads(_run(db, "status", "--json").stdout)["documents"] == 440
        assert _integrity(db) == "ok"


def test_a_run_the_disk_cannot_hold_is_refused_before_any_file_is_read(tmp_path):
    docs = tmp_path / "docs"
    _docs(docs, 0, 100)  # 3 MB of text: about 24 MB at the peak
    with small_disk(tmp_path / "disk", "8m") as disk:
        db = disk / "i.db"
        assert _run(db, "collections", "add", "C", str(docs), "--allow-any-root").returncode == 0
        r = _run(db, "index")
        assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        assert "disk-full" in r.stderr and "may need about" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert json.loads(_run(db, "status", "--json").stdout)["documents"] == 0
