"""Explore index (retrieval testing): search documents or chunks, in a scope, by mode; tune
the threshold and the vector weight; compare the modes side by side; list a collection's files.

Tools: ``search`` (documents) or ``search_chunks`` (chunks); the comparison runs the
same tool once per mode; the file list is ``list_documents`` + ``get_document``.
State lives in the URL: ``q``, ``scope`` (``*``, or one ``scope=`` per collection path), ``kind``,
``mode``, ``limit``, ``min`` (minScore, in the mode's own units: the advanced threshold),
``match`` (the least match 0..1 a hit is shown with), ``w`` (vectorWeight), ``cmp``
(compare modes), ``files`` (a collection whose files are listed), ``doc``, ``hit``. Hits
are drawn ``retrieval.HITS_PER_SCREEN`` at a time with "Show more"; a read-only explorer
asks for at most ``retrieval.READ_ONLY_LIMIT``.
"""

import streamlit as st

from explorer import links, retrieval, state, widgets

st.title("Explore index")
engine = state.engine()
collections = [c.collection_path for c in engine.store.collections()]
KINDS = {"chunks": "search_chunks", "documents": "search"}
MODES = ["auto", "vector", "keyword", "hybrid"]

scope_qp = state.qp_all("scope")  # one repeated parameter per collection path
all_qp, picked_qp = retrieval.scope_from_param(scope_qp, collections)
if not scope_qp and len(collections) == 1:
    picked_qp = collections[:]
weight_qp = min(1.0, max(0.0, state.qp_float("w", 0.5)))
min_qp = max(0.0, state.qp_float("min", 0.0))
match_qp = min(1.0, max(0.0, state.qp_float("match", 0.0)))


def _runs_auto() -> str:
    """What mode auto runs (keyword or hybrid): settings first, the provider only for a query."""
    if state.settings().embed_provider == "none":
        return "keyword"
    return engine.auto_mode() if state.qp_get("q") or st.session_state.get("q") else "hybrid"


# the threshold slider in the units of the mode's own score (cosine, BM25, fused RRF)
scale = retrieval.score_scale(state.qp_get("mode", "auto"), _runs_auto)

with st.form("search", border=False):
    q = st.text_input(
        "Query",
        value=state.qp_get("q", ""),
        key="q",
        placeholder="words… (namespace:<collectionPath> scope:subtree targets collections)",
    )
    c0, c1 = st.columns([1.4, 5])
    every = c0.checkbox("All collections", value=all_qp, key="all", help="scope '*': every collection")
    picked = c1.multiselect(
        "Scope (anchored; each with its ancestors)",
        collections,
        default=picked_qp,
        key="scopes",
        placeholder="none: use a namespace: token, or pick collections",
    )
    c2, c3, c4 = st.columns([2, 3, 1.2])
    kind = c2.segmented_control("Granularity", list(KINDS), key="kind", default=state.qp_get("kind", "chunks"))
    mode = c3.segmented_control("Mode", MODES, key="mode", default=state.qp_get("mode", "auto"))
    limit = c4.number_input("Limit", 1, 1000, state.qp_int("limit", 10) or 10, key="limit")
    s1, s2, s3 = st.columns([3, 3, 2])
    least = s1.slider(
        "Match at least",
        0.0,
        1.0,
        match_qp,
        0.05,
        format="%.2f",
        key="match",
        help="hide hits whose match (0 = unrelated, 1 = exact) is below this; 0 = show all",
    )
    weight = s2.slider(
        "Vector weight (hybrid)",
        0.0,
        1.0,
        weight_qp,
        0.05,
        key="w",
        help="1 = vector order, 0 = keyword order, 0.5 = plain reciprocal rank fusion",
    )
    compare = s3.toggle(
        "Compare modes",
        value=state.qp_get("cmp") == "1",
        key="cmp",
        help="run the same query in vector, keyword and hybrid mode side by side",
    )
    with st.expander(f"Advanced: minScore in the {scale.mode} score's own units", icon=":material/tune:"):
        min_score = st.slider(
            f"Threshold (minScore, {scale.mode} score)",
            0.0,
            max(scale.top, min_qp),
            min_qp,
            scale.step,
            format=scale.fmt,
            key=f"min_{scale.mode}",
            help=f"drop hits whose score ({scale.meaning}) is below this; 0 = off",
        )
    submitted = st.form_submit_button("Search", icon=":material/search:", type="primary")

