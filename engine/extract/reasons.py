"""Why a document has no text, as a kebab-case code (``ExtractReason`` in ``engine.errors``).

Owns: ``reason_code``, the one place a recorded reason (the human message an
extractor gave: ``ExtractError.reason`` or the notes of an empty document)
becomes a code. The indexer stores it in the document's metadata
(``reasonCode``); ``get_chunk`` / ``read_document`` answer ``found: false``
with it. Imports ``engine.errors`` only.
"""

from __future__ import annotations

from engine.errors import ExtractReason

__all__ = ["reason_code"]

#: (prefix or fragment of the recorded reason, code), first match wins.
_RULES: tuple[tuple[str, ExtractReason], ...] = (
    ("encrypted: wrong password", "wrong-password"),
    ("encrypted", "password-required"),
    ("unsupported file type", "unsupported"),
    ("corrupt", "corrupt"),
    ("not a readable file", "unreadable"),
    ("cannot read", "unreadable"),
    ("unreadable", "unreadable"),
    ("extractor error", "extractor-error"),
    ("no pages", "no-pages"),
    ("no text layer", "no-text-layer"),
    ("only whitespace", "only-whitespace"),
    ("empty file", "empty-file"),
)


def reason_code(status: str, reason: str | None) -> ExtractReason | None:
    """The code of a document's recorded reason.

    Args:
        status: ``"indexed" | "empty" | "failed"``.
        reason: the recorded message (``Document.reason``), may be None.

    Returns:
        None for an indexed document; else the first matching code of
        ``_RULES``, ``"no-text"`` for any other empty document and
        ``"extract-failed"`` for any other failure.
    """
    if status == "indexed":
        return None
    text = (reason or "").lower()
    for fragment, code in _RULES:
        if fragment in text:
            return code
    return "no-text" if status == "empty" else "extract-failed"
