"""Keyword text for the stores: what the keyword indexes hold, and query terms to match it.

Owns: the keyword text of a chunk (``keyword_text``: the text as printed, with soft
hyphens, Arabic/Hebrew/Syriac marks, tatweel and Greek accents folded away
(``fold_marks``) and words split by a hyphen at a line end joined when the
document says so), the same folding of query terms, and how a
``search_keyword`` query is cut into terms (whitespace-separated
tokens; a token holding a CJK character is a CJK term, the rest Latin/other
terms), deduplication (case-folded, first occurrence kept), the caps
(``MAX_TERMS`` terms, ``MAX_TERM_CHARS`` characters per term) and the FTS5
strings built from them (each term quoted, so no query syntax is ever
parsed), and the one Python form of the keyword index's word normalisation
(``fold``: NFKC, case-folded, diacritics removed, as the ``unicode61
remove_diacritics 2`` tokenizer compares words; ``fold_chars`` keeps the length so
offsets stay valid; ``mark_view`` also drops the marks and line-end hyphen breaks the
keyword text drops, with a map back to the printed offsets; ``term_pattern`` finds query
terms in folded text): snippets, the explorer's query-word marks and the page images all
mark words by it, so ``cafe`` marks ``café``, ``كتب`` marks ``كَتَبَ`` and
``acknowledged`` marks ``acknowl-`` / ``edged``. The SQLite store matches Latin terms against the ``porter`` FTS5
index and CJK terms against the ``trigram`` index; the Postgres store uses the
same split. Imports nothing of the engine; no SQL execution.

Why a keyword text beside the printed text: a reader types ``Gesamtkonzept``,
``كتب``, ``שלום`` and ``acknowledged`` where the page prints
``Ge\u00adsamt\u00adkon\u00adzept``, ``كَتَبَ``, ``שָׁלוֹם`` and ``acknowl-`` / ``edged``.
The stored and displayed text (offsets, boxes, snippets) stays as printed; only
the keyword indexes and the query terms see the folded form, so both stores
(SQLite FTS5, Postgres tsvector) match the same words. ``KEYWORD_TEXT_VERSION``
names these rules; a store records it beside the keyword text it wrote.

Why the caps: FTS5 cost grows with the number of phrases in a query; a
40 KB query of repeated words pinned a core for minutes before. Deduplicated
and capped at ``MAX_TERMS``, any query costs at most that many phrases.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Callable

__all__ = [
    "MAX_TERMS",
    "MAX_TERM_CHARS",
    "STOPWORDS",
    "content_terms",
    "fold",
    "fold_chars",
    "dropped",
    "mark_view",
    "term_pattern",
    "CJK_GLOB",
    "KeywordTerms",
    "keyword_terms",
    "is_cjk",
    "quote",
    "trigrams",
    "KEYWORD_TEXT_VERSION",
    "fold_marks",
    "keyword_text",
]

#: Version of the keyword-text rules (``fold_marks``, ``keyword_text``); a store records
#: the version its keyword text was written with.
KEYWORD_TEXT_VERSION = 1

#: Characters the keyword text and query terms drop: soft hyphen, Arabic tatweel, Hebrew
#: points and cantillation, Arabic harakat and Quranic marks, Syriac vowels.
_MARKS = re.compile(
    "[\u00ad\u0640\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\ufb1e"
    "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
    "\u08d3-\u08e1\u08e3-\u08ff\u0730-\u074a]"
)
#: Greek letters that carry an accent or breathing (folded to the bare letter).
_GREEK_MARKED = re.compile("[\u0386\u0388-\u038a\u038c\u038e-\u0390\u03aa-\u03b0\u03ca-\u03ce\u1f00-\u1ffc]")
#: A word split by a hyphen (or soft hyphen) at a line end: letters, hyphen, line end, letters.
_SPLIT = re.compile("(?<![^\\W\\d_])([^\\W\\d_]+)([-\u2010\u00ad])[ \t]*\n[ \t]*([^\\W\\d_]+)")
#: A hyphenated word inside a line (``self-evident``).
_HYPHENATED = re.compile("(?<![^\\W\\d_])([^\\W\\d_]+)[-\u2010]([^\\W\\d_]+)")
_WORDS = re.compile("[^\\W\\d_]+")


def _greek_bare(m: re.Match[str]) -> str:
    return unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFD", m.group()) if not unicodedata.combining(c))
    )


def fold_marks(text: str) -> str:
    """``text`` without the marks a reader does not type: soft hyphens (U+00AD), Arabic
    tatweel (U+0640) and harakat, Hebrew niqqud and cantillation, Syriac vowels
    (``_MARKS``), and Greek accents and breathings (``"Αθήνα"`` -> ``"Αθηνα"``). Latin
    diacritics are left to the stores (SQLite's ``remove_diacritics``); Cyrillic ``й``
    and ``ё`` stay letters. ASCII text comes back as it is, except for nothing (no mark is
    ASCII): the same string."""
    if text.isascii():
        return text
    text = _MARKS.sub("", text)
    return _GREEK_MARKED.sub(_greek_bare, text)


def _unchanged(chunk_text: str) -> str | None:
    return None


def keyword_text(document_text: str) -> Callable[[str], str | None]:
    """The keyword-text rule of one document: chunk text -> its keyword text, or None when
    that is the chunk text itself (nothing to fold: the stores index the chunk text).

    The keyword text is ``fold_marks`` of the chunk text after joining each word split by a
    hyphen (``-``, U+2010, or a soft hyphen) at a line end, ``acknowl-`` / ``edged`` ->
    ``acknowledged``, when:

    * the hyphen is a soft hyphen (always a break), or
    * the joined word occurs elsewhere in the document, or
    * neither the hyphenated form occurs elsewhere in a line, nor is one part a single
      letter, nor does the second part start with a capital, and either part is not a
      word on its own elsewhere in the document (``acknowl`` never stands alone).

    Otherwise the hyphen is real and stays (``n-`` / ``tridecanal`` keeps
    ``n-tridecanal``, matched as the words ``n`` and ``tridecanal``).

    Args:
        document_text: the document's whole extracted text (the chunks' windows of it).

    Returns:
        A function of one chunk's text; a document with no line-end hyphen and no foldable
        mark gets one that always returns None (no cost per chunk).
    """
    split = "\n" in document_text and _SPLIT.search(document_text) is not None
    marks = not document_text.isascii() and (
        _MARKS.search(document_text) is not None or _GREEK_MARKED.search(document_text) is not None
    )
    if not split and not marks:
        return _unchanged
    join: Callable[[re.Match[str]], str] | None = None
    if split:
        words = set(_WORDS.findall(_SPLIT.sub(" ", document_text).casefold()))
        hyphenated = {f"{a}-{b}" for a, b in _HYPHENATED.findall(document_text.casefold())}

        def join(m: re.Match[str]) -> str:
            left, hyphen, right = m.group(1), m.group(2), m.group(3)
            a, b = left.casefold(), right.casefold()
            if (
                hyphen == "\u00ad"
                or a + b in words
                or (
                    f"{a}-{b}" not in hyphenated
                    and len(left) > 1
                    and not right[0].isupper()
                    and (a not in words or b not in words)
                )
            ):
                return left + right
            return m.group()

    def fold(chunk_text: str) -> str | None:
        out = _SPLIT.sub(join, chunk_text) if join is not None and "\n" in chunk_text else chunk_text
        if marks:
            out = fold_marks(out)
        return None if out == chunk_text else out

    return fold


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
    "x2", "ｶﾀｶﾅ" the CJK term "カタカナ"; then ``fold_marks``, as the keyword text
    (``keyword_text``): "كَتَبَ" is the term "كتب", "Ge\u00adsamt" the term "gesamt". Control characters (NUL included) end a token;
    tokens without a letter or digit are dropped; each term is cut to ``MAX_TERM_CHARS``;
    at most ``max_terms`` terms are kept in all (first occurrences win).
    """
    if not text.isascii():
        text = fold_marks(unicodedata.normalize("NFKC", text))
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


