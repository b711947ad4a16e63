"""The Source view names a file it may not read "permission denied", not "corrupt".

Root reads every file, so the check runs in a real subprocess with root's
file-permission bypass dropped (``setpriv``), over a real index and a chmod 000 file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import Settings
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[2]
SETPRIV = shutil.which("setpriv")
DROP = ["--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]

pytestmark = pytest.mark.skipif(SETPRIV is None, reason="setpriv not installed")

PROBE = """
import sys
from explorer import widgets
path, password, problem = widgets.source_file("Docs", sys.argv[1])
print(problem or "readable")
"""


def test_a_file_the_explorer_may_not_read_is_named_permission_denied(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    shutil.copy(REPO / "tests" / "corpus" / "pdf" / "minimal-document.pdf", root / "locked.pdf")
    settings = Settings(db=str(tmp_path / "index.db"), embed_provider="none", allowed_roots=ALLOWED_ROOTS).validate()
    eng = Engine(settings)
    eng.add_collection("Docs", str(root))
    eng.run_index()
    eng.close()
    os.chmod(tmp_path, 0o755)
    os.chmod(tmp_path / "index.db", 0o644)
    os.chmod(root / "locked.pdf", 0)
    env = dict(os.environ, CHUNKNAV_DB=settings.db, EMBED_PROVIDER="none", PYTHONPATH=str(REPO))
    out = subprocess.run(
        [SETPRIV, *DROP, sys.executable, "-c", PROBE, "locked.pdf"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("permission denied"), out.stdout
    assert "corrupt" not in out.stdout
