"""Tools: the registry every face is built from, the tool functions and their envelopes.

The names below are re-exported lazily from their modules (siblings import
those modules by full path, never this package).
"""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'engine.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
