"""The CLI face: collections, index (human and --json), status, exit codes, settings.

Runs ``engine.cli.main`` in-process on a real SQLite file, plus one real
``python -m engine`` subprocess for the console entry and stdout hygiene.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main, streamlit_flags

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Anvils\nAnvils are heavy. " * 80, "utf-8")
    (root / "b.txt").write_text("Rocket skates go fast.", "utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (root / "notes.xyz").write_text("unsupported", "utf-8")
    return root


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_collections_add_list_remove(tmp_path, corpus, capsys):
    db = str(tmp_path / "i.db")
    code, out, _ = run(capsys, "--db", db, "collections", "add", "ACME/Docs", str(corpus))
    assert code == 0 and json.loads(out) == {"collectionPath": "ACME/Docs", "root": str(corpus)}
    code, out, _ = run(capsys, "--db", db, "collections", "list")
    assert [c["collectionPath"] for c in json.loads(out)] == ["ACME/Docs"]
    code, _, err = run(capsys, "--db", db, "collections", "add", "X", str(tmp_path / "missing"))
    assert code == 2 and "not a directory" in err
    code, _, err = run(capsys, "--db", db, "collections", "remove", "Nope")
    assert code == 1 and "no collection" in err
    code, out, _ = run(capsys, "--db", db, "collections", "remove", "ACME/Docs")
    assert code == 0 and json.loads(out) == {"removed": "ACME/Docs", "documents": 0, "chunks": 0, "vectorsKept": True}


def test_index_human_then_json_then_force(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    db = str(tmp_path / "i.db")
    run(capsys, "--db", db, "collections", "add", "C", str(corpus))
    code, out, _ = run(capsys, "--db", db, "index")
    assert code == 1  # a file failed (README: exit 1)
    assert "4 entries seen, 2 indexed" in out and "1 failed" in out and "1 skipped" in out
    assert "failed  C/broken.pdf: corrupt: " in out
    assert "skipped C/notes.xyz: unsupported-type: unsupported file type: .xyz" in out
    code, out, _ = run(capsys, "--db", db, "index", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["indexed"] == 0 and summary["skipped"] == 3 and summary["force"] is False
    code, out, _ = run(capsys, "--db", db, "index", "--force", "--json")
    assert json.loads(out)["indexed"] == 2


def test_status_human_and_json(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    db = str(tmp_path / "i.db")
    run(capsys, "--db", db, "collections", "add", "C", str(corpus))
    run(capsys, "--db", db, "index")
    code, out, _ = run(capsys, "--db", db, "status")
    assert code == 0 and "documents 3" in out and "provider none" in out and "search-not-performed" in out
    code, out, _ = run(capsys, "--db", db, "status", "--json")
    env = json.loads(out)
    assert code == 0 and env["documents"] == 3 and env["failures"][0]["filePath"] == "broken.pdf"


def test_usage_errors_exit_2(tmp_path, capsys):
    db = str(tmp_path / "i.db")
    assert run(capsys, "--db", db, "get-chunk", "C", "a.md", "not-a-number")[0] == 2
    assert run(capsys, "--db", db, "search")[0] == 2
    assert run(capsys, "--db", db, "nosuchcommand")[0] == 2
    code, _, err = run(capsys, "--db", db, "search", "x", "--mode", "psychic")
    assert code == 2 and "psychic" in err


def test_bad_setting_is_named_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CHUNKNAV_CHUNK_SIZE", "huge")
    code, _, err = run(capsys, "--db", str(tmp_path / "i.db"), "status")
    assert code == 2 and "CHUNKNAV_CHUNK_SIZE" in err


def test_found_false_is_exit_0_and_error_is_exit_1(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    db = str(tmp_path / "i.db")
    run(capsys, "--db", db, "collections", "add", "C", str(corpus))
    run(capsys, "--db", db, "index")
    code, out, _ = run(capsys, "--db", db, "get-chunk", "C", "a.md", "99")
    assert code == 0 and json.loads(out)["found"] is False and "valid 0..2 (3 chunks)" in json.loads(out)["message"]
    code, out, _ = run(capsys, "--db", db, "search-chunks", "anvil", "--scope", "C", "--mode", "vector")
    assert code == 1 and json.loads(out)["error"] == "search-not-performed"
    code, out, _ = run(capsys, "--db", db, "read", "C", "../etc/passwd")
    assert code == 1 and json.loads(out)["error"] == "path-escape"


def test_settings_command_lists_every_setting(capsys):
    code, out, _ = run(capsys, "settings")
    rows = json.loads(out)
    assert code == 0 and {"CHUNKNAV_DB", "EMBED_PROVIDER", "EMBED_TIMEOUT"} <= {r["env"] for r in rows}
    assert all(r["unit"] and r["help"] for r in rows)


def test_streamlit_config_becomes_flags():
    flags = streamlit_flags()
    assert "--server.address=127.0.0.1" in flags
    assert all(f.startswith("--") and "=" in f for f in flags)


def test_python_m_engine_prints_only_json_on_stdout(tmp_path, corpus):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env["CHUNKNAV_ALLOWED_ROOTS"] = os.environ["CHUNKNAV_ALLOWED_ROOTS"]  # set by clean_env
    env["EMBED_PROVIDER"] = "none"
    db = str(tmp_path / "i.db")
    py = [sys.executable, "-m", "engine", "--db", db]
    subprocess.run(py + ["collections", "add", "C", str(corpus)], check=True, env=env, cwd=REPO, capture_output=True)
    r = subprocess.run(py + ["index"], env=env, cwd=REPO, capture_output=True)
    assert r.returncode == 1 and b"Traceback" not in r.stderr  # broken.pdf failed: exit 1
    r = subprocess.run(py + ["get-chunk", "C", "b.txt", "0"], env=env, cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0
    assert json.loads(r.stdout)["text"] == "Rocket skates go fast."


def test_migrate_copies_chunks_and_vectors_without_re_embedding(tmp_path, corpus, capsys, embed_stub, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "ollama")
    monkeypatch.setenv("EMBED_URL", embed_stub.url)
    monkeypatch.setenv("EMBED_MODEL", "stub-embed")
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    run(capsys, "--db", src, "collections", "add", "C", str(corpus))
    run(capsys, "--db", src, "index")
    embedded = embed_stub.count("/api/embed")
    code, out, _ = run(capsys, "migrate", "--from", f"sqlite:{src}", "--to", f"sqlite:{dst}")
    counts = json.loads(out)
    assert code == 0 and counts["chunks"] == 4 and counts["vectors"] == 4
    code, out, _ = run(capsys, "--db", dst, "index", "--json")
    summary = json.loads(out)
    assert summary["indexed"] == 0 and summary["embedded"] == 0 and summary["reused"] == 4
    assert embed_stub.count("/api/embed") == embedded  # nothing to embed: not even the probe
    code, _, err = run(capsys, "migrate", "--from", "mysql://x", "--to", f"sqlite:{dst}")
    assert code == 2 and "sqlite:PATH" in err
