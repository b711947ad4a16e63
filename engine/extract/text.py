"""Plain text and Markdown -> ``ExtractedText`` (no pages, no boxes).

Owns: decoding bytes to text (``decode``: BOM, strict UTF-8, UTF-8 with a
few stray bytes, then charset-normalizer detection), the judgement of bytes as
text or binary (``binary_reason``; ``sniff_text`` on a bounded prefix for files
without a suffix), line-end normalisation and NFKC. Imports ``engine.values``, ``engine.errors`` and
``engine.extract.common``; ``charset_normalizer`` lazily (only when a file is
not UTF-8).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.lazy import np  # numpy on first use (engine.lazy)

from engine.errors import ExtractError
from engine.extract.codepages import LATIN_PAGES, choose_latin
from engine.extract.common import markdown_headings, words_of
from engine.values import ExtractedText

if TYPE_CHECKING:
    from engine.extract.ocr import OcrSettings

__all__ = ["read", "Decoded", "decode", "extract_plain", "LOW_CONFIDENCE", "SNIFF_BYTES", "binary_reason", "sniff_text"]

#: Detector confidence (0..1) below which a decoding is noted as low-confidence.
LOW_CONFIDENCE = 0.9
#: Single-byte encodings preferred when the detector finds several that give the same text.
_PREFERRED = ("cp1252", "utf_8", "iso8859_1", "cp1250", "cp1251", "cp1255", "cp1256")
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes surrogateescape could not decode
_NON_ASCII = re.compile("[^\x00-\x7f]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")  # C0 controls but tab, line ends, form feed
#: Non-ASCII bytes a detection needs for full confidence (fewer scale it down).
_EVIDENCE_BYTES = 16
#: Share of non-ASCII characters one language's alphabet must hold for the
#: alphabet to choose among Latin code pages (below it the detector's pick stands).
_MIN_FIT = 0.75
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8-sig", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32", "utf-32"),
    (b"\xff\xfe", "utf-16", "utf-16"),
    (b"\xfe\xff", "utf-16", "utf-16"),
)


@dataclass(frozen=True, slots=True)
class Decoded:
    """One decoding of a file's bytes.

    Attributes:
        text: the decoded text (not yet NFKC-normalised).
        encoding: Python codec name used (``"utf-8"``, ``"big5"``, ``"cp1255"``...).
        confidence: 0..1; 1.0 for a BOM or strict UTF-8; for detected encodings
            ``(1 - chaos) x evidence`` (chaos: charset-normalizer's mess ratio of
            the decoded text; evidence: ``min(1, non-ASCII bytes / 16)``), for a
            Latin code page ``evidence x fit x separation`` (``LatinChoice``:
            the share of non-ASCII characters one language's alphabet holds,
            and 0.5..1 for how clearly the runner-up page's text fits worse);
            for UTF-8 with stray bytes the share of non-ASCII sequences that decoded.
        method: ``"bom"``, ``"utf-8"``, ``"utf-16-guess"`` (no BOM, NUL pattern),
            ``"utf-8-replaced"``, ``"detected"`` or ``"fallback"``.
        notes: human notes (empty for a clean UTF-8 / BOM decoding).
        language: the language guessed (``""`` when none): for a Latin code
            page the one whose alphabet alone fits (``codepages.ALPHABETS``),
            else charset-normalizer's guess.
    """

    text: str
    encoding: str
    confidence: float
    method: str
    notes: tuple[str, ...] = ()
    language: str = ""


def _stray_bytes(data: bytes) -> tuple[str, int, int]:
    """UTF-8 decoded with every invalid byte replaced by U+FFFD:
    ``(text, invalid bytes, valid non-ASCII characters)``."""
    escaped = data.decode("utf-8", "surrogateescape")
    bad = len(_ESCAPED.findall(escaped))
    good = len(_NON_ASCII.findall(escaped)) - bad
    return data.decode("utf-8", "replace"), bad, good


def decode(data: bytes) -> Decoded:
    """bytes -> ``Decoded``. Never raises.

    Order: a BOM (UTF-8/16/32); UTF-16 without a BOM when NUL bytes fill one
    byte of most pairs; strict UTF-8; UTF-8 with a few invalid bytes
    (at most max(4, 5 % of its valid non-ASCII characters), and more valid
    multi-byte characters than invalid bytes: the bytes become U+FFFD and a
    note says how many); otherwise charset-normalizer's best guess (its
    confidence recorded, a note when below ``LOW_CONFIDENCE``; with fewer
    than 8 non-ASCII bytes cp1252 is preferred when it decodes); when nothing
    fits, latin-1 (every byte kept) with a low-confidence note. When the guess
    is a Latin single-byte code page, ``engine.extract.codepages.choose_latin``
    picks among them the one whose non-ASCII letters one language writes, and
    the confidence is ``evidence x fit x separation`` (see ``Decoded``).
    """
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data.decode(codec), name, 1.0, "bom")
            except UnicodeDecodeError:
                break
    if b"\x00" in data:  # ASCII-range UTF-16 is valid UTF-8 too: look at the NUL pattern first
        wide = _utf16_without_bom(data)
        if wide is not None:
            return wide
    try:
        return Decoded(data.decode("utf-8"), "utf-8", 1.0, "utf-8")
    except UnicodeDecodeError:
        pass
    text, bad, good = _stray_bytes(data)
    if good > bad and bad <= max(4, good // 20):
        noun = "byte" if bad == 1 else "bytes"
        return Decoded(
            text,
            "utf-8",
            round(good / (good + bad), 3),
            "utf-8-replaced",
            (f"UTF-8 with {bad} invalid {noun} replaced by U+FFFD",),
        )
    return _detect(data)


def _utf16_without_bom(data: bytes) -> Decoded | None:
    """UTF-16 without a BOM: most of one byte of every pair NUL (ASCII-range
    text), the other not; None when the bytes do not look like it or do not decode."""
    if len(data) < 8 or len(data) % 2:
        return None
    arr = np.frombuffer(data, np.uint8)
    even, odd = arr[0::2], arr[1::2]
    for codec, zeros, other in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        share = float(np.count_nonzero(zeros == 0)) / len(zeros)
        if share >= 0.7 and np.count_nonzero(other == 0) / len(other) < 0.1:
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                return None
            return Decoded(
                text,
                codec,
                round(share, 3),
                "utf-16-guess",
                (f"decoded as {codec} (no BOM; {share:.0%} of code units ASCII-range), not UTF-8",),
            )
    return None


def _detect(data: bytes) -> Decoded:
    try:
        from charset_normalizer import from_bytes

        matches = from_bytes(data)
        best = matches.best()
        offered = tuple(dict.fromkeys(e for m in matches for e in (m.could_be_from_charset or [m.encoding])))
    except Exception:  # a detector bug must not lose the file
        best, offered = None, ()
    high = int(np.count_nonzero(np.frombuffer(data, np.uint8) > 127))
    evidence = min(1.0, high / _EVIDENCE_BYTES)
    if best is None:
        # The detector gave up (e.g. Polish cp1250 it found too chaotic): a Latin code page
        # whose letters one language writes still reads it right (codepages.py); else latin-1.
        latin = choose_latin(data, ())
        if latin is not None and latin.fit >= _MIN_FIT:
            return _decoded(
                data.decode(latin.encoding), latin.encoding, evidence * latin.fit * latin.separation, latin.language
            )
        return Decoded(
            data.decode("latin-1"),
            "latin-1",
            0.0,
            "fallback",
            ("no encoding detected: decoded as latin-1 (every byte kept); low confidence",),
        )
    candidates = list(best.could_be_from_charset) or [best.encoding]
    encoding = next((e for e in _PREFERRED if e in candidates), best.encoding)
    latin = choose_latin(data, offered) if set(candidates) & LATIN_PAGES else None
    if latin is not None and latin.fit >= _MIN_FIT:
        # A Latin code page: the one whose letters one language writes (codepages.py).
        return _decoded(
            data.decode(latin.encoding), latin.encoding, evidence * latin.fit * latin.separation, latin.language
        )
    guessed = best.language not in ("", "Unknown")
    if high < _EVIDENCE_BYTES // 2 and encoding != "cp1252":
        # Too few non-ASCII bytes to tell code pages apart: the commonest one
        # wins when it decodes (the confidence below stays low and is noted).
        try:
            data.decode("cp1252")
            encoding, guessed = "cp1252", False
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        encoding, text = best.encoding, str(best)
    fit = latin.fit if latin is not None else 1.0  # no language's letters fit: say so
    return _decoded(
        text, encoding, max(0.0, 1.0 - float(best.chaos)) * evidence * fit, best.language if guessed else ""
    )


def _decoded(text: str, encoding: str, confidence: float, language: str) -> Decoded:
    """A detected decoding with its notes (the low-confidence one below ``LOW_CONFIDENCE``)."""
    confidence = round(confidence, 3)
    name = encoding.replace("_", "-")
    notes = [f"decoded as {name} (detected, confidence {confidence:.2f}), not UTF-8"]
    if confidence < LOW_CONFIDENCE:
        notes.append(f"low-confidence decoding as {name}: some text may be wrong")
    return Decoded(text, name, confidence, "detected", tuple(notes), language)


#: Suffixes (without the dot) read as Markdown: their headings are recorded (``metadata["headings"]``).
MARKDOWN_TYPES = ("md", "markdown")

#: Bytes read from the start of a file without a suffix to judge whether it is text.
SNIFF_BYTES = 8192


def binary_reason(data: bytes, d: Decoded) -> str | None:
    """Why ``data`` (decoded as ``d``) is not text, or None when it is.

    Not text: NUL bytes outside a UTF-16/32 decoding (BOM or NUL pattern), or C0 control
    characters other than tab, line ends and form feed in more than max(8, 5 %) of
    the decoded characters.
    """
    if b"\x00" in data and d.method not in ("bom", "utf-16-guess"):
        return f"{data.count(0)} NUL bytes"
    control = len(_CONTROL.findall(d.text))
    if d.text and control > max(8, len(d.text) // 20):
        return f"{control / len(d.text):.0%} control characters"
    return None


def sniff_text(path: str | Path) -> bool:
    """True when a file without a suffix is read as text: its first ``SNIFF_BYTES`` bytes
    decode (``decode``: BOM, UTF-8, or an encoding the detector names, never the latin-1
    fallback) with no ``binary_reason``. An empty file is not text (nothing to judge); a
    file that cannot be opened is (the read that follows reports why)."""
    try:
        with open(path, "rb") as f:
            data = f.read(SNIFF_BYTES)
    except OSError:
        return True
    if not data:
        return False
    d = decode(data)
    return d.method != "fallback" and binary_reason(data, d) is None


def read(path: Path, password: str | None, ocr: OcrSettings | None, max_pages: int) -> ExtractedText:
    """The reader's entry in ``engine.extract.READERS``: ``extract`` calls it with every
    option; plain text takes no password, OCR or page limit; ``file_type`` is the suffix
    (``txt`` for a file without one). ``engine.extract.extract`` documents the result and what it raises."""
    return extract_plain(path, path.suffix.lower()[1:] or "txt")


def extract_plain(path: Path, file_type: str) -> ExtractedText:
    """Read a text / Markdown file (``engine.extract.extract`` documents the result).

    ``metadata``: ``encoding`` (codec name), ``encodingConfidence`` (0..1, see
    ``Decoded``), ``encodingMethod``, and ``encodingLanguage`` when detected.
    Text that is only whitespace gives ``text == ""`` and the note
    ``"only whitespace"`` (``"empty file (0 bytes)"`` for no bytes): it is
    recorded ``empty``, with no chunk, and ``metadata["reasonCode"]`` says
    ``only-whitespace`` / ``empty-file``.

    Raises:
        ExtractError: ``"cannot read: ..."`` (code ``unreadable``) when the file cannot be
            read; code ``binary-content`` when its bytes are not text (``binary_reason``:
            NUL bytes, or control characters in more than 5 % of it; a binary file named
            ``.txt``), so no bytes are passed off as Latin-1 text.
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExtractError("unreadable", f"cannot read: {e}") from None
    d = decode(data)
    why = binary_reason(data, d)
    if why is not None:
        raise ExtractError("binary-content", f"binary-content: the bytes are not text ({why})")
    text = d.text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFKC", text)
    notes = d.notes
    if not text.strip():
        notes += ("only whitespace" if data else "empty file (0 bytes)",)
        text = ""
    metadata = {
        "encrypted": False,
        "encoding": d.encoding,
        "encodingConfidence": d.confidence,
        "encodingMethod": d.method,
    }
    if d.language:
        metadata["encodingLanguage"] = d.language
    if not text:
        metadata["reasonCode"] = "only-whitespace" if data else "empty-file"
    if file_type in MARKDOWN_TYPES and text:
        headings = markdown_headings(text)
        if headings:
            metadata["headings"] = headings  # engine.search.headings
    return ExtractedText(text, words_of(text), (), file_type, notes, metadata)
