"""Who may see the explorer: the access gate run before every page.

Owns: ``gate(settings)`` and ``is_open(settings)``; the rule itself is
``engine.faces.exposure`` (the same for every face). In order:

1. ``CHUNKNAV_ACCESS_TOKEN`` set: the session must enter it once (a
   password field, compared by ``exposure.token_matches``; a wrong token
   waits ``WRONG_TOKEN_DELAY_S`` before answering). Every Streamlit session
   (a browser tab; a reload) asks once.
2. No token, and Streamlit bound to a non-loopback address
   (``server.address``), or a client connecting from a non-loopback IP
   (``st.context.ip_address``, a second line of defence when Streamlit was
   started by hand without ``--server.address``): the page refuses, naming
   ``CHUNKNAV_ACCESS_TOKEN``. ``chunknav gui`` already refuses to start then.

Anything refused ends the script with ``st.stop()`` before a page runs.

In a read-only explorer (``CHUNKNAV_READ_ONLY``) a page that writes (Rebuild) is out of
the navigation; its URL opens ``writes_off``: a plain page saying why, not Streamlit's
"Page not found".
"""

from __future__ import annotations

import time

import streamlit as st

from engine.config import Settings
from engine.faces import exposure

__all__ = ["WRONG_TOKEN_DELAY_S", "refusal", "is_open", "gate", "writes_off"]

#: Seconds a wrong token waits before the answer (slows guessing).
WRONG_TOKEN_DELAY_S = 1.0
_OK = "_chunknav_access_ok"


def refusal(settings: Settings, bind: str | None, client: str | None) -> str | None:
    """Why a session may not see the explorer, or None (``exposure.refusal`` for the explorer).

    Args:
        settings: the explorer's settings (``access_token``).
        bind: Streamlit's ``server.address``; None or ``""`` when it was not
            given (a server started by hand), and then only ``client`` is judged.
        client: the browser's IP address, when Streamlit knows it.
    """
    return exposure.refusal(exposure.EXPLORER, bind or None, settings.access_token, client)


def _session_refusal(settings: Settings) -> str | None:
    address = st.get_option("server.address")
    try:
        ip = st.context.ip_address
    except Exception:  # no client context (bare mode)
        ip = None
    return refusal(settings, str(address) if address else None, ip if isinstance(ip, str) else None)


def is_open(settings: Settings) -> bool:
    """True when this session may see the pages now (no prompt, no refusal)."""
    if settings.access_token:
        return bool(st.session_state.get(_OK))
    return _session_refusal(settings) is None


def gate(settings: Settings) -> None:
    """Stop the script unless this session may use the explorer (module docstring)."""
    token = settings.access_token
    if not token:
        why = _session_refusal(settings)
        if why:
            st.error(f"{why[:1].upper()}{why[1:]}.", icon=":material/lock:")
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
        if exposure.token_matches(entered, token):
            st.session_state[_OK] = True
            st.rerun()
        time.sleep(WRONG_TOKEN_DELAY_S)
        st.error("Wrong access token.", icon=":material/lock:")
    st.stop()


def writes_off(settings: Settings, title: str) -> None:
    """In a read-only explorer: the page ``title`` (one that writes) says it is off (the
    sidebar keeps the pages that read) and ends the script (``st.stop()``); else nothing."""
    if not settings.read_only:
        return
    st.title(f"{title} is off in this read-only explorer")
    st.info(
        "This explorer was started read-only (`CHUNKNAV_READ_ONLY`): it searches and shows "
        "documents, but adds no collection and runs no index. Ask its operator to index; "
        "Status and Explore index are in the sidebar.",
        icon=":material/lock:",
    )
    st.stop()