if submitted:
    rescaled = retrieval.score_scale(mode or "auto", _runs_auto).mode != scale.mode
    state.qp_set(
        q=q,
        scope=retrieval.scope_param(every, picked),
        kind=kind or "chunks",
        mode=mode or "auto",
        limit=int(limit),
        min=None if rescaled else (min_score or None),
        w=weight if weight != 0.5 else None,
        match=least or None,
        cmp="1" if compare else None,
        hit=None,
    )
    if rescaled and min_score:  # another mode's score has other units: its threshold means nothing here
        st.session_state["threshold_reset"] = scale.mode
    if rescaled:
        st.rerun()  # draw the slider in the new mode's units
if st.session_state.pop("threshold_reset", None):
    st.caption(f"The threshold was reset: minScore is now on the {scale.mode} score ({scale.meaning}).")
if scale.bounded and min_qp > scale.top:
    st.warning(
        f"minScore {min_qp:g} is above the highest {scale.mode} score ({scale.meaning}): every hit is dropped.",
        icon=":material/filter_alt_off:",
    )

query = state.qp_get("q")
if query:
    tool = KINDS.get(state.qp_get("kind", "chunks"), "search_chunks")
    # the scope the form shows (a deep link without `scope` on a one-collection index pre-selects it)
    asked = state.qp_int("limit", 10) or 10
    limit_now = retrieval.allowed_limit(asked, state.settings().read_only)
    if limit_now < asked:
        st.caption(f"This read-only explorer lists at most {limit_now} hits (the link asked for {asked}).")
    args = {
        "query": query,
        "scope": retrieval.scope_argument(retrieval.scope_param(every, picked)),
        "limit": limit_now,
        "mode": state.qp_get("mode", "auto"),
        "maxTokens": retrieval.EXPLORER_MAX_TOKENS,
    }
    if args["scope"] is None:
        del args["scope"]
    min_now = max(0.0, state.qp_float("min", 0.0))  # read again: a submit has just set them
    weight_now = min(1.0, max(0.0, state.qp_float("w", 0.5)))
    if min_now > 0:
        args["minScore"] = min_now
    if weight_now != 0.5 and args["mode"] in ("auto", "hybrid"):
        args["vectorWeight"] = weight_now
    envelope = widgets.run_tool(tool, args, panel=False)
    if envelope is not None and envelope.get("hint") and envelope.get("searched"):
        st.caption(f"Hint: {envelope['hint']}")
    if envelope is not None and widgets.search_outcome(envelope):
        selected = state.qp_int("hit")
        least_now = min(1.0, max(0.0, state.qp_float("match", 0.0)))
        hits, hidden = retrieval.by_match(envelope["hits"], least_now)
        if hidden:
            st.caption(f"{hidden} hits below match {least_now:.2f} are hidden.")
        shown = retrieval.hits_shown(retrieval.search_key(args), len(hits), selected)
        for hit in hits[:shown]:
            clicked = widgets.hit_row(
                hit,
                query,
                key=f"hit{hit['rank']}",
                selected=hit["rank"] == selected,
                detail=retrieval.breakdown(hit, envelope.get("scoreKind")),
            )
            if clicked:
                links.go(
                    clicked,
                    c=hit["collectionPath"],
                    f=hit["filePath"],
                    i=hit["chunkIndex"],
                    p=hit.get("page"),
                    lines=retrieval.lines_param(hit),
                    q=query,
                    scope=retrieval.scope_param(every, picked),
                    hit=hit["rank"],
                    kind=state.qp_get("kind"),
                    mode=state.qp_get("mode"),
                    limit=args["limit"],
                )
        retrieval.show_more(retrieval.search_key(args), shown, len(hits))
    widgets.tool_call_panel(tool, args, envelope)
    if state.qp_get("cmp") == "1":
        st.subheader("Compare modes")
        if "minScore" in args:
            st.caption(f"The threshold is on the {scale.mode} score: only that column applies it.")
        retrieval.compare_modes(tool, {k: v for k, v in args.items() if k != "mode"}, threshold_mode=scale.mode)
else:
    st.caption("Type a query. Pick collections (or All collections), or put `namespace:<collectionPath>` in the query.")

st.subheader("Files")
if collections:
    files_qp = state.qp_get("files")
    default = files_qp if files_qp in collections else (picked_qp[0] if picked_qp else collections[0])
    coll = st.selectbox(
        "Collection",
        collections,
        index=collections.index(default),
        key="files",
        on_change=lambda: state.qp_set(files=st.session_state["files"], doc=None),
    )
    retrieval.file_list(coll, selected=state.qp_get("doc"))
else:
    st.caption("No collections yet: add one on the Rebuild page.")
