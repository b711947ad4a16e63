"""Shared explorer widgets: tool calls with their panel, failure callouts, hits,
marked text, the chunk and document views (the index run and Status views:
``explorer.run_views``; the Source page's panels: ``explorer.source_view``).

Owns: ``run_tool`` (every page calls the engine through it: one
``engine.tools.registry.call_tool`` per action, shown in the "This maps to a tool call"
expander built from ``REGISTRY`` and ``cli_command``, never written per page),
the failure callouts (one per error code, with who can fix it from
``engine.errors.WHO_FIXES``), hit rows, text with query words or spans
marked, a document's file confined to its collection root, and the Chunk
page's views. Links to other pages come from ``explorer.links``.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import streamlit as st

from engine.errors import WHO_FIXES, ChunknavError
from engine.paths import resolve_inside
from engine.secrets import public_dsn, redact, redact_obj
from engine.search.searcher import parse_query, query_terms, shown_terms
from engine.search.snippets import term_spans
from engine.tools.registry import REGISTRY, ToolArgumentError, call_tool, cli_command, to_json
from explorer import links, state
from explorer.where import file_state_badge, lines_label, position_words

__all__ = [
    "selected_chunk",
    "run_tool",
    "tool_call_panel",
    "failure_callout",
    "search_outcome",
    "hit_row",
    "mark_terms",
    "marked_terms",
    "query_marks",
    "marked_block",
    "TEXT_STYLE",
    "show_calls",
    "overlap_caption",
    "source_file",
    "provenance_line",
    "raw_provenance",
    "provenance_details",
    "scroll_to_line",
    "chunk_view",
    "document_view",
    "FAILURE_TITLES",
]


def selected_chunk(button: str) -> tuple[str, str, int]:
    """The chunk named by the URL (``c``, ``f``, ``i``); with none, a pointer to
    Explore index (whose hits carry a ``button`` button) and ``st.stop()``."""
    c, f, i = state.qp_get("c"), state.qp_get("f"), state.qp_int("i", 0)
    if not c or not f:
        st.info(f"No chunk selected: open one from **Explore index** (a hit's *{button}*).")
        st.page_link(links.page_path("explore"), label="Explore index", icon=":material/search:")
        st.stop()
    return c, f, int(i or 0)


# -- tool calls -----------------------------------------------------------------
def run_tool(
    name: str, arguments: dict[str, Any], panel: bool = True, label: str = "This maps to a tool call"
) -> dict[str, Any] | None:
    """Call one registry tool on the shared Engine and show the call.

    Args:
        name: a ``REGISTRY`` tool name.
        arguments: the exact arguments passed (shown as sent).
        panel: draw the "This maps to a tool call" expander.

    Returns:
        The envelope (parsed JSON, as every face returns it), or None when the
        arguments broke the schema (shown as an ``invalid-argument`` callout).
    """
    try:
        envelope = call_tool(state.engine(), name, arguments)
    except ToolArgumentError as e:
        failure_callout({"error": "invalid-argument", "message": str(e)})
        envelope = None
    if panel:
        tool_call_panel(name, arguments, envelope, label)
    return envelope


def tool_call_panel(
    name: str, arguments: dict[str, Any], envelope: Any, label: str = "This maps to a tool call"
) -> None:
    """The expander with the exact call, its ``chunknav`` command line and the envelope;
    nothing while the "Show as tool call" switch is off (``show_calls``)."""
    if not show_calls():
        return
    tool = REGISTRY[name]
    with st.expander(label, expanded=False, icon=":material/terminal:"):
        st.caption(f"Tool `{tool.name}` (the same function the CLI and the MCP server call): {tool.description}")
        st.markdown("**Call** (MCP `tools/call` params)")
        st.code(redact(to_json({"name": name, "arguments": arguments}, indent=2)), language="json")
        st.markdown("**Command line**")
        settings = state.settings()
        st.code(redact(cli_command(name, arguments, settings)), language="bash")
        if settings.dsn and public_dsn(settings.dsn) != settings.dsn:
            st.caption("The database password is not shown: set `PGPASSWORD` (or `~/.pgpass`) to run it.")
        st.markdown("**Envelope returned**")
        st.code(redact(to_json(envelope, indent=2)) if envelope is not None else "null", language="json")


# -- failures -----------------------------------------------------------------------
#: error code -> (headline, callout kind)
FAILURE_TITLES: dict[str, tuple[str, str]] = {
    "embedding-credential-rejected": ("Could not search: the embedding server refused the credential", "error"),
    "embedding-request-rejected": ("Could not search: the embedding server refused the request", "error"),
    "embedding-unavailable": ("Could not search: the embedding server did not answer", "warning"),
    "search-not-performed": ("Search not performed: no embedding provider is configured", "warning"),
    "index-busy": ("Another index run is active", "warning"),
    "not-found": ("Not found", "error"),
    "invalid-argument": ("Invalid argument", "error"),
    "path-escape": ("Refused: the file path leaves the collection root", "error"),
    "root-refused": ("Refused: that directory may not hold a collection", "error"),
    "collection-bound": ("That collection path is bound to another directory", "warning"),
    "disk-full": ("Stopped: the disk holding the index is full", "error"),
    "index-unavailable": ("The index cannot be read or written", "error"),
    "store-busy": ("Stopped: another process held the index's writer lock too long", "warning"),
}


def failure_callout(envelope: dict[str, Any]) -> None:
    """A plain callout for an envelope (or probe) carrying ``error``: what happened,
    the code, who can fix it, and the provider's endpoint/model/status/body."""
    envelope = redact_obj(envelope)  # engine.secrets: callouts never show a configured secret
    code = str(envelope.get("error"))
    title, kind = FAILURE_TITLES.get(code, (f"Failed: {code}", "error"))
    lines = [
        f"**{title}.** {envelope.get('message', '')}".strip(),
        f"Error code: `{code}`"
        + (f" · HTTP status {envelope['statusCode']}" if envelope.get("statusCode") is not None else ""),
    ]
    who = envelope.get("whoFixes") or WHO_FIXES.get(code)
    if who:
        lines.append(f"**Who can fix it:** {who}.")
    details = [f"{k}: `{envelope[k]}`" for k in ("endpoint", "model") if envelope.get(k)]
    if details:
        lines.append(" · ".join(details))
    if envelope.get("responseBody"):
        body = str(envelope["responseBody"])[:500].replace("`", "'")
        lines.append(f"Server said: `{body}`")
    getattr(st, kind)("\n\n".join(lines), icon=":material/error:" if kind == "error" else ":material/warning:")


