"""Explore index: search documents or chunks, in a scope, by mode; open a hit.

One tool per search: ``search`` (documents) or ``search_chunks`` (chunks).
State lives in the URL: ``q``, ``scope``, ``kind``, ``mode``, ``limit``, ``hit``.
"""

import streamlit as st

from explorer import state, widgets

st.title("Explore index")
engine = state.engine()
collections = [c.collection_path for c in engine.store.collections()]
KINDS = {"chunks": "search_chunks", "documents": "search"}
MODES = ["auto", "vector", "keyword", "hybrid"]

with st.form("search", border=False):
    q = st.text_input("Query", value=state.qp_get("q", ""), key="q",
                      placeholder="words… (a namespace:<collectionPath> token targets one collection)")
    c1, c2, c3, c4 = st.columns([3, 2, 3, 1.2])
    scope_opts = ["(none: use a namespace: token)"] + collections
    scope_qp = state.qp_get("scope")
    scope = c1.selectbox("Scope (anchored)", scope_opts, key="scope",
                         index=scope_opts.index(scope_qp) if scope_qp in scope_opts
                         else (1 if len(collections) == 1 else 0),
                         help="searches that collection and each ancestor path")
    kind = c2.segmented_control("Granularity", list(KINDS), key="kind", default=state.qp_get("kind", "chunks"))
    mode = c3.segmented_control("Mode", MODES, key="mode", default=state.qp_get("mode", "auto"))
    limit = c4.number_input("Limit", 1, 1000, state.qp_int("limit", 10) or 10, key="limit")
    submitted = st.form_submit_button("Search", icon=":material/search:", type="primary")

if submitted:
    state.qp_set(q=q, scope=scope if scope in collections else None, kind=kind or "chunks",
                 mode=mode or "auto", limit=int(limit), hit=None)

query = state.qp_get("q")
if query:
    tool = KINDS.get(state.qp_get("kind", "chunks"), "search_chunks")
    args = {"query": query, "scope": state.qp_get("scope"), "limit": state.qp_int("limit", 10) or 10,
            "mode": state.qp_get("mode", "auto")}
    if args["scope"] is None:
        del args["scope"]
    envelope = widgets.run_tool(tool, args, panel=False)
    if envelope is not None and widgets.search_outcome(envelope):
        selected = state.qp_int("hit")
        for hit in envelope["hits"]:
            clicked = widgets.hit_row(hit, query, key=f"hit{hit['rank']}", selected=hit["rank"] == selected)
            if clicked:
                widgets.go(clicked, c=hit["collectionPath"], f=hit["filePath"], i=hit["chunkIndex"],
                           p=hit.get("page"), q=query, scope=args.get("scope"), hit=hit["rank"],
                           kind=state.qp_get("kind"), mode=state.qp_get("mode"), limit=args["limit"])
    widgets.tool_call_panel(tool, args, envelope)
else:
    st.caption("Type a query. Pick a scope, or put `namespace:<collectionPath>` in the query.")
