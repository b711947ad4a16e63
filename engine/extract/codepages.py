"""Choosing among single-byte Latin code pages by the alphabets of languages.

Owns: ``choose_latin`` (which of cp1252, cp1250, cp1254, cp1257, ISO 8859-x,
Mac and DOS Latin code pages turns a file's bytes into text whose non-ASCII
letters belong to one language's alphabet) and ``ALPHABETS`` (the non-ASCII
letters of each Latin-script language's standard orthography). Imports numpy
(``engine.lazy``) and ``unicodedata`` only.

Why: a charset detector scores a decoding by how "messy" it looks (symbols
inside words, odd case changes), and for Western text cp1252 and cp1250 are
equally tidy: ``crème`` (cp1252) and ``crčme`` (cp1250) are both a word of
letters. What tells them apart is that no language writes ``č`` next to
``ç``, ``ŕ`` and ``ű``: French text decoded as cp1250 mixes letters of
Czech, Slovak and Hungarian; decoded as cp1252 every accented letter is
French. So each candidate's decoding of the non-ASCII bytes is scored by the
share of them that one language's alphabet holds (a symbol or control
character in the middle of a word counts against it), and the best share
wins; decodings that give the same characters are one candidate (the first of
``PREFERENCE`` names it). The runner-up's share makes the confidence honest:
when another code page's text fits about as well, the confidence is lowered.
"""

from __future__ import annotations

from typing import Any

import unicodedata
from dataclasses import dataclass

from engine.lazy import np  # numpy on first use (engine.lazy)

__all__ = ["ALPHABETS", "LATIN_PAGES", "PREFERENCE", "LatinChoice", "choose_latin", "byte_profile"]

#: Non-ASCII lower-case letters of each language's standard orthography (the
#: upper-case forms count too). Sources: each language's alphabet as the
#: orthography defines it; ``ª``/``º`` (ordinal indicators) belong to the
#: Romance languages that write them.
ALPHABETS: dict[str, str] = {
    "French": "àâæçéèêëîïôœùûüÿ",
    "Portuguese": "áàâãçéêíóôõúüªº",
    "Spanish": "áéíñóúüªº",
    "Catalan": "àçèéíïòóúüŀªº",
    "Galician": "áéíñóúüªº",
    "Italian": "àèéìíîòóùúªº",
    "German": "äöüß",
    "Dutch": "éèëïöüĳ",
    "Danish": "æøåéó",
    "Norwegian": "æøåéóòôü",
    "Swedish": "åäöé",
    "Finnish": "äöåšž",
    "Icelandic": "áðéíóúýþæö",
    "Faroese": "áðíóúýæø",
    "Irish": "áéíóú",
    "Albanian": "çë",
    "Estonian": "äöõüšž",
    "Latvian": "āčēģīķļņšūž",
    "Lithuanian": "ąčęėįšųūž",
    "Czech": "áčďéěíňóřšťúůýž",
    "Slovak": "áäčďéíĺľňóôŕšťúýž",
    "Polish": "ąćęłńóśźż",
    "Hungarian": "áéíóöőúüű",
    "Croatian": "čćđšž",
    "Slovenian": "čšžćđ",
    "Romanian": "ăâîșțşţ",
    "Turkish": "çğıöşüâîû",
    "Maltese": "àċèġħìòùż",
    "Esperanto": "ĉĝĥĵŝŭ",
}

