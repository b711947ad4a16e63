"""Source: where a chunk came from. PDFs (and the other paged formats: EPUB,
XPS, FB2, MOBI, CBZ, drawn in the layout their boxes came from): every page the chunk touches, in
order, with its line rectangles drawn (the union outline faintly), cropped
around the highlight so it is in view on open, zoom 1x-4x that re-renders;
Previous/Next chunk. Text, Markdown, DOCX: the document text from just before
the chunk, the overlaps marked. A file changed since indexing is said, not
drawn over (``get_chunk`` answers ``stale: true``).

One tool: ``get_chunk`` (plus ``read_document`` for non-PDF text). Page images
come from ``engine.render`` through ``explorer.source_view``.
State lives in the URL: ``c``, ``f``, ``i``, ``p`` (page), ``zoom``, ``view``, ``q``,
``lines`` (text views: the lines marked and scrolled to, ``12-30``).
"""

import streamlit as st

from explorer import links, source_view, state, widgets

st.title("Source")
c, f, i = widgets.selected_chunk("Source")

args = {"collectionPath": c, "filePath": f, "chunkIndex": i}
chunk = widgets.run_tool("get_chunk", args, panel=False)
if chunk is not None and not chunk["found"]:
    widgets.failure_callout(chunk) if chunk.get("error") else st.warning(chunk.get("message", ""))
elif chunk is not None:
    head, where, link = st.columns([5, 1.3, 1.2], vertical_alignment="center")
    head.markdown(f"`{c}` / **{f}** · chunk **{i}** of {chunk['totalChunks']} · {widgets.provenance_line(chunk)}")
    link.page_link(
        links.page_path("chunk"),
        label="Chunk view",
        icon=":material/article:",
        query_params=links.query("chunk", c=c, f=f, i=i, q=state.qp_get("q"), lines=state.qp_get("lines")),
    )
    with where:  # the raw numbers, one click away, on the header's line
        widgets.provenance_details(chunk)
    stale = source_view.stale_notice(chunk)
    if source_view.renders_pages(f):  # PDF, EPUB, XPS, FB2, MOBI, CBZ
        source_view.pdf_chunk_pages(chunk, stale)  # with the Previous/Next chunk buttons
    else:
        source_view.chunk_stepper(chunk)
        source_view.text_chunk_view(chunk, query=state.qp_get("q", ""))
widgets.tool_call_panel("get_chunk", args, chunk)
