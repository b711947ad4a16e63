"""engine.store.scan_share: a full vector scan scored in blocks by the scanning thread and a helper.

The blocks must give the bits of a one-thread ``matrix @ q`` (so a hybrid
search that shares its scan ranks exactly as one that does not), a helper
must never wait past the scan, and a block that fails on the helper is
scored again by the scanning thread.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine.store import threads as blas
from engine.store.scan_share import MIN_ROWS, ScanShare, block_rows, block_runner, full_scores


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with blas.scan_threads(1, full=False):  # pins BLAS to one thread for the process (what scans do)
        yield


@pytest.mark.parametrize("n, dim", [(70_001, 256), (100_000, 256), (5_000, 384), (3_333, 33), (130, 1024)])
def test_blocks_give_the_bits_of_one_full_scan(n, dim):
    rng = np.random.default_rng(n + dim)
    m = rng.standard_normal((n, dim), dtype=np.float32)
    for _ in range(3):
        q = rng.standard_normal(dim, dtype=np.float32)
        share = ScanShare()
        with share.active():
            got = share.scan(m, q)
        assert got.dtype == np.float32 and np.array_equal(got, m @ q)
        assert share.rows == n and share.shared


def test_a_helper_scores_blocks_and_the_result_is_unchanged():
    rng = np.random.default_rng(7)
    m = rng.standard_normal((MIN_ROWS + 12_345, 64), dtype=np.float32)
    q = rng.standard_normal(64, dtype=np.float32)
    want = m @ q
    helped = scans = 0
    # Whether the helper thread is scheduled before the scan ends is up to the OS: on a
    # loaded machine 20 scans may pass without it. Scan until it has helped (bounded), and
    # check every result: a helper that never helps still fails, after 400 scans.
    while scans < 20 or (helped == 0 and scans < 400):
        scans += 1
        share = ScanShare()
        ready = threading.Event()

        def helper():
            ready.set()
            share.help()

        t = threading.Thread(target=helper)
        t.start()
        ready.wait()
        with share.active():
            got = full_scores(m, q)
        t.join(5)
        assert not t.is_alive()
        assert np.array_equal(got, want)
        helped += share.helped
    assert block_rows(64) * 2 <= len(m)
    assert helped > 0, scans  # the helper took some blocks


def test_a_helper_returns_when_no_scan_comes():
    share = ScanShare()
    t = threading.Thread(target=share.help)
    with share.active():
        t.start()
        assert full_scores(np.ones((10, 4), np.float32), np.ones(4, np.float32)) is None  # too small to share
    t.join(5)
    assert not t.is_alive() and share.rows == 10 and not share.shared
    late = ScanShare()
    late.close()
    late.help()  # closed: returns at once


def test_no_share_or_no_helpers_means_the_usual_scan():
    m = np.ones((MIN_ROWS, 4), np.float32)
    assert full_scores(m, np.ones(4, np.float32)) is None
    share = ScanShare(helpers=False)
    with share.active():
        assert full_scores(m, np.ones(4, np.float32)) is None
    assert share.rows == MIN_ROWS and not share.shared


def test_a_block_failing_on_the_helper_is_scored_by_the_scanning_thread(monkeypatch):
    import engine.store.scan_share as mod

    rng = np.random.default_rng(9)
    m = rng.standard_normal((4096, 16), dtype=np.float32)
    q = rng.standard_normal(16, dtype=np.float32)
    monkeypatch.setattr(mod, "_BLOCK_BYTES", 64 * 4 * 16)  # 64 rows per block
    real = np.matmul
    scanner = threading.get_ident()

    def flaky(a, b, out=None):
        if threading.get_ident() != scanner:
            raise MemoryError("helper block")
        return real(a, b, out=out)

    monkeypatch.setattr(mod.np, "matmul", flaky)
    share = ScanShare()
    t = threading.Thread(target=share.help)
    t.start()
    with share.active():
        got = share.scan(m, q)
    t.join(5)
    monkeypatch.undo()
    assert np.array_equal(got, m @ q)


def test_importing_the_engine_first_stops_openblas_spinning_unless_the_user_chose(tmp_path):
    """engine/__init__.py sets OPENBLAS_THREAD_TIMEOUT=4 before numpy loads OpenBLAS
    (a two-thread call otherwise leaves a thread spinning ~0.1 s); a value set by the user wins."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    code = "import os, engine; print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        env={**env, "OPENBLAS_THREAD_TIMEOUT": "20"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "20"


def test_run_calls_every_block_once_and_a_failed_helper_block_again_here():
    """``ScanShare.run`` (the int8 scan's blocks) runs each block once across the two
    threads; a block that raised on the helper runs again on the scanning thread."""
    scanner = threading.get_ident()
    for fail in (False, True):
        calls: list[tuple[int, bool]] = []
        lock = threading.Lock()

        def block(i):
            import time

            here = threading.get_ident() == scanner
            with lock:
                calls.append((i, here))
            if fail and not here and i % 2:
                raise MemoryError("helper block")
            time.sleep(0.001)

        share = ScanShare()
        t = threading.Thread(target=share.help)
        t.start()
        with share.active():
            share.run(40, block, 1234)
        t.join(5)
        assert not t.is_alive() and share.rows == 1234 and share.shared
        done = sorted(i for i, here in calls if here or not (fail and i % 2))
        assert done == list(range(40))


def test_block_runner_only_under_a_share_that_takes_helpers():
    assert block_runner(MIN_ROWS) is None
    share = ScanShare(helpers=False)
    with share.active():
        assert block_runner(MIN_ROWS) is None
    assert share.rows == MIN_ROWS and not share.shared
    share = ScanShare()
    with share.active():
        assert block_runner(MIN_ROWS - 1) is None
        assert block_runner(MIN_ROWS) == share.run
