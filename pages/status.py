"""Status: what is indexed, what failed and why, and whether the provider answers.

Tools: ``index_status``, and ``coverage`` per collection and file type on
request. The provider probe (an embedding call) runs on demand, not on every
render: its last answer is kept in the session and shown with its age.
"""

import time


import streamlit as st

from explorer import run_views, widgets
from explorer.table import table

st.title("Status")
probe = st.button(
    "Probe the embedding provider",
    icon=":material/network_check:",
    key="status_probe",
    help="embeds a fixed string to check the provider answers with the expected dimension",
)
status = widgets.run_tool("index_status", {"probe": probe}, panel=False)

if status is not None:
    if probe and "probe" in status["provider"]:
        st.session_state["status_probe_result"] = (status["provider"]["probe"], time.time())
    elif "status_probe_result" in st.session_state:  # the last probe, with its age
        result, at = st.session_state["status_probe_result"]
        status["provider"] = {**status["provider"], "probe": result, "probeAgeS": round(time.time() - at)}
    run_views.status_view(status)
    widgets.tool_call_panel("index_status", {"probe": probe}, status)

if st.toggle("Coverage per file type", key="status_coverage", help="walks the roots now; reads no file"):
    cov = widgets.run_tool("coverage", {})
    if cov is not None and "error" in cov:
        widgets.failure_callout(cov)
    elif cov is not None:
        table(
            [
                {
                    **{k: v for k, v in r.items() if k not in ("skipped", "vectors")},
                    "skipped": ", ".join(f"{k} {v}" for k, v in r["skipped"].items()),
                    **{f"vectors {m}": r["vectors"].get(m, 0) for m in cov["models"]},
                }
                for r in cov["rows"]
            ],
        )
