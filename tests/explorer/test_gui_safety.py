"""The explorer as an operator leaves it running, under AppTest:
the access token gate, read-only mode, hostile deep links on every page,
the confirm steps of replace and remove, and the "maps to a tool call"
command run as a subprocess from another directory.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.config import Settings
from engine.tools.registry import Engine, cli_command
from explorer.links import validate_params
from tests.conftest import ALLOWED_ROOTS
from tests.fixtures.fixtures_engine import SAMPLE_COLLECTION, SAMPLES

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "explorer" / "app.py")
PAGE = {name: f"../pages/{name}.py" for name in ("status", "rebuild", "explore", "chunk", "source")}
TITLES = {"status": "Status", "rebuild": "Rebuild", "explore": "Explore index", "chunk": "Chunk", "source": "Source"}
TOKEN = "team-token-5f1c9a"


def _env(monkeypatch, db: str, **extra: str) -> None:
    monkeypatch.setenv("CHUNKNAV_DB", db)
    monkeypatch.setenv("EMBED_PROVIDER", "local")
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture(autouse=True)
def _clear_caches():
    yield
    st.cache_resource.clear()


def _open(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception, at.exception
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(PAGE[page]).run()
    return at


def _warnings(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


# ------------------------------------------------------------ access token
def test_token_is_asked_once_per_session_and_compared(monkeypatch, sample_index):
    _env(monkeypatch, sample_index.db, CHUNKNAV_ACCESS_TOKEN=TOKEN)
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["chunknav explorer"]  # the gate, no page
    assert not at.metric and not at.dataframe
    at.switch_page(PAGE["explore"]).run()  # a deep link does not get past it
    assert [t.value for t in at.title] == ["chunknav explorer"]
    at.text_input(key="access_token_input").input(TOKEN + "x")
    next(b for b in at.button if b.label == "Open").click().run()
    assert any("Wrong access token" in e.value for e in at.error)
    assert [t.value for t in at.title] == ["chunknav explorer"]
    at.text_input(key="access_token_input").input(TOKEN)
    next(b for b in at.button if b.label == "Open").click().run()
    assert not at.exception
    assert at.title[0].value == "Explore index"  # the deep link survives entering the token
    for page in ("status", "explore", "chunk"):  # asked once: the session stays open
        at.switch_page(PAGE[page]).run()
        assert at.title[0].value == TITLES[page]
        assert not any(t.label == "Access token" for t in at.text_input)


def test_without_token_an_explicit_non_loopback_bind_refuses_every_page(monkeypatch, sample_index):
    _env(monkeypatch, sample_index.db)
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    st.config.set_option("server.address", "0.0.0.0")
    try:
        at.switch_page(PAGE["status"]).run()
        assert not at.title and any("CHUNKNAV_ACCESS_TOKEN" in e.value for e in at.error)
    finally:
        st.config.set_option("server.address", "127.0.0.1")


# ------------------------------------------------------------ read-only
def test_read_only_hides_rebuild_and_collection_changes(monkeypatch, tmp_path):
    db = str(tmp_path / "empty.db")
    _env(monkeypatch, db, CHUNKNAV_READ_ONLY="true")
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception
    assert at.title[0].value == "Status"
    assert any("Read-only explorer" in c.value for c in at.sidebar.caption)
    at.switch_page(PAGE["rebuild"]).run()  # /rebuild: a plain page saying so, not "Page not found"
    assert not at.exception
    assert at.title[0].value == "Rebuild is off in this read-only explorer"
    assert not [b for b in at.button if b.label in ("Rebuild", "Add collection", "Remove…")]
    eng = Engine(Settings(db=db, embed_provider="none").validate())
    assert eng.store.collections() == []  # no first-start indexing of the samples either
    eng.close()


# ------------------------------------------------------------ hostile deep links
HOSTILE = [
    {"kind": "xyz", "mode": "bogus", "limit": "-5", "q": "lorem"},
    {"limit": "5000", "q": "lorem", "scope": "NoSuchCollection"},
    {"limit": "abc", "hit": "-3", "q": "a\x00b"},
    {"c": "../../etc", "f": "../../etc/passwd", "i": "abc"},
    {"c": SAMPLE_COLLECTION, "f": "../../../etc/passwd", "i": "0"},
    {"c": SAMPLE_COLLECTION, "f": "/etc/passwd", "i": "999999999999999999999"},
    {"c": SAMPLE_COLLECTION, "f": "multi\x00column.pdf", "i": "-1", "p": "-4", "zoom": "nan"},
    {"c": SAMPLE_COLLECTION, "f": "multicolumn.pdf", "i": "1", "p": "9999", "zoom": "1e308"},
    {"c": SAMPLE_COLLECTION, "f": "multicolumn.pdf", "i": "1", "full": "yes", "q": "x" * 5000},
    {"unknown": "1", "__proto__": "x", "kind": "", "mode": "vector'; DROP TABLE chunks;--"},
    {"c": "Samples\n", "f": "sample-french-1.txt\r\n", "i": " 2 "},
]


@pytest.mark.parametrize("page", list(PAGE))
@pytest.mark.parametrize("params", HOSTILE, ids=[f"h{i}" for i in range(len(HOSTILE))])
def test_every_page_survives_hostile_parameters(monkeypatch, sample_index, page, params):
    _env(monkeypatch, sample_index.db)
    at = _open(page, **params)
    assert not at.exception, at.exception
    assert at.title and at.title[0].value == TITLES[page]
    shown = "\n".join(
        str(getattr(e, "value", ""))
        for kind in ("markdown", "error", "warning", "info", "code")
        for e in getattr(at, kind)
    )
    assert "Traceback" not in shown and 'File "' not in shown


def test_out_of_range_values_are_clamped_and_said(monkeypatch, sample_index):
    _env(monkeypatch, sample_index.db)
    at = _open("explore", q="lorem", kind="xyz", mode="bogus", limit="5000", scope=SAMPLE_COLLECTION)
    notes = _warnings(at)
    assert "`kind=xyz` is not one of chunks, documents: using `chunks`" in notes
    assert "`mode=bogus` is not one of auto, vector, keyword, hybrid: using `auto`" in notes
    assert "`limit=5000` is out of range (1..1000): clamped to 1000" in notes
    assert at.query_params["limit"] == "1000" and at.query_params["kind"] == "chunks"
    at = _open("explore", q="lorem", limit="-5", scope="Nope")
    notes = _warnings(at)
    assert "clamped to 1" in notes and "there is no collection `Nope`" in notes
    assert at.query_params["limit"] == "1" and "scope" not in at.query_params


def test_bad_chunk_links_fall_back_with_a_notice(monkeypatch, sample_index):
    _env(monkeypatch, sample_index.db)
    at = _open("chunk", c="Nope", f="a.pdf", i="abc")
    assert "no collection `Nope`" in _warnings(at) and "`i=abc` is not a whole number" in _warnings(at)
    assert any("No chunk selected" in i.value for i in at.info)
    at = _open("chunk", c=SAMPLE_COLLECTION, f="../../etc/passwd", i="0")
    assert any("leaves the collection root" in e.value for e in at.error)  # path-escape callout, no read
    at = _open("source", c=SAMPLE_COLLECTION, f="multicolumn.pdf", i="1", zoom="99")
    assert "clamped to 4" in _warnings(at)  # Source zooms 1x-4x


def test_validate_params_core():
    clean, notes = validate_params("explore", {"limit": "0", "kind": "documents", "x": "1"}, ["A"])
    assert clean == {"limit": "1", "kind": "documents"} and len(notes) == 2
    clean, notes = validate_params("status", {"q": "x"}, [])
    assert clean == {} and notes == ["`q` is not a parameter of this page: ignored"]
    clean, notes = validate_params("chunk", {"c": "A", "f": "x.pdf", "i": "3"}, ["A"])
    assert clean == {"c": "A", "f": "x.pdf", "i": "3"} and notes == []


# ------------------------------------------------------------ replace / remove confirm steps
@pytest.fixture
def small(tmp_path, monkeypatch):
    root, other = tmp_path / "docs", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    shutil.copy(SAMPLES / "sample-french-1.txt", root / "sample-french-1.txt")
    (other / "o.md").write_text("# other\n" + "other words. " * 50, "utf-8")
    settings = Settings(db=str(tmp_path / "index.db"), allowed_roots=ALLOWED_ROOTS, embed_provider="none").validate()
    eng = Engine(settings)
    eng.add_collection("Small", str(root))
    eng.run_index(embed=False)
    eng.close()
    _env(monkeypatch, settings.db, EMBED_PROVIDER="none")
    return settings, root, other


def test_gui_replace_needs_a_confirm_step_naming_what_is_dropped(small):
    settings, root, other = small
    at = _open("rebuild")
    at.text_input(key="add_path").input("Small")
    at.text_input(key="add_root").input(str(other))
    next(b for b in at.button if b.label == "Add collection").click().run()
    assert not at.success
    w = _warnings(at)
    assert f"already bound to `{root}`" in w and "drops its 1 documents" in w and "vectors are kept" in w
    at.button(key="cancel_replace").click().run()
    eng = Engine(settings)
    assert eng.store.get_collection("Small").root == str(root)
    next(b for b in at.button if b.label == "Add collection").click().run()
    at.button(key="confirm_replace").click().run()
    assert any("Replaced: `Small`" in s.value for s in at.success)
    assert eng.store.get_collection("Small").root == str(other)
    assert eng.collection_counts("Small") == {"documents": 0, "chunks": 0}
    eng.close()


def test_gui_refuses_roots_outside_the_setting_and_has_no_override(small, monkeypatch):
    _settings, _root, _other = small
    at = _open("rebuild")
    at.text_input(key="add_path").input("Etc")
    at.text_input(key="add_root").input("/etc")
    next(b for b in at.button if b.label == "Add collection").click().run()
    assert any("system directory /etc" in e.value for e in at.error)
    assert not [c for c in at.checkbox if "any" in c.label.lower()]  # no --allow-any-root in the GUI


def test_gui_remove_is_refused_while_a_run_holds_the_lock(small):
    settings, _root, _other = small
    at = _open("rebuild")
    at.selectbox(key="remove_path").set_value("Small")
    at.button(key="remove").click().run()
    assert "Remove `Small`?" in _warnings(at) and "1 documents" in _warnings(at)
    holder = Engine(settings)
    try:
        with holder.store.index_lock():  # another process' run, as far as the page can tell
            at.button(key="confirm_remove").click().run()
        assert any("index run" in e.value or "in progress" in e.value for e in list(at.warning) + list(at.error))
        assert holder.store.get_collection("Small") is not None
    finally:
        holder.close()


# ------------------------------------------------------------ tool-call command runs anywhere
def _chunknav() -> str:
    script = Path(sys.executable).parent / "chunknav"
    return str(script) if script.exists() else shutil.which("chunknav")


@pytest.mark.parametrize(
    "page,params,tool",
    [
        ("chunk", {"c": SAMPLE_COLLECTION, "f": "multicolumn.pdf", "i": "7"}, "get_chunk"),
        (
            "explore",
            {"q": "EU countries population", "scope": SAMPLE_COLLECTION, "mode": "keyword", "limit": "5"},
            "search_chunks",
        ),
    ],
)
def test_panel_command_runs_from_another_directory(monkeypatch, sample_index, tmp_path, page, params, tool):
    _env(monkeypatch, sample_index.db)
    at = _open(page, **params)
    assert not at.exception
    blocks = [c.value for c in at.code if c.language == "json"]
    i = next(i for i, b in enumerate(blocks) if json.loads(b).get("name") == tool)
    envelope = json.loads(blocks[i + 1])
    command = next(c.value for c in at.code if c.language == "bash" and f" {tool.replace('_', '-')} " in f" {c.value} ")
    argv = shlex.split(command)
    assert argv[0] == "chunknav" and argv[1] == "--db" and os.path.isabs(argv[2])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHUNKNAV_", "EMBED_"))}
    env.update(EMBED_PROVIDER="local", EMBED_MODEL="l2_supercat_256")
    r = subprocess.run([_chunknav(), *argv[1:]], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == envelope
    assert not (elsewhere / ".chunknav").exists()


def test_cli_command_names_the_index_and_never_the_dsn_password():
    pg = Settings(dsn="postgresql://bob:hunter2-pw@db.example:5432/idx")
    line = cli_command("get_chunk", {"collectionPath": "A", "filePath": "x.pdf", "chunkIndex": 0}, pg)
    assert line.startswith("chunknav --dsn postgresql://bob@db.example:5432/idx get-chunk")
    assert "hunter2" not in line
    line = cli_command("index_status", {"probe": True}, Settings(db="rel/index.db"))
    assert line == f"chunknav --db {os.path.abspath('rel/index.db')} status --json"


def test_explore_retrieval_params_are_validated():
    """The Explore page's URL parameters: scope '*' or known paths joined by ',', min and w clamped to 0..1,
    cmp a flag, files a known collection."""
    clean, notes = validate_params(
        "explore", {"scope": "*", "min": "0.2", "w": "0.7", "cmp": "1", "files": SAMPLE_COLLECTION}, [SAMPLE_COLLECTION]
    )
    assert clean == {"scope": "*", "min": "0.2", "w": "0.7", "cmp": "1", "files": SAMPLE_COLLECTION} and not notes
    clean, notes = validate_params(
        "explore", {"scope": f"{SAMPLE_COLLECTION},Nope", "w": "7", "cmp": "yes"}, [SAMPLE_COLLECTION]
    )
    assert clean == {"scope": SAMPLE_COLLECTION, "w": "1"} and len(notes) == 3
    # one repeated `scope` per path; a path with a comma stays whole
    known = ["Acme,Inc", "Acme", "B"]
    clean, notes = validate_params("explore", {"scope": ["Acme,Inc", "B", "B", "Nope"]}, known)
    assert clean == {"scope": ["Acme,Inc", "B"]} and len(notes) == 1 and "`Nope`" in notes[0]
    clean, notes = validate_params("explore", {"scope": "Acme,B"}, known)  # paths joined by ','
    assert clean == {"scope": ["Acme", "B"]} and not notes
    clean, notes = validate_params("explore", {"scope": ["B", "*"]}, known)
    assert clean == {"scope": "*"} and len(notes) == 1
