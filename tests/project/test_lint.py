"""The code passes ruff's checks for undefined and unused names, unused variables and
misplaced imports (``[tool.ruff]`` in pyproject.toml: rules E4, E7, E9, F), so a name
typo in a rarely run branch fails the suite instead of a user's run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_would_find_an_undefined_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    return undefined_name\n", "utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and "F821" in r.stdout, r.stdout + r.stderr
