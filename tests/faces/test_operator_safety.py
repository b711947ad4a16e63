"""Faces an operator can leave running: collections change only on
purpose, allowed roots, the human status view, MCP parse errors, the bundled
samples, and the ``chunknav gui`` launcher's rules (ports, addresses, token).

Engine and CLI run on real SQLite files in tmp; the CLI in-process
(``engine.faces.cli.main``) and as a subprocess; MCP as a subprocess on stdio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import paths as roots
from engine.faces.cli import main
from engine.config import Settings, load_settings
from engine.errors import CollectionBoundError, IndexBusyError, RootRefusedError, SettingsError
from engine.faces.gui import gui_command, streamlit_env_name, streamlit_flags
from engine.tools.registry import Engine, call_tool
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_dirs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, word in ((a, "anvils"), (b, "rockets")):
        d.mkdir()
        (d / f"{word}.md").write_text(f"# {word}\n" + f"{word} are here. " * 100, "utf-8")
    return a, b


@pytest.fixture
def engine(tmp_path):
    eng = Engine(Settings(db=str(tmp_path / "i.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate())
    yield eng
    eng.close()


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------ add / replace / remove
def test_adding_a_bound_path_with_another_root_is_refused(engine, two_dirs):
    a, b = two_dirs
    engine.add_collection("Docs", str(a))
    engine.run_index(embed=False)
    engine.add_collection("Docs", str(a))  # same root again: a no-op
    with pytest.raises(CollectionBoundError) as e:
        engine.add_collection("Docs", str(b))
    assert str(a) in str(e.value) and e.value.current_root == str(a)
    assert engine.store.get_collection("Docs").root == str(a)  # unchanged
    assert [d.file_path for d in engine.store.documents("Docs")] == ["anvils.md"]


def test_replace_repoints_and_drops_the_old_documents(engine, two_dirs):
    a, b = two_dirs
    engine.add_collection("Docs", str(a))
    engine.run_index(embed=False)
    assert engine.collection_counts("Docs")["documents"] == 1
    engine.add_collection("Docs", str(b), replace=True)
    assert engine.store.get_collection("Docs").root == str(b)
    assert engine.collection_counts("Docs") == {"documents": 0, "chunks": 0}
    engine.run_index(embed=False)
    assert [d.file_path for d in engine.store.documents("Docs")] == ["rockets.md"]


def test_replace_and_remove_are_refused_while_a_run_is_active(engine, two_dirs):
    a, b = two_dirs
    engine.add_collection("Docs", str(a))
    engine.run_index(embed=False)
    with engine.store.index_lock():  # an index run holds the lock
        with pytest.raises(IndexBusyError, match="replace collection 'Docs'"):
            engine.add_collection("Docs", str(b), replace=True)
        with pytest.raises(IndexBusyError, match="remove collection 'Docs'"):
            engine.remove_collection("Docs")
    assert engine.store.get_collection("Docs").root == str(a)
    assert engine.collection_counts("Docs")["documents"] == 1
    assert engine.remove_collection("Docs") is True


def test_cli_says_use_replace_and_names_what_remove_drops(tmp_path, two_dirs, capsys):
    a, b = two_dirs
    db = str(tmp_path / "cli.db")
    assert run(capsys, "--db", db, "collections", "add", "Docs", str(a))[0] == 0
    assert run(capsys, "--db", db, "index", "--no-embed")[0] == 0
    code, out, err = run(capsys, "--db", db, "collections", "add", "Docs", str(b))
    assert code == 2 and out == ""
    assert f"already bound to {a}" in err and "use --replace" in err and "1 documents" in err
    code, out, _ = run(capsys, "--db", db, "collections", "add", "Docs", str(b), "--replace")
    assert code == 0 and json.loads(out)["root"] == str(b)
    run(capsys, "--db", db, "index", "--no-embed")
    code, out, _ = run(capsys, "--db", db, "collections", "remove", "Docs")
    assert code == 0 and json.loads(out) == {"removed": "Docs", "documents": 1, "chunks": 2, "vectorsKept": True}


# ------------------------------------------------------------ allowed roots
@pytest.mark.parametrize("root", ["/", "/etc", "/proc", "/sys", "/dev", "/usr/share", "/var/log", "/boot"])
def test_root_and_system_directories_are_refused_whatever_the_setting(root, engine):
    if not os.path.isdir(root):
        pytest.skip(f"{root} does not exist here")
    with pytest.raises(RootRefusedError, match="CHUNKNAV_ALLOWED_ROOTS"):
        roots.check_root(root, "/", allow_any=True)
    with pytest.raises(RootRefusedError):
        engine.add_collection("Sys", root, allow_any_root=True)


def test_symlink_to_a_system_directory_is_refused(tmp_path, engine):
    (tmp_path / "innocent").symlink_to("/etc")
    with pytest.raises(RootRefusedError, match="/etc"):
        engine.add_collection("X", str(tmp_path / "innocent"))


def test_root_outside_the_allowed_roots_is_refused_naming_the_setting(tmp_path, two_dirs):
    a, _b = two_dirs
    eng = Engine(
        Settings(db=str(tmp_path / "o.db"), embed_provider="none", allowed_roots=str(tmp_path / "b")).validate()
    )
    try:
        with pytest.raises(RootRefusedError, match="outside the allowed roots.*CHUNKNAV_ALLOWED_ROOTS"):
            eng.add_collection("A", str(a))
        assert eng.add_collection("A", str(a), allow_any_root=True).root == str(a)
        assert eng.add_collection("B", str(tmp_path / "b")).root == str(tmp_path / "b")
        # the bundled samples are always allowed (first start of the explorer)
        assert eng.add_collection("Samples", roots.SAMPLES_DIR).root == roots.SAMPLES_DIR
    finally:
        eng.close()


def test_default_allowed_roots_are_cwd_and_home_never_a_system_dir(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    got = roots.allowed_roots("", cwd=str(tmp_path / "work"), home=str(home))
    assert got == [str(tmp_path / "work"), str(home), roots.SAMPLES_DIR]
    assert roots.allowed_roots("", cwd="/", home=str(home)) == [str(home), roots.SAMPLES_DIR]  # started from /
    assert roots.allowed_roots("", cwd="/etc", home="/root") == ["/root", roots.SAMPLES_DIR]  # root's home is fine
    assert "/root" not in roots.allowed_roots("/root", home=str(home))  # /root when it is not home
    with pytest.raises(RootRefusedError, match="working directory and the home directory"):
        roots.check_root(str(tmp_path), "", cwd=str(home), home=str(home))


def test_cli_allow_any_root_flag_and_refusal_message(tmp_path, two_dirs, capsys, monkeypatch):
    a, _b = two_dirs
    monkeypatch.setenv("CHUNKNAV_ALLOWED_ROOTS", str(tmp_path / "elsewhere"))
    db = str(tmp_path / "r.db")
    code, _, err = run(capsys, "--db", db, "collections", "add", "A", str(a))
    assert code == 2 and "CHUNKNAV_ALLOWED_ROOTS" in err and "--allow-any-root" in err
    code, out, _ = run(capsys, "--db", db, "collections", "add", "A", str(a), "--allow-any-root")
    assert code == 0 and json.loads(out)["root"] == str(a)
    code, _, err = run(capsys, "--db", db, "collections", "add", "E", "/etc", "--allow-any-root")
    assert code == 2 and "system directory /etc" in err


# ------------------------------------------------------------ human status
def test_human_status_shows_what_needs_attention(tmp_path, two_dirs, capsys, closed_port, monkeypatch):
    a, _b = two_dirs
    (a / "broken.pdf").write_bytes(b"%PDF-1.4 not a pdf")
    db = str(tmp_path / "s.db")
    run(capsys, "--db", db, "collections", "add", "A", str(a))
    code, out, _ = run(capsys, "--db", db, "status")
    assert "last run: none yet" in out
    monkeypatch.setenv("EMBED_PROVIDER", "ollama")
    monkeypatch.setenv("EMBED_URL", f"http://127.0.0.1:{closed_port}")
    monkeypatch.setenv("EMBED_MODEL", "stub-embed")
    monkeypatch.setenv("EMBED_RETRIES", "0")
    run(capsys, "--db", db, "index")
    code, out, _ = run(capsys, "--db", db, "status")
    assert code == 0
    assert "last run: embedding failed" in out and "embedding-unavailable" in out
    assert "who can fix it" in out and "1 failed" in out
    assert "stub-embed has no vectors yet" in out
    assert "broken.pdf" in out
    # the same index with a provider that works: vectors missing for one model are named
    monkeypatch.setenv("EMBED_PROVIDER", "local")
    monkeypatch.delenv("EMBED_URL")
    monkeypatch.setenv("EMBED_MODEL", "l2_supercat_256")  # the suite's fast local model
    run(capsys, "--db", db, "index")
    (a / "more.md").write_text("# More\n" + "more words here. " * 80, "utf-8")
    run(capsys, "--db", db, "index", "--no-embed")
    code, out, _ = run(capsys, "--db", db, "status")
    assert "attention: model l2_supercat_256 has 2 chunks without vectors" in out


# ------------------------------------------------------------ MCP parse errors
def test_mcp_answers_malformed_frames_and_keeps_serving(tmp_path):
    env = {"PYTHONPATH": str(REPO), "EMBED_PROVIDER": "none", "PATH": os.environ.get("PATH", "")}
    p = subprocess.Popen(
        [sys.executable, "-m", "engine", "--db", str(tmp_path / "m.db"), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )

    def send(line: str) -> dict:
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    try:
        bad = send("{this is not json")
        assert bad == {"jsonrpc": "2.0", "id": None, "error": bad["error"]} and bad["error"]["code"] == -32700
        assert send('{"hello": "world"}')["error"]["code"] == -32600
        assert send("\x00\x01\x02")["error"]["code"] == -32700
        init = send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                }
            )
        )
        assert init["id"] == 1 and "result" in init
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        assert send("[1, 2")["error"]["code"] == -32700
        listed = send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        assert listed["id"] == 2 and len(listed["result"]["tools"]) >= 6
    finally:
        p.stdin.close()
        assert p.wait(20) == 0
        p.stdout.close()
        p.stderr.close()


# ------------------------------------------------------------ samples
def test_bundled_samples_carry_no_metadata_files():
    from engine.extract import SUPPORTED_SUFFIXES

    names = sorted(p.name for p in roots.Path(roots.SAMPLES_DIR).iterdir())
    assert not [n for n in names if n.upper().startswith(("SOURCES", "LICENSE", "NOTICE", "COPYING", "."))]
    assert all(Path(n).suffix.lower() in SUPPORTED_SUFFIXES for n in names), names
    assert (REPO / "assets" / "SOURCES-samples.md").is_file()


def test_sample_index_holds_only_the_samples(sample_engine):
    status = call_tool(sample_engine, "index_status", {"probe": False})
    files = sorted(f for f in os.listdir(roots.SAMPLES_DIR))
    assert status["documents"] == len(files)
    hits = call_tool(
        sample_engine, "search", {"query": "upstream repository licence sha256", "scope": "Samples", "mode": "keyword"}
    )
    assert all(not h["filePath"].upper().startswith("SOURCES") for h in hits.get("hits", []))


# ------------------------------------------------------------ launcher rules
def test_streamlit_env_names_follow_streamlit():
    assert streamlit_env_name("server", "port") == "STREAMLIT_SERVER_PORT"
    assert streamlit_env_name("server", "fileWatcherType") == "STREAMLIT_SERVER_FILE_WATCHER_TYPE"


def test_port_precedence_flag_then_env_then_config():
    s = load_settings(environ={})
    cmd, _env, bind, port = gui_command(s, environ={})
    assert (bind, port) == ("127.0.0.1", 8501) and "--server.port=8501" in cmd
    cmd, _env, _bind, port = gui_command(s, environ={"STREAMLIT_SERVER_PORT": "8777"})
    assert port == 8777 and "--server.port=8777" in cmd and "--server.port=8501" not in cmd
    cmd, _env, _bind, port = gui_command(s, port=8999, environ={"STREAMLIT_SERVER_PORT": "8777"})
    assert port == 8999 and [f for f in cmd if f.startswith("--server.port")] == ["--server.port=8999"]
    # every config key yields to its environment variable
    assert "--server.headless=true" not in streamlit_flags(environ={"STREAMLIT_SERVER_HEADLESS": "false"})
    with pytest.raises(SettingsError, match="1..65535"):
        gui_command(s, port=70000, environ={})


def test_non_loopback_bind_needs_the_access_token():
    s = load_settings(environ={})
    with pytest.raises(SettingsError, match="CHUNKNAV_ACCESS_TOKEN"):
        gui_command(s, address="0.0.0.0", environ={})
    with pytest.raises(SettingsError, match="CHUNKNAV_ACCESS_TOKEN"):
        gui_command(s, environ={"STREAMLIT_SERVER_ADDRESS": "0.0.0.0"})
    tok = load_settings(environ={"CHUNKNAV_ACCESS_TOKEN": "tok-long-enough", "CHUNKNAV_READ_ONLY": "1"})
    cmd, env, bind, _port = gui_command(tok, address="0.0.0.0", environ={})
    assert bind == "0.0.0.0" and "--browser.serverAddress=0.0.0.0" in cmd
    assert env["CHUNKNAV_ACCESS_TOKEN"] == "tok-long-enough" and env["CHUNKNAV_READ_ONLY"] == "true"


def test_chunknav_gui_refuses_to_start_exposed_without_a_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_", "STREAMLIT_"))}
    r = subprocess.run(
        [sys.executable, "-m", "engine", "--db", str(tmp_path / "g.db"), "gui", "--address", "0.0.0.0", "--port", "1"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "CHUNKNAV_ACCESS_TOKEN" in r.stderr and "0.0.0.0" in r.stderr


def test_cli_remove_and_replace_are_refused_while_a_run_holds_the_lock(tmp_path, two_dirs, capsys):
    a, b = two_dirs
    db = str(tmp_path / "busy.db")
    run(capsys, "--db", db, "collections", "add", "Docs", str(a))
    run(capsys, "--db", db, "index", "--no-embed")
    holder = Engine(load_settings({"db": db}))
    try:
        with holder.store.index_lock():  # a run in progress, as another process would hold it
            code, out, err = run(capsys, "--db", db, "collections", "remove", "Docs")
            assert code == 1 and out == "" and "cannot remove collection 'Docs'" in err
            code, out, err = run(capsys, "--db", db, "collections", "add", "Docs", str(b), "--replace")
            assert code == 1 and "cannot replace collection 'Docs'" in err
        assert holder.store.get_collection("Docs").root == str(a)
    finally:
        holder.close()


def test_readme_first_screen_says_how_to_change_the_port():
    first = (REPO / "README.md").read_text("utf-8").split("\n## ")[0]
    assert "make run PORT=" in first and "chunknav gui --port" in first and "--address" in first
    assert "## Security" in (REPO / "README.md").read_text("utf-8")
