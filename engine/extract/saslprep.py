"""SASLprep (RFC 4013) of a password, with the standard library's ``stringprep`` tables.

Owns: ``saslprep``. PDF 2.0 (AES-256, revision 6) encrypts with the
SASLprep-normalised password, so a password typed as the user knows it
(``"S\\u00aaSL\\u00adprep"``) opens the file only after this normalisation
(``"SaSLprep"``). Imports the standard library only.
"""

from __future__ import annotations

import stringprep
import unicodedata

__all__ = ["saslprep"]

_PROHIBITED = (
    stringprep.in_table_c12,  # non-ASCII space (mapped first, so never seen here)
    stringprep.in_table_c21_c22,  # control characters
    stringprep.in_table_c3,  # private use
    stringprep.in_table_c4,  # non-character code points
    stringprep.in_table_c5,  # surrogates
    stringprep.in_table_c6,  # inappropriate for plain text
    stringprep.in_table_c7,  # inappropriate for canonical representation
    stringprep.in_table_c8,  # change display properties / deprecated
    stringprep.in_table_c9,  # tagging characters
)


def saslprep(value: str) -> str:
    """The RFC 4013 "query" form of ``value`` (unassigned code points allowed).

    Steps: non-ASCII spaces (table C.1.2) -> U+0020; "commonly mapped to
    nothing" (B.1, e.g. U+00AD soft hyphen) removed; NFKC; prohibited
    characters (C.1.2, C.2, C.3-C.9) and bidi violations (RFC 3454 section 6)
    rejected.

    Raises:
        ValueError: ``value`` holds a prohibited character or breaks the bidi rule.
    """
    mapped = "".join(" " if stringprep.in_table_c12(ch) else ch for ch in value if not stringprep.in_table_b1(ch))
    text = unicodedata.normalize("NFKC", mapped)
    if not text:
        return text
    for ch in text:
        if any(test(ch) for test in _PROHIBITED):
            raise ValueError(f"SASLprep: prohibited character U+{ord(ch):04X}")
    rand_al = [stringprep.in_table_d1(ch) for ch in text]
    if any(rand_al):
        if any(stringprep.in_table_d2(ch) for ch in text):
            raise ValueError("SASLprep: mixes right-to-left and left-to-right characters")
        if not (rand_al[0] and rand_al[-1]):
            raise ValueError("SASLprep: a right-to-left string must start and end with an RTL character")
    return text
