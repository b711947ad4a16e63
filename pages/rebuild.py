"""Rebuild: re-index (hash-gated) or rebuild (forced) in the background, with
live progress and the summary; a Preview of what a run would do (the
``plan_index`` tool: nothing written); add and remove collections (a re-point of an
existing collection path and every removal ask for confirmation, naming what
is dropped; both are refused while a run is active). Hidden in read-only mode.

The run is ``Engine.run_index`` in a background thread (``explorer/jobs.py``);
a click while a run is active starts nothing. Cancel stops the run within
seconds, abandoning the files being read; what it committed stays.
"""

import streamlit as st

from engine.errors import ChunknavError, CollectionBoundError, IndexBusyError
from engine.paths import allowed_roots
from explorer import access, run_views, state, widgets
from explorer.table import table

access.writes_off(state.settings(), "Rebuild")  # read-only: a plain page saying so
st.title("Rebuild")
engine = state.engine()
job = state.job()

a, b, c = st.columns(3)
busy = job.running()
if a.button(
    "Re-index all content",
    icon=":material/sync:",
    type="primary",
    key="reindex",
    help="hash-gated: only new or changed files are re-extracted; missing vectors are embedded",
):
    if not job.start(engine, force=False):
        st.toast("A run is already active: not starting another.")
if b.button(
    "Rebuild",
    icon=":material/restart_alt:",
    key="rebuild",
    help="forced: re-extract, re-chunk and re-store every file (bypasses the hash gate)",
):
    if not job.start(engine, force=True):
        st.toast("A run is already active: not starting another.")
if c.button(
    "Cancel",
    icon=":material/stop_circle:",
    key="cancel",
    disabled=not job.running(),
    help="stop the active run within seconds: the files being read are abandoned, what it committed stays",
):
    if job.cancel():
        st.toast("Cancelling: the files being read are abandoned; what is committed stays.")
preview = st.toggle(
    "Preview",
    key="preview",
    help="list what a run would add, change, rename, remove and leave unchanged, writing nothing "
    "(chunknav index --dry-run)",
)
if preview:
    plan = widgets.run_tool("plan_index", {"limit": 200})
    if plan is not None and "error" in plan:
        widgets.failure_callout(plan)
    elif plan is not None:
        counts = plan["counts"]
        st.caption(
            f"Dry run, nothing written: {plan['filesSeen']} entries seen; a run would add {counts['add']}, "
            f"change {counts['change']}, rename {counts['rename']}, remove {counts['remove']}, keep missing "
            f"{counts['missing']}, keep stale {counts['stale']}, skip {counts['skipped']}; "
            f"{counts['unchanged']} unchanged" + (" (lists cut at 200 files each)" if plan.get("truncated") else "")
        )
        rows = [
            {
                "action": key,
                "file": f"{f['collectionPath']}/{f.get('filePath') or f['from'] + ' -> ' + f['to']}",
                "reason": f.get("reason") or f.get("code") or "",
            }
            for key in ("add", "change", "rename", "remove", "missing", "stale", "skipped")
            for f in plan[key]
        ]
        if rows:
            table(rows)
st.caption(
    "Runs continue in the background: the other pages stay usable meanwhile. "
    "Same as `chunknav index` (and `chunknav index --force` for Rebuild)."
)


@st.fragment(run_every=0.5)
def live() -> None:
    snap = job.snapshot()
    if snap["status"] != "running":
        st.rerun(scope="app")
    run_views.job_progress(snap)


snap = job.snapshot()
if snap["status"] == "running":
    live()
elif snap["status"] == "done":
    run_views.run_summary(
        snap["summary"], heading=f"Run {snap['summary'].get('status', 'finished')} in {snap.get('elapsedS', 0)} s"
    )
elif snap["status"] in ("busy", "error"):
    widgets.failure_callout({"error": snap["error"], "message": snap["message"]})

st.divider()
st.subheader("Collections")
st.caption(
    "Collection roots must lie under `CHUNKNAV_ALLOWED_ROOTS`: "
    + ", ".join(f"`{r}`" for r in allowed_roots(state.settings().allowed_roots))
    + "."
)


def _pending_clear() -> None:
    st.session_state.pop("pending_replace", None)
    st.session_state.pop("pending_remove", None)


