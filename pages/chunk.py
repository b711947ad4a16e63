"""Chunk: one chunk's text with the overlap marked, stepped by prevIndex/nextIndex.

One tool: ``get_chunk`` (plus ``read_document`` when the full text is asked for).
State lives in the URL: ``c`` (collectionPath), ``f`` (filePath), ``i``
(chunkIndex), ``q`` (words to mark), ``full`` (show the full document text).
"""

import streamlit as st

from explorer import state, widgets

st.title("Chunk")
c, f, i = widgets.selected_chunk("Open chunk")

args = {"collectionPath": c, "filePath": f, "chunkIndex": i}
chunk = widgets.run_tool("get_chunk", args, panel=False)
if chunk is not None and not chunk["found"]:
    if chunk.get("error"):
        widgets.failure_callout(chunk)
    else:
        st.warning(f"**No such chunk.** {chunk.get('message', '')}", icon=":material/warning:")
if chunk is not None and chunk["found"]:
    widgets.chunk_view(chunk, query=state.qp_get("q", ""))
widgets.tool_call_panel("get_chunk", args, chunk)

if chunk is not None and chunk.get("totalChunks", 0) > 0 and state.qp_get("full") == "1":
    st.subheader("Full document text")
    doc = widgets.run_tool("read_document", {"collectionPath": c, "filePath": f}, panel=False)
    if doc is not None:
        widgets.document_view(doc, span=(chunk.get("start"), chunk.get("end")), query=state.qp_get("q", ""))
        widgets.tool_call_panel("read_document", {"collectionPath": c, "filePath": f}, doc)
