"""Content words as a person counts them: the words two texts share.

Owns ``content_words`` (a text's words without English function words, each
casefolded, its combining marks folded and lightly stemmed: ``light_stem``) and
``coverage`` (the share of a query's content words a text holds). One rule for
"does this chunk hold the query's words" (the fusion's exact-word tier,
``engine.search.fusion``, and each hit's ``match``) and for "does this question
reuse its passage's words" (the evaluation set's paraphrase check,
``engine.search.evaluate``).

The stemming is deliberately light (plural and verb endings): ``"pipelines"`` and
``"pipeline"`` are one word, ``"compile"`` and ``"compiler"`` are two. CJK runs
count as words; a CJK query word is held by a text that contains it as a
substring (CJK text has no spaces between words). Imports the standard library
and ``engine.store.fts`` (the CJK ranges); no face.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from engine.store.fts import is_cjk

__all__ = ["FUNCTION_WORDS", "light_stem", "content_words", "coverage"]

#: English function words and question words: never content words.
FUNCTION_WORDS = frozenset(
    """
a an the and or but if of to in on at by for with from as into onto over under about above below
is are was were be been being am do does did done doing have has had having can could should would
will shall may might must this that these those it its they them their theirs there here what which
who whom whose when where why how all any each both few more most other some such no nor not only
own same so than too very s t just now then also up down out off again further once i me my mine
we our ours you your yours he him his she her hers get gets got via per vs versus between among
while during before after until unless whether because though although let lets us one ones
""".split()
)

_WORD = re.compile(r"\w+", re.UNICODE)
#: Suffixes stripped by ``light_stem``, longest first, with what replaces them.
_SUFFIXES = (
    ("ingly", ""),
    ("edly", ""),
    ("ings", ""),
    ("ing", ""),
    ("ied", "y"),
    ("ies", "y"),
    ("sses", "ss"),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
)


def _fold(text: str) -> str:
    """Casefolded, NFKD with combining marks dropped (``"Café"`` -> ``"cafe"``)."""
    text = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def light_stem(word: str) -> str:
    """One folded word without its plural or verb ending.

    Args:
        word: a word already folded (casefolded, marks dropped).

    Returns:
        The stem: the longest matching suffix of ``_SUFFIXES`` removed when at least
        3 characters remain (``"ss"`` endings kept), then a doubled final consonant
        and a final ``e`` dropped (``"running"`` -> ``"run"``, ``"caused"`` and
        ``"cause"`` -> ``"caus"``). Words of digits or CJK come back as they are.
    """
    if not word.isalpha() or is_cjk(word):
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)] + repl
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The stems (``light_stem``) of the words of ``text`` that are not ``FUNCTION_WORDS``.

    Returns:
        A set of stems; CJK runs stay whole; ``""`` -> ``set()``.
    """
    out: set[str] = set()
    for w in _WORD.findall(_fold(text)):
        if w in FUNCTION_WORDS or w == "_":
            continue
        out.add(light_stem(w))
    return out


def coverage(query_words: Iterable[str], text: str) -> float:
    """The share of ``query_words`` (stems from ``content_words``) that ``text`` holds.

    A Latin stem is held when it is one of the text's own stems; a CJK word when it
    occurs in the folded text as a substring.

    Returns:
        0.0..1.0; 0.0 for no query words.
    """
    wanted = list(query_words)
    if not wanted:
        return 0.0
    folded = _fold(text)
    have = {light_stem(w) for w in _WORD.findall(folded)}
    held = sum(1 for w in wanted if (w in folded if is_cjk(w) else w in have))
    return held / len(wanted)
