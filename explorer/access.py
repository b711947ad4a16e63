"""Who may see the explorer: the access gate run before every page.

Owns: ``gate(settings)``. Rules, in order:

1. ``CHUNKNAV_ACCESS_TOKEN`` set: the session must enter it once (a
   password field; compared with ``hmac.compare_digest``; a wrong token
   waits ``WRONG_TOKEN_DELAY_S`` before answering). Every Streamlit session
   (a browser tab; a reload) asks once.
2. No token, and Streamlit bound to a non-loopback address
   (``server.address``), or a client connecting from a non-loopback IP
   (``st.context.ip_address``, a second line of defence when Streamlit was
   started by hand without ``--server.address``): the page refuses, naming
   ``CHUNKNAV_ACCESS_TOKEN``. ``chunknav gui`` already refuses to start then
   (``engine.faces.gui.check_exposure``).

Anything refused ends the script with ``st.stop()`` before a page runs.
"""

from __future__ import annotations

import hmac
import time

import streamlit as st

from engine.config import Settings
from engine.faces.gui import is_loopback

__all__ = ["WRONG_TOKEN_DELAY_S", "is_open", "gate"]

#: Seconds a wrong token waits before the answer (slows guessing).
WRONG_TOKEN_DELAY_S = 1.0
_OK = "_chunknav_access_ok"


def _exposed() -> str | None:
    """Where the explorer is reachable from beyond loopback, or None."""
    address = st.get_option("server.address")
    if address not in (None, "") and not is_loopback(str(address)):
        return f"it is bound to {address}"
    try:
        ip = st.context.ip_address
    except Exception:  # no client context (bare mode)
        ip = None
    if isinstance(ip, str) and ip and not is_loopback(ip):
        return f"this browser connects from {ip}"
    return None


def is_open(settings: Settings) -> bool:
    """True when this session may see the pages now (no prompt, no refusal)."""
    if settings.access_token:
        return bool(st.session_state.get(_OK))
    return _exposed() is None


def gate(settings: Settings) -> None:
    """Stop the script unless this session may use the explorer (module docstring)."""
    token = settings.access_token
    if not token:
        where = _exposed()
        if where:
            st.error(
                f"**The explorer refuses to serve this session:** {where}, beyond loopback, and no "
                "access token is configured. The operator must set `CHUNKNAV_ACCESS_TOKEN` (and may "
                "set `CHUNKNAV_READ_ONLY=true`), or bind 127.0.0.1.",
                icon=":material/lock:",
            )
            st.stop()
        return
    if st.session_state.get(_OK):
        return
    st.title("chunknav explorer")
    with st.form("access_token", border=True):
        st.markdown("This explorer is shared: enter its access token (asked once per browser session).")
        entered = st.text_input("Access token", type="password", key="access_token_input")
        submitted = st.form_submit_button("Open", icon=":material/lock_open:", type="primary")
    if submitted:
        if hmac.compare_digest(entered.encode("utf-8"), token.encode("utf-8")):
            st.session_state[_OK] = True
            st.rerun()
        time.sleep(WRONG_TOKEN_DELAY_S)
        st.error("Wrong access token.", icon=":material/lock:")
    st.stop()
