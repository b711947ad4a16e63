"""Extraction workers end with the process that started them, however it ends.

Real processes throughout: a ``python -m engine index`` run killed with SIGKILL
while its workers read, and a pool whose workers cannot arm the kernel's
parent-death signal and watch their parent instead. Each waits for events
(worker processes listed in ``/proc``, their exit) with a deadline, never a
fixed sleep.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ALLOWED_ROOTS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads processes from /proc (Linux)"),
]

REPO = Path(__file__).resolve().parents[2]
#: How soon after its parent dies a worker must be gone.
GONE_WITHIN_S = 2.0
POLL_S = 0.05
#: How long a test watches workers that outlive their parent before it kills them and fails.
GIVE_UP_S = 10.0


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of process ``pid`` from ``/proc/<pid>/stat``; None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) ": the name may hold spaces
    return int(fields[1]), fields[0], int(fields[19])


def _children(parent: int) -> dict[int, int]:
    """{pid: start time} of the live processes whose parent is ``parent``."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st and st[0] == parent and st[1] not in "ZX":
                found[int(entry)] = st[2]
    return found


def _alive(procs: dict[int, int]) -> list[int]:
    """The processes of ``procs`` still running (a zombie waiting to be reaped has ended; a pid
    reused by another process, with another start time, is not the same process)."""
    alive = []
    for pid, start in procs.items():
        st = _stat(pid)
        if st and st[2] == start and st[1] not in "ZX":
            alive.append(pid)
    return alive


def _wait_for_children(proc: subprocess.Popen, n: int, timeout_s: float = 60) -> dict[int, int]:
    """Until ``proc`` has at least ``n`` live child processes (its workers); their {pid: start time}."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _children(proc.pid)
        if len(found) >= n:
            return found
        try:  # wait for the process to end (a failure), looking again every POLL_S
            proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"the process ended (exit {proc.returncode}) before its workers were seen")
    raise AssertionError(f"no {n} worker processes within {timeout_s} s")


def _kill_and_time_the_workers(proc: subprocess.Popen, workers: dict[int, int]) -> float:
    """SIGKILL ``proc``; seconds until none of ``workers`` runs: each worker's pidfd becomes
    readable when it ends, waited on for up to ``GIVE_UP_S`` (then the survivors are killed and
    the test fails)."""
    fds = [os.pidfd_open(pid) for pid in workers]
    try:
        assert len(_alive(workers)) == len(workers), "a worker ended before its parent was killed"
        os.kill(proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        assert proc.wait(timeout=30) == -signal.SIGKILL  # killed by us, not ended on its own
        waiting = list(fds)
        while waiting and (left_s := GIVE_UP_S - (time.monotonic() - t0)) > 0:
            ended, _, _ = select.select(waiting, [], [], left_s)
            waiting = [fd for fd in waiting if fd not in ended]
        elapsed = time.monotonic() - t0
    finally:
        for fd in fds:
            os.close(fd)
    left = _alive(workers)
    print(f"{len(workers)} workers ended {elapsed:.2f} s after their parent was killed")
    for pid in left:  # leave no process behind when the assertion fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed parent by {GIVE_UP_S} s"
    return elapsed


def _many_files(root: Path, n: int) -> None:
    """``n`` text files of ~30 KB: seconds of extraction, more than enough for a pool."""
    root.mkdir()
    body = "".join(f"line {j} of many words to chunk and index\n" for j in range(700))
    for i in range(n):
        (root / f"f{i:05d}.txt").write_text(f"file {i}\n" + body, "utf-8")


def test_kill_9_of_the_indexer_takes_its_extraction_workers_with_it(tmp_path):
    root = tmp_path / "root"
    _many_files(root, 1500)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.update(
        EMBED_PROVIDER="none",
        PYTHONPATH=str(REPO),
        CHUNKNAV_ALLOWED_ROOTS=ALLOWED_ROOTS,
        CHUNKNAV_DB=str(tmp_path / "index.db"),
        CHUNKNAV_EXTRACT_WORKERS="2",
    )
    cli = [sys.executable, "-m", "engine"]
    subprocess.run([*cli, "collections", "add", "C", str(root)], cwd=REPO, env=env, check=True, capture_output=True)
    with open(tmp_path / "index.log", "wb") as log:
        proc = subprocess.Popen([*cli, "index"], cwd=REPO, env=env, stdout=log, stderr=log)
        try:
            workers = _wait_for_children(proc, 2)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        elapsed = _kill_and_time_the_workers(proc, workers)
    assert elapsed <= GONE_WITHIN_S, f"workers took {elapsed:.2f} s to end after their parent was killed"


_WATCHING_PARENT = r"""
import sys, time
import engine.index.pool as P
P._arm_parent_death_signal = lambda: False  # as where the kernel has no parent-death signal
with P._new_executor(2) as pool:
    pool.submit(time.sleep, 3600)
    print("started", flush=True)
    sys.stdin.read()
"""


def test_workers_without_the_parent_death_signal_watch_their_parent(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", _WATCHING_PARENT],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"started\n"
        workers = _wait_for_children(proc, 2)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    elapsed = _kill_and_time_the_workers(proc, workers)
    assert elapsed <= GONE_WITHIN_S, f"workers took {elapsed:.2f} s to end after their parent was killed"


def test_a_worker_whose_parent_is_already_gone_exits_at_once():
    """The parent died before the signal was armed: the worker sees another parent and exits."""
    code = "import engine.index.pool as P; P._die_with_parent(-1); print('still running')"
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "still running" not in r.stdout, (r.stdout, r.stderr)
