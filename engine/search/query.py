"""A query's text as the index holds text: NFKC, and cut to what the embedding model takes.

Owns: ``normal_query`` (the NFKC normal form every stored text has, from
``engine.extract``: ``"x²"`` -> ``"x2"``, ``"ｶﾀｶﾅ"`` -> ``"カタカナ"``,
``"ﬁnal"`` -> ``"final"``), applied to a query's words before keyword terms,
snippet and mark terms and the embedding (``engine.search.searcher``); and
``embeddable`` (a query longer than the embedder's ``max_input_chars`` is cut
at a word boundary for the vector side only; the keyword side keeps every
term). Imports nothing of the engine; no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import unicodedata
from typing import Callable

__all__ = ["normal_query", "embeddable", "input_limit", "cut_hint", "other_forms", "forms_found", "form_found"]


def normal_query(text: str) -> str:
    """``text`` in NFKC (``unicodedata.normalize``), as every extractor stores text."""
    return unicodedata.normalize("NFKC", text)


def embeddable(text: str, most: int) -> str:
    """The part of ``text`` an embedder taking at most ``most`` characters is given.

    Args:
        text: the query's words (``normal_query`` already applied).
        most: the embedder's ``max_input_chars``; 0 = no known limit.

    Returns:
        ``text`` itself when it fits (or ``most`` is 0); else its first at most ``most``
        characters, cut at the last whitespace so no word is split (trailing whitespace
        dropped), or exactly ``most`` characters when that prefix holds no whitespace
        (one giant word). Never empty for a non-empty ``text``.
    """
    if most <= 0 or len(text) <= most:
        return text
    cut = text[:most]
    if text[most].isspace():
        return cut.rstrip() or cut
    for i in range(len(cut) - 1, 0, -1):
        if cut[i].isspace():
            kept = cut[:i].rstrip()
            if kept:
                return kept
            break
    return cut


def input_limit(embedder) -> int:
    """The embedder's ``max_input_chars`` (characters; 0 = no known limit)."""
    return int(getattr(embedder, "max_input_chars", 0) or 0)


def cut_hint(text: str, embedder, mode: str) -> str | None:
    """The hint of a query longer than the embedder takes (``engine.search.searcher`` embeds
    ``embeddable(text, max_input_chars)``); None when it fits."""
    most = input_limit(embedder)
    if not most or len(text) <= most:
        return None
    kept = len(embeddable(text, most))
    return (
        f"the query's first {kept:,} of {len(text):,} characters (its words) were embedded: model "
        f"{getattr(embedder, 'model', '')!r} takes at most {most:,}"
        + ("; the keyword side searched the whole query" if mode == "hybrid" else "")
    )


def other_forms(name: str) -> list[str]:
    """``name`` in NFC and in NFD where that differs from ``name`` (no duplicates, NFC first);
    [] when both forms leave it alone (ASCII among others). A name typed in NFC finds a file or collection
    named in NFD (macOS, SMB shares) and the other way round (``engine.tools.answers``, the scope
    of a search)."""
    out: list[str] = []
    for form in ("NFC", "NFD"):
        alt = unicodedata.normalize(form, name)
        if alt != name and alt not in out:
            out.append(alt)
    return out


def forms_found(name: str, found: Callable[[str], bool]) -> list[str]:
    """``[name]`` when ``found(name)`` (the exact name first), else those of its
    ``other_forms`` that are found (none, one, or two different look-alikes)."""
    return [name] if found(name) else [alt for alt in other_forms(name) if found(alt)]


def form_found(name: str, found: Callable[[str], bool]) -> str:
    """The one name of ``forms_found``, or ``name`` when there is none or two (never a
    guess between two)."""
    hits = forms_found(name, found)
    return hits[0] if len(hits) == 1 else name
