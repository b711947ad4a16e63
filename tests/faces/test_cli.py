"""The CLI face: collections, index (human and --json), status, exit codes, settings.

Runs ``engine.faces.cli.main`` in-process on a real SQLite file, plus one real
``python -m engine`` subprocess for the console entry and stdout hygiene.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.faces.cli import main
from engine.faces.gui import streamlit_flags

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Anvils\nAnvils are heavy. " * 80, "utf-8")
    (root / "b.txt").write_text("Rocket skates go fast.", "utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (root / "notes.xyz").write_text("unsupported", "utf-8")
    return root


def _without_provider(out: str) -> dict:
    """A ``--json`` answer without its ``provider`` key."""
    return {k: v for k, v in json.loads(out).items() if k != "provider"}


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
    assert "failed      1 corrupt: C/broken.pdf (corrupt: " in out  # by reason code, with examples
    assert "skipped     1 unsupported-type: C/notes.xyz" in out
    code, out, _ = run(capsys, "--db", db, "index", "-v")  # every file, one line each
    assert "failed  C/broken.pdf: corrupt: " in out and "(kept from earlier runs" in out
    assert "skipped C/notes.xyz: unsupported-type: unsupported file type: .xyz" in out
    code, out, _ = run(capsys, "--db", db, "index", "--json")
    summary = json.loads(out)
    assert summary["indexed"] == 0 and summary["unchanged"] == 3 and summary["force"] is False
    # the failed file is unchanged and still fails: counted, and the exit stays non-zero
    assert code == 1 and [f["filePath"] for f in summary["failedKept"]] == ["broken.pdf"]
    assert "skipped" not in summary  # one name per meaning: counts.skipped are the real skips
    code, out, _ = run(capsys, "--db", db, "index", "--force", "--json")
    assert json.loads(out)["indexed"] == 2


def test_status_human_and_json(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    db = str(tmp_path / "i.db")
    run(capsys, "--db", db, "collections", "add", "C", str(corpus))
    run(capsys, "--db", db, "index")
    code, out, _ = run(capsys, "--db", db, "status")
    assert code == 0 and "documents 3" in out and "provider none" in out and "search-not-performed" in out
    # one "last run:" line, whose verdict agrees with its counts (broken.pdf failed)
    lines = [ln for ln in out.splitlines() if ln.startswith("last run:")]
    assert len(lines) == 1, out
    assert lines[0].startswith("last run: finished with failures at ") and "1 failed" in lines[0]
    assert "2 indexed, 0 unchanged, 0 empty, 1 failed, 1 skipped, 0 stale, 0 removed" in lines[0]
    code, out, _ = run(capsys, "--db", db, "status", "--json")
    env = json.loads(out)
    assert code == 0 and env["documents"] == 3 and env["failures"][0]["filePath"] == "broken.pdf"


@pytest.mark.parametrize("kind", ["garbage", "truncated", "directory"])
def test_status_of_an_index_that_cannot_be_opened_says_so(tmp_path, corpus, capsys, monkeypatch, kind):
    """Human ``status`` on a corrupt, truncated or directory index prints the error
    code and message (as --json does), never counts that look like an empty index."""
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    db = tmp_path / "i.db"
    if kind == "garbage":
        db.write_bytes(os.urandom(100_000))
    elif kind == "directory":
        db.mkdir()
    else:
        run(capsys, "--db", str(db), "collections", "add", "C", str(corpus))
        run(capsys, "--db", str(db), "index")
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 2])
    code, out, _ = run(capsys, "--db", str(db), "status", "--json")
    env = json.loads(out)
    assert code == 1 and env["error"] == "index-unavailable"
    code, out, _ = run(capsys, "--db", str(db), "status")
    assert code == 1
    assert out.startswith(f"error: index-unavailable: {env['message']}"), out
    assert "who can fix it: the operator" in out and "documents 0" not in out and "last run" not in out
    # an index run on it is refused with an envelope a --json caller can parse
    code, out, err = run(capsys, "--db", str(db), "index", "--json")
    run_env = json.loads(out)
    assert code == 1 and run_env["error"] == "index-unavailable" and run_env["status"] == "refused", out
    assert "cannot be opened" in run_env["message"] and "cannot be opened" in err


def test_a_collection_path_with_spaces_is_named_in_a_quoted_namespace_token(tmp_path, capsys, monkeypatch):
    """``namespace:"Acme Inc/Sub Dir"`` names a path with spaces (the unquoted token
    stops at the first space); a path with a comma works as --scope."""
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    root = tmp_path / "commadir"
    root.mkdir()
    (root / "a.txt").write_text("comma collection okra", "utf-8")
    db = str(tmp_path / "i.db")
    for name in ("Acme,Inc", "Acme Inc/Sub Dir"):
        assert run(capsys, "--db", db, "collections", "add", name, str(root))[0] == 0
    run(capsys, "--db", db, "index")
    code, out, _ = run(capsys, "--db", db, "search-chunks", 'namespace:"Acme Inc/Sub Dir" okra', "--mode", "keyword")
    env = json.loads(out)
    assert code == 0 and env["searched"] and env["collections"] == ["Acme Inc/Sub Dir"] and env["count"] == 1
    code, out, _ = run(capsys, "--db", db, "search-chunks", "namespace:Acme Inc/Sub Dir okra", "--mode", "keyword")
    assert json.loads(out)["searched"] is False  # unquoted: the token is `namespace:Acme`
    code, out, _ = run(capsys, "--db", db, "search-chunks", "okra", "--scope", "Acme,Inc", "--mode", "keyword")
    env = json.loads(out)
    assert env["collections"] == ["Acme,Inc"] and env["count"] == 1


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


def test_read_only_commands_on_a_missing_index_create_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / ".chunknav" / "index.db"
    hint = f"no index at {db}; add a collection with `chunknav collections add NAME DIR`"
    code, out, _ = run(capsys, "status")
    assert code == 0 and out.strip() == hint
    code, out, _ = run(capsys, "status", "--json")
    assert code == 0 and json.loads(out)["message"] == hint and json.loads(out)["documents"] == 0
    for argv in (["search", "anvils"], ["search-chunks", "anvils"]):
        code, out, _ = run(capsys, *argv)
        env = json.loads(out)
        assert code == 0 and env["hits"] == [] and env["hint"] == hint, argv
    for argv in (["get-chunk", "C", "a.md", "0"], ["read", "C", "a.md"], ["node", "C/_Documents/a.md"]):
        code, out, _ = run(capsys, *argv)
        env = json.loads(out)
        assert code == 0 and env["found"] is False and env["message"] == hint, argv
    code, out, err = run(capsys, "collections", "list")
    assert code == 0 and json.loads(out) == [] and hint in err
    assert list(tmp_path.iterdir()) == []  # no .chunknav/ was made
    # the commands that write make it
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Anvils are heavy.", "utf-8")
    code, _, _ = run(capsys, "collections", "add", "C", str(tmp_path / "docs"), "--allow-any-root")
    assert code == 0 and db.is_file()


def test_vectors_purge_stale_deletes_the_vectors_of_vanished_chunks(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "local")
    db = str(tmp_path / "i.db")
    run(capsys, "--db", db, "collections", "add", "C", str(corpus))
    run(capsys, "--db", db, "index")
    (corpus / "b.txt").unlink()
    run(capsys, "--db", db, "index")
    before = json.loads(run(capsys, "--db", db, "status", "--json")[1])
    assert before["staleVectors"] == 1  # b.txt's one chunk is gone, its vector kept
    code, out, _ = run(capsys, "--db", db, "vectors", "purge-stale")
    model = before["provider"]["model"]
    assert code == 0 and json.loads(out) == {"purged": {model: 1}, "total": 1}
    after = json.loads(run(capsys, "--db", db, "status", "--json")[1])
    assert after["staleVectors"] == 0 and after["chunks"] == before["chunks"]
    assert next(v for v in after["vectors"] if v["model"] == model)["missing"] == 0
    hits = json.loads(run(capsys, "--db", db, "search-chunks", "anvils heavy", "--scope", "C")[1])["hits"]
    assert hits and hits[0]["filePath"] == "a.md"
    assert json.loads(run(capsys, "--db", db, "vectors", "purge-stale")[1])["total"] == 0


def test_tool_name_aliases_give_the_same_answer(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    db = str(tmp_path / "i.db")
    run(capsys, "--db", db, "collections", "add", "C", str(corpus))
    run(capsys, "--db", db, "index")
    for alias, command, argv in (
        ("get-document", "node", ["C/_Documents/a.md"]),
        ("read-document", "read", ["C", "a.md", "--limit", "40"]),
        ("index-status", "status", ["--json"]),
    ):
        a, b = run(capsys, "--db", db, alias, *argv), run(capsys, "--db", db, command, *argv)
        assert a[0] == b[0] == 0 and _without_provider(a[1]) == _without_provider(b[1]), alias
