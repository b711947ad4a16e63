"""Size limits checked before a file is extracted: file bytes, .docx parts, PDF pages.

Owns: ``Limits`` (from the settings ``max_file_bytes``, ``max_docx_part_bytes``,
``max_pages``) and ``check_limits``, the guard the indexer calls before an
extractor runs. A .docx is a zip: its central directory declares each part's
inflated size, read without inflating anything; a part over the limit (a zip
bomb) is refused there. Headers can lie, so every part is then streamed
through a bounded read (1 MiB pieces, counting bytes) before the .docx reader may
inflate it; Python's ``zipfile`` never returns more than the declared size and
checks the CRC at the end, so a lying part fails as ``corrupt``. Imports
``engine.errors`` only (``pymupdf`` lazily); never a face or a store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from engine.errors import ExtractError, TooLargeError

__all__ = ["Limits", "check_limits", "check_docx", "check_pdf_pages", "human_bytes", "check_page_count"]

_PIECE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits of one run; 0 = no limit.

    Attributes:
        max_file_bytes: largest file read, bytes (also the largest total
            inflated size of a .docx).
        max_docx_part_bytes: largest inflated part of a .docx, bytes.
        max_pages: most pages of a PDF.
    """

    max_file_bytes: int = 0
    max_docx_part_bytes: int = 0
    max_pages: int = 0

    @classmethod
    def of(cls, settings) -> Limits:
        """The limits of ``Settings`` (``max_file_bytes``, ``max_docx_part_bytes``, ``max_pages``)."""
        return cls(
            int(getattr(settings, "max_file_bytes", 0)),
            int(getattr(settings, "max_docx_part_bytes", 0)),
            int(getattr(settings, "max_pages", 0)),
        )


def human_bytes(n: int) -> str:
    """``268435456`` -> ``"256 MiB"``; ``1536`` -> ``"1.5 KiB"``."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" or value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"


def check_limits(
    path: str | os.PathLike[str], size_bytes: int, suffix: str, limits: Limits, pdf_pages: bool = True
) -> None:
    """Refuse a file over a limit before it is extracted.

    Args:
        path: the file to check.
        size_bytes: its size from the walk's stat, bytes.
        suffix: lower-case suffix with the dot (``".docx"``).
        limits: the run's limits.
        pdf_pages: check a PDF's page count here (opens it); False when the
            extractor checks it on the document it opens anyway
            (``engine.extract.extract(..., max_pages=)``: the same error, one open less).

    Raises:
        TooLargeError: over ``max_file_bytes``, a .docx part over
            ``max_docx_part_bytes`` or all parts over ``max_file_bytes``, a
            PDF over ``max_pages``; the message names the limit and its env variable.
        ExtractError: a .docx that is not a readable zip (``"corrupt: ..."``).
        OSError: the file cannot be read.
    """
    if limits.max_file_bytes and size_bytes > limits.max_file_bytes:
        raise TooLargeError(
            "too-large",
            f"too-large: {human_bytes(size_bytes)} is over max_file_bytes "
            f"(CHUNKNAV_MAX_FILE_BYTES) = {human_bytes(limits.max_file_bytes)}",
        )
    if suffix == ".docx":
        check_docx(path, limits.max_docx_part_bytes, limits.max_file_bytes)
    elif suffix == ".pdf" and limits.max_pages and pdf_pages:
        check_pdf_pages(path, limits.max_pages)


def check_docx(path: str | os.PathLike[str], max_part_bytes: int, max_total_bytes: int = 0) -> None:
    """A .docx (zip) whose parts all inflate within the limits, else an error.

    First the central directory's declared sizes (nothing inflated), then a
    bounded streaming read of every part that stops one piece past the limit.

    Raises:
        TooLargeError: a part over ``max_part_bytes`` or the parts together
            over ``max_total_bytes`` (each 0 = unchecked).
        ExtractError: not a zip, or a part whose data does not match its
            header (``"corrupt: ..."``).
    """
    import zipfile  # here: every index run imports this module, few read a .docx

    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            total = 0
            for info in infos:
                total += info.file_size
                if max_part_bytes and info.file_size > max_part_bytes:
                    raise TooLargeError(
                        "too-large",
                        f"too-large: .docx part {info.filename!r} inflates to {human_bytes(info.file_size)}, "
                        f"over max_docx_part_bytes (CHUNKNAV_MAX_DOCX_PART_BYTES) = {human_bytes(max_part_bytes)}",
                    )
            if max_total_bytes and total > max_total_bytes:
                raise TooLargeError(
                    "too-large",
                    f"too-large: .docx parts inflate to {human_bytes(total)} together, over max_file_bytes "
                    f"(CHUNKNAV_MAX_FILE_BYTES) = {human_bytes(max_total_bytes)}",
                )
            budget = max_part_bytes or None
            for info in infos:
                seen = 0
                with z.open(info) as part:
                    while piece := part.read(_PIECE_BYTES):
                        seen += len(piece)
                        if budget is not None and seen > budget:
                            raise TooLargeError(
                                "too-large",
                                f"too-large: .docx part {info.filename!r} inflates past max_docx_part_bytes "
                                f"(CHUNKNAV_MAX_DOCX_PART_BYTES) = {human_bytes(budget)}",
                            )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, RuntimeError, ValueError) as e:
        raise ExtractError("corrupt", f"corrupt: {type(e).__name__}: {e}") from None
    except Exception as e:  # zlib.error and friends from a damaged stream
        if isinstance(e, (ExtractError, OSError)):
            raise
        raise ExtractError("corrupt", f"corrupt: {type(e).__name__}: {e}") from None


def check_pdf_pages(path: str | os.PathLike[str], max_pages: int) -> None:
    """A PDF with at most ``max_pages`` pages, else ``TooLargeError``.

    A PDF that cannot be opened passes: the extractor reports it (corrupt, encrypted).
    """
    from engine.extract.mupdf_log import mupdf

    pymupdf = mupdf()  # MuPDF's messages never on stdout

    try:
        doc = pymupdf.open(os.fspath(path), filetype="pdf")
    except Exception:
        return
    try:
        n = doc.page_count
    finally:
        doc.close()
    check_page_count(n, max_pages)


def check_page_count(n: int, max_pages: int) -> None:
    """``TooLargeError`` when ``n`` pages are over ``max_pages`` (0 = unchecked)."""
    if max_pages and n > max_pages:
        raise TooLargeError("too-large", f"too-large: {n} pages, over max_pages (CHUNKNAV_MAX_PAGES) = {max_pages}")
