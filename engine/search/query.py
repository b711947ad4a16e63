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
    "TimeRange",
    "parse_modified",
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
#: ``heading:"Terms of use"``: a heading with spaces, in double quotes (no ``"`` inside).
_QUOTED_HEADING = re.compile(r'(?<!\S)heading:"([^"]+)"(?!\S)', re.IGNORECASE)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A file modification time window, seconds since the epoch (UTC): ``after <= mtime < before``.

    Either bound may be None (open). Made by ``parse_modified``.
    """

    after: float | None = None
    before: float | None = None

    def holds(self, mtime: float) -> bool:
        """True when ``mtime`` (epoch seconds) lies inside the window."""
        return (self.after is None or mtime >= self.after) and (self.before is None or mtime < self.before)

    def both(self, other: TimeRange | None) -> TimeRange:
        """The window inside both this one and ``other``."""
        if other is None:
            return self
        afters = [a for a in (self.after, other.after) if a is not None]
        befores = [b for b in (self.before, other.before) if b is not None]
        return TimeRange(max(afters) if afters else None, min(befores) if befores else None)


def _instant(text: str) -> tuple[float, float] | None:
    """``(start, end)`` epoch seconds of a day (``YYYY-MM-DD``: that UTC day) or of an
    instant (ISO 8601 date and time, UTC when no offset is given: ``end == start``); None
    when ``text`` is neither."""
    from datetime import datetime, timedelta, timezone

    try:
        if _DAY.fullmatch(text):
            day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc)
            return day.timestamp(), (day + timedelta(days=1)).timestamp()
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp(), when.timestamp()


def parse_modified(value: str) -> TimeRange | None:
    """The window of a ``modified:`` value, or None when it is not one.

    Forms (a day is a UTC calendar day, ``YYYY-MM-DD``; an instant is an ISO 8601 date and
    time, UTC unless it names an offset): ``>D`` after day D (from the next day on; after
    an instant: strictly later), ``>=D`` from D on, ``<D`` before D, ``<=D`` up to the end of
    D, ``D`` that day, ``A..B`` from A to the end of B (either side may be left empty).
    """
    value = value.strip()
    if ".." in value:
        lo, _, hi = value.partition("..")
        a = _instant(lo) if lo else (None, None)
        b = _instant(hi) if hi else (None, None)
        if a is None or b is None or (not lo and not hi):
            return None
        before: float | None = None
        if hi and b[0] is not None and b[1] is not None:
            before = b[1] if b[1] != b[0] else b[1] + 1e-6  # a day: its end; an instant: inclusive
        return TimeRange(a[0], before)
    for op in (">=", "<=", ">", "<", ""):
        if value.startswith(op) and value[len(op) :]:
            span = _instant(value[len(op) :])
            if span is None:
                return None
            start, end = span
            point = start == end
            if op == ">=":
                return TimeRange(start, None)
            if op == ">":
                return TimeRange(end + (1e-6 if point else 0.0), None)
            if op == "<":
                return TimeRange(None, start)
            if op == "<=":
                return TimeRange(None, end + (1e-6 if point else 0.0))
            return TimeRange(start, end + (1e-6 if point else 0.0))
    return None


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
            empty namespace, a ``modified:`` value that is no date); named in the
            envelope's hint, never searched.
        modified: the window of the ``modified:`` tokens (all of them at once), or None.
        headings: ``heading:`` values: a hit's heading path must hold each (``engine.search.headings``).
    """

    text: str
    namespaces: tuple[str, ...] = ()
    qualifier: str | None = None
    ignored: tuple[str, ...] = ()
    modified: TimeRange | None = None
    headings: tuple[str, ...] = ()

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
    token, quotes included, standing alone). ``modified:<window>`` keeps hits whose file
    was modified inside the window (``parse_modified``; repeatable, all apply);
    ``heading:<words>`` or ``heading:"Terms of use"`` keeps hits under a heading holding
    those words (repeatable, all apply).
    """
    namespaces: dict[str, None] = {}
    qualifier = None
    ignored: list[str] = []
    kept: list[str] = []
    modified: TimeRange | None = None
    headings: list[str] = []
    if '"' in query:  # heading:"words with spaces"
        for quoted in _QUOTED_HEADING.finditer(query):
            headings.append(quoted.group(1).strip())
        query = _QUOTED_HEADING.sub(" ", query)
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
        elif key == "modified" and parse_modified(value) is not None:
            modified = parse_modified(value).both(modified)  # type: ignore[union-attr]
        elif key == "heading":
            headings.append(value)
        else:
            ignored.append(part)
    return Scope(
        normal_query(" ".join(kept)),
        tuple(namespaces),
        qualifier,
        tuple(ignored),
        modified,
        tuple(h for h in headings if h),
    )


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
