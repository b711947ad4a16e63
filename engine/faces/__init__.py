"""The faces of the engine: the CLI, the MCP server and the GUI launcher.

Only this package imports a face framework (argparse, mcp, the streamlit launcher).
"""
