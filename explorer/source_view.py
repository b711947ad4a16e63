"""The Source view's PDF and text panels: every page a chunk touches with its
line rectangles, zoom that re-renders, Previous/Next chunk, the stale-file warning.

Owns: ``pdf_chunk_pages`` (one image per page the chunk touches, in page
order, each cropped around that page's highlight so the first line is in view
on open, at a zoom of 1x-4x of the page width shown), ``chunk_stepper``
(Previous/Next chunk keeping page, zoom and view in the URL),
``stale_notice`` and ``text_chunk_view`` (the document text starting just
before the chunk, overlaps marked). Page PNGs come from ``engine.render``
(cached per file version); no PyMuPDF, SQL or HTTP here.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import streamlit as st

from engine.errors import ChunknavError
from explorer import links, state, where, widgets

__all__ = [
    "ZOOMS",
    "VIEW_WIDTH_PX",
    "VIEW_HEIGHT_PX",
    "chunk_stepper",
    "stale_notice",
    "pdf_chunk_pages",
    "text_chunk_view",
    "renders_pages",
]

#: Zoom levels: multiples of "page width fills the image" (the ``zoom`` URL parameter's).
ZOOMS = links.ZOOMS
#: Image size rendered per page (pixels): fits the main column of a 1280 px wide
#: window beside the sidebar; the crop height keeps the first highlight and the
#: header inside an 800 px high viewport.
VIEW_WIDTH_PX = 880
VIEW_HEIGHT_PX = 400
#: Smallest crop height and the context kept above / below the highlight (pixels).
MIN_HEIGHT_PX = 120
MARGIN_PX = 16
#: Most crops per page; a highlight in more pieces is shown as one crop from its first line.
MAX_PARTS = 3
#: Height of the panning box of a whole page above 1x (pixels).
PAN_HEIGHT_PX = 640
#: Characters of document text shown before a chunk (text sources).
TEXT_BEFORE_CHARS = 240


def _nav(index: int) -> None:
    st.query_params["i"] = str(index)


def chunk_stepper(chunk: dict[str, Any], cols: Any = None) -> None:
    """Previous / Next chunk buttons (``prevIndex`` / ``nextIndex``) in two new
    columns or the two ``cols`` given; page ``p``, ``zoom`` and ``view`` stay in
    the URL, so the next chunk opens the same way."""
    prev_i, next_i = chunk.get("prevIndex"), chunk.get("nextIndex")
    left, right = st.columns(2) if cols is None else cols
    left.button(
        "Previous chunk",
        key="src_prev",
        icon=":material/chevron_left:",
        disabled=prev_i is None,
        on_click=_nav,
        args=(prev_i,),
        width="stretch",
    )
    right.button(
        "Next chunk",
        key="src_next",
        icon=":material/chevron_right:",
        disabled=next_i is None,
        on_click=_nav,
        args=(next_i,),
        width="stretch",
    )


def stale_notice(chunk: dict[str, Any]) -> bool:
    """Say so when ``get_chunk`` marked the file stale; True when it did."""
    if not chunk.get("stale"):
        return False
    at = chunk.get("indexedAt")
    when = dt.datetime.fromtimestamp(at, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if at else "an unknown time"
    if chunk.get("staleReason"):
        st.warning(
            f"**The last index run could not read this file ({chunk['staleReason']}); its chunks "
            f"are kept from {when}.** The file may have changed since, so the stored line "
            "rectangles are not drawn over it.",
            icon=":material/sync_problem:",
        )
        return True
    st.warning(
        f"**This file changed after it was indexed (indexed at {when}); re-index to refresh.** "
        "The stored line rectangles describe the old file, so they are not drawn over the new one.",
        icon=":material/sync_problem:",
    )
    return True


def _set_zoom() -> None:
    st.query_params["zoom"] = f"{st.session_state['src_zoom']:g}"


def _set_view() -> None:
    st.query_params["view"] = "page" if st.session_state["src_view"] == "Whole pages" else "around"


@st.cache_data(max_entries=64, show_spinner=False)
def _render(
    path: str,
    mtime_ns: int,
    page: int,
    zoom: float,
    regions_json: str,
    texts: tuple[str, ...],
    renderer: str,
    whole: bool,
    _password: str | None,
    terms: tuple[str, ...] = (),
    pan: bool = False,
) -> list[Any]:
    """The page's images (``RenderedPage``): one per run of the highlight
    (``engine.render.highlight_runs``: a chunk that continues in the next
    column gets a second crop), or one of the whole page height (``whole``), or with
    ``pan`` the whole page at this zoom (shown in a box that pans, ``_pan_box``).
    ``terms``: the query's words, marked on the page in violet."""
    from engine.values import Bbox
    from engine.render import clip_around, highlight_runs, page_size_pt, render_page_info

    regions = json.loads(regions_json)
    w_pt, h_pt = page_size_pt(path, page, _password)
    scale = VIEW_WIDTH_PX / w_pt * zoom  # pixels per point: 1x = the page width fills the image
    boxes = [Bbox(**b) for r in regions if r.get("page") == page for b in (r.get("rects") or [r["bbox"]])]
    if pan:  # the whole page: the box it is shown in pans and scrolls to the highlight
        return [
            render_page_info(path, page, scale, regions, _password, texts or None, renderer=renderer, mark_terms=terms)
        ]
    runs = [boxes] if whole or not boxes else _merge_runs(highlight_runs(boxes), h_pt * scale)
    if len(runs) > MAX_PARTS:  # a table read down its columns, text running down the page...:
        runs = [boxes]  # one crop from the first line ("Whole pages" shows all of it)
    shots = []
    for run in runs:
        view_h = 10**6
        if not whole:  # as tall as the highlight needs (plus context), at most VIEW_HEIGHT_PX
            view_h = VIEW_HEIGHT_PX
            if run:
                top, bottom = min(b.y for b in run), max(b.y + b.h for b in run)
                view_h = min(VIEW_HEIGHT_PX, max(MIN_HEIGHT_PX, round((bottom - top) * h_pt * scale) + 2 * MARGIN_PX))
        clip = clip_around(run, scale, w_pt, h_pt, VIEW_WIDTH_PX, view_h, MARGIN_PX)
        shots.append(
            render_page_info(
                path, page, scale, regions, _password, texts or None, renderer=renderer, clip=clip, mark_terms=terms
            )
        )
    return shots