#: Latin single-byte code pages (Python codec names as charset-normalizer
#: reports them). A detection naming one of these is re-ranked here.
LATIN_PAGES = frozenset(
    {
        "cp1252",
        "latin_1",
        "iso8859_15",
        "cp1250",
        "iso8859_2",
        "cp1254",
        "iso8859_9",
        "cp1257",
        "iso8859_13",
        "iso8859_4",
        "iso8859_10",
        "iso8859_14",
        "iso8859_16",
        "iso8859_3",
        "cp1258",
        "mac_roman",
        "mac_latin2",
        "mac_iceland",
        "mac_turkish",
        "cp437",
        "cp850",
        "cp852",
        "cp857",
        "cp858",
        "cp860",
        "cp861",
        "cp863",
        "cp865",
        "cp775",
        "hp_roman8",
    }
)
#: Pages always tried (the common Windows and ISO Latin pages), in the order
#: that names a group of pages giving the same characters, and breaks ties.
PREFERENCE = (
    "cp1252",
    "cp1250",
    "iso8859_2",
    "cp1254",
    "cp1257",
    "iso8859_15",
    "iso8859_13",
    "iso8859_16",
    "cp1258",
    "latin_1",
    "iso8859_9",
    "iso8859_4",
    "iso8859_10",
    "iso8859_14",
    "iso8859_3",
    "mac_roman",
    "mac_latin2",
    "cp850",
    "cp852",
    "cp437",
)
_ALWAYS = ("cp1252", "cp1250", "iso8859_2", "cp1254", "cp1257", "iso8859_15", "iso8859_13", "iso8859_16")
#: Letters no language here owns but that are not mojibake either (the micro sign).
_NEUTRAL = frozenset("µ")
#: Punctuation that real words hold (Catalan ``l·l``, ``don’t`` use Pd/Pi/Pf already).
_IN_WORD = frozenset("·")
#: Non-ASCII characters of the runner-up's text that no language's alphabet
#: next to them holds (beyond the choice's own) for the choice to count as
#: clear: with fewer, the confidence is lowered (``LatinChoice.separation``).
CLEAR_MISFITS = 4
#: Bytes profiled for the choice at most (the start of the file): enough to
#: name a code page, and bounded work on a 200 MiB file.
PROFILE_BYTES = 1 << 22


def _letters(alphabet: str) -> frozenset[str]:
    chars = set(alphabet)
    chars |= {c.upper() for c in alphabet if len(c.upper()) == 1}
    if "ı" in alphabet:
        chars.add("İ")
    return frozenset(chars)


_SETS = {lang: _letters(a) for lang, a in ALPHABETS.items()}


@dataclass(frozen=True, slots=True)
class LatinChoice:
    """The code page ``choose_latin`` picked.

    Attributes:
        encoding: Python codec name (``"cp1252"``, ``"cp1250"``...).
        fit: 0..1, the share of the non-ASCII characters that the best
            language's alphabet holds (in-word symbols and controls count as
            misses); 1.0 when no non-ASCII character is a letter or a miss.
        misfits: how many non-ASCII characters that language's alphabet lacks.
        runner_up_encoding: the best page giving *different* characters
            (``""`` when no other page decodes); only the common pages count
            when a common page won.
        runner_up_misfits: its misfits (0 when there is none).
        language: the language whose alphabet fits, ``""`` when several fit
            equally well (or none does).
    """

    encoding: str
    fit: float
    misfits: int
    runner_up_encoding: str
    runner_up_misfits: int
    language: str

    @property
    def separation(self) -> float:
        """0.5..1: how clearly the choice beats the runner-up. A tie is a coin
        toss between two texts (0.5); each further misfit of the runner-up
        adds ``0.5 / CLEAR_MISFITS``, up to 1.0 (also 1.0 when no other page decodes)."""
        if not self.runner_up_encoding:
            return 1.0
        gap = max(0, self.runner_up_misfits - self.misfits)
        return 0.5 + 0.5 * min(1.0, gap / CLEAR_MISFITS)


def byte_profile(data: bytes) -> tuple[Any, ...]:
    """``(present, counts, inword, glued, after_lower)``: five length-256 arrays.
    ``present``: which byte values occur anywhere in ``data`` (bool). Over
    the first ``PROFILE_BYTES`` (enough to name a code page, bounded work on
    a 200 MiB file): ``counts``, how often each value occurs; ``inword``, how
    often with a letter-like byte (ASCII letter or non-ASCII byte) on both
    sides; ``glued``, how often so or right before an ASCII lower-case letter
    (``c½ur``, ``½uvres``); ``after_lower``, how often right after an ASCII
    lower-case letter. Works in ``PROFILE_BYTES`` slices (bounded memory)."""
    present = np.zeros(256, bool)
    for start in range(0, len(data), PROFILE_BYTES):
        arr = np.frombuffer(data, np.uint8, min(PROFILE_BYTES, len(data) - start), start)
        seen = np.bincount(arr, minlength=256)
        present |= seen > 0
        if not start:
            counts = seen
    arr = np.frombuffer(data, np.uint8, min(PROFILE_BYTES, len(data)))
    if len(arr) < 3:
        zero = np.zeros(256, np.int64)
        return present, np.bincount(arr, minlength=256), zero, zero, zero
    high = arr > 127
    lower = (arr >= 0x61) & (arr <= 0x7A)
    letterish = high | lower | ((arr >= 0x41) & (arr <= 0x5A))
    mid, mid_high = arr[1:-1], high[1:-1]
    between = letterish[:-2] & letterish[2:]
    inword = np.bincount(mid[between & mid_high], minlength=256)
    glued = np.bincount(mid[(between | lower[2:]) & mid_high], minlength=256)
    after_lower = np.bincount(arr[1:][lower[:-1] & high[1:]], minlength=256)
    return present, counts, inword, glued, after_lower


