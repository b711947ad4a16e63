"""Node paths, safe file paths, and where collection roots may live.

Owns: ``document_path`` (DESIGN.md: ``{collectionPath}/_Documents/{slug}``,
never parsed back, unique per filePath: see ``node_slug``) and ``resolve_inside`` (a filePath may never
leave its collection root). Imports no face.

Bytes-safe names: a file name that is not valid UTF-8 reaches
Python with each undecodable byte as a surrogate escape (``\udcff``);
``display_name`` shows such a byte as the four characters ``\xff`` so the
stored ``filePath`` is valid UTF-8, and ``os_name`` maps it back (only when
no file by the literal name exists), so tools accept the shown name.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath

from engine.errors import PathEscapeError, RootRefusedError

__all__ = [
    "document_path",
    "slug",
    "node_slug",
    "resolve_inside",
    "NODE_HASH_CHARS",
    "display_name",
    "os_name",
    "SYSTEM_DIRS",
    "SAMPLES_DIR",
    "allowed_roots",
    "system_dir",
    "check_root",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,8}$")
#: Hex characters of sha256(filePath) added to a lossy slug (40 bits).
NODE_HASH_CHARS = 10

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_SHOWN_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")


def display_name(name: str) -> str:
    """A file system name as valid UTF-8: each undecodable byte -> ``\\xNN``.

    ``"bad-\\udcff.txt"`` (``os.fsdecode(b"bad-\\xff.txt")``) -> ``"bad-\\\\xff.txt"``
    (shown as ``bad-\\xff.txt``). A valid name is returned unchanged.
    """
    if not _ESCAPED_BYTE.search(name):
        return name
    return _ESCAPED_BYTE.sub(lambda m: "\\x%02x" % (ord(m.group()) - 0xDC00), name)


def os_name(file_path: str) -> str:
    """Inverse of ``display_name``: every ``\\xNN`` (NN 80..ff) -> the raw byte
    as a surrogate escape, ready for ``open``/``os.stat``."""
    return _SHOWN_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), file_path)


def slug(file_path: str) -> str:
    """Lossy slug of a POSIX ``file_path``: separators, spaces and non-ASCII -> ``-``.

    ``"reports/Q1 résumé.pdf"`` -> ``"reports-Q1-r-sum-.pdf"``. Never parsed back.
    """
    return _UNSAFE.sub("-", file_path)


def node_slug(file_path: str) -> str:
    """The last segment of a document node path: readable, and unique per ``file_path``.

    When ``slug(file_path) == file_path`` (only ``A-Z a-z 0-9 . _ -``, no
    folder) the slug is the file path itself. Otherwise the slug is lossy and
    ``~`` plus the first ``NODE_HASH_CHARS`` hex characters of
    sha256(``file_path``, UTF-8) are added before the suffix:
    ``"報告.pdf"`` -> ``"--~5c3f0a9d1e.pdf"``, ``"a/b.txt"`` -> ``"a-b~<hash>.txt"``
    while ``"a-b.txt"`` stays ``"a-b.txt"``. ``~`` never occurs in a lossless
    slug, so a hashed slug cannot equal a plain one; two hashed slugs are
    equal only if 40 bits of sha256 collide. Stable: the same ``file_path``
    always gives the same slug.
    """
    plain = slug(file_path)
    if plain == file_path:
        return plain
    digest = hashlib.sha256(file_path.encode("utf-8", "surrogatepass")).hexdigest()[:NODE_HASH_CHARS]
    m = _SUFFIX.search(plain)
    if m and m.start() > 0:
        return f"{plain[: m.start()]}~{digest}{m.group(0)}"
    return f"{plain}~{digest}"


def document_path(collection_path: str, file_path: str) -> str:
    """The document node path ``{collectionPath}/_Documents/{node_slug(filePath)}``:
    unique and stable per ``(collectionPath, filePath)``."""
    return f"{collection_path}/_Documents/{node_slug(file_path)}"


def resolve_inside(root: str | Path, file_path: str) -> Path:
    """The real path of ``file_path`` under ``root``, refusing every escape.

    Args:
        root: the collection's root directory.
        file_path: POSIX path relative to ``root``.

    Returns:
        The resolved absolute path (it need not exist).

    Raises:
        PathEscapeError: ``file_path`` is absolute, contains ``..`` or a NUL
            byte, is a symlink loop, or resolves (through symlinks) outside ``root``.
    """
    if "\0" in file_path:
        raise PathEscapeError(f"filePath {file_path!r} contains a NUL byte; no file name can")
    p = PurePosixPath(file_path)
    if p.is_absolute() or file_path.startswith("\\") or re.match(r"^[A-Za-z]:", file_path):
        raise PathEscapeError(f"filePath {file_path!r} is absolute; give it relative to the collection root")
    if ".." in p.parts:
        raise PathEscapeError(f"filePath {file_path!r} contains '..'; it must stay inside the collection root")
    try:
        base = Path(root).resolve()
        full = (base / Path(*p.parts)).resolve() if p.parts else base
        if _SHOWN_BYTE.search(file_path) and not os.path.lexists(full):
            full = (base / Path(*PurePosixPath(os_name(file_path)).parts)).resolve()  # a shown bad byte
    except (RuntimeError, OSError) as e:  # 3.11 pathlib: "Symlink loop from ..."
        raise PathEscapeError(f"filePath {file_path!r} cannot be resolved (symlink loop?): {e}") from None
    if full != base and base not in full.parents:
        raise PathEscapeError(f"filePath {file_path!r} resolves outside the collection root (symlink)")
    return full


# Where collection roots may live: the CHUNKNAV_ALLOWED_ROOTS rule.
#: Directories (and everything under them) that never hold a collection.
SYSTEM_DIRS: tuple[str, ...] = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
    "/snap",
    "/lost+found",
)
_ROOT = Path(__file__).resolve().parents[1]
#: The bundled first-run corpus: always allowed (it ships with chunknav): ``explorer/_assets/samples``
#: in an installed wheel (setup.py maps it there, as ``explorer.state.SAMPLES``), else ``assets/samples``.
SAMPLES_DIR = str(
    next(
        (p for p in (_ROOT / "explorer" / "_assets" / "samples", _ROOT / "assets" / "samples") if p.is_dir()),
        _ROOT / "assets" / "samples",
    )
)


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


def check_root(
    root: str, setting: str, *, allow_any: bool = False, cwd: str | None = None, home: str | None = None
) -> str:
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
            + "; collections may not live there, whatever CHUNKNAV_ALLOWED_ROOTS says"
        )
    if allow_any:
        return real
    allowed = allowed_roots(setting, cwd=base, home=home)
    if not any(_inside(real, a) for a in allowed):
        shown = ", ".join(a for a in allowed if a != SAMPLES_DIR) or "(none)"
        raise RootRefusedError(
            f"collection root {root!r} ({real}) is outside the allowed roots ({shown}); "
            f"add its directory to CHUNKNAV_ALLOWED_ROOTS (paths separated by '{os.pathsep}')"
            + ("" if setting.strip() else ", whose default is the working directory and the home directory")
        )
    return real
