"""The indexer (engine/index/indexer.py) on real files: a copy of the bundled samples
(or, while assets/samples is empty, a few files of tests/corpus) plus every
file of tests/corpus/edge."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import engine.extract
from engine.config import Settings
from engine.errors import EmbedError, IndexBusyError
from engine.index.indexer import Indexer, walk
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
SAMPLES = REPO / "assets" / "samples"
FALLBACK = [
    "pdf/minimal-document.pdf",
    "pdf/pdflatex-4-pages.pdf",
    "pdf/test-2812.pdf",
    "pdf/multicolumn.pdf",
    "text/sample-french-1.txt",
    "text/sample-english.bom.txt",
    "docx/lorem_ipsum.docx",
]

#: edge file -> (status, words expected in the reason)
EDGE = {
    "empty.pdf": ("failed", "empty"),
    "libreoffice-writer-password.pdf": ("failed", "password"),
    "password-example.pdf": ("failed", "password"),
    "issue18986.pdf": ("empty", "no pages"),
    "test_4090.pdf": ("empty", "no text layer"),
    "doc-default.docx": ("empty", "no text"),
    "helloworld-bad.pdf": ("indexed", None),
    "xref_command_missing.pdf": ("indexed", None),
    "pr-138-example.pdf": ("indexed", None),
    "test_markdown_bad_unicode.md": ("indexed", None),
}


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A writable copy: ``main/`` (samples or fallback files) and ``edge/``."""
    root = tmp_path / "corpus"
    main = root / "main"
    main.mkdir(parents=True)
    samples = (
        [p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix.lower() in (".pdf", ".txt", ".md", ".docx")]
        if SAMPLES.is_dir()
        else []
    )
    if samples:
        for p in samples:
            dest = main / p.relative_to(SAMPLES)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dest)
    else:
        for rel in FALLBACK:
            shutil.copy(CORPUS / rel, main / Path(rel).name)
    shutil.copytree(CORPUS / "edge", root / "edge")
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


@pytest.fixture
def env(corpus, settings):
    store = SqliteStore(settings.db)
    store.add_collection(Collection("C", str(corpus)))
    yield store, settings, corpus
    store.close()


def _docs(store) -> dict[str, object]:
    return {d.file_path: d for d in store.documents("C")}


def test_first_run_then_unchanged_run_skips_every_file(env):
    store, settings, corpus = env
    events: list[dict] = []
    first = Indexer(store, settings).run(on_progress=events.append)
    files = walk(corpus)
    assert first["filesSeen"] == len(files)
    assert first["indexed"] + len(first["empty"]) + len(first["failed"]) == len(files)
    assert first["chunksWritten"] > 0 and first["unchanged"] == 0
    assert "skipped" not in first  # one name per meaning
    assert events[-1]["phase"] == "done"
    extract_events = [e for e in events if e["phase"] == "extract" and not e.get("refresh")]
    assert [e["done"] for e in extract_events] == list(range(1, len(files) + 1))
    assert all(e["total"] == len(files) and e["file"].startswith("C/") for e in extract_events)
    assert store.last_run() == first
    second = Indexer(store, settings).run()
    assert second["unchanged"] == len(files)
    assert second["indexed"] == 0 and second["chunksWritten"] == 0 and second["failed"] == []
    assert second["empty"] == [] and second["removed"] == 0


def test_edge_files_end_failed_or_empty_with_their_reason(env):
    store, settings, _ = env
    summary = Indexer(store, settings).run()
    docs = _docs(store)
    for name, (status, words) in EDGE.items():
        doc = docs[f"edge/{name}"]
        assert doc.status == status, (name, doc.status, doc.reason)
        if words:
            assert words in doc.reason.lower(), (name, doc.reason)
        assert (store.chunk_count("C", doc.file_path) > 0) == (status == "indexed")
    failed = {f["filePath"]: f["reason"] for f in summary["failed"]}
    empty = {f["filePath"]: f["reason"] for f in summary["empty"]}
    assert set(failed) == {f"edge/{n}" for n, (s, _) in EDGE.items() if s == "failed"}
    assert set(empty) == {f"edge/{n}" for n, (s, _) in EDGE.items() if s == "empty"}
    assert all(d.status == "indexed" for p, d in docs.items() if p.startswith("main/"))


def test_collection_password_opens_the_encrypted_file_on_the_next_run(env, monkeypatch):
    store, settings, corpus = env
    Indexer(store, settings).run()
    assert _docs(store)["edge/libreoffice-writer-password.pdf"].status == "failed"
    monkeypatch.setenv("CORPUS_PDF_PASSWORD", "openpassword")  # the index stores only the reference
    store.add_collection(Collection("C", str(corpus), "env:CORPUS_PDF_PASSWORD"))
    summary = Indexer(store, settings).run()
    assert summary["indexed"] == 1  # only the file the password concerns is retried
    doc = _docs(store)["edge/libreoffice-writer-password.pdf"]
    assert doc.status == "indexed"
    assert store.document_text("C", doc.file_path).startswith("Lorem ipsum")


