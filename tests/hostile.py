"""Build hostile file trees for real (used by tests/test_index_hostile.py and bench/index_memory.py).

Everything is made on disk by the calling process: FIFOs, Unix sockets,
symlink loops, symlinks leaving the root, hidden entries, names that are not
valid UTF-8, files and folders without permissions (effective only for a
process without CAP_DAC_OVERRIDE: a non-root user, or root under
``setpriv --inh-caps=-dac_override,-dac_read_search --bounding-set=...``),
.docx zip bombs (honest and lying headers), corrupt and truncated PDFs.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import zipfile
from pathlib import Path

from engine.paths import display_name

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus"

#: The command prefix that drops root's permission bypass ([] when not root).
DROP_CAPS = (["setpriv", "--inh-caps=-dac_override,-dac_read_search",
              "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else [])

_CONTENT_TYPES = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                  b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                  b'<Default Extension="xml" ContentType="application/xml"/>'
                  b'<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
                  b'officedocument.wordprocessingml.document.main+xml"/></Types>')


def docx_bomb(path: Path, inflated_bytes: int, lie_bytes: int | None = None) -> None:
    """A .docx whose ``word/document.xml`` inflates to ``inflated_bytes`` (spaces).

    ``lie_bytes``: patch the declared uncompressed size (local header and
    central directory) to this lie, so only a bounded read can tell.
    """
    piece = b" " * (16 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("[Content_Types].xml", _CONTENT_TYPES)
        info = zipfile.ZipInfo("word/document.xml")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=False) as part:
            part.write(b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
                       b'wordprocessingml/2006/main"><w:body>')
            left = inflated_bytes - 200
            while left > 0:
                n = min(left, len(piece))
                part.write(piece[:n])
                left -= n
            part.write(b"</w:body></w:document>")
    if lie_bytes is None:
        return
    data = bytearray(path.read_bytes())
    name = b"word/document.xml"
    local = data.find(b"PK\x03\x04")  # first local header
    while local != -1:
        n = struct.unpack_from("<H", data, local + 26)[0]
        if data[local + 30:local + 30 + n] == name:
            struct.pack_into("<I", data, local + 22, lie_bytes)
        local = data.find(b"PK\x03\x04", local + 4)
    central = data.find(b"PK\x01\x02")
    while central != -1:
        n = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46:central + 46 + n] == name:
            struct.pack_into("<I", data, central + 24, lie_bytes)
        central = data.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(data))


def _socket(path: Path) -> None:
    here = os.getcwd()
    os.chdir(path.parent)  # AF_UNIX paths are limited to ~107 bytes: bind relative
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path.name)
        s.close()
    finally:
        os.chdir(here)


def build_hostile_folder(root: Path, outside: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """A folder of healthy files next to 60+ hostile entries.

    Args:
        root: the folder to create (the collection root).
        outside: a folder outside ``root`` for symlink targets (default: a sibling).

    Returns:
        ``(healthy, hostile)``: healthy filePaths that must end indexed, and
        hostile filePath -> expected outcome: a reason code, or ``"empty"`` /
        ``"indexed"`` (bad names that are still indexed). Permissions are
        set last: call ``restore_permissions(root)`` before deleting the tree.
        Sizes assume ``max_file_bytes`` = 1 MiB and ``max_docx_part_bytes`` = 1 MiB.
    """
    root.mkdir(parents=True)
    outside = outside or root.parent / (root.name + "-outside")
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("zqxoutsidezq words", "utf-8")
    healthy: list[str] = []
    hostile: dict[str, str] = {}
    ok = root / "ok"
    ok.mkdir()
    for i in range(10):
        (ok / f"note-{i}.txt").write_text(f"healthy note number {i} about topic zq{i}healthy\n" * 20, "utf-8")
        healthy.append(f"ok/note-{i}.txt")
    (ok / "readme.md").write_text("# Readme\nA healthy markdown file.\n", "utf-8")
    healthy.append("ok/readme.md")
    shutil.copy(CORPUS / "pdf" / "minimal-document.pdf", ok / "minimal.pdf")
    shutil.copy(CORPUS / "pdf" / "minimal-document.pdf", ok / "minimal-pdf-bytes.txt")  # same bytes, other suffix
    shutil.copy(CORPUS / "docx" / "lorem_ipsum.docx", ok / "lorem.docx")
    healthy += ["ok/minimal.pdf", "ok/minimal-pdf-bytes.txt", "ok/lorem.docx"]

    h = root / "hostile"
    h.mkdir()
    for i in range(5):
        (h / f".hidden-{i}.txt").write_text("hidden", "utf-8")
        hostile[f"hostile/.hidden-{i}.txt"] = "hidden"
    (h / ".git").mkdir()
    (h / ".git" / "config.txt").write_text("hidden folder", "utf-8")
    hostile["hostile/.git"] = "hidden"
    for i in range(5):
        os.mkfifo(h / f"fifo-{i}.txt")
        hostile[f"hostile/fifo-{i}.txt"] = "not-a-regular-file"
    for i in range(3):
        _socket(h / f"sock-{i}.txt")
        hostile[f"hostile/sock-{i}.txt"] = "not-a-regular-file"
    for i in range(3):
        os.symlink(f"loop-{i}.txt", h / f"loop-{i}.txt")  # points at itself
        hostile[f"hostile/loop-{i}.txt"] = "symlink-loop"
    os.symlink("pingpong-b.txt", h / "pingpong-a.txt")
    os.symlink("pingpong-a.txt", h / "pingpong-b.txt")
    hostile["hostile/pingpong-a.txt"] = hostile["hostile/pingpong-b.txt"] = "symlink-loop"
    for i in range(5):
        os.symlink(outside / "secret.txt", h / f"escape-{i}.txt")
        hostile[f"hostile/escape-{i}.txt"] = "symlink-outside-root"
    for i in range(3):
        os.symlink(h / f"nowhere-{i}.txt", h / f"dangling-{i}.txt")
        hostile[f"hostile/dangling-{i}.txt"] = "unreadable"
    os.symlink(ok, h / "link-to-ok")
    hostile["hostile/link-to-ok"] = "not-a-regular-file"
    for i, suffix in enumerate([".png", ".exe", ".zip", ".jpg", ".xyz", "", ".bin", ".tar", ".gz", ".mp3"]):
        (h / f"binary-{i}{suffix}").write_bytes(b"\x00\x01\x02 not a document")
        hostile[f"hostile/binary-{i}{suffix}"] = "unsupported-type"
    for i in range(2):
        (h / f"huge-{i}.txt").write_bytes(b"big words " * (230 * 1024))  # 2.3 MiB > 1 MiB
        hostile[f"hostile/huge-{i}.txt"] = "too-large"
    docx_bomb(h / "bomb.docx", 8 << 20)
    hostile["hostile/bomb.docx"] = "too-large"
    docx_bomb(h / "bomb-lying.docx", 8 << 20, lie_bytes=4000)
    hostile["hostile/bomb-lying.docx"] = "corrupt"
    for i, raw in enumerate([b"bad-\xff.txt", b"bad-\xfe\xfd.txt", b"latin1-caf\xe9.txt"]):
        with open(os.path.join(os.fsencode(h), raw), "wb") as f:
            f.write(f"a file whose name is not UTF-8, number {i}, word zqbadname{i}\n".encode())
        hostile["hostile/" + display_name(os.fsdecode(raw))] = "indexed"
    bad_dir = os.path.join(os.fsencode(h), b"dir-\xfe")
    os.mkdir(bad_dir)
    with open(os.path.join(bad_dir, b"inner.txt"), "wb") as f:
        f.write(b"a healthy file in a folder whose name is not UTF-8")
    hostile["hostile/dir-\\xfe/inner.txt"] = "indexed"
    with open(os.path.join(os.fsencode(h), b"twin-\xff.txt"), "wb") as f:
        f.write(b"the byte-named twin")
    (h / "twin-\\xff.txt").write_text("the literal twin", "utf-8")  # a valid name equal to the shown form
    hostile["hostile/twin-\\xff.txt"] = "indexed"
    hostile["hostile/twin-\\xff.txt#bytes"] = "bad-file-name"  # same shown name: reported, not stored
    for i in range(4):
        (h / f"broken-{i}.pdf").write_bytes(b"%PDF-1.4\n" + os.urandom(200 + i))
        hostile[f"hostile/broken-{i}.pdf"] = "corrupt"
    data = (CORPUS / "pdf" / "pdflatex-4-pages.pdf").read_bytes()
    (h / "truncated.pdf").write_bytes(data[: len(data) // 2])
    hostile["hostile/truncated.pdf"] = "corrupt"
    shutil.copy(CORPUS / "edge" / "password-example.pdf", h / "locked.pdf")
    hostile["hostile/locked.pdf"] = "encrypted"
    for i in range(2):
        (h / f"empty-{i}.txt").write_bytes(b"")
        hostile[f"hostile/empty-{i}.txt"] = "empty"
    for i in range(5):
        (h / f"noperm-{i}.txt").write_text("unreadable words", "utf-8")
        hostile[f"hostile/noperm-{i}.txt"] = "unreadable"
    closed = h / "closed"
    closed.mkdir()
    (closed / "inside.txt").write_text("in a folder nobody may list", "utf-8")
    hostile["hostile/closed"] = "unreadable"
    nosearch = h / "nosearch"
    nosearch.mkdir()
    for i in range(3):
        (nosearch / f"f-{i}.txt").write_text("listed but not searchable", "utf-8")
        hostile[f"hostile/nosearch/f-{i}.txt"] = "unreadable"
    # permissions last
    for i in range(5):
        (h / f"noperm-{i}.txt").chmod(0)
    closed.chmod(0)
    nosearch.chmod(0o644)
    return healthy, hostile


def restore_permissions(root: Path) -> None:
    """Make every folder and file under ``root`` readable again (for cleanup and re-runs)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o755, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o644)
                except OSError:
                    pass
