"""What line rectangles cost on disk: a SQLite index of a corpus with and without them.

Usage: .venv/bin/python bench/index_size.py [corpus_dir]   (default tests/corpus; no embedding)

Indexes the corpus into a fresh SQLite file, checkpoints and VACUUMs it, then
builds a copy whose ``regions`` JSON has the rects (``"r"``) removed and
VACUUMs that too: the file sizes and the ``regions`` column bytes of both,
and the ratio (the anchor is the index without rects, measured in the same run).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.config import Settings  # noqa: E402
from engine.index.indexer import Indexer  # noqa: E402
from engine.values import Collection  # noqa: E402
from engine.store.sqlite.store import SqliteStore  # noqa: E402


def _vacuum(db: Path) -> tuple[int, int, int]:
    con = sqlite3.connect(db, isolation_level=None)
    # the UPDATE below re-indexes the FTS rows of the copy: merge both FTS b-trees the same way
    con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("VACUUM")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode VACUUM's pages land in the WAL first
    regions, rows = con.execute("SELECT COALESCE(SUM(LENGTH(regions)), 0), COUNT(*) FROM chunks").fetchone()
    try:
        pages = con.execute("SELECT COUNT(*) FROM dbstat WHERE name = 'chunks'").fetchone()[0]
    except sqlite3.Error:  # SQLite built without dbstat
        pages = -1
    con.close()
    return os.path.getsize(db), regions, rows, pages


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "corpus"
    work = Path(tempfile.mkdtemp(prefix="chunknav-size-"))
    db = work / "with-rects.db"
    store = SqliteStore(str(db))
    store.add_collection(Collection("C", str(corpus)))
    Indexer(store, Settings(db=str(db), embed_provider="none").validate()).run()
    store.close()
    with_size, with_regions, rows, with_pages = _vacuum(db)
    bare = work / "without-rects.db"
    shutil.copy(db, bare)
    con = sqlite3.connect(bare)
    for rowid, regions in con.execute("SELECT rowid, regions FROM chunks WHERE regions IS NOT NULL").fetchall():
        stripped = [{k: v for k, v in r.items() if k != "r"} for r in json.loads(regions)]
        con.execute(
            "UPDATE chunks SET regions = ? WHERE rowid = ?", (json.dumps(stripped, separators=(",", ":")), rowid)
        )
    con.commit()
    con.close()
    bare_size, bare_regions, _, bare_pages = _vacuum(bare)
    print(f"{'index':16} {'file bytes':>12} {'regions bytes':>14} {'chunks pages':>13}   ({rows} chunks)")
    print(f"{'without rects':16} {bare_size:12d} {bare_regions:14d} {bare_pages:13d}")
    print(f"{'with rects':16} {with_size:12d} {with_regions:14d} {with_pages:13d}")
    print(
        f"file {with_size / bare_size:.3f}x (+{with_size - bare_size} bytes), "
        f"regions column {with_regions / max(1, bare_regions):.2f}x"
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