def test_touching_one_file_reindexes_it_alone(env):
    store, settings, corpus = env
    Indexer(store, settings).run()
    target = next(p for p in sorted((corpus / "main").iterdir()) if p.suffix in (".txt", ".md"))
    rel = target.relative_to(corpus).as_posix()
    before_ids = [c.chunk_id for c in store.chunks("C", rel)]
    with open(target, "a", encoding="utf-8") as f:
        f.write("\nan appended line of brand new words\n")
    summary = Indexer(store, settings).run()
    assert summary["indexed"] == 1 and summary["unchanged"] == summary["filesSeen"] - 1
    after = store.chunks("C", rel)
    assert "brand new words" in after[-1].chunk_text
    assert {c.chunk_id for c in after}.isdisjoint(before_ids)  # content hash is part of the id


def test_force_reindexes_every_file_with_stable_chunk_ids(env):
    store, settings, _ = env
    Indexer(store, settings).run()
    before = {d.file_path: [c.chunk_id for c in store.chunks("C", d.file_path)] for d in store.documents("C")}
    summary = Indexer(store, settings).run(force=True)
    assert summary["force"] is True and summary["unchanged"] == 0
    assert summary["indexed"] + len(summary["empty"]) + len(summary["failed"]) == summary["filesSeen"]
    after = {d.file_path: [c.chunk_id for c in store.chunks("C", d.file_path)] for d in store.documents("C")}
    assert after == before


def test_changed_chunk_settings_invalidate_the_gate(env):
    store, settings, _ = env
    Indexer(store, settings).run()
    smaller = Settings(db=settings.db, embed_provider="none", ocr="off", chunk_size=400, chunk_overlap=50).validate()
    summary = Indexer(store, smaller).run()
    assert summary["unchanged"] == 0
    for d in store.documents("C"):
        assert all(c.end - c.start <= 400 for c in store.chunks("C", d.file_path))


def test_removed_file_leaves_the_index(env):
    store, settings, corpus = env
    Indexer(store, settings).run()
    victim = sorted((corpus / "main").iterdir())[0]
    rel = victim.relative_to(corpus).as_posix()
    assert store.chunk_count("C", rel) > 0
    victim.unlink()
    summary = Indexer(store, settings).run()
    assert summary["removed"] == 1
    assert store.get_document("C", rel) is None and store.chunk_count("C", rel) == 0
    assert store.search_keyword("Lorem", ["C"], 100) is not None


def test_duplicate_content_is_extracted_once(env, monkeypatch):
    store, settings, corpus = env
    src = corpus / "main" / sorted(p.name for p in (corpus / "main").iterdir() if p.suffix == ".pdf")[0]
    (corpus / "copies" / "deeper").mkdir(parents=True)
    shutil.copy(src, corpus / "copies" / "a.pdf")
    shutil.copy(src, corpus / "copies" / "deeper" / "b.pdf")
    calls: list[str] = []
    real = engine.extract.extract

    def spy(path, password=None, ocr=None, **kw):  # counts calls, runs the real extractor
        calls.append(Path(path).name)
        return real(path, password, ocr, **kw)

    monkeypatch.setattr(engine.extract, "extract", spy)
    Indexer(store, settings).run()
    assert calls.count(src.name) + calls.count("a.pdf") + calls.count("b.pdf") == 1
    ids = [
        [c.chunk_id for c in store.chunks("C", p)]
        for p in (src.relative_to(corpus).as_posix(), "copies/a.pdf", "copies/deeper/b.pdf")
    ]
    assert ids[0] and ids[0] == ids[1] == ids[2]


def test_unsupported_hidden_and_escaping_files(env, tmp_path):
    store, settings, corpus = env
    (corpus / "main" / "picture.png").write_bytes(b"\x89PNG....")
    (corpus / ".hidden").mkdir()
    (corpus / ".hidden" / "secret.txt").write_text("hidden words")
    (corpus / "main" / ".dot.txt").write_text("hidden words")
    outside = tmp_path / "outside.txt"
    outside.write_text("zqxoutsidezq words")
    os.symlink(outside, corpus / "main" / "escape.txt")
    os.symlink(
        corpus / "main" / sorted(p.name for p in (corpus / "main").iterdir() if p.suffix == ".txt")[0],
        corpus / "main" / "inside-link.txt",
    )
    summary = Indexer(store, settings).run()
    assert [u["filePath"] for u in summary["unsupported"]] == ["main/picture.png"]
    assert "unsupported" in summary["unsupported"][0]["reason"]
    paths = set(_docs(store))
    assert "main/escape.txt" not in paths and "main/inside-link.txt" in paths
    assert not any("hidden" in p or "/." in p for p in paths)
    assert store.search_keyword("zqxoutsidezq", None, 5) == []


def test_concurrent_run_raises_index_busy(env):
    store, settings, _ = env
    other = SqliteStore(settings.db)
    try:
        with other.index_lock():
            with pytest.raises(IndexBusyError):
                Indexer(store, settings).run()
    finally:
        other.close()
    Indexer(store, settings).run()  # free again