def search_outcome(envelope: dict[str, Any]) -> bool:
    """Render what a search envelope says about itself; True when there are hits to list.

    "Searched, 0 hits" (an info line naming the collections) never looks like
    "could not search" (an error/warning callout with the code).
    """
    if envelope.get("error"):
        failure_callout(envelope)
        return False
    colls = ", ".join(f"`{c}`" for c in envelope.get("collections", [])) or "none"
    if not envelope.get("searched"):
        st.info(f"**Not searched.** {envelope.get('hint') or envelope.get('message') or ''}", icon=":material/info:")
        return False
    if envelope.get("confident") is False and envelope.get("count", 0) > 0:
        st.warning(
            "**No confident match.** None of these hits holds all the query's words or is close in "
            "meaning: they are the nearest there are, not an answer.",
            icon=":material/help:",
        )
    if envelope.get("message"):
        st.caption(envelope["message"])
    if envelope.get("count", 0) == 0:
        st.info(
            f"**Searched, 0 hits.** Collections searched: {colls}; mode `{envelope.get('mode')}`. "
            "Nothing matched: try other words or another scope.",
            icon=":material/search_off:",
        )
        return False
    st.caption(
        f"Searched {colls} · mode `{envelope.get('mode')}` · score `{envelope.get('scoreKind')}`"
        + (f" · model `{envelope['model']}`" if envelope.get("model") else "")
        + f" · {envelope['count']} hits"
    )
    return True


