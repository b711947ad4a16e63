"""Retrieval-testing widgets of the Explore page: scope picker values, score
breakdown, the side-by-side mode comparison and a collection's file list.

Owns: how the page's scope choice ("All collections" or a multi-select) becomes
the ``scope`` argument and the ``scope`` deep-link parameter; the threshold
slider's range per mode (``score_scale``: cosine, BM25, fused RRF); the one-line
score breakdown of a hybrid hit; the comparison of one query in vector,
keyword and hybrid mode (three ``search``/``search_chunks`` calls); the file
list of a collection (``list_documents``) with a document node
(``get_document``). Every engine call goes through ``widgets.run_tool``, so
each has its own "This maps to a tool call" panel. Imports the engine's
registry only through ``explorer.widgets``; no SQL, no store access.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from engine.search.searcher import RRF_K

from explorer import links, widgets
from explorer.table import table

__all__ = [
    "ALL",
    "COMPARED_MODES",
    "ScoreScale",
    "SCORE_SCALES",
    "HYBRID_TOP",
    "score_scale",
    "scope_param",
    "scope_paths",
    "scope_from_param",
    "scope_argument",
    "breakdown",
    "compare_modes",
    "file_list",
    "show",
    "HITS_PER_SCREEN",
    "READ_ONLY_LIMIT",
    "EXPLORER_MAX_TOKENS",
    "allowed_limit",
    "by_match",
    "search_key",
    "hits_shown",
    "show_more",
    "lines_param",
]

#: Hits drawn at once; "Show more" draws as many again (a limit of 1000 never draws 1000 rows at once).
HITS_PER_SCREEN = 50
#: Most hits a read-only (shared) explorer asks for, whatever a link says.
READ_ONLY_LIMIT = 200
#: The ``maxTokens`` of the explorer's searches: a person reads whole hits (snippets and
#: regions) and pages with "Show more"; the agents' default budget would cut them.
EXPLORER_MAX_TOKENS = 1_000_000


def allowed_limit(asked: int, read_only: bool) -> int:
    """The ``limit`` a search is run with: ``asked``, at most ``READ_ONLY_LIMIT`` in a
    read-only explorer."""
    return min(asked, READ_ONLY_LIMIT) if read_only else asked


def by_match(hits: list[dict[str, Any]], least: float) -> tuple[list[dict[str, Any]], int]:
    """``(hits kept, number hidden)``: hits whose ``match`` (0..1, in the envelope) is below
    ``least`` are hidden; a hit without ``match`` is kept. ``least`` 0 keeps every hit."""
    if least <= 0:
        return hits, 0
    kept = [h for h in hits if h.get("match") is None or float(h["match"]) >= least]
    return kept, len(hits) - len(kept)


def search_key(args: dict[str, Any]) -> str:
    """One search's identity (its arguments): "Show more" counts per search."""
    import json

    return "hits_shown:" + json.dumps(args, sort_keys=True, default=str)


