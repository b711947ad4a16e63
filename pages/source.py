"""Source: where a chunk came from. PDFs: the page as displayed with the chunk's
bbox drawn over it (no bbox: its text found on the page), zoom and page
navigation. Text, Markdown, DOCX: the document text with the chunk's span
highlighted in context.

One tool: ``get_chunk`` (plus ``read_document`` for non-PDF text). The page
image comes from ``engine.render`` through ``explorer.widgets.page_image``.
State lives in the URL: ``c``, ``f``, ``i``, ``p`` (page), ``zoom``, ``q``.
"""

import streamlit as st

from explorer import state, widgets

st.title("Source")
c, f, i = widgets.selected_chunk("Source")

args = {"collectionPath": c, "filePath": f, "chunkIndex": i}
chunk = widgets.run_tool("get_chunk", args, panel=False)
if chunk is not None and not chunk["found"]:
    widgets.failure_callout(chunk) if chunk.get("error") else st.warning(chunk.get("message", ""))
elif chunk is not None:
    st.markdown(f"`{c}` / **{f}** · chunk **{i}** of {chunk['totalChunks']} · {widgets.provenance_line(chunk)}")
    st.page_link(widgets.page_path("chunk"), label="Chunk view", icon=":material/article:",
                 query_params={k: v for k, v in {"c": c, "f": f, "i": i, "q": state.qp_get("q")}.items() if v})
    if f.lower().endswith(".pdf"):
        widgets.pdf_source_view(chunk)
    else:
        start, end = chunk["start"], chunk["end"]
        window = {"collectionPath": c, "filePath": f, "offset": max(0, start - 3000),
                  "limit": (end - start) + 6000}
        doc = widgets.run_tool("read_document", window, panel=False)
        if doc is not None:
            widgets.document_view(doc, span=(start, end), query=state.qp_get("q", ""))
            widgets.tool_call_panel("read_document", window, doc, label="This maps to a tool call (text)")
widgets.tool_call_panel("get_chunk", args, chunk)
