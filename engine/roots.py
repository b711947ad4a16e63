"""Where collection roots may live: the ``CHUNKNAV_ALLOWED_ROOTS`` rule.

Owns: ``allowed_roots`` (the directories a collection root may be, or be
under, from the setting or its default), ``SYSTEM_DIRS`` and ``check_root``
(a root is refused when it is ``/``, a system directory or inside one, or
outside every allowed root). Paths are compared after ``realpath`` (a
symlink to ``/etc`` is ``/etc``). Imports no face.

The default (``CHUNKNAV_ALLOWED_ROOTS`` empty) is the working directory's
tree and the user's home, each only when it is not itself refused (a server
started from ``/`` gets no working-directory allowance), plus the bundled
sample folder ``assets/samples``.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.errors import RootRefusedError

__all__ = ["SYSTEM_DIRS", "SAMPLES_DIR", "allowed_roots", "system_dir", "check_root"]

#: Directories (and everything under them) that never hold a collection.
SYSTEM_DIRS: tuple[str, ...] = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
    "/run", "/sbin", "/sys", "/usr", "/var", "/snap", "/lost+found",
)
_ROOT = Path(__file__).resolve().parents[1]
#: The bundled first-run corpus: always allowed (it ships with chunknav): ``explorer/_assets/samples``
#: in an installed wheel (setup.py maps it there, as ``explorer.state.SAMPLES``), else ``assets/samples``.
SAMPLES_DIR = str(next((p for p in (_ROOT / "explorer" / "_assets" / "samples", _ROOT / "assets" / "samples")
                        if p.is_dir()), _ROOT / "assets" / "samples"))


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def system_dir(path: str, home: str | None = None) -> str | None:
    """The system directory ``path`` (a real path) is or lies in, ``"/"`` for
    the file-system root, or None. ``/root`` counts only when it is not ``home``."""
    if path == "/":
        return "/"
    home = _real(home or os.path.expanduser("~"))
    for d in SYSTEM_DIRS:
        if d == "/root" and _inside(path, home) and home != "/":
            continue
        if _inside(path, d):
            return d
    return None


def allowed_roots(setting: str, cwd: str | None = None, home: str | None = None) -> list[str]:
    """The directories collection roots may be or be under, as real paths.

    Args:
        setting: ``CHUNKNAV_ALLOWED_ROOTS``: paths separated by ``os.pathsep``
            (``:``); ``~`` is expanded; empty = the default (module docstring).
        cwd: working directory (default ``os.getcwd()``).
        home: the user's home (default ``~``).

    Returns:
        Real paths, system directories and ``/`` left out; the bundled samples last.
    """
    home = _real(home or os.path.expanduser("~"))
    if setting.strip():
        listed = [p.strip() for p in setting.split(os.pathsep) if p.strip()]
    else:
        listed = [cwd or os.getcwd(), home]
    out: list[str] = []
    for p in listed:
        real = _real(p)
        if system_dir(real, home) is None and real not in out:
            out.append(real)
    if SAMPLES_DIR not in out:
        out.append(SAMPLES_DIR)
    return out


def check_root(root: str, setting: str, *, allow_any: bool = False, cwd: str | None = None,
               home: str | None = None) -> str:
    """Check a collection root; return its real path.

    Args:
        root: the directory asked for (relative to ``cwd``).
        setting: the ``CHUNKNAV_ALLOWED_ROOTS`` value.
        allow_any: the CLI's ``--allow-any-root``: skip the allowed-roots list
            (``/`` and system directories stay refused).
        cwd: working directory for a relative root and the default list.
        home: the user's home.

    Raises:
        RootRefusedError: ``/``, a system directory, or outside every allowed
            root; the message names ``CHUNKNAV_ALLOWED_ROOTS``.
    """
    base = cwd or os.getcwd()
    real = _real(os.path.join(base, root))
    sysdir = system_dir(real, home)
    if sysdir is not None:
        what = "the file-system root" if sysdir == "/" else f"the system directory {sysdir}"
        raise RootRefusedError(
            f"collection root {root!r} ({real}) is {what}"
            + ("" if real == sysdir else " or lies inside it")
            + "; collections may not live there, whatever CHUNKNAV_ALLOWED_ROOTS says")
    if allow_any:
        return real
    allowed = allowed_roots(setting, cwd=base, home=home)
    if not any(_inside(real, a) for a in allowed):
        shown = ", ".join(a for a in allowed if a != SAMPLES_DIR) or "(none)"
        raise RootRefusedError(
            f"collection root {root!r} ({real}) is outside the allowed roots ({shown}); "
            f"add its directory to CHUNKNAV_ALLOWED_ROOTS (paths separated by '{os.pathsep}')"
            + ("" if setting.strip() else ", whose default is the working directory and the home directory"))
    return real
