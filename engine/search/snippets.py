"""Snippets of search hits: where a hit's text is shown, and which query terms place and mark it.

Owns: ``make_snippet`` / ``make_snippets`` (about 240 characters of a chunk around
the first query term that starts a word), ``shown_terms`` (the terms a snippet is
placed by and the explorer marks: the query's terms without English stop words)
and ``_first_start`` (``engine.search.searcher`` re-exports the public names). Imports ``engine.store.fts`` only;
no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

from typing import Sequence

from engine.store.fts import content_terms

__all__ = ["make_snippet", "make_snippets", "shown_terms"]


def _first_start(low: str, terms: tuple[str, ...]) -> int:
    """The earliest index of ``low`` where one of ``terms`` starts at a word start (the index
    is 0 or the character before it is no word character: ``str.isalnum()`` or ``_``, exactly
    regex ``\\w`` for ``str`` patterns, checked over every code point); -1 when none.

    The position ``re.search(r"(?<!\\w)(?:t1|t2|...)", low).start()`` gives (its leftmost match
    is the earliest start of any alternative; tested against it), found with ``str.find`` per
    term: ~10x faster per hit and nothing to compile per question
    (docs/decisions/snippet-anchor.md)."""
    best = -1
    for t in terms:
        if not t:
            return 0  # an empty alternative matches at the start
        i = low.find(t)
        while i >= 0 and (best < 0 or i < best):
            if i == 0 or not (low[i - 1].isalnum() or low[i - 1] == "_"):
                best = i
                break
            i = low.find(t, i + 1)
    return best


def make_snippet(text: str, terms: tuple[str, ...], width: int = 240) -> str:
    """About ``width`` characters of ``text`` around the first query term found.

    Whitespace is folded to single spaces; an ellipsis marks cut ends. With no
    term found, the start of the text. The first term found is the earliest
    position of the lower-cased text where a term starts at a word start
    (``_first_start``).
    """
    return _snippet(text, terms, width)


def shown_terms(terms: tuple[str, ...]) -> tuple[str, ...]:
    """The query terms a hit's snippet is placed by and the explorer marks: ``terms``
    without English stop words (``engine.store.fts.content_terms``, the rule the keyword
    passes use), all of them when every term is one. So "how are the pages of a document
    numbered" shows a hit around "pages"/"document"/"numbered", not at its first "the"."""
    return tuple(content_terms(list(terms))) if terms else terms


def make_snippets(texts: Sequence[str], terms: tuple[str, ...], width: int = 240) -> list[str]:
    """``make_snippet`` of each text, in order (a search envelope's hits)."""
    return [_snippet(text, terms, width) for text in texts]


def _snippet(text: str, terms: tuple[str, ...], width: int) -> str:
    pos = _first_start(text.lower(), terms) if terms else -1
    if pos < 0:
        start = 0
    else:
        start = max(0, pos - width // 3)
        # do not start mid-word
        while start > 0 and not text[start - 1].isspace() and pos - start < width // 2:
            start -= 1
    end = min(len(text), start + width)
    out = " ".join(text[start:end].split())
    if start > 0:
        out = "…" + out
    if end < len(text):
        out = out + "…"
    return out