# -- text ------------------------------------------------------------------------
#: CSS of the text views and snippets: the chunk outlined in orange, overlaps tinted blue,
#: the query's words (``<mark>``) in violet with an underline (apart from the chunk's own
#: highlight), page breaks as a dashed rule, line numbers in a gutter.
TEXT_STYLE = (
    "<style>.cn-text{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:0.85rem;"
    "line-height:1.45;padding:0.6rem;border:1px solid #ddd;border-radius:6px}"
    ".cn-ovl{background:#dbeafe;border-bottom:2px solid #3b82f6}"
    ".cn-span{background:#fde68a;outline:2px solid #ea580c;box-decoration-break:clone;"
    "-webkit-box-decoration-break:clone}"
    ".cn-span .cn-ovl{background:#bfdbfe}"
    ".cn-text mark,.cn-snippet mark{background:#ddd6fe;color:inherit;border-bottom:2px solid #6d28d9;"
    "padding:0 1px;border-radius:2px}"
    ".cn-pb{display:block;border-top:1px dashed #9ca3af;color:#6b7280;font-size:0.72rem;margin:0.2rem 0}"
    ".cn-lno::before{content:attr(data-n);display:inline-block;width:3.2em;margin-right:0.8em;"
    "text-align:right;color:#9ca3af;user-select:none}"
    ".cn-lsel::before{color:#c2410c;font-weight:700;background:#ffedd5}</style>"
)
#: What a page break (form feed) of the extracted text is shown as.
PAGE_BREAK_HTML = '<span class="cn-pb" title="page break (form feed)">page break</span>'


def query_marks(query: str) -> tuple[str, ...]:
    """The terms marked for ``query``: ``engine.search.searcher.query_terms`` of the query
    without its ``namespace:``/``scope:`` tokens, without English stop words unless only
    those are left (``shown_terms``, as the snippets are placed)."""
    return shown_terms(query_terms(parse_query(query or "").text))


def marked_terms(text: str, query: str) -> list[tuple[int, int]]:
    """Where the query's words are in ``text`` (``engine.search.snippets.term_spans``: the
    keyword index's form, so ``cafe`` marks ``café``), ``(start, end)`` offsets in order."""
    terms = query_marks(query)
    return term_spans(text, terms) if terms else []


def mark_terms(text: str, query: str) -> str:
    """HTML of ``text`` (escaped) with the query's words in ``<mark>`` (``marked_terms``)."""
    spans = marked_terms(text, query)
    if not spans:
        return html.escape(text)
    out, pos = [], 0
    for a, b in spans:
        out.append(html.escape(text[pos:a]))
        out.append(f"<mark>{html.escape(text[a:b])}</mark>")
        pos = b
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _segments(text: str, lo: int, hi: int, spans: list[tuple[int, int, str]], query: str) -> str:
    """HTML of ``text[lo:hi]`` with the ``spans`` (clipped to it) wrapped in their classes."""
    pieces, pos = [], lo
    for start, end, cls in sorted(spans):
        start, end = max(start, pos), min(end, hi)
        if end <= start:
            continue
        pieces.append(mark_terms(text[pos:start], query))
        pieces.append(f'<span class="cn-{cls}">{mark_terms(text[start:end], query)}</span>')
        pos = end
    pieces.append(mark_terms(text[pos:hi], query))
    return "".join(pieces)


def _numbered(body: str, first_line: int, lines: tuple[int, int] | None) -> str:
    """``body`` (HTML whose ``\n`` are the text's line ends) with a line-number gutter mark
    (``<span class="cn-lno" id="cn-L<n>">``) at the start of each line; lines in ``lines``
    (first, last) are marked ``cn-lsel``."""
    out = []
    for k, part in enumerate(body.split("\n")):
        n = first_line + k
        sel = " cn-lsel" if lines and lines[0] <= n <= lines[1] else ""
        out.append(f'<span class="cn-lno{sel}" id="cn-L{n}" data-n="{n}"></span>{part}')
    return "\n".join(out)


