"""Plain text and Markdown -> ``ExtractedText`` (no pages, no boxes).

Owns: decoding bytes to text (``decode``), line-end normalisation and NFKC.
Imports ``engine.model``, ``engine.errors`` and ``engine.extract.common``.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from engine.errors import ExtractError
from engine.extract.common import words_of
from engine.model import ExtractedText

__all__ = ["decode", "extract_plain"]




def decode(data: bytes) -> tuple[str, str, str | None]:
    """bytes -> (text, encoding name, note or None). Never raises."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), "utf-16", None
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig"), "utf-8", None
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252", "decoded as cp1252, not UTF-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1", "decoded as latin-1, not UTF-8"


def extract_plain(path: Path, file_type: str) -> ExtractedText:
    """Read a text / Markdown file (``engine.extract.extract`` documents the result).

    Raises:
        ExtractError: ``"cannot read: ..."`` when the file cannot be read.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExtractError(f"cannot read: {e}") from None
    text, encoding, note = decode(data)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFKC", text)
    notes = (note,) if note else ()
    if not text.strip():
        notes += ("no text",)
    return ExtractedText(text, words_of(text), (), file_type, notes,
                         {"encrypted": False, "encoding": encoding})