with st.form("add_collection", clear_on_submit=False, border=True):
    c1, c2 = st.columns([1, 2])
    path = c1.text_input("Collection path", placeholder="ACME/Reports", key="add_path")
    root = c2.text_input("Directory", placeholder="/data/reports", key="add_root")
    password = st.text_input(
        "PDF password from (optional)",
        placeholder="env:PDF_PASSWORD or file:/etc/chunknav/pw",
        key="add_password",
        help="Where the password for encrypted PDFs comes from: an environment variable of "
        "the indexing process (env:NAME) or a secrets file outside the index "
        "(file:/path, first line). The index stores only this reference.",
    )
    if st.form_submit_button("Add collection", icon=":material/add:"):
        _pending_clear()
        try:
            c = engine.add_collection(path, root, password or None)
            st.success(f"Added `{c.collection_path}` → `{c.root}`. Index it with *Re-index all content*.")
        except CollectionBoundError as e:
            st.session_state["pending_replace"] = {
                "path": e.collection_path,
                "root": root,
                "current": e.current_root,
                "new": e.new_root,
                "password": password or None,
            }
        except (ValueError, ChunknavError) as e:
            widgets.failure_callout(
                {"error": getattr(e, "code", "invalid-argument"), "message": f"Could not add the collection: {e}"}
            )

pending = st.session_state.get("pending_replace")
if pending:
    counts = engine.collection_counts(pending["path"])
    with st.container(border=True):
        st.warning(
            f"**`{pending['path']}` is already bound to `{pending['current']}`.** Replacing it re-points "
            f"it to `{pending['new']}` and drops its {counts['documents']} documents and "
            f"{counts['chunks']} chunks now (vectors are kept, counted stale); the next run indexes "
            "the new directory.",
            icon=":material/warning:",
        )
        y, n = st.columns(2)
        if y.button(
            "Replace the binding", icon=":material/swap_horiz:", key="confirm_replace", type="primary", disabled=busy
        ):
            try:
                c = engine.add_collection(pending["path"], pending["root"], pending["password"], replace=True)
                st.success(f"Replaced: `{c.collection_path}` → `{c.root}`. Index it with *Re-index all content*.")
            except (ValueError, ChunknavError) as e:
                widgets.failure_callout({"error": getattr(e, "code", "index-busy"), "message": str(e)})
            st.session_state.pop("pending_replace", None)
        if n.button("Keep the current binding", key="cancel_replace"):
            st.session_state.pop("pending_replace", None)
            st.rerun()
        if busy:
            st.caption("An index run is active: replacing waits until it ends.")

known = [c.collection_path for c in engine.store.collections()]
if known:
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    picked = c1.selectbox("Remove a collection", known, key="remove_path")
    if c2.button(
        "Remove…",
        icon=":material/delete:",
        key="remove",
        disabled=busy,
        help="asks for confirmation first" + (" (an index run is active)" if busy else ""),
    ):
        st.session_state.pop("pending_replace", None)
        st.session_state["pending_remove"] = picked
    victim = st.session_state.get("pending_remove")
    if victim is not None and victim != picked:  # another one picked since: ask again, for that one
        st.session_state.pop("pending_remove", None)
        victim = None
    if victim in known:
        counts = engine.collection_counts(victim)
        with st.container(border=True):
            st.warning(
                f"**Remove `{victim}`?** This drops its {counts['documents']} documents and "
                f"{counts['chunks']} chunks from the index (vectors are kept, counted stale). "
                "The files on disk are not touched.",
                icon=":material/warning:",
            )
            y, n = st.columns(2)
            if y.button(
                f"Remove {victim}",
                icon=":material/delete_forever:",
                key="confirm_remove",
                type="primary",
                disabled=busy,
            ):
                try:
                    engine.remove_collection(victim)
                    st.success(
                        f"Removed `{victim}`: {counts['documents']} documents and {counts['chunks']} "
                        "chunks left the index (vectors stay, counted stale)."
                    )
                except IndexBusyError as e:
                    widgets.failure_callout({"error": "index-busy", "message": str(e)})
                st.session_state.pop("pending_remove", None)
            if n.button("Keep it", key="cancel_remove"):
                st.session_state.pop("pending_remove", None)
                st.rerun()
    table([{"collectionPath": c.collection_path, "root": c.root} for c in engine.store.collections()])