def marked_block(
    text: str,
    spans: list[tuple[int, int, str]],
    query: str = "",
    height_px: int | None = None,
    *,
    outline: tuple[int, int] | None = None,
    first_line: int | None = None,
    lines: tuple[int, int] | None = None,
) -> None:
    """Show ``text`` preformatted with character spans marked.

    Args:
        text: the text shown.
        spans: ``(start, end, css_class)`` character offsets into ``text``,
            non-overlapping, classes ``ovl`` (overlap with a neighbour) or
            ``span`` (the chunk inside a document).
        query: words also marked inside the text (``<mark>``, violet).
        height_px: scroll box height; None = as tall as the text.
        outline: ``(start, end)`` of the whole chunk, outlined in orange with the
            ``spans`` tinted inside it.
        first_line: the 1-based line number of ``text``'s first line: a gutter of line
            numbers is shown (each line's mark has the id ``cn-L<n>``); None = no gutter.
        lines: ``(first, last)`` lines marked in the gutter (a deep link's ``lines``).

    Page breaks (form feeds) are shown as a dashed rule labelled "page break".
    """
    text = text.replace("\r", "")
    if outline is not None:
        a, b = max(0, outline[0]), min(len(text), outline[1])
        body = (
            _segments(text, 0, a, spans, query)
            + f'<span class="cn-span">{_segments(text, a, b, spans, query)}</span>'
            + _segments(text, b, len(text), spans, query)
        )
    else:
        body = _segments(text, 0, len(text), spans, query)
    body = body.replace("\x0c", PAGE_BREAK_HTML)
    if first_line is not None:
        body = _numbered(body, first_line, lines)
    style = f"max-height:{height_px}px;overflow-y:auto;" if height_px else ""
    # one line of raw HTML: a blank line would end the HTML block and let
    # Markdown reinterpret the text (backticks, *, |); pre-wrap shows &#10; as a line break
    body = body.replace("\n", "&#10;")
    st.markdown(TEXT_STYLE + f'<div class="cn-text" style="{style}">{body}</div>', unsafe_allow_html=True)


def scroll_to_line(line: int) -> None:
    """Scroll the text view's box (and the page) to line ``line`` of its gutter
    (``marked_block`` with ``first_line``), once it is drawn."""
    st.html(
        "<script>(function(){let n=0;const t=setInterval(function(){"
        f"const el=window.parent.document.getElementById('cn-L{int(line)}')||document.getElementById('cn-L{int(line)}');"
        "if(el){clearInterval(t);const box=el.closest('.cn-text');"
        "if(box){box.scrollTop=Math.max(0,el.offsetTop-box.offsetTop-24);}"
        "el.scrollIntoView({block:'center'});}else if(++n>100){clearInterval(t);}},100);})();</script>",
        unsafe_allow_javascript=True,
    )


def show_calls() -> bool:
    """True when the "Show as tool call" switch (sidebar) is on: every tool call's panel
    (arguments, command line, envelope) is drawn. On by default, except in a read-only
    explorer (a shared one, read by analysts)."""
    if "show_calls" not in st.session_state:
        st.session_state["show_calls"] = not state.settings().read_only
    return bool(st.session_state["show_calls"])


# -- hits --------------------------------------------------------------------------
def hit_row(hit: dict[str, Any], query: str, key: str, selected: bool = False, detail: str | None = None) -> str | None:
    """One search hit: rank, match (or score), file, where it is in words (page and
    position, or lines), a badge when its file changed or vanished, the snippet with the
    query's words marked, and buttons. Raw coordinates and offsets are one click away
    (the "Where exactly" popover).

    Args:
        detail: an extra caption under the snippet (the Explore page's score breakdown).

    Returns:
        ``"chunk"`` or ``"source"`` when that button was clicked, else None.
    """
    with st.container(border=True):
        left, mid, right = st.columns([1.1, 7, 2.2], vertical_alignment="center")
        left.markdown(f"**#{hit['rank']}**" + (" ◀" if selected else ""))
        score = f"score {hit['score']:.4f}"
        left.caption(f"match {float(hit['match']):.2f} · {score}" if hit.get("match") is not None else score)
        badge = ""
        if hit.get("page") is not None:
            label = hit.get("pageLabel")
            last = max([r["page"] for r in hit.get("regions") or []] + [hit["page"]])
            span = f"{hit['page']}–{last}" if last > hit["page"] else f"{hit['page']}"
            badge = f" :orange-badge[p. {span}{f' ({label})' if label else ''}]"
        elif hit.get("lineStart") is not None:
            badge = f" :blue-badge[{lines_label(hit)}]"
        badge += file_state_badge(hit)
        idx = f" · chunk {hit['chunkIndex']}" if hit.get("chunkIndex") is not None else ""
        mid.markdown(f"`{hit['collectionPath']}` / **{html.escape(hit['filePath'])}**{idx}{badge}")
        snippet = mark_terms(" ".join(hit.get("snippet", "").split()), query)
        mid.markdown(TEXT_STYLE + f'<div class="cn-snippet">{snippet}</div>', unsafe_allow_html=True)
        words = position_words(hit.get("page"), hit.get("bbox"))
        if words or detail:
            mid.caption(" · ".join(p for p in (words, detail) if p))
        clicked = None
        if right.button(
            "Open chunk",
            key=f"{key}-chunk",
            icon=":material/article:",
            disabled=hit.get("chunkIndex") is None,
            width="stretch",
        ):
            clicked = "chunk"
        if right.button(
            "Source",
            key=f"{key}-source",
            icon=":material/visibility:",
            disabled=hit.get("chunkIndex") is None,
            width="stretch",
        ):
            clicked = "source"
        return clicked


