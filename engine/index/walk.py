"""The walk of a collection root: every entry reported, none forgotten.

Owns: listing a root with ``os.scandir`` (errors caught per folder and per
entry), the classification of what is not a regular file (hidden, FIFO,
socket, device, symlink loop, symlink leaving the root, unreadable folder),
and the bytes-safe ``filePath`` of every name (``engine.paths.display_name``).
Policy that needs settings (suffixes, size limits) is the indexer's. Imports
``engine.paths`` and ``engine.errors`` only; never a face, a store or an extractor.

A name that is not valid UTF-8 arrives from ``os.scandir`` with its bad bytes
as surrogate escapes (``"bad-\\udcff.txt"``); its ``file_path`` shows them as
``\\xff`` (valid UTF-8, storable) and ``os_path`` keeps the real name to open.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from engine.errors import ReasonCode
from engine.paths import display_name

__all__ = ["Entry", "walk_entries", "aliases"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry under a root, as the walk found it.

    Attributes:
        file_path: POSIX path relative to the root, valid UTF-8 (undecodable
            bytes shown as ``\\xNN``); the stored ``filePath``.
        os_path: absolute path to open (``str``; bad bytes as surrogate escapes).
        is_dir: True for a folder that was not descended (hidden, unreadable,
            a symlink to a folder).
        code: None for a regular file to consider; else why it is skipped.
        message: for people, naming the entry and the cause ("" when code is None).
        size_bytes: st_size of a regular file (0 otherwise).
        mtime_ns: st_mtime_ns of a regular file (0 otherwise).
        ctime_ns: st_ctime_ns of a regular file (0 otherwise): moves on every
            write and cannot be set back, so a rewrite is seen even when size
            and mtime are restored.
        alias_of: for a symlink to a regular file inside the root, the ``file_path``
            of the file it resolves to (every link followed); None otherwise. The
            indexer lists it as an alias of that file's document when the walk
            reports that file too (``aliases``).
    """

    file_path: str
    os_path: str
    is_dir: bool = False
    code: ReasonCode | None = None
    message: str = ""
    size_bytes: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    alias_of: str | None = None


def aliases(entries: list[Entry]) -> tuple[list[Entry], dict[str, str]]:
    """Split symlinks to files the same walk reports off the entries.

    Args:
        entries: one walk's entries (``walk_entries``).

    Returns:
        ``(kept, alias -> target)``: ``kept`` is ``entries`` without every symlink whose
        target (``alias_of``) is itself reported as a regular file to consider (no reason
        code, not a symlink), in order; the mapping gives each such symlink's ``file_path``
        -> its target's. A symlink to a file the walk skips (hidden, say) stays in ``kept``.
    """
    real = {e.file_path for e in entries if e.code is None and e.alias_of is None}
    kept: list[Entry] = []
    found: dict[str, str] = {}
    for e in entries:
        if e.code is None and e.alias_of is not None and e.alias_of in real:
            found[e.file_path] = e.alias_of
        else:
            kept.append(e)
    return kept, found


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _inside(base: str, target: str) -> bool:
    return target == base or target.startswith(base.rstrip(os.sep) + os.sep)


def walk_entries(root: str | os.PathLike[str]) -> Iterator[Entry]:
    """Every entry under ``root``, depth first, names sorted in each folder.

    Regular files (and symlinks to regular files inside the root) come with
    ``code None``. Everything else is reported once with a reason code:
    ``hidden`` (leading ``.``; hidden folders are not descended),
    ``unreadable`` (a folder that cannot be listed, an entry that cannot be
    stat'ed, a dangling symlink), ``not-a-regular-file`` (FIFO, socket,
    device, a symlink to a folder: not followed), ``symlink-loop`` (ELOOP),
    ``symlink-outside-root``, ``bad-file-name`` (a name whose shown form
    collides with another name in the same folder).

    Args:
        root: the collection root directory; resolved once.

    Yields:
        ``Entry`` values; never raises for what it finds under the root.

    Raises:
        OSError: ``root`` itself cannot be listed (the caller reports the
            collection as ``root-missing`` / ``unreadable``).
    """
    base = os.path.realpath(os.fspath(root))
    with os.scandir(base) as it:  # raises for the root itself
        first = sorted(it, key=lambda e: e.name)
    stack: list[tuple[str, list[os.DirEntry] | None]] = [("", first)]
    while stack:
        rel_dir, listing = stack.pop()
        if listing is None:
            full_dir = os.path.join(base, rel_dir)
            try:
                with os.scandir(full_dir) as it:
                    listing = sorted(it, key=lambda e: e.name)
            except OSError as e:
                yield Entry(display_name(rel_dir), full_dir, True, "unreadable", f"folder cannot be listed: {_why(e)}")
                continue
        shown = {display_name(e.name) for e in listing if display_name(e.name) == e.name}
        subdirs: list[str] = []
        for entry in listing:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            fp = display_name(rel)
            out = _classify(base, entry, fp, shown)
            if out is None:
                subdirs.append(rel)
            else:
                yield out
        # depth first in name order: push in reverse so the first name pops first
        for rel in reversed(subdirs):
            stack.append((rel, None))


def _classify(base: str, entry: os.DirEntry, fp: str, shown: set[str]) -> Entry | None:
    """One directory entry -> an ``Entry``, or None for a folder to descend."""
    path = entry.path
    name = entry.name
    if name.startswith("."):
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        return Entry(fp, path, is_dir, "hidden", f"hidden {'folder' if is_dir else 'file'} (name starts with '.')")
    if display_name(name) != name and display_name(name) in shown:
        return Entry(
            fp,
            path,
            False,
            "bad-file-name",
            f"name is not valid UTF-8 and its shown form {display_name(name)!r} is taken by another file",
        )
    try:
        if entry.is_symlink():
            return _symlink(base, path, fp)
        if entry.is_dir(follow_symlinks=False):
            return None
        st = entry.stat(follow_symlinks=False)
    except OSError as e:
        return Entry(fp, path, False, "unreadable", f"cannot stat: {_why(e)}")
    if not stat.S_ISREG(st.st_mode):
        return Entry(fp, path, False, "not-a-regular-file", f"{_kind(st.st_mode)}, not a regular file")
    return Entry(fp, path, size_bytes=st.st_size, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)


def _symlink(base: str, path: str, fp: str) -> Entry:
    try:
        target = os.path.realpath(path, strict=True)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return Entry(fp, path, False, "symlink-loop", "symlink loop: the link never resolves")
        return Entry(fp, path, False, "unreadable", f"symlink target cannot be reached: {_why(e)}")
    if not _inside(base, target):
        return Entry(fp, path, False, "symlink-outside-root", "symlink resolves outside the collection root")
    try:
        st = os.stat(path)
    except OSError as e:
        return Entry(fp, path, False, "unreadable", f"cannot stat the symlink target: {_why(e)}")
    if stat.S_ISDIR(st.st_mode):
        return Entry(
            fp,
            path,
            True,
            "not-a-regular-file",
            "symlink to a folder inside the root: not followed (its files are indexed at their own path)",
        )
    if not stat.S_ISREG(st.st_mode):
        return Entry(fp, path, False, "not-a-regular-file", f"symlink to {_kind(st.st_mode)}")
    target_fp = display_name(os.path.relpath(target, base).replace(os.sep, "/"))
    return Entry(fp, path, size_bytes=st.st_size, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns, alias_of=target_fp)
