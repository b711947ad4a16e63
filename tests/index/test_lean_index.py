"""Lean ``chunknav index`` of an unchanged corpus: correctness only, no timings.

The CLI builds only the subcommand ``argv`` names (``engine.faces.cli.command_in``): its parse,
help and errors must equal the full parser's for every subcommand. The no-op run keeps
the registry, search and row builders unimported, asks the store one statement for the
embed pass (``vector_coverage``), and still re-reads a file whose bytes changed under the
same size and mtime (the content hash is the gate).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.faces.cli import OWN_COMMANDS, build_parser, command_in, main
from engine.config import Settings
from engine.index.indexer import Indexer
from engine.values import Chunk, Collection
from engine.store.sqlite.store import SqliteStore

REPO = Path(__file__).resolve().parents[2]


# -- the parser: only the subcommand asked for, the same parse, help and errors ---------------
def _subparsers(parser):
    return next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")


def _parse(parser, argv: list[str]):
    """(namespace or None, exit code or None, stdout, stderr) of one parse."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns, code = vars(parser.parse_args(argv)), None
        except SystemExit as e:
            ns, code = None, e.code
    return ns, code, out.getvalue(), err.getvalue()


def _every_command() -> list[str]:
    return list(_subparsers(build_parser()).choices)


#: argv shapes around the subcommands: help, --version, options before and after the command,
#: abbreviated, combined and unknown options, ``--``, bad values and choices, missing arguments.
_EDGES = [
    [],
    ["--help"],
    ["-h"],
    ["bogus"],
    ["--db"],
    ["--db", "x"],
    ["-v"],
    ["--verb", "index", "--help"],
    ["--db", "-h"],
    ["-vh"],
    ["--", "index"],
    ["--db=x", "index", "--help"],
    ["--ds", "x", "index"],
    ["-x", "index", "--help"],
    ["Index"],
    [""],
    ["ind"],
    ["--version"],
    ["--version", "index"],
    ["--db", "index", "status", "--bogus"],
    ["--dsn=index", "status", "--bogus"],
    ["--db", "--", "index"],
    ["-v", "-v", "settings", "--bogus"],
    ["index", "--db", "x"],
    ["index", "--version"],
    ["collections", "add"],
    ["collections", "add", "--help"],
    ["collections", "list", "--help"],
    ["collections", "remove", "--help"],
    ["collections", "bogus"],
    ["collections", "add", "A", "d", "--password", "p"],
    ["collections", "add", "A", "d", "--password-env", "E", "--password-file", "f"],
    ["vectors", "purge-stale", "--help"],
    ["vectors", "bogus"],
    ["get-chunk", "A", "b", "x"],
    ["get-chunk", "A", "b", "1"],
    ["get-chunk", "A", "b", "1", "--bogus"],
    ["search-chunks", "q", "--mode", "bad"],
    ["search-chunks", "q", "--scope", "A", "--scope", "B", "--limit", "3"],
    ["search", "q", "--no-probe"],
    ["migrate", "--from", "a"],
    ["migrate", "--from", "a", "--to", "b"],
    ["gui", "--port", "x"],
    ["gui", "--port", "8502", "--headless"],
    ["mcp", "--http"],
    ["status", "--json"],
    ["status", "--json", "x"],
    ["index", "--collection"],
    ["index", "--collection", "A", "--collection", "B", "--force", "--no-embed"],
    ["documents", "--help", "extra"],
    ["read", "a"],
    ["node", "A/b.txt"],
    ["settings", "x"],
]


def _same_parse(argv: list[str]) -> None:
    lean = _parse(build_parser(command_in(argv)), argv)
    assert lean == _parse(build_parser(), argv), argv


def test_the_lean_parser_parses_helps_and_errs_as_the_full_parser_on_edge_cases():
    for argv in _EDGES:
        _same_parse(argv)


