"""The words of three faults: an exhausted quota (no "retry later"), a text the server cut
(what is known: chunknav sent N characters), a run summary the store could not save (said).

Real parts: the loopback embedding stub (``tests/fixtures/stub.py``) answering the OpenAI and
Ollama wire formats, a real SQLite index, ``chunknav`` run in-process through ``main``.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading

from engine.config import Settings
from engine.faces.cli import main
from engine.index.indexer import Indexer
from engine.store.sqlite.store import SqliteStore
from engine.values import Collection
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.stub import ERRORS, QUOTA_429, Reply


def _docs(tmp_path, n: int = 2, words: int = 60):
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(n):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n" + " ".join(f"word{i}x{j}" for j in range(words)), "utf-8")
    return root


def test_an_exhausted_quota_names_the_account_owner_and_never_says_retry_later(
    tmp_path, embed_stub, capsys, monkeypatch
):
    root = _docs(tmp_path)
    db = str(tmp_path / "q.db")
    for k, v in {
        "EMBED_PROVIDER": "openai",
        "EMBED_URL": embed_stub.url,
        "EMBED_MODEL": "stub-embed",
        "EMBED_RETRIES": "0",
    }.items():
        monkeypatch.setenv(k, v)
    assert main(["--db", db, "collections", "add", "C", str(root), "--allow-any-root"]) == 0
    embed_stub.queue.append(None)  # the probe is answered
    embed_stub.reply = Reply(429, QUOTA_429)  # then the account's quota is exhausted
    capsys.readouterr()
    assert main(["--db", db, "index"]) == 1
    run_out = capsys.readouterr().out
    assert main(["--db", db, "status"]) == 0
    status_out = capsys.readouterr().out
    for out in (run_out, status_out):
        assert "quota is exhausted" in out and "account owner" in out, out
        assert "retry later" not in out, out


def test_a_text_the_server_cut_is_told_as_what_is_known(tmp_path, embed_stub, caplog):
    # Ollama refuses a text over 150 characters unless "truncate": true, then cuts it itself
    embed_stub.refuse = lambda path, p: (
        Reply(400, ERRORS[("ollama", 400)])
        if path == "/api/embed" and not p.get("truncate") and any(len(t) > 150 for t in p.get("input") or [])
        else None
    )
    root = _docs(tmp_path, n=1)
    s = Settings(
        allowed_roots=ALLOWED_ROOTS,
        db=str(tmp_path / "t.db"),
        embed_provider="ollama",
        embed_url=embed_stub.url,
        embed_model="stub-embed",
        embed_retries=0,
        chunk_size=200,
        chunk_overlap=20,
    ).validate()
    from engine.embed import make_embedder

    store = SqliteStore(s.db)
    store.add_collection(Collection("C", str(root)))
    with caplog.at_level(logging.WARNING, logger="engine.embed"):
        summary = Indexer(store, s, make_embedder(s)).run()
    store.close()
    assert summary["truncated"] >= 1
    said = [r.getMessage() for r in caplog.records if "embedded cut" in r.getMessage()]
    assert said and all(re.search(r"the server cut the text; chunknav sent \d+ characters$", m) for m in said), said
    assert not any("truncated to" in r.getMessage() for r in caplog.records)


def test_a_summary_the_store_could_not_save_is_said_not_saved(tmp_path):
    root = _docs(tmp_path)
    db = str(tmp_path / "s.db")
    store = SqliteStore(db)
    store.add_collection(Collection("C", str(root)))
    s = Settings(allowed_roots=ALLOWED_ROOTS, db=db, embed_provider="none", lock_wait_s=0.3).validate()
    holder = sqlite3.connect(db, isolation_level=None, timeout=0.1)
    started, release = threading.Event(), threading.Event()
    original = store.save_run

    def save_run(summary):  # the end of the run: another process takes the writer lock and keeps it
        if summary.get("status") != "running" and not started.is_set():
            holder.execute("BEGIN IMMEDIATE")
            started.set()
        return original(summary)

    store.save_run = save_run  # type: ignore[method-assign]
    try:
        summary = Indexer(store, s).run()
    finally:
        if started.is_set():
            holder.execute("ROLLBACK")
        release.set()
        holder.close()
    assert summary["summarySaved"] is False
    assert summary["error"]["error"] == "store-busy"
    assert "this run's summary was not saved" in summary["error"]["message"]
    store.close()
