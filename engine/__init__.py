"""chunknav engine: extraction with provenance, chunking, embedding, stores, search, tools.

The core modules import no face (streamlit, mcp, argparse); only
``engine/cli.py`` and ``engine/mcp_server.py`` import their own framework.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
