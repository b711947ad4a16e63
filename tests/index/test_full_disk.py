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


def test_a_full_disk_ends_the_run_in_one_classified_line_and_keeps_what_was_committed(tmp_path):
    docs = tmp_path / "docs"
    _docs(docs, 0, 40)
    with small_disk(tmp_path / "disk", "64m") as disk:
        db = disk / "i.db"
        assert _run(db, "collections", "add", "C", str(docs), "--allow-any-root").returncode == 0
        assert _run(db, "index").returncode == 0  # 40 documents indexed with room to spare
        _docs(docs, 40, 200)  # 6 MB more text, and about 1 MB of room for it
        filler = fill(disk, leave=1 << 20)
        r = _run(db, "index")
        assert r.returncode == 1, r.stderr
        assert r.stdout == ""
        assert r.stderr.count("\n") == 1, r.stderr  # one line, nothing chained
        assert "Traceback" not in r.stderr and "savepoint" not in r.stderr and "cannot rollback" not in r.stderr
        line = r.stderr
        assert line.startswith("chunknav: index run stopped: disk-full: "), line
        kept = re.search(r"(\d+) documents? committed; rerun `chunknav index` to finish", line)
        assert kept is not None, line
        assert _integrity(db) == "ok"
        status = json.loads(_run(db, "status", "--json").stdout)
        assert status["documents"] == 40 + int(kept.group(1))  # what the line says was kept is there
        last = status["lastRun"]
        assert last["status"] == "stopped" or "summary was not saved" in line, (last, line)
        again = _run(db, "index", "--json")  # still full: the JSON summary names the class
        assert again.returncode == 1 and json.loads(again.stdout)["error"]["error"] == "disk-full", again.stdout
        verbose = _run(db, "index", verbose=True)  # -v shows where it failed
        assert verbose.returncode == 1 and "Traceback" in verbose.stderr
        filler.unlink()  # the operator frees space
        done = _run(db, "index")
        assert done.returncode == 0, done.stderr
        assert json.loads(_run(db, "status", "--json").stdout)["documents"] == 240
        assert _integrity(db) == "ok"
