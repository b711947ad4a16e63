"""chunknav engine: extraction with provenance, chunking, embedding, stores, search, tools.

The core modules import no face (streamlit, mcp, argparse); only
``engine/faces/cli.py`` and ``engine/faces/mcp_server.py`` import their own framework.

``engine.__version__`` is the installed distribution's version (package
metadata, so ``pyproject.toml`` is the one place it is written), read when
first asked for.
"""

import os as _os

__all__ = ["__version__"]

# OpenBLAS (numpy's BLAS) keeps a worker thread spinning for ~2**28 cycles (~0.1 s)
# after each call that used two threads; on two cores that thread holds the core the
# next search, its keyword list or another process needs (measured at 100k chunks: a
# hybrid search with its shared scan 1.45-1.50x of vector p50 with 4, 1.64-1.81x with
# the default 28). Session 4 (bench/idle_gap.py --rounds 4, 100k float32): after 0.02-1 s
# idle, vector search is 16-46% slower with 4 than with 28, hybrid (the default mode) equal
# after 0.3-1 s and 15-34% faster back to back / at 20 ms gaps, and hybrid/vector back to
# back 1.28x with 4 against 1.48x with 28: 4 stays (README "How hybrid runs its two lists").
# Read once, when numpy first
# loads OpenBLAS: importing the engine before numpy applies it; a value set by the
# user wins. engine/store/threads.py chooses the thread counts.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def __getattr__(name: str) -> str:
    """``__version__``: the ``chunknav`` distribution's version, or ``0+unknown`` when not installed."""
    if name != "__version__":
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("chunknav")
    except PackageNotFoundError:  # a bare checkout on sys.path, never pip-installed
        value = "0+unknown"
    globals()["__version__"] = value
    return value