def _score(chars: tuple[str, ...], profile: tuple[Any, ...], high: list[int]) -> tuple[int, int, str]:
    """One page's ``(in-alphabet count, total, language)`` (language ``""`` on
    a tie) from its characters for the ``high`` byte values present. Misses:
    letters the language lacks, an upper-case letter right after a lower-case
    one (``situaÓÐo``), a control character, a symbol or number sign inside a
    word or glued to the start of one (``ma³ej``, ``½uvres``), other
    punctuation inside a word (not apostrophes, hyphens, quotes: ``¿qué`` is Spanish)."""
    _present, counts, inword, glued, after_lower = profile
    letters = bad = 0
    good = dict.fromkeys(_SETS, 0)
    for b, c in zip(high, chars):
        n = int(counts[b])
        cat = unicodedata.category(c)
        if cat[0] == "L" and c not in _NEUTRAL:
            letters += n
            fits = n - int(after_lower[b]) if cat == "Lu" else n
            for lang, s in _SETS.items():
                if c in s:
                    good[lang] += fits
        elif cat == "Cc":
            bad += n
        elif cat[0] in "NS" or cat == "Cf":
            bad += int(glued[b])
        elif cat in ("Po", "Ps", "Pe") and c not in _IN_WORD:
            bad += int(inword[b])
    top = max(good.values())
    winners = [lang for lang, g in good.items() if g == top]
    return top, letters + bad, winners[0] if len(winners) == 1 and top else ""


def choose_latin(data: bytes, offered: tuple[str, ...] = ()) -> LatinChoice | None:
    """bytes -> the Latin single-byte code page whose text fits one language best.

    ``offered``: code pages a detector proposed (those in ``LATIN_PAGES`` are
    tried along with the common Windows / ISO pages). A page is tried only if
    it decodes every byte value in ``data``. Pages that give the same
    characters for every non-ASCII byte present form one candidate, named by
    ``PREFERENCE`` order (the common Windows / ISO pages first, so a group
    holding one is named by it). A page that reads a byte as a C1 control character
    (ISO 8859 pages on 0x80-0x9F) is out when another page reads every byte
    as a printable character: text files do not hold C1 controls. The fewest
    misfits wins; ties go to the earlier candidate in ``PREFERENCE`` order.
    Returns None when no page decodes.
    Never raises.
    """
    pages = list(dict.fromkeys(list(_ALWAYS) + [p for p in offered if p in LATIN_PAGES]))
    rank = {p: i for i, p in enumerate(PREFERENCE)}
    pages.sort(key=lambda p: rank.get(p, len(rank)))
    profile = byte_profile(data)
    high = [b for b in range(128, 256) if profile[0][b]]
    seen: set[tuple[str, ...]] = set()
    scored: list[tuple[int, int, int, str, str, bool]] = []
    for page in pages:
        try:  # single-byte pages are stateless: every byte value present must decode
            chars = tuple(bytes([b]).decode(page) for b in high)
        except (UnicodeDecodeError, LookupError):
            continue
        if chars in seen:
            continue
        seen.add(chars)
        good, total, lang = _score(chars, profile, high)
        controls = any(unicodedata.category(c) == "Cc" for c in chars)
        scored.append((total - good, len(scored), total, page, lang, controls))
    if not all(c[5] for c in scored):  # text has no C1 controls: ISO pages reading 0x80-0x9F as such are out
        scored = [c for c in scored if not c[5]]
    if not scored:
        return None
    scored.sort()
    misfits, _, total, page, lang, _c = scored[0]
    fit = 1.0 if total == 0 else (total - misfits) / total
    # The doubt the confidence reports: the best other reading among the common pages
    # when a common page won (a rare page reading as well, like ISO 8859-14 turning
    # « » into ḋ Ṡ, is tried so that its own files read right, not counted as doubt).
    others = [c for c in scored[1:] if page not in _ALWAYS or c[3] in _ALWAYS]
    runner = others[0] if others else (0, 0, 0, "", "", False)
    return LatinChoice(page, round(fit, 4), misfits, runner[3], runner[0], lang)
