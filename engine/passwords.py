"""Where a collection's PDF password comes from: a reference, never the password.

Owns: the password reference syntax (``env:NAME`` or ``file:/absolute/path``),
``check_password_ref`` (validation at ``collections add``) and
``resolve_password`` (read the secret at the moment a file is opened; it is
kept in memory only). The index stores the reference in
``collections.password``; a value there that is not a reference (a plain
password, never written by chunknav itself) is blanked when the store opens
(``LEGACY_PASSWORD_SQL``). Imports ``engine.errors`` only; no face.

Secrets files: the first line of the file (without its line end) is the
password; keep the file outside the index directory with mode 600.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from engine.errors import SettingsError

__all__ = ["check_password_ref", "resolve_password", "is_password_ref", "LEGACY_PASSWORD_SQL"]

log = logging.getLogger(__name__)

#: WHERE clause selecting stored values that are plain passwords, not references.
LEGACY_PASSWORD_SQL = "password IS NOT NULL AND password NOT LIKE 'env:%' AND password NOT LIKE 'file:%'"


def is_password_ref(value: str | None) -> bool:
    """True for ``env:NAME`` / ``file:/path`` (the only forms the index keeps)."""
    return bool(value) and value.startswith(("env:", "file:"))  # type: ignore[union-attr]


def check_password_ref(ref: str | None) -> str | None:
    """Validate a reference; returns it normalised (file paths made absolute), or None.

    Raises:
        SettingsError: not ``env:NAME`` (NAME of letters, digits, ``_``) or ``file:PATH``.
    """
    if not ref:
        return None
    if ref.startswith("env:"):
        name = ref[4:]
        if not name or not all(ch.isalnum() or ch == "_" for ch in name) or name[0].isdigit():
            raise SettingsError(f"password reference {ref!r}: env:NAME needs a variable name like PDF_PASSWORD")
        return ref
    if ref.startswith("file:"):
        path = ref[5:]
        if not path:
            raise SettingsError("password reference 'file:' needs a path, e.g. file:/etc/chunknav/reports.pw")
        return "file:" + os.path.abspath(os.path.expanduser(path))
    raise SettingsError(
        "a collection's password is given by reference, never stored: use env:NAME "
        "(an environment variable) or file:/path (a secrets file outside the index)"
    )


def resolve_password(ref: str | None) -> str | None:
    """The password a reference points at, or None (no reference, unset
    variable, unreadable file: the file then fails as ``password required``).
    Never logged."""
    if not is_password_ref(ref):
        return None
    assert ref is not None
    if ref.startswith("env:"):
        value = os.environ.get(ref[4:])
        if value is None:
            log.info("password variable %s is not set", ref[4:])
        return value or None
    try:
        first = Path(ref[5:]).read_text("utf-8").splitlines()
    except OSError as e:
        log.info("password file %s cannot be read: %s", ref[5:], e.strerror or e)
        return None
    return first[0] if first and first[0] else None
