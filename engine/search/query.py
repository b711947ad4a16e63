"""A query: its grammar, its terms, and its text as the index holds text.

Owns: the query grammar (``parse_query``: ``namespace:<collectionPath>`` tokens, the
``scope:exact|subtree|ancestorsandself`` qualifier, unknown ``key:value`` tokens named in
a hint and never searched as words) and its ``Scope``; ``query_terms``; the one normal
form of a collectionPath argument (``normalise_collection_path``); the NFC/NFD look-alike
forms of a name (``other_forms``, ``forms_found``, ``form_found``); ``normal_query`` (the NFKC normal form every stored text has, from
``engine.extract``: ``"x²"`` -> ``"x2"``, ``"ｶﾀｶﾅ"`` -> ``"カタカナ"``,
``"ﬁnal"`` -> ``"final"``), applied to a query's words before keyword terms,
snippet and mark terms and the embedding (``engine.search.searcher``); and
``embeddable`` (a query longer than the embedder's ``max_input_chars`` is cut
at a word boundary for the vector side only; the keyword side keeps every
term). Imports ``engine.store.fts`` (``MAX_TERMS``) only; no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable

from engine.store.fts import MAX_TERMS

__all__ = [
    "SCOPE_QUALIFIERS",
    "Scope",
    "parse_query",
    "query_terms",
    "normalise_collection_path",
    "normal_query",
    "embeddable",
    "input_limit",
    "cut_hint",
    "other_forms",
    "forms_found",
    "form_found",
]

#: Values of the ``scope:`` qualifier token.
SCOPE_QUALIFIERS = ("exact", "subtree", "ancestorsandself")

_KEY_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*):(\S+)")
#: ``namespace:"Acme Inc/Sub Dir"``: a collection path with spaces, in double quotes (no ``"`` inside).
_QUOTED_NAMESPACE = re.compile(r'(?<!\S)namespace:"([^"]+)"(?!\S)', re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)


def normalise_collection_path(path: str) -> str:
    """The one normal form of a collectionPath argument: no leading, trailing or doubled ``/``.

    ``"ACME/Reports/"`` -> ``"ACME/Reports"``; ``"*"`` stays ``"*"``. Every face
    and tool argument (scope, namespace tokens, get_chunk, read_document)
    goes through here, so a trailing slash is accepted everywhere.
    """
    return "/".join(part for part in path.split("/") if part)


@dataclass(frozen=True, slots=True)
class Scope:
    """A parsed query: the text to rank by and the collections it targets.

    Attributes:
        text: the query without ``key:value`` tokens, words joined by one space, in NFKC
            (``engine.search.query.normal_query``: the form every stored text has).
        namespaces: collectionPaths of ``namespace:`` tokens (normalised), in order, unique.
        qualifier: ``exact | subtree | ancestorsandself`` from a ``scope:`` token, or None.
        ignored: tokens not understood (unknown key, unknown ``scope:`` value,
            empty namespace); named in the envelope's hint, never searched.
    """

    text: str
    namespaces: tuple[str, ...] = ()
    qualifier: str | None = None
    ignored: tuple[str, ...] = ()

    @property
    def namespace(self) -> str | None:
        """The first namespace, or None."""
        return self.namespaces[0] if self.namespaces else None

    @property
    def subtree(self) -> bool:
        """True for ``scope:subtree``."""
        return self.qualifier == "subtree"


def parse_query(query: str) -> Scope:
    """Split ``key:value`` tokens off a query.

    ``namespace:<path>`` adds a target collection (repeatable; leading and trailing ``/``
    accepted: ``namespace:/ACME/content`` is the collection ``ACME/content``); ``scope:exact|subtree|ancestorsandself`` sets the qualifier
    (the last one wins). Any other ``key:value`` token (a key of letters,
    digits, ``_``, ``-`` starting with a letter; a value not starting with
    ``/``, so ``https://...`` stays text; ``namespace:`` alone takes one) and an unknown ``scope:`` value are
    collected in ``ignored``: the caller names them in a hint; they are not
    searched as words. The words kept (``Scope.text``) are put in NFKC
    (``engine.search.query.normal_query``); namespace paths stay as written. A path
    with spaces goes in double quotes: ``namespace:"Acme Inc/Sub Dir"`` (the whole
    token, quotes included, standing alone).
    """
    namespaces: dict[str, None] = {}
    qualifier = None
    ignored: list[str] = []
    kept: list[str] = []
    if '"' in query:  # namespace:"a path with spaces": one token, quotes included
        for quoted in _QUOTED_NAMESPACE.finditer(query):
            ns = normalise_collection_path(quoted.group(1))
            namespaces.setdefault(ns, None) if ns else ignored.append(quoted.group(0))
        query = _QUOTED_NAMESPACE.sub(" ", query)
    for part in query.split():
        m = _KEY_VALUE.fullmatch(part) if ":" in part else None  # a key:value token holds a ':'
        if m is None or (m.group(2).startswith("/") and m.group(1).lower() != "namespace"):
            kept.append(part)
            continue
        key, value = m.group(1).lower(), m.group(2)
        if key == "namespace":
            ns = normalise_collection_path(value)
            if ns:
                namespaces.setdefault(ns, None)
            else:
                ignored.append(part)
        elif key == "scope" and value.lower() in SCOPE_QUALIFIERS:
            qualifier = value.lower()
        else:
            ignored.append(part)
    return Scope(normal_query(" ".join(kept)), tuple(namespaces), qualifier, tuple(ignored))


def query_terms(text: str) -> tuple[str, ...]:
    """Lower-cased word terms of a query (Unicode word characters) after NFKC
    (``normal_query``, as the stored text), in order, unique, at most ``MAX_TERMS``
    (``engine.store.fts``)."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(normal_query(text).lower()):
        seen.setdefault(w, None)
        if len(seen) >= MAX_TERMS:
            break
    return tuple(seen)


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


def input_limit(embedder: Any) -> int:
    """The embedder's ``max_input_chars`` (characters; 0 = no known limit)."""
    return int(getattr(embedder, "max_input_chars", 0) or 0)


def cut_hint(text: str, embedder: Any, mode: str) -> str | None:
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
