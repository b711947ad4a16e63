"""Deep links: every page's URL parameters, built and validated in one place.

Owns: the link builders (``page_path``, ``query``, ``go``, ``search_query``)
and the validation of a link's parameters: ``RULES`` (parameter -> rule),
``PARAMS`` (page name -> parameter -> rule, for the parameters each
``explorer.nav.PAGES`` row lists) and ``validate``, which ``explorer/app.py``
runs before the page: each parameter of the URL is checked against its
page's rule; an unknown name is dropped, an unknown value falls back to the
default, an out-of-range number is clamped, text loses control characters
(NUL included) and is cut to ``MAX_TEXT_CHARS``; every change is written
back to ``st.query_params`` and said in a visible notice. Pages then read
clean values with ``explorer.state.qp_*``.

Bounds and choices come from the tool registry (``engine.tools.registry.REGISTRY``
schemas), so the URL accepts what the tool accepts. ``validate_params`` is
the pure core (no Streamlit), tested directly.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from engine.tools.registry import REGISTRY
from explorer import nav, state

__all__ = [
    "RULES",
    "PARAMS",
    "line_range",
    "REPEATED",
    "ZOOMS",
    "MAX_TEXT_CHARS",
    "MAX_PATH_CHARS",
    "MAX_MIN_SCORE",
    "page_path",
    "query",
    "go",
    "search_query",
    "validate_params",
    "validate",
]

#: Longest query text a link may carry, characters.
MAX_TEXT_CHARS = 2000
#: Longest filePath a link may carry, characters.
MAX_PATH_CHARS = 1024
#: Highest ``min`` (minScore) a link may carry: the mode's own score, and keyword BM25 is
#: unbounded (cosine stops at 1, fused RRF at ~0.033: the Explore page says when a link's
#: threshold is above what its mode can score).
MAX_MIN_SCORE = 10_000.0

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_search = REGISTRY["search_chunks"].schema["properties"]
_LIMIT = (int(_search["limit"]["minimum"]), int(_search["limit"]["maximum"]))
_MODES = list(_search["mode"]["enum"])
_KINDS = ["chunks", "documents"]
#: The Source page's zoom levels (multiples of "page width fills the image"); a ``zoom``
#: parameter is clamped to their range and the page snaps it to the nearest level.
ZOOMS = [1.0, 1.5, 2.0, 3.0, 4.0]

Rule = Callable[[str, str, dict[str, Any]], tuple[Any, str | None]]  # (clean value: str, list or None; notice)


def _text(max_chars: int) -> Rule:
    def rule(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
        clean = _CONTROL.sub("", value)
        notes = []
        if clean != value:
            notes.append("control characters removed")
        if len(clean) > max_chars:
            clean = clean[:max_chars]
            notes.append(f"cut to {max_chars} characters")
        return (clean or None), (f"`{name}`: " + ", ".join(notes) if notes else None)

    return rule


def _path(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
    if _CONTROL.search(value) or len(value) > MAX_PATH_CHARS:
        return None, (
            f"`{name}` is not a usable file path (control characters or over {MAX_PATH_CHARS} characters): ignored"
        )
    return value, None


def _choice(options: list[str], default: str | None) -> Rule:
    def rule(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
        if value in options:
            return value, None
        shown = _CONTROL.sub("?", value)[:40]
        return default, (
            f"`{name}={shown}` is not one of {', '.join(options)}: " + (f"using `{default}`" if default else "ignored")
        )

    return rule


def _int(lo: int, hi: int | None, default: int | None) -> Rule:
    def rule(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
        try:
            n = int(value.strip())
        except ValueError:
            shown = _CONTROL.sub("?", value)[:40]
            return (None if default is None else str(default)), (
                f"`{name}={shown}` is not a whole number: " + (f"using {default}" if default is not None else "ignored")
            )
        clamped = max(lo, n if hi is None else min(hi, n))
        if clamped != n:
            return str(
                clamped
            ), f"`{name}={n}` is out of range ({lo}..{hi if hi is not None else '∞'}): clamped to {clamped}"
        return str(n), None

    return rule


def _float(lo: float, hi: float, default: float) -> Rule:
    def rule(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if not math.isfinite(x):
            return str(default), f"`{name}` is not a number: using {default:g}"
        clamped = min(hi, max(lo, x))
        if clamped != x:
            return f"{clamped:g}", f"`{name}={x:g}` is out of range ({lo:g}..{hi:g}): clamped to {clamped:g}"
        return value, None

    return rule


def _collection(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
    known = ctx.get("collections") or []
    if value in known:
        return value, None
    shown = _CONTROL.sub("?", value)[:80]
    return None, (
        f"`{name}`: there is no collection `{shown}` (known: {', '.join(known) if known else 'none'}): ignored"
    )


def _scope(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | list[str] | None, str | None]:
    """One ``scope`` value: ``*`` (every collection) or a known collectionPath, taken whole
    (commas included); a value that is no known path is read as known paths joined by ``,``
    (returned as a list). The parameter repeats, one per path."""
    if value.strip() == "*":
        return "*", None
    known = ctx.get("collections") or []
    whole = value.strip().strip("/")
    if whole in known:
        return whole, None
    parts = [p.strip().strip("/") for p in value.split(",") if p.strip()]
    kept = [p for p in parts if p in known]
    if len(kept) == len(parts) and kept:
        return kept, None
    dropped = (
        ", ".join(f"`{_CONTROL.sub('?', p)[:80]}`" for p in parts if p not in known)
        if kept
        else f"`{_CONTROL.sub('?', whole)[:80]}`"
        if whole
        else "(empty)"
    )
    return (kept or None), (
        f"`{name}`: there is no collection {dropped} (known: {', '.join(known) if known else 'none'}): ignored"
    )


_LINES = re.compile(r"L?(\d{1,9})(?:-L?(\d{1,9}))?", re.IGNORECASE)


def line_range(value: str | None) -> tuple[int, int] | None:
    """``(first, last)`` 1-based lines of a ``lines`` value: ``12-30``, ``L12-L30`` (the
    ``#L12-L30`` form of code hosts), or one line ``12``; None for none or a bad value."""
    m = _LINES.fullmatch((value or "").strip())
    if m is None:
        return None
    first = int(m.group(1))
    last = int(m.group(2) or first)
    if first < 1 or last < first:
        return None
    return first, last


def _lines(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
    got = line_range(value)
    if got is None:
        return None, f"`{name}` takes lines like `12-30` or `12`: ignored"
    return f"{got[0]}-{got[1]}", None


def _flag(name: str, value: str, ctx: dict[str, Any]) -> tuple[str | None, str | None]:
    if value == "1":
        return value, None
    return None, f"`{name}` takes only `1`: ignored"


#: Parameters that may repeat, one value each (``scope=A&scope=B``: one collection path per
#: value, so a path with a comma stays whole); every other parameter keeps its last value.
REPEATED = frozenset({"scope"})

#: parameter -> rule (every page reading the parameter reads it the same way)
RULES: dict[str, Rule] = {
    # the search (nav.SEARCH)
    "q": _text(MAX_TEXT_CHARS),
    "scope": _scope,
    "kind": _choice(_KINDS, "chunks"),
    "mode": _choice(_MODES, "auto"),
    "limit": _int(_LIMIT[0], _LIMIT[1], 10),
    "hit": _int(0, _LIMIT[1] - 1, None),
    # one chunk (nav.CHUNK)
    "c": _collection,
    "f": _path,
    "i": _int(0, None, 0),
    # Explore index: threshold, vector weight, compare modes, the file list
    "min": _float(0.0, MAX_MIN_SCORE, 0.0),
    "w": _float(0.0, 1.0, 0.5),
    "match": _float(0.0, 1.0, 0.0),  # the least match (0..1) a hit shows with
    "cmp": _flag,
    "files": _collection,
    "doc": _path,
    # Chunk and Source
    "full": _flag,
    "p": _int(1, None, None),
    "zoom": _float(min(ZOOMS), max(ZOOMS), 1.0),
    "view": _choice(["around", "page"], None),  # around the highlight | whole pages
    "lines": _lines,  # text views: lines marked and scrolled to (12-30)
}

#: page name (its url_path) -> parameter name -> rule
PARAMS: dict[str, dict[str, Rule]] = {p.name: {n: RULES[n] for n in p.params} for p in nav.PAGES}


def validate_params(page: str, params: dict[str, str], collections: list[str]) -> tuple[dict[str, str], list[str]]:
    """Check one page's query parameters.

    Args:
        page: the page's url_path (a ``PARAMS`` key; others accept no parameters).
        params: name -> value as the URL gave them (a list for a parameter given more
            than once: ``REPEATED`` ones check each value, others keep the last).
        collections: the known collectionPaths (for ``c``, ``files`` and ``scope``; ``scope`` may
            also be ``*``, repeat once per path, or join paths by ``,``).

    Returns:
        ``(clean, notices)``: the parameters to keep (changed values
        included; a ``REPEATED`` one with several values as a list), and one
        sentence per change, for people.
    """
    rules = PARAMS.get(page, {})
    clean: dict[str, str | list[str]] = {}
    notices: list[str] = []
    ctx = {"collections": collections}
    for name, value in params.items():
        rule = rules.get(name)
        if rule is None:
            shown = _CONTROL.sub("?", name)[:40]
            notices.append(f"`{shown}` is not a parameter of this page: ignored")
            continue
        if name in REPEATED:  # every value checked; kept in order, without repeats
            kept: list[str] = []
            for item in value if isinstance(value, list) else [value]:
                new, note = rule(name, str(item), ctx)
                if note:
                    notices.append(note)
                for v in new if isinstance(new, list) else [new]:
                    if v not in (None, "") and v not in kept:
                        kept.append(v)
            if "*" in kept and len(kept) > 1:
                notices.append(f"`{name}`: `*` (every collection) already includes the others: using `*`")
                kept = ["*"]
            if kept:
                clean[name] = kept[0] if len(kept) == 1 else kept
            continue
        new, note = rule(name, str(value[-1] if isinstance(value, list) else value), ctx)
        if note:
            notices.append(note)
        if new not in (None, ""):
            clean[name] = new
    return clean, notices


def validate(page: str, collections: list[str]) -> list[str]:
    """Validate ``st.query_params`` for ``page`` in place and show the notices.

    Returns:
        The notices shown (one ``st.warning`` listing them when there are any).
    """

    def now(k: str) -> str | list[str] | None:
        if k in REPEATED:
            values = st.query_params.get_all(k)
            return values[0] if len(values) == 1 else values or None
        return st.query_params.get(k)

    given = {k: now(k) for k in list(st.query_params.keys())}
    clean, notices = validate_params(page, {k: v for k, v in given.items() if v is not None}, collections)
    if clean != given:
        for k in list(st.query_params.keys()):
            if k not in clean:
                del st.query_params[k]
        for k, v in clean.items():
            if now(k) != v:
                st.query_params[k] = v
    if notices:
        st.warning(
            "**This link had parameters that were changed.**\n\n" + "\n".join(f"- {n}" for n in notices),
            icon=":material/link_off:",
        )
    return notices


# -- building links ----------------------------------------------------------------
def page_path(name: str) -> Path:
    """Absolute path of page ``name``'s script, for ``st.switch_page`` / ``st.page_link``."""
    return state.PAGES_DIR / nav.page(name).file


def query(name: str, **params: Any) -> dict[str, str | list[str]]:
    """The query parameters of a link to page ``name``.

    Args:
        name: a ``nav.PAGES`` name.
        params: parameter -> value; None, ``""`` and ``[]`` are left out, a list
            or tuple becomes one repeated parameter per item, anything else text.

    Raises:
        ValueError: a parameter the page does not read (its ``nav.PAGES`` row).
    """
    unknown = sorted(set(params) - set(nav.page(name).params))
    if unknown:
        raise ValueError(f"page {name!r} reads no URL parameter {', '.join(unknown)}")
    return {
        k: [str(x) for x in v] if isinstance(v, (list, tuple)) else str(v)
        for k, v in params.items()
        if v is not None and v != "" and v != []
    }


def go(name: str, **params: Any) -> None:
    """Switch to page ``name`` with ``query(name, **params)`` in its URL."""
    st.switch_page(page_path(name), query_params=query(name, **params))


def search_query() -> dict[str, str | list[str]]:
    """The search the current URL carries (``nav.SEARCH``: ``scope`` repeated, one per
    path), for a link back to its results."""
    out: dict[str, str | list[str]] = {}
    for k in nav.SEARCH:
        values = [str(v) for v in st.query_params.get_all(k) if v not in (None, "")]
        if values:
            out[k] = values if k in REPEATED else values[-1]
    return out