@pytest.mark.parametrize("command", _every_command())
def test_the_lean_parser_parses_helps_and_errs_as_the_full_parser(command):
    for prefix in ([], ["--db", "x.db"], ["-v", "--dsn=postgresql://h/d"], ["--verbose", "--db=y"]):
        for rest in ([], ["--help"], ["-h"], ["--bogus"], ["a"], ["a", "b", "c", "d", "e"], ["a", "b", "1", "--json"]):
            _same_parse(prefix + [command] + rest)


@pytest.mark.parametrize("command", _every_command())
def test_each_command_builds_only_its_own_subparser(command):
    lean = _subparsers(build_parser(command))
    full = _subparsers(build_parser())
    own = {name for name, p in full.choices.items() if p is full.choices[command]}  # the name and its aliases
    assert set(lean.choices) == own
    ns, code, out, _ = _parse(build_parser(command), [command, "--help"])
    assert code == 0 and out.startswith("usage: chunknav ") and out.split()[2] in own  # an alias: its command


def test_command_in_finds_the_command_only_after_plain_top_level_options():
    assert command_in(["index"]) == "index"
    assert command_in(["--db", "a.db", "-v", "--dsn=postgresql://h/d", "get-chunk", "A", "b", "1"]) == "get-chunk"
    assert command_in(["--db", "status", "index"]) == "index"  # "status" is the --db value
    for argv in (
        [],
        ["-h", "index"],
        ["--version", "index"],
        ["--verb", "index"],
        ["-vh", "index"],
        ["--", "index"],
        ["--db"],
        ["--db", "-v", "index"],
        ["-x", "index"],
        ["--db", "x"],
    ):
        assert command_in(argv) is None, argv
    assert "index" in OWN_COMMANDS and "get-chunk" not in OWN_COMMANDS
    assert build_parser("bogus").format_help() == build_parser().format_help()  # unknown: every subcommand


# -- the no-op run ---------------------------------------------------------------------------
def _tree(root: Path) -> None:
    root.mkdir()
    (root / "a.txt").write_text("hello world " * 300, "utf-8")
    (root / "b.md").write_text("# Title\n" + "anvils are heavy. " * 200, "utf-8")
    (root / "c.pdf").write_bytes((REPO / "tests/corpus/pdf/tracemonkey.pdf").read_bytes())


def _notes_store(tmp_path: Path, notes: int, repeat: int):
    """``_tree`` plus ``notes`` text files (``note i`` x ``repeat``) as collection R of a new
    SQLite index (provider none): ``(root, settings, store)``."""
    root = tmp_path / "r"
    _tree(root)
    for i in range(notes):
        (root / f"n{i:02d}.txt").write_text(f"note {i} " * repeat, "utf-8")
    settings = Settings(db=str(tmp_path / "x.db"), embed_provider="none").validate()
    store = SqliteStore(settings.db)
    store.add_collection(Collection("R", str(root)))
    return root, settings, store


