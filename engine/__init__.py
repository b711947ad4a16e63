"""chunknav engine: extraction with provenance, chunking, embedding, stores, search, tools.

The core modules import no face (streamlit, mcp, argparse); only
``engine/cli.py`` and ``engine/mcp_server.py`` import their own framework.

``engine.__version__`` is the installed distribution's version (package
metadata, so ``pyproject.toml`` is the one place it is written), read when
first asked for.
"""

__all__ = ["__version__"]


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
