"""Fixtures: a real index of the bundled sample corpus (see tests/conftest.py).

``sample_index`` indexes ``assets/samples`` once per session into a SQLite
file under the session's tmp dir, as collection ``Samples``, with the real
local embedding model. ``sample_engine`` is an ``Engine`` on it (function
scope, so the clean_env fixture has already run).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.config import Settings
from engine.tools.registry import Engine
from tests.conftest import ALLOWED_ROOTS

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "assets" / "samples"
SAMPLE_COLLECTION = "Samples"


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory) -> Settings:
    """Settings (db path, local provider) of a finished index of assets/samples.

    The samples are copied, so tests may not change the repo's files.
    """
    base = tmp_path_factory.mktemp("sample_index")
    root = base / "samples"
    shutil.copytree(SAMPLES, root)
    settings = Settings(db=str(base / "index.db"), embed_provider="local", allowed_roots=ALLOWED_ROOTS).validate()
    engine = Engine(settings)
    engine.add_collection(SAMPLE_COLLECTION, str(root))
    summary = engine.run_index()
    assert summary["indexed"] > 0 and not summary.get("embedError"), summary
    engine.close()
    return settings


@pytest.fixture
def sample_engine(sample_index):
    """An Engine on the sample index (read-only use, please)."""
    engine = Engine(sample_index)
    yield engine
    engine.close()
