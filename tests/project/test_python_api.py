"""The Python API of ``engine/__init__.py``, used exactly as its docstring shows, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import engine

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "assets" / "samples"

_SCRIPT = """
import json, sys
import engine

assert "engine.tools.registry" not in sys.modules and "engine.service" not in sys.modules  # lazy
from engine import REGISTRY, ChunknavError, Engine, call_tool, load_settings

settings = load_settings()
assert settings.embed_provider == "none"
e = Engine(settings)
e.add_collection("Samples", sys.argv[1])
summary = e.run_index()
found = call_tool(e, "search", {"query": "tables", "scope": "Samples", "mode": "keyword", "limit": 3})
first = found["hits"][0]
chunk = call_tool(
    e,
    "get_chunk",
    {"collectionPath": first["collectionPath"], "filePath": first["filePath"], "chunkIndex": first["chunkIndex"]},
)
e.close()
print(json.dumps({
    "tools": sorted(REGISTRY), "error_base": ChunknavError.__name__, "version": engine.__version__,
    "indexed": summary["counts"]["indexed"], "search": found, "chunk": chunk,
}))
"""


def test_the_api_names_are_exported():
    assert {"Engine", "call_tool", "REGISTRY", "load_settings", "ChunknavError", "__version__"} <= set(engine.__all__)
    for name in engine.__all__:
        assert getattr(engine, name) is not None


def test_the_api_indexes_searches_and_reads_a_chunk_in_a_fresh_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.update(
        CHUNKNAV_DB=str(tmp_path / "index.db"),
        EMBED_PROVIDER="none",
        CHUNKNAV_ALLOWED_ROOTS=str(SAMPLES),
        PYTHONPATH=str(REPO),
    )
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(SAMPLES)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "search" in got["tools"] and "get_chunk" in got["tools"]
    assert got["error_base"] == "ChunknavError" and got["version"]
    assert got["indexed"] >= 5
    search = got["search"]
    assert search["searched"] and search["mode"] == "keyword" and search["count"] >= 1
    chunk = got["chunk"]
    hit = search["hits"][0]
    assert chunk["found"] and chunk["filePath"] == hit["filePath"] and chunk["chunkIndex"] == hit["chunkIndex"]
    assert chunk["text"] and chunk["end"] > chunk["start"]
