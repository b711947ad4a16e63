"""Stored rows pinned: an index of tests/corpus/pdf keeps, file by file, the same document
and chunk rows (text, offsets, chunk ids, pages, labels, boxes, regions, metadata, status,
reasons) as the pinned digests below, with one extraction worker and with two. A change that moves any stored value fails here; if the
change is meant, recompute the digests (``_digests``) and say why in the commit."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.config import Settings
from engine.index.gate import STAT_KEY
from engine.store.sqlite.rows import to_json
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

#: file -> first 16 hex digits of sha256 over repr() of its document row, then of each chunk row.
PINNED = {
    "160F-2019.pdf": "9fc8fffdccd46124",
    "annotation-highlight.pdf": "0db38a27386f1110",
    "annotations.pdf": "3d15cbb012ed9edd",
    "cython.pdf": "a8ff24d901587eb2",
    "federal-register-2020-17221.pdf": "384fef57ad13da78",
    "habibi.pdf": "0f336120fb67e827",
    "issue-67-example.pdf": "6b3f29727f619fcb",
    "issue14415.pdf": "1aec20b08da3fb0a",
    "libreoffice-form.pdf": "15b87e4710cce89a",
    "minimal-document.pdf": "e1150b5ccfcd7463",
    "multicolumn.pdf": "54fe12f8bdba9f3d",
    "nics-background-checks-2015-11-rotated.pdf": "ade04bab11c5362c",
    "nics-background-checks-2015-11.pdf": "74699fed6aff1c1c",
    "pdflatex-4-pages.pdf": "3a9054e95a213e8c",
    "pdflatex-forms.pdf": "7284f32920c0ec92",
    "scotus-transcript-p1.pdf": "d0b083d728c9950f",
    "senate-expenditures.pdf": "720ddc3a9296d5f8",
    "small-table.pdf": "8e734bd88b0841b5",
    "test-2812.pdf": "2932ba767e7ff11b",
    "test-3820.pdf": "22f8b259b6cbfd6b",
    "test_3357.pdf": "3366de2d85e045f5",
    "test_4388_BUL1.pdf": "bee887869f0522cd",
    "text-find-ligatures.pdf": "7f212569e3fae07a",
    "tracemonkey.pdf": "8d8fd64a9535dd7d",
    "udhr_ger.pdf": "cd3287bbede9773e",
}


def _without_stat(metadata: str | None) -> str | None:
    """The metadata JSON without the stat of the file on this disk (``STAT_KEY``: size,
    mtime and ctime, which differ per copy of the corpus)."""
    if metadata is None:
        return None
    meta = json.loads(metadata)
    meta.pop(STAT_KEY, None)
    return to_json(meta) if meta else None


def _digests(db: str) -> dict[str, str]:
    c = sqlite3.connect(db)
    out = {}
    for fp, *doc in c.execute(
        "SELECT file_path, status, reason, page_count, chunk_count, text_length, summary, "
        "metadata, text FROM documents ORDER BY file_path"
    ):
        doc[6] = _without_stat(doc[6])
        h = hashlib.sha256(repr(doc).encode())
        for r in c.execute(
            'SELECT chunk_index, chunk_id, start, "end", chunk_text, page, page_label, bbox, '
            "regions, metadata FROM chunks WHERE file_path = ? ORDER BY chunk_index",
            (fp,),
        ):
            h.update(repr(r).encode())
        out[fp] = h.hexdigest()[:16]
    c.close()
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_stored_rows_of_the_pdf_corpus_are_unchanged(tmp_path, workers):
    root = tmp_path / "c"
    shutil.copytree(CORPUS / "pdf", root)
    db = str(tmp_path / "i.db")
    store = SqliteStore(db)
    store.add_collection(Collection("C", str(root)))
    Indexer(store, Settings(db=db, embed_provider="none", extract_workers=workers).validate()).run()
    store.close()
    got = _digests(db)
    assert {k: v for k, v in got.items() if v != PINNED.get(k)} == {}
    assert sorted(got) == sorted(PINNED)
