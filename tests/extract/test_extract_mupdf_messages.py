"""MuPDF's messages: never on stdout (``chunknav index --json`` stays one JSON
document, in the indexing process and in the extraction workers), and what MuPDF said about a
file it had to repair becomes the document's note, so a truncated PDF that lost text is listed
"indexed with notes" instead of passing as whole.

The PDFs are built here with PyMuPDF (two pages of text) and cut short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import Settings
from engine.extract import extract
from engine.extract.mupdf_log import damage_note
from engine.extract.pdf import REPAIRED_NOTE
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]


def _two_pages(path: Path) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for p in range(2):
        page = doc.new_page()
        tw = pymupdf.TextWriter(page.rect)
        for i in range(40):
            tw.append(
                (50, 60 + 17 * i), f"Page {p + 1} line {i} the quick brown fox jumps over the lazy heron", fontsize=10
            )
        tw.write_text(page)
    doc.save(path, garbage=3, clean=True)
    return path.read_bytes()


@pytest.fixture
def damaged(tmp_path) -> Path:
    """``whole.pdf``, ``cut.pdf`` (its first 90 %: page 2 loses most of its text) and
    ``half.pdf`` (its first half: no page text survives)."""
    root = tmp_path / "tr"
    root.mkdir()
    data = _two_pages(root / "whole.pdf")
    (root / "cut.pdf").write_bytes(data[: len(data) * 9 // 10])
    (root / "half.pdf").write_bytes(data[: len(data) // 2])
    return root


def test_repaired_pdf_says_so_and_nothing_reaches_stdout(damaged, capfd):
    whole = extract(damaged / "whole.pdf")
    cut = extract(damaged / "cut.pdf")
    out, err = capfd.readouterr()
    assert out == "" and "MuPDF error" not in err
    assert whole.notes == () and not whole.metadata["repaired"]
    assert cut.metadata["repaired"] and len(cut.text) < len(whole.text)
    assert cut.notes[0].startswith(REPAIRED_NOTE + ": ") and "startxref" in cut.notes[0], cut.notes
    corpus = extract(REPO / "tests/corpus/edge/helloworld-bad.pdf")
    assert corpus.text == "Hello, world!" and corpus.notes == (
        f"{REPAIRED_NOTE}: syntax error: expected generation number (12 ? obj); trying to repair broken xref; "
        "repairing PDF document",
    )
    # a warning-only file MuPDF did not need to repair has no note (tests/corpus, bogus font metrics)
    assert extract(REPO / "tests/corpus/pdf/federal-register-2020-17221.pdf").notes == ()
    assert capfd.readouterr().out == ""


def test_damage_note_is_bounded_and_lists_distinct_messages():
    msgs = (
        ["object out of range (10 0 R)"] * 84
        + ["cannot find startxref", "... repeated 5 times..."]
        + ["x" * 500]
        + [f"other {i}" for i in range(6)]
    )
    note = damage_note("damaged", msgs)
    assert note == f"damaged: object out of range (10 0 R); cannot find startxref; {'x' * 157}...; and 6 other messages"
    assert damage_note("damaged", []) == "damaged"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_index_json_stays_one_json_document(damaged, tmp_path, workers):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.update(CHUNKNAV_ALLOWED_ROOTS=ALLOWED_ROOTS, EMBED_PROVIDER="none", CHUNKNAV_EXTRACT_WORKERS=workers)
    db = str(tmp_path / f"tr{workers}.db")
    py = [sys.executable, "-m", "engine", "--db", db]
    subprocess.run(py + ["collections", "add", "Tr", str(damaged)], check=True, env=env, cwd=REPO, capture_output=True)
    r = subprocess.run(py + ["index", "--json"], env=env, cwd=REPO, capture_output=True, text=True)
    for said in ("MuPDF error:", "MuPDF warning:"):  # PyMuPDF's own prefixes: never printed
        assert said not in r.stdout and said not in r.stderr, (r.stdout[:300], r.stderr[:300])
    summary = json.loads(r.stdout)  # one document, nothing else on stdout
    assert summary["counts"]["indexed"] == 2 and summary["counts"]["empty"] == 1, summary
    (half,) = summary["empty"]
    assert half["filePath"] == "half.pdf" and REPAIRED_NOTE in half["reason"]
    engine = Engine(Settings(allowed_roots=ALLOWED_ROOTS, db=db, embed_provider="none").validate())
    try:
        noted = {n["filePath"]: n for n in call_tool(engine, "index_status", {})["notes"]}
        assert set(noted) >= {"cut.pdf"} and "whole.pdf" not in noted, noted
        assert noted["cut.pdf"]["notes"][0].startswith(REPAIRED_NOTE + ": ")
    finally:
        engine.close()