def hits_shown(key: str, total: int, selected: int | None = None) -> int:
    """How many of ``total`` hits to draw now: ``HITS_PER_SCREEN``, more after each
    "Show more" of the same search, and at least up to the selected hit (a deep link's ``hit``)."""
    n = int(st.session_state.get(key, HITS_PER_SCREEN))
    if selected is not None and selected >= n:
        n = (selected // HITS_PER_SCREEN + 1) * HITS_PER_SCREEN
    return min(total, n)


def _more(key: str, shown: int) -> None:
    st.session_state[key] = shown + HITS_PER_SCREEN


def show_more(key: str, shown: int, total: int) -> None:
    """The "Show more" button under a partly drawn hit list (nothing when all are drawn)."""
    if shown >= total:
        return
    st.button(
        f"Show more ({shown} of {total} shown)",
        key="show_more",
        icon=":material/expand_more:",
        on_click=_more,
        args=(key, shown),
    )


def lines_param(hit: dict[str, Any]) -> str | None:
    """The ``lines`` deep-link value of a hit carrying line numbers (``12-30``), else None."""
    if hit.get("lineStart") is None:
        return None
    return f"{hit['lineStart']}-{hit.get('lineEnd', hit['lineStart'])}"


#: The ``scope`` value (and deep-link parameter) meaning every collection.
ALL = "*"
#: Modes run side by side by ``compare_modes``.
COMPARED_MODES = ("vector", "keyword", "hybrid")


def scope_param(all_collections: bool, picked: list[str]) -> str | list[str] | None:
    """The ``scope`` deep-link parameter: ``*``, the picked paths as a list (written as one
    repeated ``scope=`` parameter per path, so a path with a comma stays whole), or None."""
    if all_collections:
        return ALL
    return list(picked) or None


def _values(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def scope_paths(value: str | list[str] | None, known: list[str]) -> list[str]:
    """The collection paths a ``scope`` parameter names, in order, without repeats.

    Args:
        value: every ``scope`` value of the URL (a repeated parameter: one path each), or one.
        known: the known collectionPaths.

    Returns:
        Each value that is a known path, taken whole (commas and spaces included); a value
        that is not one is read as known paths joined by ``,``.
        Unknown paths are dropped; ``*`` is not a path (see ``scope_from_param``).
    """
    out: list[str] = []
    for v in _values(value):
        whole = v.strip().strip("/")
        parts = [whole] if whole in known else [p.strip().strip("/") for p in v.split(",")]
        out += [p for p in parts if p in known and p not in out]
    return out


def scope_from_param(value: str | list[str] | None, known: list[str]) -> tuple[bool, list[str]]:
    """``(all collections?, picked paths)`` from the ``scope`` parameter(s); unknown paths are dropped."""
    if any(v.strip() == ALL for v in _values(value)):
        return True, []
    return False, scope_paths(value, known)


def scope_argument(value: str | list[str] | None) -> str | list[str] | None:
    """The tool's ``scope`` argument for ``scope_param``'s value: ``"*"``, one path, a list, or None."""
    paths = [p for p in _values(value) if p]
    if ALL in paths:
        return ALL
    if not paths:
        return None
    return paths[0] if len(paths) == 1 else paths


@dataclass(frozen=True, slots=True)
class ScoreScale:
    """The threshold slider of one ranking mode: 0..``top`` in steps of ``step`` (the mode's
    own score units), shown with ``fmt``; ``bounded``: no score can pass ``top``."""

    mode: str
    top: float
    step: float
    fmt: str
    bounded: bool
    meaning: str


#: The highest fused score: a chunk first in both lists, ``2w/(k+1) + 2(1-w)/(k+1)``.
HYBRID_TOP = 2.0 / (RRF_K + 1)
#: mode -> its threshold slider (keyword BM25 is unbounded: its top is only the slider's end).
SCORE_SCALES = {
    "vector": ScoreScale("vector", 1.0, 0.01, "%.2f", True, "cosine similarity, at most 1"),
    "keyword": ScoreScale(
        "keyword", 25.0, 0.1, "%.1f", False, "BM25, unbounded (typically 2-20 for a few words; more for long queries)"
    ),
    "hybrid": ScoreScale(
        "hybrid",
        round(HYBRID_TOP, 4),
        0.0005,
        "%.4f",
        True,
        f"fused reciprocal rank, at most 2/({RRF_K}+1) = {HYBRID_TOP:.4f}",
    ),
}


def score_scale(mode: str | None, resolve: Callable[[], str] | None = None) -> ScoreScale:
    """The threshold slider for a search mode. ``auto`` runs hybrid or keyword (the engine
    decides: a provider and vectors for its model); ``resolve()`` answers which, or without
    it auto is scaled as hybrid."""
    if mode == "auto" or mode not in SCORE_SCALES:
        mode = resolve() if resolve is not None else "hybrid"
    return SCORE_SCALES.get(mode or "hybrid", SCORE_SCALES["hybrid"])


def breakdown(hit: dict[str, Any], score_kind: str | None) -> str | None:
    """The score line of a hit: fused score with each list's score and rank (hybrid),
    or the score with its kind; None when there is nothing beyond ``score``."""
    if "vectorRank" not in hit and "keywordRank" not in hit:
        return None
    parts = [f"fused ({score_kind or 'rrf'}) {hit['score']:.5f}"]
    parts.append(
        f"vector {hit['vectorScore']:.4f} (#{hit['vectorRank']})" if "vectorRank" in hit else "vector: not in its list"
    )
    parts.append(
        f"keyword {hit['keywordScore']:.4f} (#{hit['keywordRank']})"
        if "keywordRank" in hit
        else "keyword: not in its list"
    )
    return " · ".join(parts)


def _key(hit: dict[str, Any], per_file: bool) -> tuple:
    base = (hit["collectionPath"], hit["filePath"])
    return base if per_file else (*base, hit.get("chunkIndex"))


def show(rows: list[dict[str, Any]]) -> None:
    """The comparison rows as a table (``explorer.table``: Markdown, no Arrow)."""
    table(rows)


def compare_modes(
    tool: str, arguments: dict[str, Any], threshold_mode: str | None = None
) -> dict[str, dict[str, Any] | None]:
    """Run the same search in each of ``COMPARED_MODES`` and show which hits each found.

    Args:
        tool: ``search`` or ``search_chunks``.
        arguments: the page's search arguments; ``mode`` is replaced per column
            (``vectorWeight`` is kept for hybrid only).
        threshold_mode: the mode whose score ``minScore`` is in (``score_scale``); the
            other columns run without it (a BM25 threshold means nothing for cosine or RRF).

    Returns:
        mode -> envelope (None when the arguments were refused).
    """
    envelopes: dict[str, dict[str, Any] | None] = {}
    per_file = tool == "search"
    cols = st.columns(len(COMPARED_MODES))
    for col, mode in zip(cols, COMPARED_MODES):
        args = {**arguments, "mode": mode}
        if mode != "hybrid":
            args.pop("vectorWeight", None)
        if mode != threshold_mode:
            args.pop("minScore", None)
        with col:
            st.markdown(f"**{mode}**")
            env = widgets.run_tool(tool, args, label=f"{mode}: this maps to a tool call")
            envelopes[mode] = env
            if env is None or env.get("error") or not env.get("searched"):
                st.caption(
                    (env or {}).get("error") or (env or {}).get("hint") or (env or {}).get("message") or "not searched"
                )
            else:
                st.caption(f"{env['count']} hits · score `{env.get('scoreKind')}`")
    rows: dict[tuple, dict[str, Any]] = {}
    for mode, env in envelopes.items():
        for h in (env or {}).get("hits", []) if env and env.get("searched") else []:
            row = rows.setdefault(
                _key(h, per_file),
                {
                    "filePath": h["filePath"],
                    "chunk": h.get("chunkIndex"),
                    "page": h.get("page"),
                    **{m: None for m in COMPARED_MODES},
                },
            )
            row[mode] = h["rank"]
    if rows:
        rows_out = []
        for row in rows.values():
            found = [m[0].upper() for m in COMPARED_MODES if row[m] is not None]
            rows_out.append({**row, "found by": " ".join(found)})
        rows_out.sort(key=lambda r: min(r[m] if r[m] is not None else 10**9 for m in COMPARED_MODES))
        st.caption(
            "Rank of each hit in each mode (blank: that mode did not return it); V = vector, K = keyword, H = hybrid."
        )
        show(rows_out)
    return envelopes


def file_list(collection: str, selected: str | None = None) -> dict[str, Any] | None:
    """A collection's files (``list_documents``) and, for ``selected``, its document node.

    Shows the table (filePath, type, pages, chunks, status and reason,
    encoding, OCR pages), a file picker whose choice calls ``get_document``
    (panel shown), and a button opening that file's first chunk.

    Returns:
        The ``list_documents`` envelope, or None when refused.
    """
    env = widgets.run_tool("list_documents", {"collectionPath": collection})
    if env is None:
        return None
    if not env.get("found"):
        st.info(env.get("message", ""), icon=":material/info:")
        return env
    rows = [
        {
            "filePath": d["filePath"],
            "type": d["fileType"],
            "pages": d["pageCount"],
            "chunks": d["chunkCount"],
            "status": d["status"],
            "reason": d.get("reason", ""),
            "encoding": d.get("encoding", ""),
            "OCR pages": ", ".join(str(p) for p in d.get("ocrPages", [])),
            "also at": ", ".join(d.get("aliases", [])),
            "documentPath": d["documentPath"],
        }
        for d in env["documents"]
    ]
    st.caption(
        f"{env['total']} files in `{collection}`"
        + (f" (first {env['count']}; nextOffset {env['nextOffset']})" if env.get("nextOffset") else "")
    )
    table(rows)
    files = [d["filePath"] for d in env["documents"]]
    if not files:
        return env
    pick = st.selectbox(
        "Document",
        files,
        key="doc",
        index=files.index(selected) if selected in files else 0,
        help="its document node (get_document) and its chunks",
    )
    doc = next(d for d in env["documents"] if d["filePath"] == pick)
    node = widgets.run_tool(
        "get_document", {"documentPath": doc["documentPath"]}, label="get_document: this maps to a tool call"
    )
    if node is not None and node.get("found"):
        st.markdown(
            f"**{node['filePath']}** · `{node['status']}`"
            + (f" ({node['reason']})" if node.get("reason") else "")
            + f" · {node['chunkCount']} chunks · {node['pageCount']} pages"
        )
        if node.get("summary"):
            st.caption(" ".join(node["summary"].split())[:300])
        if st.button(
            "Open its chunks", key="doc-chunks", icon=":material/article:", disabled=not node.get("chunkCount")
        ):
            links.go("chunk", c=collection, f=pick, i=0)
    return env