#: A hyphen (or soft hyphen) that ends a line between two letters, with the line break.
_BREAK = re.compile("(?<=[^\\W\\d_])[-\u2010\u00ad][ \t]*\n[ \t]*(?=[^\\W\\d_])")


#: A hyphen before a line end: the cheap test before looking for breaks between letters.
_HYPHEN_EOL = re.compile("[-\u2010\u00ad][ \t]*\n")


@functools.lru_cache(maxsize=4096)
def dropped(ch: str) -> bool:
    """Whether ``mark_view`` leaves the character ``ch`` out (a mark the keyword text drops,
    or another combining mark)."""
    return _MARKS.match(ch) is not None or unicodedata.combining(ch) != 0


def mark_view(text: str, join: bool = True) -> tuple[str, list[int] | None]:
    """``text`` as query words are looked for in it to mark them, and where each of its
    characters comes from.

    The view is ``fold_chars(text)`` without the characters the keyword text drops
    (``fold_marks``: soft hyphens, Arabic harakat and tatweel, Hebrew points, Syriac vowels),
    other combining marks, and (with ``join``) hyphen-plus-line-break between two letters (a
    word split at a line end is whole in the view). Matching a term in the view is matching
    it as the keyword index does; the map turns a view offset back into an offset of
    ``text``.

    Returns:
        ``(view, where)``: ``where[i]`` is the offset in ``text`` of the view's character
        ``i``; ``where`` is None when every offset of the view is the same offset of
        ``text`` (``fold_chars(text)``: nothing dropped, no line-end hyphen joined).
    """
    breaks = [m.span() for m in _BREAK.finditer(text)] if join and _HYPHEN_EOL.search(text) else []
    if not breaks and (text.isascii() or not any(dropped(ch) for ch in set(text))):
        return fold_chars(text), None
    chars: list[str] = []
    where: list[int] = []
    b = 0
    i, n = 0, len(text)
    while i < n:
        if b < len(breaks) and i == breaks[b][0]:
            i = breaks[b][1]
            b += 1
            continue
        ch = text[i]
        if not dropped(ch):
            chars.append(_fold_char(ch))
            where.append(i)
        i += 1
    return "".join(chars), where


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
