"""Process-wide explorer state, built once with ``st.cache_resource``.

Owns: the one ``Engine`` per settings (``engine()``), the background index
job next to it (``job()``), and deep-link helpers over ``st.query_params``.
The Engine is shared by every session, so it must be (and is) safe for
concurrent reads; only the index job writes, one at a time.

Settings come from ``engine.config.load_settings()`` (``CHUNKNAV_DB``,
``EMBED_PROVIDER``, ``EMBED_URL``, ... or ``chunknav.toml``); tests set those
variables before ``AppTest.from_file("explorer/app.py")``. The cache is keyed
by the settings, so a test with another database gets another Engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from engine.config import Settings, load_settings
from engine.tools.registry import Engine
from explorer.jobs import IndexJob

__all__ = [
    "REPO",
    "PAGES_DIR",
    "SAMPLES",
    "SAMPLE_COLLECTION",
    "ICON",
    "settings",
    "engine",
    "job",
    "index_seen",
    "qp_get",
    "qp_all",
    "qp_int",
    "qp_float",
    "qp_set",
]

REPO = Path(__file__).resolve().parents[1]
_HERE = Path(__file__).resolve().parent


def _shipped(inside: str, checkout: str) -> Path:
    """A folder of the explorer: ``explorer/<inside>`` in an installed wheel
    (setup.py maps it there), else ``<checkout>`` at the repository root."""
    wheel = _HERE / inside
    return wheel if wheel.is_dir() else REPO / checkout


#: The page scripts (``pages/`` of the checkout; ``explorer/_pages`` when installed).
PAGES_DIR = _shipped("_pages", "pages")
#: The bundled sample corpus, added and indexed once, on a brand-new index (``explorer/app.py``).
SAMPLES = _shipped("_assets", "assets") / "samples"
SAMPLE_COLLECTION = "Samples"
#: The browser tab icon: a local PNG served by Streamlit itself (an emoji or material
#: icon as page_icon makes the browser fetch it from fonts.gstatic.com).
ICON = _shipped("_assets", "assets") / "icon.png"


def settings() -> Settings:
    """Settings as the engine reads them now (environment + chunknav.toml)."""
    return load_settings()


def _key(s: Settings) -> str:
    return repr(s)


@st.cache_resource(show_spinner=False)
def _engine(key: str, _settings: Settings) -> Engine:
    return Engine(_settings)


@st.cache_resource(show_spinner=False)
def _job(key: str) -> IndexJob:
    return IndexJob()


@st.cache_resource(show_spinner=False)
def _seen(key: str) -> dict[str, bool]:
    return {"collections": False}


def index_seen() -> dict[str, bool]:
    """What this explorer process has seen of the current settings' index (one mutable dict
    per process and index): ``collections`` is True once any script run found a collection
    in it (the bundled samples are then never added again by ``explorer/app.py``)."""
    return _seen(_key(settings()))


def engine() -> Engine:
    """The shared Engine for the current settings (built once per process)."""
    s = settings()
    return _engine(_key(s), s)


def job() -> IndexJob:
    """The background index job of the current settings' Engine (one per process)."""
    return _job(_key(settings()))


# -- deep links --------------------------------------------------------------
def qp_get(name: str, default: str | None = None) -> str | None:
    """A query parameter as text, or ``default``."""
    value = st.query_params.get(name)
    return default if value in (None, "") else str(value)


def qp_all(name: str) -> list[str]:
    """Every value of a repeated query parameter (``scope=A&scope=B``), in order; [] when absent."""
    return [str(v) for v in st.query_params.get_all(name) if v not in (None, "")]


def qp_int(name: str, default: int | None = None) -> int | None:
    """A query parameter as an int (``default`` when absent or not a number)."""
    try:
        return int(str(st.query_params.get(name)))
    except (TypeError, ValueError):
        return default


def qp_float(name: str, default: float) -> float:
    """A query parameter as a float (``default`` when absent or not a number)."""
    try:
        return float(str(st.query_params.get(name)))
    except (TypeError, ValueError):
        return default


def qp_set(**values: Any) -> None:
    """Set query parameters; ``None`` removes one. Values are stored as text; a list or
    tuple becomes one repeated parameter per item (``scope=A&scope=B``)."""
    for k, v in values.items():
        if v is None or v == "" or (isinstance(v, (list, tuple)) and not v):
            if k in st.query_params:
                del st.query_params[k]
        elif isinstance(v, (list, tuple)):
            st.query_params[k] = [str(x) for x in v]
        else:
            st.query_params[k] = str(v)
