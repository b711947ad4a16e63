"""chunknav explorer: Streamlit entry point (frame and router).

Run from the repo root: ``chunknav gui`` (or ``make run``), which is
``python -m streamlit run explorer/app.py`` plus the ``streamlit_config.toml``
values as ``--section.key`` flags. Pages are the rows of ``explorer/nav.py``
(scripts in ``pages/``), routed by ``st.navigation``; every view keeps its
state in ``st.query_params``.

On a brand-new index (no collection and no index run recorded in it, and no
collection seen by this process) the bundled sample corpus (``assets/samples``)
is added as collection ``Samples`` and indexed in the background, with a
progress bar in the sidebar (not in read-only mode). The sidebar shows the
run going on (of this process, or of another one from its run record) or the
last run's status and counts. Once only: an index whose
collections were removed keeps its run records, so they stay removed.

Before any page runs (``explorer/access.py``): a non-loopback bind or client
without ``CHUNKNAV_ACCESS_TOKEN`` is refused; with a token the session must
enter it once; ``CHUNKNAV_READ_ONLY`` drops the pages that write (Rebuild). Then the
page's query parameters are validated (``explorer/links.py``). The app root
``/`` is a hidden page that switches to Status, so ``/status``, ``/explore``,
… all open directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:  # `streamlit run explorer/app.py` puts explorer/ first, not the repo
    sys.path.insert(0, _REPO)

import streamlit as st  # noqa: E402

from engine.secrets import install_log_redaction  # noqa: E402
from explorer import access, links, nav, run_views, state, widgets  # noqa: E402

install_log_redaction()  # engine.secrets: no log line carries a configured secret
st.set_page_config(page_title="chunknav explorer", page_icon=state.ICON, layout="wide")


def _home() -> None:
    """The app root: the Status page under its own URL (/status)."""
    st.switch_page(links.page_path("status"))


read_only = state.settings().read_only
pages = [st.Page(_home, title="Home", url_path="home", default=True, visibility="hidden")]
pages += [
    st.Page(links.page_path(p.name), title=p.title, icon=p.icon, url_path=p.name)
    if not (read_only and p.writes)
    # a read-only explorer: out of the navigation; its URL says it is off (access.writes_off)
    else st.Page(links.page_path(p.name), title=p.title, icon=p.icon, url_path=p.name, visibility="hidden")
    for p in nav.PAGES
]
# the gate runs after st.navigation, so a deep link (/rebuild?...) survives entering the token
current = st.navigation(pages, position="sidebar" if access.is_open(state.settings()) else "hidden")
access.gate(state.settings())  # st.stop() unless this session may see the explorer


def _first_start() -> None:
    """Add and index the bundled samples once, on a brand-new index: no collection, no index
    run ever recorded in it, and no collection seen in it by this explorer process. Removing
    collections (the samples too) therefore sticks: the index keeps its run records."""
    engine = state.engine()
    seen = state.index_seen()
    if engine.store.collections():
        seen["collections"] = True
        return
    if (
        state.settings().read_only
        or seen["collections"]
        or state.job().snapshot()["status"] != "idle"
        or engine.store.last_run() is not None
    ):
        return
    if state.SAMPLES.is_dir() and any(state.SAMPLES.iterdir()):
        seen["collections"] = True
        engine.add_collection(state.SAMPLE_COLLECTION, str(state.SAMPLES))
        state.job().start(engine, force=False)


@st.fragment(run_every=1.0)
def _sidebar_job_live() -> None:
    snap = state.job().snapshot()
    if snap["status"] != "running":
        st.rerun(scope="app")  # the run ended: redraw the whole view once, stop polling
    st.markdown("**Indexing…**")
    run_views.job_progress(snap)


def _sidebar_job() -> None:
    snap = state.job().snapshot()
    if snap["status"] == "running":
        _sidebar_job_live()
    elif snap["status"] == "done" and snap.get("summary"):
        s = snap["summary"]
        icon = ":material/cancel:" if s.get("status") in ("cancelled", "stopped") else ":material/task_alt:"
        st.caption(f"{icon} Last run here {run_views.run_line(s)}")
    else:  # a run of another process (the CLI), or the last one recorded: from its record
        from engine.index.runs import run_outcome

        run = run_outcome(state.engine().store.last_run())
        if run is not None and run["status"] == "running" and run.get("progress"):
            st.caption(":material/sync: An index run of another process is going on:")
            run_views.job_progress({**run["progress"], "force": run.get("force")})
        elif run is not None:
            bad = run["status"] in ("cancelled", "stopped", "interrupted")
            st.caption(f"{':material/cancel:' if bad else ':material/task_alt:'} Last run {run_views.run_line(run)}")


with st.sidebar:
    st.markdown("### chunknav")
    st.caption(
        f"Index: `{state.settings().dsn and 'postgres' or state.settings().db}` · "
        f"provider `{state.settings().embed_provider}`"
    )
    if read_only:
        st.caption(":material/lock: Read-only explorer: no Rebuild, no collection changes.")
    if state.settings().access_token:
        st.caption(":material/key: Shared explorer: this session entered the access token.")
    widgets.show_calls()  # its default, before the switch is drawn
    st.toggle(
        "Show as tool call",
        key="show_calls",
        help="under each view: the exact tool call (MCP), its chunknav command line and the envelope",
    )
    _first_start()
    _sidebar_job()

if current.url_path in links.PARAMS:
    links.validate(current.url_path, [c.collection_path for c in state.engine().store.collections()])
current.run()
