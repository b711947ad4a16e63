"""Node paths and safe file paths.

Owns: ``document_path`` (DESIGN.md: ``{collectionPath}/_Documents/{slug}``,
a lossy slug never parsed back) and ``resolve_inside`` (a filePath may never
leave its collection root). Imports no face.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from engine.errors import PathEscapeError

__all__ = ["document_path", "slug", "resolve_inside"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def slug(file_path: str) -> str:
    """Lossy slug of a POSIX ``file_path``: separators, spaces and non-ASCII -> ``-``.

    ``"reports/Q1 résumé.pdf"`` -> ``"reports-Q1-r-sum-.pdf"``. Never parsed back.
    """
    return _UNSAFE.sub("-", file_path)


def document_path(collection_path: str, file_path: str) -> str:
    """The document node path ``{collectionPath}/_Documents/{slug(filePath)}``."""
    return f"{collection_path}/_Documents/{slug(file_path)}"


def resolve_inside(root: str | Path, file_path: str) -> Path:
    """The real path of ``file_path`` under ``root``, refusing every escape.

    Args:
        root: the collection's root directory.
        file_path: POSIX path relative to ``root``.

    Returns:
        The resolved absolute path (it need not exist).

    Raises:
        PathEscapeError: ``file_path`` is absolute, contains ``..``, or
            resolves (through symlinks) outside ``root``.
    """
    p = PurePosixPath(file_path)
    if p.is_absolute() or file_path.startswith("\\") or re.match(r"^[A-Za-z]:", file_path):
        raise PathEscapeError(f"filePath {file_path!r} is absolute; give it relative to the collection root")
    if ".." in p.parts:
        raise PathEscapeError(f"filePath {file_path!r} contains '..'; it must stay inside the collection root")
    base = Path(root).resolve()
    full = (base / Path(*p.parts)).resolve() if p.parts else base
    if full != base and base not in full.parents:
        raise PathEscapeError(f"filePath {file_path!r} resolves outside the collection root (symlink)")
    return full
