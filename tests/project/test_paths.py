"""engine/paths.py document_path: readable, unique and stable per (collectionPath, filePath);
get_document resolves the exact file."""

from __future__ import annotations

import itertools

from engine.config import Settings
from engine.paths import document_path, node_slug
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

NAMES = [
    "報告.pdf",
    "計畫.pdf",
    "a/b.txt",
    "a-b.txt",
    "a b.txt",
    "a_b.txt",
    "a/b/c.md",
    "a-b-c.md",
    "a/b-c.md",
    "résumé.txt",
    "resume.txt",
    "r-sum-.txt",
    "notes",
    "no tes",
    "x~y.txt",
    "Report.PDF",
    "report.pdf",
    "dir.v2/file",
    "dir-v2-file",
]


def test_lossless_names_stay_readable():
    for name in ("a-b.txt", "report.pdf", "Report_2024.v2.md", "notes"):
        assert node_slug(name) == name
        assert document_path("ACME/Reports", name) == f"ACME/Reports/_Documents/{name}"


def test_lossy_names_get_a_hash_and_keep_their_suffix():
    s = node_slug("報告.pdf")
    assert s.startswith("--~") and s.endswith(".pdf") and len(s) == len("--~") + 10 + len(".pdf")
    assert node_slug("a/b.txt").startswith("a-b~") and node_slug("a/b.txt").endswith(".txt")
    assert node_slug("x~y.txt") != "x~y.txt"  # "~" itself is lossy


def test_unique_and_stable():
    paths = [document_path("C", n) for n in NAMES]
    assert len(set(paths)) == len(NAMES)
    assert paths == [document_path("C", n) for n in NAMES]  # stable
    for a, b in itertools.combinations(NAMES, 2):
        assert document_path("C", a) != document_path("C", b), (a, b)


def test_get_document_resolves_the_exact_file(tmp_path):
    root = tmp_path / "files"
    (root / "a").mkdir(parents=True)
    bodies = {
        "報告.pdf": None,
        "計畫.pdf": None,
        "a/b.txt": "alpha file in a folder",
        "a-b.txt": "bravo file with a dash",
    }
    for name, body in bodies.items():
        if body:
            (root / name).write_text(body, "utf-8")
    import pymupdf

    for name, word in (("報告.pdf", "report"), ("計畫.pdf", "plan")):
        doc = pymupdf.open()
        doc.new_page().insert_text((72, 72), f"the {word} document")
        doc.save(root / name)
    engine = Engine(
        Settings(allowed_roots=ALLOWED_ROOTS, db=str(tmp_path / "i.db"), embed_provider="none", ocr="off").validate()
    )
    try:
        engine.add_collection("Docs", str(root))
        engine.run_index()
        seen = set()
        for name in bodies:
            node = call_tool(engine, "get_document", {"documentPath": document_path("Docs", name)})
            assert node["found"] and node["filePath"] == name, (name, node)
            seen.add(node["documentPath"])
            r = call_tool(
                engine,
                "search_chunks",
                {"query": (bodies[name] or "document").split()[0], "scope": "Docs", "mode": "keyword"},
            )
            assert document_path("Docs", name) in {h["documentPath"] for h in r["hits"]} or bodies[name] is None
        assert len(seen) == 4
    finally:
        engine.close()