def test_an_unchanged_index_run_imports_no_registry_search_or_row_builders(tmp_path):
    root = tmp_path / "r"
    _tree(root)
    env = {
        **os.environ,
        "CHUNKNAV_DB": str(tmp_path / "x.db"),
        "CHUNKNAV_ALLOWED_ROOTS": str(tmp_path),
        "EMBED_PROVIDER": "none",
    }
    for argv in (["collections", "add", "R", str(root)], ["index"]):
        subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, env=env, check=True, capture_output=True)
    lazy = (
        "engine.tools.registry",
        "engine.search.searcher",
        "engine.tools.answers",
        "engine.tools.envelopes",
        "engine.search.hybrid",
        "engine.index.rows",
        "engine.index.pool",
        "engine.embed",
        "tomllib",
        "socket",
        "jsonschema",
        "numpy",
    )
    code = (
        "import sys\n"
        "from engine.faces.cli import main\n"
        "assert main(['index', '--no-embed']) == 0\n"
        f"print([m for m in {lazy!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "3 unchanged" in out.stdout and "0 indexed" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_file_changed_under_the_same_size_and_mtime_is_indexed_again(tmp_path, capsys, monkeypatch):
    """The gate is the content hash: equal size and mtime do not make a file unchanged."""
    root = tmp_path / "r"
    _tree(root)
    monkeypatch.setenv("CHUNKNAV_DB", str(tmp_path / "x.db"))
    monkeypatch.setenv("CHUNKNAV_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("EMBED_PROVIDER", "none")
    assert main(["collections", "add", "R", str(root)]) == 0
    assert main(["index", "--json"]) == 0
    capsys.readouterr()
    path = root / "a.txt"
    st = os.stat(path)
    path.write_text("HELLO WORLD " * 300, "utf-8")  # the same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert main(["index", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["indexed"] == 1 and summary["counts"]["unchanged"] == 2
    assert main(["read", "R", "a.txt"]) == 0
    assert "HELLO WORLD" in capsys.readouterr().out
    assert main(["index", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["unchanged"] == 3


# -- the embed pass's one statement -----------------------------------------------------------
def _coverage_from_counts(store: SqliteStore, model: str) -> tuple[int, int]:
    c = store.vector_counts().get(model)
    if c is None:  # no vector of that model: every distinct chunk id is missing
        return 0, len({cid for cid, _ in store.chunks_missing_vectors(model)})
    return c["vectors"] - c["stale"], c["missing"]


def _chunk(fp: str, i: int, cid: str) -> Chunk:
    return Chunk(
        collection_path="C",
        file_path=fp,
        chunk_index=i,
        chunk_id=cid,
        content_hash="h",
        start=0,
        end=4,
        chunk_text=f"t{cid}",
    )


def test_vector_coverage_equals_what_vector_counts_says(tmp_path):
    from engine.values import Document

    store = SqliteStore(str(tmp_path / "x.db"))
    store.add_collection(Collection("C", str(tmp_path)))

    def put(fp: str, ids: list[str]) -> None:
        doc = Document(
            collection_path="C",
            file_path=fp,
            content_hash="h",
            settings_key="k",
            file_type="txt",
            status="indexed",
            chunk_count=len(ids),
        )
        store.replace_document(doc, "text", [_chunk(fp, i, cid) for i, cid in enumerate(ids)])

    def vec(ids: list[str], model: str = "m") -> None:
        v = np.ones((len(ids), 4), np.float32) / 2
        store.add_vectors(model, ids, v)

    ids = [f"{i:064x}" for i in range(6)]
    assert store.vector_coverage("m") == (0, 0) == _coverage_from_counts(store, "m")  # empty index
    put("a.txt", ids[:4])
    put("b.txt", [ids[0], ids[4], ids[5]])  # a chunk id shared by two files
    assert store.vector_coverage("m") == (0, 6) == _coverage_from_counts(store, "m")  # no vector yet
    vec(ids[:3])
    assert store.vector_coverage("m") == (3, 3) == _coverage_from_counts(store, "m")
    vec(ids[3:] + ["f" * 64])  # one vector of a chunk no file has: stale
    assert store.vector_coverage("m") == (6, 0) == _coverage_from_counts(store, "m")
    vec(ids[:2], "other")
    assert store.vector_coverage("other") == (2, 4) == _coverage_from_counts(store, "other")
    store.remove_document("C", "b.txt")  # ids[4], ids[5] lose their chunks: their vectors are stale
    assert store.vector_coverage("m") == (4, 0) == _coverage_from_counts(store, "m")
    store.close()


class _Fixed:
    """A tiny embedder (the indexer's protocol): deterministic unit vectors of dim 8."""

    model = "fixed-8"
    dim = 8
    provider = "fixed"
    endpoint = ""

    def probe(self) -> float:
        return 0.0

    def embed(self, texts):
        out = np.zeros((len(texts), 8), np.float32)
        for i, t in enumerate(texts):
            out[i, len(t) % 8] = 1.0
        return out


def test_an_unchanged_run_reports_the_reused_vectors_the_counts_give(tmp_path):
    root = tmp_path / "r"
    _tree(root)
    settings = Settings(db=str(tmp_path / "x.db"), embed_provider="none").validate()
    store = SqliteStore(settings.db)
    store.add_collection(Collection("R", str(root)))
    first = Indexer(store, settings, _Fixed()).run()
    assert first["embedded"] > 0
    again = Indexer(store, settings, _Fixed()).run()
    c = store.vector_counts()["fixed-8"]
    assert again["embedded"] == 0 and again["reused"] == c["vectors"] - c["stale"] > 0
    store.remove_document("R", "b.md")  # its vectors stay, stale: not reused
    third = Indexer(store, settings, _Fixed()).run()  # b.md is read again, its vectors found by chunk id
    c = store.vector_counts()["fixed-8"]
    assert third["embedded"] == 0 and c["stale"] == 0 and c["missing"] == 0
    assert Indexer(store, settings, _Fixed()).run()["reused"] == c["vectors"]
    store.close()


def test_an_unchanged_run_reads_no_document_row_per_file(tmp_path):
    """The hash gate reads each collection's rows once (the walk's settle), not one row per file."""
    root, settings, store = _notes_store(tmp_path, 20, 50)
    assert Indexer(store, settings).run()["counts"]["indexed"] == 23
    statements: list[str] = []
    store._conn().set_trace_callback(statements.append)
    again = Indexer(store, settings).run()
    assert again["counts"]["unchanged"] == 23 and again["counts"]["indexed"] == 0
    per_file = [
        s
        for s in statements
        if "FROM documents WHERE collection_path = ? AND file_path = ?" in s
        or "FROM documents WHERE collection_path = 'R' AND file_path" in s
    ]
    assert not per_file and len(statements) < 30, statements
    (root / "n00.txt").write_text("changed words " * 50, "utf-8")
    assert Indexer(store, settings).run()["counts"]["indexed"] == 1
    store.close()


# -- the gate's hashes, read ahead on threads ---------------------------------------------------
def test_hashes_read_ahead_equal_one_by_one_in_order_with_read_errors_in_place(tmp_path, monkeypatch):
    import hashlib

    import engine.index.walk_pass as iw

    monkeypatch.setattr(iw, "_PARALLEL_HASH_BYTES", 1 << 16)  # small files, the threaded path
    monkeypatch.setattr(iw, "_HASH_BATCH_BYTES", 1 << 15)
    rng = np.random.default_rng(3)
    items = []
    for i in range(60):
        p = tmp_path / f"f{i:02d}.bin"
        p.write_bytes(rng.bytes(int(rng.integers(0, 40_000))))
        items.append((str(p), p.stat().st_size))
    gone = str(tmp_path / "gone.bin")  # vanished after the walk: ENOENT
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)  # not a regular file any more: EINVAL, never a blocking read
    items[10:10] = [(gone, 5000)]
    items[30:30] = [(fifo, 5000)]
    want = []
    for path, _ in items:
        try:
            want.append(hashlib.sha256(Path(path).read_bytes()).hexdigest() if path != fifo else "fifo")
        except OSError:
            want.append("gone")
    for threads in (1, 2, 3):
        got = list(iw.hashes_in_order(items, threads))
        assert [g if isinstance(g, str) else g.errno for g in got] == [
            w if w not in ("gone", "fifo") else {"gone": 2, "fifo": 22}[w] for w in want
        ]
    partial = iw.hashes_in_order(items, 2)
    assert next(partial) == want[0]
    partial.close()  # a cancelled scan: the rest is not read, the threads are gone
    import threading

    assert not [t for t in threading.enumerate() if t.name.startswith("chunknav-hash")]


def test_a_run_over_the_threaded_hash_path_finds_the_same_and_leaves_no_thread(tmp_path, monkeypatch):
    import threading

    import engine.index.walk_pass as iw

    root, settings, store = _notes_store(tmp_path, 30, 400)
    first = Indexer(store, settings).run()
    hashes = {d.file_path: d.content_hash for d in store.documents("R")}
    monkeypatch.setattr(iw, "_PARALLEL_HASH_BYTES", 1)
    monkeypatch.setattr(iw, "_HASH_BATCH_BYTES", 1 << 14)
    again = Indexer(store, settings).run()
    assert first["counts"]["indexed"] == again["counts"]["unchanged"] == 33
    (root / "n05.txt").write_text("other words " * 300, "utf-8")
    third = Indexer(store, settings).run()
    assert third["counts"]["indexed"] == 1 and third["counts"]["unchanged"] == 32
    changed = {fp for fp, h in hashes.items() if store.get_document("R", fp).content_hash != h}
    assert changed == {"n05.txt"}
    hashing = lambda: [t for t in threading.enumerate() if t.name.startswith("chunknav-hash")]  # noqa: E731
    assert not hashing()  # none is left: the extract pool counts threads before it forks
    cancel = threading.Event()
    phases = []

    def at_the_first_hash(ev: dict) -> None:  # cancel while files are being hashed ahead
        phases.append(ev["phase"])
        if ev["phase"] == "hash":
            cancel.set()

    cancelled = Indexer(store, settings).run(on_progress=at_the_first_hash, cancel=cancel, force=True)
    assert cancelled["status"] == "cancelled" and "hash" in phases and not hashing()
    assert cancelled["filesSeen"] < 33
    store.close()


# -- the process's exit -----------------------------------------------------------------------
def test_only_the_process_command_line_freezes_the_collector_and_the_index_closes_clean(tmp_path):
    """``main()`` (the console script) freezes the objects before exit; ``main(argv)`` never does.
    The store is closed before that, so the exit leaves no WAL behind and the run is finished."""
    import gc

    before = gc.get_freeze_count()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["settings"]) == 0
    assert gc.get_freeze_count() == before  # a caller passing argv keeps its collector
    root = tmp_path / "r"
    _tree(root)
    db = tmp_path / "x.db"
    env = {**os.environ, "CHUNKNAV_DB": str(db), "CHUNKNAV_ALLOWED_ROOTS": str(tmp_path), "EMBED_PROVIDER": "none"}
    for argv in (["collections", "add", "R", str(root)], ["index"], ["index"]):
        subprocess.run([sys.executable, "-m", "engine", *argv], cwd=REPO, env=env, check=True, capture_output=True)
        assert not Path(f"{db}-wal").exists()  # closed (and checkpointed) before the exit
    code = (
        "import gc, sys\nsys.argv = ['chunknav', 'status', '--json']\nfrom engine.faces.cli import main\n"
        "code = main()\nprint('frozen', gc.get_freeze_count() > 0, code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "frozen True 0", out.stderr[-2000:]
    status = json.loads(out.stdout[: out.stdout.rindex("frozen")])
    assert status["lastRun"]["status"] == "finished" and status["lastRun"]["counts"]["unchanged"] == 3


def test_a_walk_whose_hash_selection_drifts_fails_instead_of_pairing_a_wrong_hash(tmp_path, monkeypatch):
    """Each digest travels with its path: if ``_to_hash`` ever picks other files than the
    classification hashes, the run fails loudly rather than storing one file's hash for another."""
    import engine.index.walk_pass as iw

    _root, settings, store = _notes_store(tmp_path, 3, 10)
    real = iw._to_hash
    monkeypatch.setattr(iw, "_to_hash", lambda e, *a: real(e, *a) and not e.file_path.startswith("b"))
    with pytest.raises(RuntimeError, match="walk and hash out of step"):
        Indexer(store, settings).run()
    store.close()