def test_stored_chunk_invariants(env):
    store, settings, _ = env
    Indexer(store, settings).run()
    n_checked = 0
    for d in store.documents("C"):
        chunks = store.chunks("C", d.file_path)
        if d.status != "indexed":
            assert chunks == []
            continue
        text = store.document_text("C", d.file_path)
        assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
        assert d.chunk_count == len(chunks) and d.text_length == len(text)
        assert chunks[0].start == 0 and chunks[-1].end == len(text)
        for c in chunks:
            assert c.chunk_text == text[c.start : c.end]
            assert c.content_hash == d.content_hash
            assert c.start % settings.chunk_step == 0 and c.end - c.start <= settings.chunk_size
            if d.file_type == "pdf" and c.page is not None:
                assert c.regions[0].page == c.page and c.regions[0].bbox == c.bbox
        n_checked += 1
    assert n_checked >= 5


def test_unknown_collection_is_refused(env):
    store, settings, _ = env
    with pytest.raises(ValueError, match="unknown collection"):
        Indexer(store, settings).run(["nope"])


# -- embedding ---------------------------------------------------------------------------


def test_embedding_reuse_with_the_local_provider(env):
    from engine.embed import make_embedder

    store, settings, corpus = env
    local = Settings(embed_model="l2_supercat_256", db=settings.db, embed_provider="local", ocr="off").validate()
    embedder = make_embedder(local)
    first = Indexer(store, local, embedder).run()
    assert first["embedError"] is None
    distinct = len({c.chunk_id for d in store.documents("C") for c in store.chunks("C", d.file_path)})
    assert first["embedded"] == distinct and first["reused"] == 0
    counts = store.vector_counts()[embedder.model]
    assert counts["missing"] == 0 and counts["dim"] == embedder.dim
    second = Indexer(store, local, embedder).run(force=True)
    assert second["embedded"] == 0 and second["reused"] == distinct
    target = next(p for p in sorted((corpus / "main").iterdir()) if p.suffix in (".txt", ".md"))
    rel = target.relative_to(corpus).as_posix()
    old_texts = {c.chunk_text for c in store.chunks("C", rel)}
    with open(target, "a", encoding="utf-8") as f:
        f.write("\nfresh words\n")
    third = Indexer(store, local, embedder).run()
    # only windows whose text changed are embedded; the others reuse their vectors by window text
    new_texts = {c.chunk_text for c in store.chunks("C", rel)} - old_texts
    assert third["embedded"] == len(new_texts) >= 1
    assert third["reused"] >= len(store.chunks("C", rel)) - len(new_texts)
    hit = store.search_vectors(embedder.model, embedder.embed(["fresh words"])[0], ["C"], 50)
    assert hit and all(-1.0001 <= h.score <= 1.0001 for h in hit)


class _TinyEmbedder:
    """In-test Embedder used ONLY to test the indexer's bookkeeping (batches, reuse
    counts, a failure mid-run, a failing probe) without a real provider's timing.
    Vectors: a hash of the text, float32 (n, 8), L2-normalised."""

    provider = "tiny"
    model = "tiny-8"
    dim = 8
    endpoint = None

    def __init__(self, fail_after_batches: int | None = None, probe_fails: bool = False):
        self.fail_after = fail_after_batches
        self.probe_fails = probe_fails
        self.batches = 0

    def _failure(self):
        from engine.embed import EmbedFailure

        return EmbedFailure(
            "embedding-unavailable", "stub backend down", 503, "http://127.0.0.1:9", self.model, "overloaded"
        )

    def probe(self) -> float:
        if self.probe_fails:
            raise EmbedError(self._failure())
        return 0.001

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise EmbedError(self._failure())
        self.batches += 1
        rng = [np.random.default_rng(abs(hash(t)) % (2**32)).standard_normal(8) for t in texts]
        v = np.asarray(rng, dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_embed_failure_mid_run_keeps_everything_and_next_run_resumes(env):
    store, settings, _ = env
    batch = Settings(db=settings.db, embed_provider="none", ocr="off", embed_batch=5).validate()
    summary = Indexer(store, batch, _TinyEmbedder(fail_after_batches=2)).run()
    assert summary["embedded"] == 10
    assert summary["embedError"]["error"] == "embedding-unavailable"
    assert summary["embedError"]["statusCode"] == 503
    assert summary["indexed"] > 0 and store.search_keyword("Lorem", None, 3)  # text is kept
    missing = store.vector_counts()["tiny-8"]["missing"]
    assert missing > 0
    events: list[dict] = []
    resumed = Indexer(store, batch, _TinyEmbedder()).run(on_progress=events.append)
    assert resumed["embedded"] == missing and resumed["reused"] == 10 and resumed["embedError"] is None
    embed_events = [e for e in events if e["phase"] == "embed"]
    assert embed_events[-1]["done"] == embed_events[-1]["total"] == missing


def test_probe_failure_writes_no_vector(env):
    store, settings, _ = env
    summary = Indexer(store, settings, _TinyEmbedder(probe_fails=True)).run()
    assert summary["embedError"]["error"] == "embedding-unavailable" and summary["embedded"] == 0
    assert store.vector_counts() == {}
    assert summary["chunksWritten"] > 0 and store.search_keyword("Lorem", None, 3)
