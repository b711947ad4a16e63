"""numpy (and requests) on first use: stand-in modules for the processes that never need them.

Owns: ``np``, what engine modules bind instead of ``import numpy as np``
(``requests`` likewise, for the HTTP embedders; ``lazy_module`` makes others), and
``reexports``: the ``__getattr__`` of a package that re-exports names of its modules. The
first attribute read (``np.array``, ``np.ndarray``...) imports numpy (once,
under a lock, so two threads starting at once are safe) and copies numpy's
namespace into this module object, so later reads are plain attribute
lookups, as fast as on numpy itself. Until then numpy (~60-80 ms of imports)
is not loaded: an unchanged ``chunknav index``, a ``get-chunk`` or a
``read`` process never needs it. ``isinstance(x, np.ndarray)``, dtypes and
pickling are numpy's own objects. Imports nothing from the engine.

A module binding ``np`` this way must not read it at import time (module-level
constants built with numpy are made on first use instead).
"""

from __future__ import annotations

import importlib
import threading
import types
from typing import Any

__all__ = ["np", "requests", "lazy_module", "reexports"]

_lock = threading.Lock()
#: This module object's own identity, never copied from the target.
_OWN = frozenset(
    {
        "__name__",
        "__doc__",
        "__spec__",
        "__loader__",
        "__file__",
        "__path__",
        "__package__",
        "__cached__",
        "__builtins__",
    }
)


class _LazyModule(types.ModuleType):
    """A module that imports ``__name__``'s target on the first missing attribute."""

    def __init__(self, target: str):
        super().__init__(f"engine.lazy.{target}", f"{target}, imported on first use")
        self._target = target

    def __getattr__(self, name: str) -> Any:  # only for names not (yet) in this module's dict
        with _lock:
            real = importlib.import_module(self.__dict__["_target"])
            if "_loaded" not in self.__dict__:
                self.__dict__.update({k: v for k, v in vars(real).items() if k not in _OWN})
                self.__dict__["_loaded"] = True
        return getattr(real, name)


def lazy_module(name: str) -> Any:
    """A stand-in for the module ``name`` that imports it on the first attribute read."""
    return _LazyModule(name)


#: numpy, imported on the first attribute read.
np: Any = lazy_module("numpy")
#: requests (with urllib3, ~35 ms of imports), imported on the first attribute read.
requests: Any = lazy_module("requests")


def reexports(package: str, exports: dict[str, str]) -> Any:
    """The module ``__getattr__`` (PEP 562) of a package re-exporting names lazily.

    Args:
        package: the package's ``__name__``.
        exports: re-exported name -> the full name of the module defining it.

    Returns:
        ``__getattr__(name)``: imports the module on first use, keeps the value in the
        package's namespace (later reads are plain lookups) and returns it.

    Raises (from the returned function):
        AttributeError: ``name`` is not re-exported.
    """
    import sys

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
