"""Tools: the registry every face is built from, the tool functions and their envelopes.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from engine.lazy import reexports

_EXPORTS = {
    "Tool": "engine.tools.registry",
    "REGISTRY": "engine.tools.registry",
    "Engine": "engine.tools.registry",
    "ToolArgumentError": "engine.tools.registry",
    "call_tool": "engine.tools.registry",
    "to_json": "engine.tools.registry",
    "CLI_NAMES": "engine.tools.registry",
    "cli_command": "engine.tools.registry",
}

__all__ = sorted(_EXPORTS)

__getattr__ = reexports(__name__, _EXPORTS)
