"""Rebuild: re-index (hash-gated) or rebuild (forced) in the background, with
live progress and the summary; add and remove collections.

The run is ``Engine.run_index`` in a background thread (``explorer/jobs.py``);
a click while a run is active starts nothing.
"""

import streamlit as st

from explorer import state, widgets
from explorer.table import table

st.title("Rebuild")
engine = state.engine()
job = state.job()

a, b = st.columns(2)
busy = job.running()
if a.button("Re-index all content", icon=":material/sync:", type="primary", key="reindex",
            help="hash-gated: only new or changed files are re-extracted; missing vectors are embedded"):
    if not job.start(engine, force=False):
        st.toast("A run is already active: not starting another.")
if b.button("Rebuild", icon=":material/restart_alt:", key="rebuild",
            help="forced: re-extract, re-chunk and re-store every file (bypasses the hash gate)"):
    if not job.start(engine, force=True):
        st.toast("A run is already active: not starting another.")
st.caption("Runs continue in the background: the other pages stay usable meanwhile. "
           "Same as `chunknav index` (and `chunknav index --force` for Rebuild).")


@st.fragment(run_every=0.5)
def live() -> None:
    snap = job.snapshot()
    if snap["status"] != "running":
        st.rerun(scope="app")
    widgets.job_progress(snap)


snap = job.snapshot()
if snap["status"] == "running":
    live()
elif snap["status"] == "done":
    widgets.run_summary(snap["summary"], heading=f"Run finished in {snap.get('elapsedS', 0)} s")
elif snap["status"] in ("busy", "error"):
    widgets.failure_callout({"error": snap["error"], "message": snap["message"]})

st.divider()
st.subheader("Collections")
with st.form("add_collection", clear_on_submit=False, border=True):
    c1, c2 = st.columns([1, 2])
    path = c1.text_input("Collection path", placeholder="ACME/Reports", key="add_path")
    root = c2.text_input("Directory", placeholder="/data/reports", key="add_root")
    password = st.text_input("PDF password from (optional)", placeholder="env:PDF_PASSWORD or file:/etc/chunknav/pw",
                             key="add_password",
                             help="Where the password for encrypted PDFs comes from: an environment variable of "
                                  "the indexing process (env:NAME) or a secrets file outside the index "
                                  "(file:/path, first line). The index stores only this reference.")
    if st.form_submit_button("Add collection", icon=":material/add:"):
        try:
            c = engine.add_collection(path, root, password or None)
            st.success(f"Added `{c.collection_path}` → `{c.root}`. Index it with *Re-index all content*.")
        except ValueError as e:
            st.error(f"Could not add the collection: {e}")

known = [c.collection_path for c in engine.store.collections()]
if known:
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    victim = c1.selectbox("Remove a collection", known, key="remove_path")
    if c2.button("Remove", icon=":material/delete:", key="remove", disabled=busy):
        engine.remove_collection(victim)
        st.success(f"Removed `{victim}`: its documents and chunks left the index (vectors stay, counted stale).")
    table([{"collectionPath": c.collection_path, "root": c.root} for c in engine.store.collections()])
