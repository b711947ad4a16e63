"""The Evaluate page's views: an evaluation run as a table and bars, and "this hit is right".

Owns: ``run_table`` (one row per mode, model and question kind), ``recall_bars``
(recall@5 per mode and model as horizontal bars: ``st.progress``, since Streamlit's
chart elements need pandas and altair, which the runtime leaves out; see
``explorer/table.py``), ``compare_table`` (two saved runs), ``saved_runs`` (the runs
saved beside the index) and ``question_from_hit`` (the question a person marks right,
as ``engine.search.evaluate.append_question`` writes it). The run itself is
``Engine.evaluate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from engine.search.evaluate import Question
from explorer.table import table

__all__ = ["run_table", "recall_bars", "compare_table", "saved_runs", "question_from_hit", "PHRASE_WORDS"]

#: Words of a marked hit's chunk kept as the question's phrase (taken from its middle).
PHRASE_WORDS = 12


def _rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in run.get("results", []):
        if "error" in r:
            continue
        for name, m in [("all", r), *sorted((r.get("byKind") or {}).items())]:
            rows.append({**m, "mode": r["mode"], "model": r.get("model") or "-", "set": name})
    return rows


def run_table(run: dict[str, Any]) -> None:
    """The run's metrics, one row per mode, model and question kind; then what could not run."""
    q = run.get("questions") or {}
    st.caption(
        f"{q.get('count', 0)} questions from `{q.get('source') or '?'}` · {run.get('seconds', 0):.1f} s"
        + (f" · saved to `{run['savedTo']}`" if run.get("savedTo") else "")
    )
    rows = [{**r, **{k: round(r[k], 3) for k in ("recall1", "recall5", "recall10", "mrr")}} for r in _rows(run)]
    table(
        rows,
        ["mode", "model", "set", "n", "recall1", "recall5", "recall10", "mrr"],
        {"recall1": "R@1", "recall5": "R@5", "recall10": "R@10", "mrr": "MRR"},
        height_px=None,
    )
    for r in run.get("results", []):
        if "error" in r:
            st.warning(f"**{r['mode']}** `{r.get('model') or ''}` not run: `{r['error']}` {r.get('message', '')}")
    for what, items in (("not read", q.get("problems")), ("phrase not in its file", q.get("unanswerable"))):
        if items:
            st.warning(f"{len(items)} question(s) {what}: " + "; ".join(items[:10]))


def recall_bars(run: dict[str, Any]) -> None:
    """Recall@5 per mode and model (and per question kind) as horizontal bars."""
    st.markdown("**Recall@5**")
    for r in _rows(run):
        st.progress(
            min(1.0, max(0.0, float(r["recall5"]))),
            text=f"{r['mode']} · {r['model']} · {r['set']}: {r['recall5']:.3f}",
        )


def compare_table(cmp: dict[str, Any]) -> None:
    """Two saved runs compared (``compare_runs``): metrics side by side, questions that moved."""
    if not cmp.get("same"):
        st.caption("The two runs used different question sets: compared over the questions they share.")
    rows = []
    for row in cmp.get("rows", []):
        for m in ("recall1", "recall5", "recall10", "mrr"):
            a, b, d = row["a"][m], row["b"][m], row["delta"][m]
            rows.append(
                {
                    "mode|model": row["key"],
                    "metric": m,
                    "A": None if a is None else round(a, 3),
                    "B": None if b is None else round(b, 3),
                    "B-A": None if d is None else round(d, 3),
                }
            )
    table(rows, height_px=None)
    for row in cmp.get("rows", []):
        st.caption(
            f"`{row['key']}`: better in B: {', '.join(row['better']) or '-'} · "
            f"worse in B: {', '.join(row['worse']) or '-'} · unchanged {row['unchanged']}"
        )


def saved_runs(index_dir: str) -> list[Path]:
    """The runs saved under ``<index_dir>/evals``, newest first."""
    return sorted((Path(index_dir) / "evals").glob("eval-*.json"), key=lambda p: p.name, reverse=True)


def question_from_hit(question: str, hit: dict[str, Any], chunk_text: str) -> Question:
    """The question a person marked ``hit`` right for: its file, page and scope, and a phrase of
    ``PHRASE_WORDS`` words from the middle of the hit's chunk (away from the overlaps)."""
    words = chunk_text.split()
    start = max(0, len(words) // 2 - PHRASE_WORDS // 2)
    phrase = " ".join(words[start : start + PHRASE_WORDS]) or None
    return Question(
        "marked",
        question,
        hit["filePath"],
        hit.get("page"),
        phrase,
        "marked",
        hit["collectionPath"],
    )