def _merge_runs(runs: list[list[Any]], page_h_px: float) -> list[list[Any]]:
    """Neighbouring runs joined while their vertical span fits one crop (e.g. a page number
    below the last lines): fewer, taller images rather than a separate sliver."""
    out: list[list[Any]] = []
    for run in runs:
        if out:
            both = out[-1] + run
            span = (max(b.y + b.h for b in both) - min(b.y for b in both)) * page_h_px
            if span + 2 * MARGIN_PX <= VIEW_HEIGHT_PX:
                out[-1] = both
                continue
        out.append(run)
    return out


def _page_label(path: Path, page: int, password: str | None) -> str:
    from engine.render import page_label

    try:
        return page_label(path, page, password)
    except (ChunknavError, ValueError):
        return ""


def _pan_box(shot: Any, height_px: int, key: str) -> None:
    """A page image larger than the view in a box that pans and scrolls (drag the scroll
    bars, the wheel, or the keyboard), opened scrolled so the first highlight box (else the
    first query word) is in its middle."""
    target = (shot.boxes or shot.word_boxes or (None,))[0]
    fx = (target.x + target.w / 2) if target is not None else 0.0
    fy = (target.y + target.h / 2) if target is not None else 0.0
    png = base64.b64encode(shot.png).decode("ascii")
    box_id = f"cn-pan-{key}"
    st.html(
        f'<div class="cn-pan" id="{box_id}" data-fx="{fx:.4f}" data-fy="{fy:.4f}" '
        f'style="width:100%;max-width:{VIEW_WIDTH_PX}px;height:{height_px}px;overflow:auto;'
        'border:1px solid #ddd;border-radius:6px;cursor:grab">'
        f'<img src="data:image/png;base64,{png}" width="{shot.width_px}" height="{shot.height_px}" '
        f'style="max-width:none;width:{shot.width_px}px;height:{shot.height_px}px;display:block" '
        f'alt="page {shot.page} at zoom"></div>'
        "<script>(function(){let n=0;const t=setInterval(function(){"
        f"const box=document.getElementById('{box_id}');"
        "if(box&&box.clientWidth>0){clearInterval(t);"
        "const img=box.querySelector('img');"
        "box.scrollLeft=Math.max(0,parseFloat(box.dataset.fx)*img.width-box.clientWidth/2);"
        "box.scrollTop=Math.max(0,parseFloat(box.dataset.fy)*img.height-box.clientHeight/2);"
        "box.dataset.ready='1';}else if(++n>100){clearInterval(t);}},50);})();</script>",
        unsafe_allow_javascript=True,
    )


