"""explorer/nav.py: one row per page, read by the router and the link builders.

The pages and their URL parameters are part of what users bookmark: the
literal below pins them, so a change here is a deliberate one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import links, nav

REPO = Path(__file__).resolve().parents[2]

SEARCH = ["q", "scope", "kind", "mode", "limit", "hit"]
PAGES = {
    "status": ("Status", []),
    "rebuild": ("Rebuild", []),
    "explore": ("Explore index", [*SEARCH, "min", "w", "match", "cmp", "files", "doc"]),
    "chunk": ("Chunk", ["c", "f", "i", *SEARCH, "full", "p", "lines"]),
    "source": ("Source", ["c", "f", "i", *SEARCH, "p", "zoom", "view", "lines"]),
    "evaluate": ("Evaluate", []),
}


def test_the_pages_their_titles_and_url_parameters():
    assert {p.name: (p.title, list(p.params)) for p in nav.PAGES} == PAGES
    assert [p.name for p in nav.PAGES if p.writes] == ["rebuild"]  # hidden in read-only mode


def test_every_row_is_a_script_in_pages_and_every_script_a_row():
    assert sorted(p.file for p in nav.PAGES) == sorted(f.name for f in (REPO / "pages").glob("*.py"))
    for p in nav.PAGES:
        assert links.page_path(p.name).is_file() and p.icon.startswith(":material/")


def test_links_validate_exactly_the_parameters_of_each_row():
    assert {name: list(rules) for name, rules in links.PARAMS.items()} == {n: ps for n, (_t, ps) in PAGES.items()}
    assert set(links.RULES) == {k for p in nav.PAGES for k in p.params}


def test_a_link_carries_only_what_its_page_reads():
    assert links.query("chunk", c="A", f="x.pdf", i=0, p=None, q="", scope=["A", "B"]) == {
        "c": "A",
        "f": "x.pdf",
        "i": "0",
        "scope": ["A", "B"],
    }
    with pytest.raises(ValueError, match="zoom"):
        links.query("chunk", c="A", zoom=2)
    with pytest.raises(KeyError):
        links.query("nowhere")