# -- sources ---------------------------------------------------------
def source_file(collection_path: str, file_path: str) -> tuple[Path | None, str | None, str | None]:
    """``(path, password, problem)`` of a document's file, confined to its collection root."""
    coll = state.engine().store.get_collection(collection_path)
    if coll is None:
        return None, None, f"no collection {collection_path!r}"
    try:
        path = resolve_inside(coll.root, file_path)
    except ChunknavError as e:
        return None, None, str(e)
    if not path.is_file():
        return None, None, f"the file {file_path!r} is no longer under {coll.root}"
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        return (
            None,
            None,
            (
                f"permission denied: the explorer may not read {file_path!r} (its file permissions "
                "changed, or this explorer runs as another user than the index run)"
            ),
        )
    except OSError as e:
        return None, None, f"the file {file_path!r} cannot be read: {e.strerror or e}"
    from engine.passwords import resolve_password

    return path, resolve_password(coll.password_ref), None


# -- chunk and document views -------------------------------------------------------------
def _goto_chunk(index: int) -> None:
    st.query_params["i"] = str(index)
    st.session_state["chunk_pos"] = index
    if "p" in st.query_params:
        del st.query_params["p"]


def _slider_moved() -> None:
    _goto_chunk(int(st.session_state["chunk_pos"]))


def _full_toggled() -> None:
    state.qp_set(full="1" if st.session_state.get("chunk_full") else None)


def provenance_line(env: dict[str, Any]) -> str:
    """Where a chunk envelope is, in words: ``page 17, upper half`` (``position_words``)
    or ``lines 12–30``, and the pages it continues on (the raw bbox and character offsets:
    ``raw_provenance``)."""
    parts = []
    if env.get("page") is not None:
        where = position_words(env["page"], env.get("bbox"))
        parts.append(f":orange-badge[{where}" + (f" (label {env['pageLabel']})" if env.get("pageLabel") else "") + "]")
    elif env.get("lineStart") is not None:
        parts.append(f":blue-badge[{lines_label(env)}]")
    if len(env.get("regions") or []) > 1:
        parts.append("continues on page " + ", ".join(str(r["page"]) for r in env["regions"][1:]))
    return " · ".join(parts) + file_state_badge(env)


def raw_provenance(env: dict[str, Any]) -> str:
    """``bbox x,y w×h · characters start–end`` of a chunk envelope: the raw numbers."""
    parts = []
    if env.get("bbox"):
        b = env["bbox"]
        parts.append(f"bbox x={b['x']:.3f} y={b['y']:.3f} w={b['w']:.3f} h={b['h']:.3f} (0..1 of the page)")
    if env.get("start") is not None:
        parts.append(f"characters {env['start']}–{env['end']}")
    return " · ".join(parts)


def provenance_details(env: dict[str, Any]) -> None:
    """The raw coordinates and offsets of a chunk, one click away (a popover)."""
    raw = raw_provenance(env)
    if raw:
        with st.popover("Where exactly", icon=":material/straighten:"):
            st.markdown(raw)