def renders_pages(file_path: str) -> bool:
    """True when the Source page draws ``file_path`` page by page (PDF, EPUB,
    XPS, FB2, MOBI, CBZ: ``engine.render.renders_pages``, by suffix); other
    files are shown as text."""
    from engine.render import renders_pages as paged

    return paged(file_path)


def pdf_chunk_pages(chunk: dict[str, Any], stale: bool) -> None:
    """Every page the chunk touches, in order, each with its line rectangles (and
    the union outline faintly), cropped around them; zoom 1x-4x re-renders.

    Stale files: nothing stored is drawn; a text-match highlight (the chunk's
    text searched on the current file) is offered, marked as such.
    """
    path, password, problem = widgets.source_file(chunk["collectionPath"], chunk["filePath"])
    if problem:
        st.error(f"**Cannot show the source.** {problem}", icon=":material/error:")
        return
    regions = chunk.get("regions") or (
        [{"page": chunk["page"], "bbox": chunk["bbox"]}] if chunk.get("bbox") and chunk.get("page") else []
    )
    zoom = min(ZOOMS, key=lambda z: abs(z - state.qp_float("zoom", 1.0)))
    whole = state.qp_get("view") == "page"
    b1, b2, c1, c2 = st.columns([1.3, 1.3, 2.2, 2.2], vertical_alignment="bottom")
    chunk_stepper(chunk, (b1, b2))
    st.session_state["src_zoom"] = zoom
    c1.select_slider(
        "Zoom",
        ZOOMS,
        key="src_zoom",
        on_change=_set_zoom,
        format_func=lambda z: f"{z:g}×",
        help="1× = the page width fills the image; the view stays on the highlight",
    )
    st.session_state["src_view"] = "Whole pages" if whole else "Around the highlight"
    c2.radio(
        "Show",
        ["Around the highlight", "Whole pages"],
        key="src_view",
        on_change=_set_view,
        label_visibility="collapsed",
    )
    texts: tuple[str, ...] = ()
    if stale:
        if not st.toggle("Show a text-match highlight on the current file", key="src_textmatch"):
            regions = []
        else:
            texts, regions = (chunk["text"],), []
            st.caption("Text-match highlight: the chunk's text searched on the current file, not the indexed position.")
    elif not regions:
        texts = (chunk["text"],)
    pages = sorted({r["page"] for r in chunk.get("regions") or []}) or [chunk.get("page") or 1]
    renderer = state.settings().renderer
    mtime_ns = os.stat(path).st_mtime_ns
    terms = widgets.query_marks(state.qp_get("q", ""))
    pan = zoom > 1  # larger than the view: the whole page in a box that pans to the highlight
    first = None
    for page in pages:
        try:
            shots = _render(
                str(path),
                mtime_ns,
                page,
                zoom,
                json.dumps(regions, sort_keys=True),
                texts,
                renderer,
                whole,
                password,
                terms,
                pan,
            )
        except (ChunknavError, ValueError) as e:
            st.error(f"**Cannot render page {page}.** {e}", icon=":material/error:")
            break  # the next page would say the same
        shot = shots[0]
        n_lines = sum(1 for r in regions if r.get("page") == page for _ in (r.get("rects") or ()))
        label = _page_label(path, page, password)
        what = {
            "rects": f"{n_lines} line{'s' if n_lines != 1 else ''} of the chunk",
            "bbox": "the chunk's box",
            "text": f"text match ({len(shot.boxes)} places)",
            "none": "nothing drawn" if stale else "the chunk's text was not found here",
        }[shot.source]
        marked = f" · {len(shot.word_boxes)} query words marked in violet" if shot.word_boxes else ""
        st.markdown(
            f"**Page {page}**" + (f" ({label})" if label else "") + f" of {shot.page_count} · {what}{marked} · "
            f"zoom {zoom:g}× · :small[page {shot.page_width_px}×{shot.page_height_px} px, "
            + ("drag or scroll to pan]" if pan else f"showing {shot.width_px}×{shot.height_px}]")
        )
        for k, part in enumerate(shots):
            if k:
                st.caption(
                    f"Page {page}, part {k + 1} of {len(shots)}: the chunk continues here "
                    "(another column, or further down the page)."
                )
            if pan:
                _pan_box(part, PAN_HEIGHT_PX if whole else VIEW_HEIGHT_PX, f"{page}-{k}")
            else:
                st.image(part.png, width="stretch")
        if first is None:
            first = {
                "page": page,
                "source": shot.source,
                "boxes": n_lines if shot.source == "rects" else len(shot.boxes),
                "zoom": zoom,
                "pageWidthPx": shot.page_width_px,
                "renderer": shot.renderer,
                "parts": len(shots),
                "queryWords": len(shot.word_boxes),
                "pan": pan,
            }
    st.session_state["_last_render"] = first


