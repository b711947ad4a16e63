"""Where a hit or a chunk is, said in words an analyst reads at a glance.

Owns: ``position_words`` (``page 17, upper half`` from a page and its ``bbox``),
``lines_label`` (``lines 12–30`` from ``lineStart``/``lineEnd``) and
``file_state_badge`` (a red badge when ``fileState`` says the file changed or vanished
since indexing). Pure functions of envelope fields; imports nothing from the engine.
"""

from __future__ import annotations

from typing import Any

__all__ = ["position_words", "lines_label", "file_state_badge"]


def lines_label(envelope: dict[str, Any]) -> str:
    """``lines 12–30`` (or ``line 12``) of a hit or chunk carrying ``lineStart``/``lineEnd``; ""."""
    a, b = envelope.get("lineStart"), envelope.get("lineEnd")
    if a is None:
        return ""
    return f"line {a}" if b in (None, a) else f"lines {a}–{b}"


def position_words(page: int | None, bbox: dict[str, float] | None) -> str:
    """Where a chunk is, in words: ``page 17, upper half`` (``left column`` /
    ``right column`` when its box is narrower than half the page, ``whole page`` when it
    covers most of it); ``page 17`` without a box; "" without a page."""
    if page is None:
        return ""
    if not bbox:
        return f"page {page}"
    x, y, w, h = bbox["x"], bbox["y"], bbox["w"], bbox["h"]
    if h >= 0.7:
        where = "most of the page"
    else:
        mid = y + h / 2
        where = "top" if mid < 0.25 else "upper half" if mid < 0.5 else "lower half" if mid < 0.75 else "bottom"
    if w < 0.5:
        where += ", left column" if x + w / 2 < 0.5 else ", right column"
    return f"page {page}, {where}"


#: ``fileState`` -> (badge text, colour) of a hit whose file is not as indexed.
_FILE_BADGES = {
    "changed": ("file changed since indexing", "red"),
    "missing": ("file missing", "red"),
}


def file_state_badge(envelope: dict[str, Any]) -> str:
    """A red badge for a hit whose file changed or vanished since it was indexed
    (``fileState``); "" for ``current`` or none."""
    badge = _FILE_BADGES.get(str(envelope.get("fileState")))
    return f" :{badge[1]}-badge[:material/sync_problem: {badge[0]}]" if badge else ""
