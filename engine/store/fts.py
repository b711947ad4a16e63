"""Keyword query text for the stores: plain words -> deduplicated, capped terms, split by script.

Owns: how a ``search_keyword`` query is cut into terms (whitespace-separated
tokens; a token holding a CJK character is a CJK term, the rest Latin/other
terms), deduplication (case-folded, first occurrence kept), the caps
(``MAX_TERMS`` terms, ``MAX_TERM_CHARS`` characters per term) and the FTS5
strings built from them (each term quoted, so no query syntax is ever
parsed), and the one Python form of the keyword index's word normalisation
(``fold``: NFKC, case-folded, diacritics removed, as the ``unicode61
remove_diacritics 2`` tokenizer compares words; ``fold_chars`` keeps the length so
offsets stay valid; ``term_pattern`` finds query terms in folded text): snippets,
the explorer's query-word marks and the page images all mark words by it, so
``cafe`` marks ``café``. The SQLite store matches Latin terms against the ``porter`` FTS5
index and CJK terms against the ``trigram`` index; the Postgres store uses the
same split. Imports nothing of the engine; no SQL execution.

Why the caps: FTS5 cost grows with the number of phrases in a query; a
40 KB query of repeated words pinned a core for minutes before. Deduplicated
and capped at ``MAX_TERMS``, any query costs at most that many phrases.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "MAX_TERMS",
    "MAX_TERM_CHARS",
    "STOPWORDS",
    "content_terms",
    "fold",
    "fold_chars",
    "term_pattern",
    "CJK_GLOB",
    "KeywordTerms",
    "keyword_terms",
    "is_cjk",
    "quote",
    "trigrams",
]

#: Most distinct terms a keyword query keeps (later ones are dropped).
MAX_TERMS = 64
#: English function words left out of a porter query when other terms remain: each is in
#: most chunks, so its BM25 weight is ~0 (FTS5 clamps a negative IDF to 1e-6) while
#: matching it makes the any-term pass score nearly every chunk.
STOPWORDS = frozenset(
    """
a an the and or but if of to in on at by for with from as into onto over under about is are was
were be been being am do does did have has had can could should would will shall may might must
this that these those it its they them their there here what which who whom whose when where why
how all any each both more most other some such no nor not only own same so than too very just
i me my we our you your he him his she her also
""".split()
)
#: Longest term kept, in characters (longer tokens are cut).
MAX_TERM_CHARS = 128
#: Characters treated as CJK: kana, CJK ideographs (+ extension A, compatibility), Hangul.
_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
#: SQLite GLOB pattern true for a text holding at least one CJK character.
CJK_GLOB = f"*[{_CJK_RANGES}]*"


@dataclass(frozen=True, slots=True)
class KeywordTerms:
    """A keyword query cut into terms.

    Attributes:
        latin: non-CJK terms (tokens with a letter or digit), case-folded, unique, in order.
        cjk: tokens holding a CJK character, unique, in order (matched as substrings).
    """

    latin: tuple[str, ...]
    cjk: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.latin or self.cjk)


@functools.cache
def _cjk() -> re.Pattern[str]:
    """The CJK character class, compiled on first use (~2 ms: a process that writes or
    searches no text, e.g. an unchanged index run, never pays it)."""
    return re.compile(f"[{_CJK_RANGES}]")


def is_cjk(text: str) -> bool:
    """True when ``text`` holds at least one CJK character (see ``CJK_GLOB``)."""
    return _cjk().search(text) is not None


def keyword_terms(text: str, max_terms: int = MAX_TERMS) -> KeywordTerms:
    """Cut plain words into deduplicated, capped Latin and CJK terms.

    The text is first put in NFKC, the form every stored text has (``engine.search.query``
    does the same for the engine's queries; ASCII is left as it is): "x²" is the term
    "x2", "ｶﾀｶﾅ" the CJK term "カタカナ". Control characters (NUL included) end a token;
    tokens without a letter or digit are dropped; each term is cut to ``MAX_TERM_CHARS``;
    at most ``max_terms`` terms are kept in all (first occurrences win).
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = "".join(" " if ch < " " else ch for ch in text)
    seen: dict[str, None] = {}
    latin: list[str] = []
    cjk: list[str] = []
    for token in text.split():
        if len(seen) >= max_terms:
            break
        token = token[:MAX_TERM_CHARS]
        if not any(ch.isalnum() for ch in token):
            continue
        key = token.casefold()
        if key in seen:
            continue
        seen[key] = None
        (cjk if is_cjk(token) else latin).append(key if not is_cjk(token) else token)
    return KeywordTerms(tuple(latin), tuple(cjk))


def content_terms(latin: tuple[str, ...] | list[str]) -> list[str]:
    """Latin terms without English stop words (``STOPWORDS``, surrounding punctuation
    ignored); all of them when every term is a stop word, so a query of stop words still searches."""
    kept = [t for t in latin if t.strip(".,;:!?()[]{}'\"").lower() not in STOPWORDS]
    return kept or list(latin)


def trigrams(term: str) -> list[str]:
    """The 3-character substrings of ``term`` that hold a CJK character, in order, unique
    (the OR-fallback pieces of a CJK term); a term shorter than 3: ``[term]``."""
    if len(term) < 3:
        return [term]
    out: dict[str, None] = {}
    for i in range(len(term) - 2):
        piece = term[i : i + 3]
        if is_cjk(piece) and not piece.isspace():
            out.setdefault(piece, None)
    return list(out) or [term]


def quote(term: str) -> str:
    """One FTS5 string (inner quotes doubled): searched as text, never parsed as syntax."""
    return '"' + term.replace('"', '""') + '"'


def fold(text: str) -> str:
    """``text`` as the keyword index compares words: NFKC, case-folded, combining marks
    (diacritics) removed (``"Café"`` -> ``"cafe"``, ``"ﬁnal"`` -> ``"final"``). May change
    the length (``"ß"`` -> ``"ss"``); see ``fold_chars`` for offsets that stay valid."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    return unicodedata.normalize("NFC", "".join(ch for ch in text if not unicodedata.combining(ch)))


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    f = fold(ch)
    return f if len(f) == 1 else ch.lower()[:1] or ch


def fold_chars(text: str) -> str:
    """``fold`` character by character, same length as ``text`` (a character whose fold is
    not one character is only lower-cased), so an offset into the result is an offset into
    ``text``. ASCII text: ``text.lower()``."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


@functools.lru_cache(maxsize=256)
def term_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """A regex finding any of ``terms`` (folded with ``fold``) at a word start in folded text
    (``fold_chars``), longest first: a term of 3 or more characters also as a word's beginning
    (``page`` marks ``pages``, as the stemmed index matches them), a shorter one as a whole word
    only (``a`` does not mark the start of ``attribute``). None for no non-empty term."""
    folded = sorted({fold(t) for t in terms if t and fold(t)}, key=len, reverse=True)
    if not folded:
        return None
    alts = "|".join(re.escape(t) if len(t) >= 3 else re.escape(t) + r"(?!\w)" for t in folded)
    return re.compile(r"(?<!\w)(?:" + alts + ")")
