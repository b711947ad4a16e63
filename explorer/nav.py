"""The explorer's pages: one row per page (script, title, icon, URL parameters).

Owns: ``PAGES`` and the parameter groups pages share (``SEARCH``, ``CHUNK``).
``explorer/app.py`` builds the navigation from it, ``explorer/links.py``
validates each page's URL parameters by it, and ``explorer/widgets.py``
builds page links from it. Adding a page is a script in ``pages/`` and one
row here. Imports nothing from the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Page", "SEARCH", "CHUNK", "PAGES", "page"]

#: The search a view came from: query, scope (repeated, one per collection path),
#: kind (documents | chunks), mode, limit and the hit picked (its rank).
SEARCH = ("q", "scope", "kind", "mode", "limit", "hit")
#: One chunk: collectionPath, filePath, chunkIndex.
CHUNK = ("c", "f", "i")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of the explorer.

    Attributes:
        name: its URL path (``/explore``) and the name code uses for it.
        file: its script in ``pages/``.
        title: the navigation label and the page's heading.
        icon: a Streamlit material icon.
        params: the URL parameters it reads, in the order links write them.
        writes: True when it changes the index (hidden in read-only mode).
    """

    name: str
    file: str
    title: str
    icon: str
    params: tuple[str, ...] = ()
    writes: bool = False


PAGES: tuple[Page, ...] = (
    Page("status", "status.py", "Status", ":material/monitoring:"),
    Page("rebuild", "rebuild.py", "Rebuild", ":material/autorenew:", writes=True),
    Page(
        "explore",
        "explore.py",
        "Explore index",
        ":material/search:",
        (*SEARCH, "min", "w", "match", "cmp", "files", "doc"),
    ),
    Page("chunk", "chunk.py", "Chunk", ":material/article:", (*CHUNK, *SEARCH, "full", "p", "lines")),
    Page(
        "source",
        "source.py",
        "Source",
        ":material/picture_as_pdf:",
        (*CHUNK, *SEARCH, "p", "zoom", "view", "lines"),
    ),
    Page("evaluate", "evaluate.py", "Evaluate", ":material/fact_check:"),
)

_BY_NAME = {p.name: p for p in PAGES}


def page(name: str) -> Page:
    """The row of page ``name`` (KeyError for no such page)."""
    return _BY_NAME[name]