def overlap_caption(n_prev: int, prev_i: int | None, n_next: int, next_i: int | None) -> str:
    """The caption under a chunk's text: how many characters (blue) it shares with
    each neighbour that exists; a missing neighbour (first/last chunk) is not named."""
    parts = [
        f"the {n} characters shared with chunk {j}"
        for n, j in ((n_prev, prev_i), (n_next, next_i))
        if n and j is not None
    ]
    return f"Blue: {' and '.join(parts)}." if parts else "No overlap with neighbours."


def chunk_view(chunk: dict[str, Any], query: str = "") -> None:
    """A found ``get_chunk`` envelope: header, stepper (prevIndex/nextIndex),
    position slider bounded by totalChunks, text with the overlaps marked, links."""
    i, total = chunk["chunkIndex"], chunk["totalChunks"]
    st.markdown(
        f"`{chunk['collectionPath']}` / **{html.escape(chunk['filePath'])}** · chunk **{i}** of {total} (0-based)"
    )
    st.markdown(provenance_line(chunk))
    provenance_details(chunk)
    prev_i, next_i = chunk.get("prevIndex"), chunk.get("nextIndex")
    left, mid, right = st.columns([1.2, 6, 1.2], vertical_alignment="center")
    left.button(
        "Previous",
        key="prev",
        icon=":material/chevron_left:",
        disabled=prev_i is None,
        on_click=_goto_chunk,
        args=(prev_i,),
        width="stretch",
    )
    right.button(
        "Next",
        key="next",
        icon=":material/chevron_right:",
        disabled=next_i is None,
        on_click=_goto_chunk,
        args=(next_i,),
        width="stretch",
    )
    if total > 1:
        st.session_state["chunk_pos"] = i
        mid.slider(
            "Position",
            0,
            total - 1,
            key="chunk_pos",
            on_change=_slider_moved,
            label_visibility="collapsed",
            help="chunk index, 0-based",
        )
    else:
        mid.caption("The only chunk of this document.")
    text = chunk["text"]
    n_prev, n_next = int(chunk.get("overlapPrev") or 0), int(chunk.get("overlapNext") or 0)
    spans = [(0, n_prev, "ovl")] if n_prev else []
    if n_next:
        spans.append((max(n_prev, len(text) - n_next), len(text), "ovl"))
    st.caption(overlap_caption(n_prev, prev_i, n_next, next_i))
    marked_block(text, spans, query, first_line=chunk.get("lineStart"), lines=links.line_range(state.qp_get("lines")))
    source = links.query(
        "source",
        c=chunk["collectionPath"],
        f=chunk["filePath"],
        i=i,
        p=chunk.get("page"),
        q=query or None,
        lines=state.qp_get("lines"),
    )
    l1, l2, l3 = st.columns(3)
    l1.page_link(links.page_path("source"), label="Source view", icon=":material/visibility:", query_params=source)
    back = links.search_query()
    if back.get("q"):
        l2.page_link(
            links.page_path("explore"),
            label="Back to results",
            icon=":material/search:",
            query_params=links.query("explore", **back),
        )
    st.session_state["chunk_full"] = st.query_params.get("full") == "1"
    l3.toggle("Full document text (read_document)", key="chunk_full", on_change=_full_toggled)


def document_view(
    doc: dict[str, Any], span: tuple[int | None, int | None] | None = None, query: str = "", height_px: int | None = 520
) -> None:
    """A ``read_document`` envelope: the text with ``span`` (absolute character
    offsets into the document) highlighted in context."""
    if not doc.get("found"):
        if doc.get("error"):
            failure_callout(doc)
        else:
            st.warning(doc.get("message", "not found"), icon=":material/warning:")
        return
    offset = int(doc.get("offset") or 0)
    text = doc["text"]
    spans: list[tuple[int, int, str]] = []
    if span and span[0] is not None and span[1] is not None:
        spans.append((span[0] - offset, span[1] - offset, "span"))
    more = f" · more after character {doc['nextOffset']}" if doc.get("nextOffset") is not None else ""
    st.caption(
        f"Characters {offset}–{offset + len(text)} of {doc.get('totalLength')}{more}"
        + (" · the chunk is outlined in orange" if spans else "")
    )
    marked_block(text, spans, query, height_px=height_px)
