"""Snippets of search hits: where a hit's text is shown, and which query terms place and mark it.

Owns: ``make_snippet`` / ``make_snippets`` (about 240 characters of a chunk centred
on the first query term that starts a word), ``shown_terms`` (the terms a snippet is
placed by and the explorer marks: the query's terms without English stop words),
``term_spans`` (where those terms are in a text: what the explorer marks) and
``_first_start`` (``engine.search.searcher`` re-exports the public names). Words are
compared in the keyword index's form (``engine.store.fts.fold``: case and diacritics
folded, so ``cafe`` places and marks ``café``). Imports ``engine.store.fts`` only; no
face (streamlit, mcp, argparse).
"""

from __future__ import annotations

from typing import Sequence

from engine.store.fts import content_terms, dropped, fold, mark_view, term_pattern

__all__ = ["make_snippet", "make_snippets", "shown_terms", "term_spans"]


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
    """About ``width`` characters of ``text`` centred on the first query term found.

    Whitespace is folded to single spaces; an ellipsis marks cut ends. With no
    term found, the start of the text. The first term found is the earliest
    position of the folded text (``engine.store.fts.mark_view``: case, diacritics and the
    marks the keyword text drops folded, line-end hyphen breaks joined, offsets mapped
    back) where a folded term starts at a word start (``_first_start``).
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


def term_spans(text: str, terms: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where the query ``terms`` are in ``text``: ``(start, end)`` character offsets into
    ``text``, in order, not overlapping. A term is found at a word start in the keyword
    index's form of both (``engine.store.fts.term_pattern`` over ``mark_view``: a term of 3
    or more characters also as a word's beginning, a shorter one as a whole word; a word
    split at a line end is one span across the break); [] for no terms."""
    pattern = term_pattern(tuple(terms)) if terms else None
    if pattern is None:
        return []
    view, where = mark_view(text)
    if where is None:
        return [m.span() for m in pattern.finditer(view)]
    spans = _mapped(text, pattern, view, where)
    if "\n" in text:  # a real hyphen at a line end: its parts are words of their own too
        spans += _mapped(text, pattern, *mark_view(text, join=False))
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        if not out or start >= out[-1][1]:
            out.append((start, end))
    return out


def _mapped(text: str, pattern, view: str, where: list[int] | None) -> list[tuple[int, int]]:
    """The matches of ``pattern`` in ``view`` as offsets of ``text``, each end taken past the
    marks that follow the word's last letter (``كَتَبَ`` whole, not ``كَتَب``)."""
    if where is None:
        return [m.span() for m in pattern.finditer(view)]
    out = []
    for m in pattern.finditer(view):
        if m.end() > m.start():
            end = where[m.end() - 1] + 1
            while end < len(text) and dropped(text[end]):
                end += 1
            out.append((where[m.start()], end))
    return out


def _snippet(text: str, terms: tuple[str, ...], width: int) -> str:
    folded = tuple(t for t in {fold(t): None for t in terms}) if terms else ()
    view, where = mark_view(text) if folded else ("", None)
    at = _first_start(view, folded) if folded else -1
    if at < 0:
        start = 0
    else:
        t = next((t for t in folded if view.startswith(t, at)), "")
        pos = at if where is None else where[at]
        end = at + len(t) if where is None else (where[at + len(t) - 1] + 1 if t else pos)
        word = end - pos
        start = max(0, pos - (width - word) // 2)  # the matching word in the middle
        # do not start mid-word
        while start > 0 and not text[start - 1].isspace() and pos - start < width // 2 + width // 4:
            start -= 1
        start = min(start, pos)
    end = min(len(text), start + width)
    out = " ".join(text[start:end].split())
    if start > 0:
        out = "…" + out
    if end < len(text):
        out = out + "…"
    return out
