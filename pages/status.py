"""Status: what is indexed, what failed and why, and whether the provider answers.

One tool: ``index_status`` (with the provider probe).
"""

import streamlit as st

from explorer import run_views, widgets

st.title("Status")
probe = st.toggle(
    "Probe the embedding provider",
    value=True,
    key="status_probe",
    help="embeds a fixed string to check the provider answers with the expected dimension",
)
status = widgets.run_tool("index_status", {"probe": probe}, panel=False)

if status is not None:
    run_views.status_view(status)
    widgets.tool_call_panel("index_status", {"probe": probe}, status)