def text_chunk_view(chunk: dict[str, Any], query: str = "") -> None:
    """Text, Markdown, HTML, .docx: the document text from just before the chunk, the
    whole chunk outlined in orange with the overlaps with its neighbours tinted blue inside
    it, the query's words marked, line numbers in a gutter (documents numbered by lines);
    a ``lines`` deep link (``lines=12-30``) marks those lines and scrolls to the first."""
    start, end = chunk["start"], chunk["end"]
    wanted = links.line_range(state.qp_get("lines"))
    offset = max(0, start - TEXT_BEFORE_CHARS)
    window = {
        "collectionPath": chunk["collectionPath"],
        "filePath": chunk["filePath"],
        "offset": offset,
        "limit": (end - offset) + 3000,
    }
    doc = widgets.run_tool("read_document", window, panel=False)
    if doc is None:
        return
    if not doc.get("found"):
        widgets.document_view(doc)
        return
    n_prev, n_next = int(chunk.get("overlapPrev") or 0), int(chunk.get("overlapNext") or 0)
    a, b = start - offset, end - offset
    spans = []
    if n_prev:
        spans.append((a, a + n_prev, "ovl"))
    if n_next:
        spans.append((max(a + n_prev, b - n_next), b, "ovl"))
    text = doc["text"]
    first_line = None
    if chunk.get("lineStart") is not None:
        first_line = int(chunk["lineStart"]) - text.count("\n", 0, a)
    st.caption(
        f"Characters {offset}–{offset + len(text)} of {doc.get('totalLength')} · the whole chunk is "
        f"outlined in orange; blue inside it: the {n_prev} characters shared with the previous chunk and the "
        f"{n_next} shared with the next; violet: the query's words"
        + (f" · {where.lines_label(chunk)}" if first_line is not None else "")
    )
    shown = wanted if wanted and first_line is not None else None
    widgets.marked_block(text, spans, query, height_px=420, outline=(a, b), first_line=first_line, lines=shown)
    if shown is not None:
        last_shown = first_line + text.count("\n")  # type: ignore[operator]
        if not (first_line <= shown[0] <= last_shown):  # type: ignore[operator]
            st.caption(f"Line {shown[0]} is not in this chunk's view ({where.lines_label(chunk)}).")
        else:
            widgets.scroll_to_line(shown[0])
    widgets.tool_call_panel("read_document", window, doc, label="This maps to a tool call (text)")
