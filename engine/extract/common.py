"""What every extractor shares: the text layout separators and plain word spans.

Owns: ``PAGE_SEPARATOR``, ``BLOCK_SEPARATOR``, ``LINE_SEPARATOR``,
``WORD_SEPARATOR`` (the layout rules in ``engine.extract``'s docstring) and
``words_of`` (whitespace-separated spans without page or box, for formats
that carry no geometry). Imports ``engine.model`` only.
"""

from __future__ import annotations

import re

import numpy as np

from engine.model import WordArray

__all__ = ["PAGE_SEPARATOR", "BLOCK_SEPARATOR", "LINE_SEPARATOR", "WORD_SEPARATOR", "words_of"]

PAGE_SEPARATOR = "\f"
BLOCK_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
WORD_SEPARATOR = " "

_WORD_RE = re.compile(r"\S+")


def words_of(text: str) -> WordArray:
    """Whitespace-separated spans of ``text`` as a ``WordArray`` without pages.

    Returns:
        n words in text order: ``starts``/``ends`` character offsets into
        ``text`` (end exclusive), pages 0, boxes NaN (shape (n, 4)).
    """
    spans = [m.span() for m in _WORD_RE.finditer(text)]
    if not spans:
        return WordArray.empty()
    n = len(spans)
    cols = np.array(spans, dtype=np.int64)
    return WordArray(cols[:, 0], cols[:, 1], np.zeros(n, np.int32), np.full((n, 4), np.nan))
