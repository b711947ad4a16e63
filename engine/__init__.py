"""chunknav engine: extraction with provenance, chunking, embedding, stores, search, tools.

The Python API, exported lazily (nothing heavy is imported until a name is used):

* ``Engine``: the engine objects every face shares (settings, store, search, indexer);
* ``call_tool`` and ``REGISTRY``: the tools every face is built from, and the call that
  validates arguments and returns a tool's envelope (a plain JSON-able dict);
* ``load_settings``: the validated settings from the environment and ``chunknav.toml``;
* ``ChunknavError``: the base of every engine exception;
* ``__version__``: the installed distribution's version (``0+unknown`` when not installed).

Example::

    from engine import Engine, call_tool, load_settings

    engine = Engine(load_settings())
    engine.add_collection("Samples", "assets/samples")
    engine.run_index()
    hits = call_tool(engine, "search", {"query": "tables", "scope": "Samples"})
    first = hits["hits"][0]
    chunk = call_tool(
        engine,
        "get_chunk",
        {"collectionPath": first["collectionPath"], "filePath": first["filePath"], "chunkIndex": first["chunkIndex"]},
    )
    engine.close()

The core modules import no face (streamlit, mcp, argparse); only ``engine/faces/``
imports its own framework.
"""

import importlib as _importlib
import os as _os
from typing import Any as _Any

__all__ = ["Engine", "call_tool", "REGISTRY", "load_settings", "ChunknavError", "__version__"]

_EXPORTS = {
    "Engine": "engine.service",
    "call_tool": "engine.tools.registry",
    "REGISTRY": "engine.tools.registry",
    "load_settings": "engine.config",
    "ChunknavError": "engine.errors",
}

# OpenBLAS keeps a worker thread spinning for a while after each two-thread call; on two
# cores that thread holds the core the next search needs. 4 is the measured choice
# (docs/decisions/blas-threads.md). Read once, when numpy first loads OpenBLAS: importing
# the engine before numpy applies it; a value set by the user wins.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def __getattr__(name: str) -> _Any:
    """A name of the API, imported from its module on first use; ``__version__`` from the
    ``chunknav`` distribution's metadata (``pyproject.toml`` is the one place it is written)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: _Any = version("chunknav")
        except PackageNotFoundError:  # a bare checkout on sys.path, never pip-installed
            value = "0+unknown"
    elif name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    globals()[name] = value
    return value
