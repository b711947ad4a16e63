"""Rows of dicts as a table, without Arrow.

Owns: ``table``, the explorer's one way to show rows (collections, vectors per
model, files not indexed). It renders a Markdown table, so the explorer needs
none of the packages behind Streamlit's dataframe and chart elements (pandas,
pyarrow, altair, pydeck): ``make run`` leaves them out (``requirements.lock``)
and ``tests/project/test_boundaries.py`` keeps those elements out of ``explorer/`` and
``pages/``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

import streamlit as st

__all__ = ["table", "markdown_table"]

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~$])")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{value:,}" if isinstance(value, int) else f"{value:g}"
    text = " ".join(str(value).split())  # one line per cell
    return _SPECIAL.sub(r"\\\1", text)


def markdown_table(
    rows: Iterable[Mapping[str, Any]], columns: list[str] | None = None, labels: Mapping[str, str] | None = None
) -> str:
    """The Markdown text of a table.

    Args:
        rows: one mapping per row; a key missing from a row is an empty cell.
        columns: keys to show, in order; default every key, in first-seen order.
        labels: header text per key (default the key itself).

    Returns:
        A GitHub-flavoured Markdown table (header, rule, one line per row), each
        cell on one line with Markdown characters escaped; "" for no rows.
    """
    rows = list(rows)
    if not rows:
        return ""
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    labels = labels or {}
    lines = ["| " + " | ".join(_cell(labels.get(c, c)) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def table(
    rows: Iterable[Mapping[str, Any]],
    columns: list[str] | None = None,
    labels: Mapping[str, str] | None = None,
    height_px: int | None = 400,
) -> None:
    """Show ``rows`` as a table (see ``markdown_table``), scrolling past ``height_px`` pixels.

    ``height_px`` None: no scroll box. Tables of more than 12 rows scroll.
    """
    rows = list(rows)
    text = markdown_table(rows, columns, labels)
    if not text:
        return
    if height_px is not None and len(rows) > 12:
        with st.container(height=height_px):
            st.markdown(text)
    else:
        st.markdown(text)
