"""The requirement files stay pinned, split and in step with ``requirements.lock``.

* every line of ``requirements*.txt`` pins one version (``==``), and none has
  an ``-r`` line (setuptools reads them for ``dependencies`` and the extras);
* the Postgres driver is only in the ``[postgres]`` extra, the test tools only
  in ``requirements-dev.txt``;
* ``requirements.lock`` (what ``make run`` installs with ``--no-deps``) is the
  closure of ``requirements.txt`` over the installed packages' metadata, with
  the same pins, minus ``.ci/lock.py``'s ``OMIT`` (``make lock`` rewrites it);
* without the extra, selecting Postgres fails with an ``ImportError`` naming it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
FILES = ["requirements.txt", "requirements-postgres.txt", "requirements-dev.txt"]


def _lock_module():
    spec = importlib.util.spec_from_file_location("ci_lock", REPO / ".ci" / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reqs(name: str) -> list[Requirement]:
    return _lock_module().direct(REPO / name)


@pytest.mark.parametrize("name", FILES)
def test_every_requirement_is_pinned(name):
    text = (REPO / name).read_text("utf-8")
    assert not [ln for ln in text.splitlines() if ln.strip().startswith("-")], f"{name}: no pip options here"
    reqs = _reqs(name)
    assert reqs
    for r in reqs:
        (spec,) = r.specifier
        assert spec.operator == "==", f"{name}: {r} is not pinned"


def test_postgres_driver_is_an_extra_and_test_tools_are_dev_only():
    runtime = {canonicalize_name(r.name) for r in _reqs("requirements.txt")}
    postgres = {canonicalize_name(r.name) for r in _reqs("requirements-postgres.txt")}
    dev = {canonicalize_name(r.name) for r in _reqs("requirements-dev.txt")}
    assert {"psycopg", "psycopg-pool", "pgvector"} == postgres
    assert not runtime & (postgres | dev)
    assert {"pytest", "playwright", "hypothesis"} <= dev
    extras = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["dynamic"]
    assert extras["dependencies"]["file"] == ["requirements.txt"]
    assert extras["optional-dependencies"]["postgres"]["file"] == ["requirements-postgres.txt"]
    assert set(extras["optional-dependencies"]["dev"]["file"]) == {"requirements-postgres.txt", "requirements-dev.txt"}


def test_lock_pins_requirements_txt():
    lock = _lock_module()
    pins = lock.read_lock()
    for r in _reqs("requirements.txt"):
        (spec,) = r.specifier
        assert pins.get(canonicalize_name(r.name)) == spec.version, (
            f"requirements.lock pins {r.name} at {pins.get(canonicalize_name(r.name))}, requirements.txt at "
            f"{spec.version}: run `make lock`"
        )
    assert not {canonicalize_name(n) for n in lock.OMIT} & set(pins)
    assert not {"pip", "setuptools"} & set(pins)


def test_lock_is_the_closure_of_the_installed_runtime():
    """What requirements.txt needs, walked over the installed metadata, is exactly the lock."""
    r = subprocess.run(
        [sys.executable, str(REPO / ".ci" / "lock.py"), "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert r.returncode == 0, "requirements.lock is out of step (run `make lock`):\n" + r.stderr


def test_postgres_without_the_extra_names_it():
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "try:\n    import engine.store.postgres.store\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "[postgres]" in out and "chunknav[postgres]" in out and "'psycopg'" in out, out


def test_cli_with_a_dsn_and_no_driver_says_which_extra(tmp_path):
    """CHUNKNAV_DSN set, psycopg missing: the CLI says so (exit 2), no traceback."""
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "from engine.faces.cli import main\n"
        "sys.exit(main(['--dsn', 'postgresql://u@127.0.0.1:1/db', 'status', '--json']))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 1 and "chunknav[postgres]" in r.stdout, (r.stdout, r.stderr)  # index-unavailable
    assert "Traceback" not in r.stderr
