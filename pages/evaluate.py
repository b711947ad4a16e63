"""Evaluate: how often the right passage comes back, per mode and model; grow the question set.

Runs ``Engine.evaluate`` (what ``chunknav eval`` runs) on a questions file and shows
recall@1/5/10 and MRR per mode, model and question kind, with bars; compares two saved
runs; and lets a person search and mark a hit as right, which appends the question to a
questions file. One tool: ``search_chunks`` (for marking).
"""

from pathlib import Path

import streamlit as st

from engine.search.evaluate import append_question, compare_runs, load_run
from explorer import evaluation, state, widgets

st.title("Evaluate")
engine = state.engine()
index_dir = engine.index_dir()
shipped = state.REPO / "tests" / "data" / "eval" / "questions.jsonl"

st.subheader("Run")
with st.form("eval"):
    path = st.text_input(
        "Questions file (JSON Lines)",
        value=str(shipped) if shipped.is_file() else "",
        key="eval_file",
        help="one question a line: question, file, and page and/or phrase (docs/evaluation.md)",
    )
    modes = st.multiselect("Modes", ["keyword", "vector", "hybrid"], default=["keyword", "vector", "hybrid"])
    run_clicked = st.form_submit_button("Run evaluation", icon=":material/play_arrow:")
if run_clicked:
    if not path or not Path(path).is_file():
        st.error(f"No questions file at `{path}`.")
    else:
        with st.spinner("Searching every question in every mode..."):
            try:
                st.session_state["eval_run"] = engine.evaluate(path, modes=modes or None)
            except OSError as e:
                st.error(f"Cannot read or save: {e}")
run = st.session_state.get("eval_run")
if run:
    evaluation.run_table(run)
    evaluation.recall_bars(run)

saved = evaluation.saved_runs(index_dir)
if len(saved) >= 2:
    st.subheader("Compare two saved runs")
    names = [p.name for p in saved]
    left, right = st.columns(2)
    a = left.selectbox("Run A", names, index=1, key="eval_a")
    b = right.selectbox("Run B", names, index=0, key="eval_b")
    evaluation.compare_table(
        compare_runs(load_run(Path(index_dir) / "evals" / a), load_run(Path(index_dir) / "evals" / b))
    )

st.subheader("Grow the set: mark a hit as right")
target = st.text_input(
    "Append marked questions to", value=str(Path(index_dir) / "evals" / "marked-questions.jsonl"), key="eval_target"
)
question = st.text_input("Question", key="eval_q")
if question:
    envelope = widgets.run_tool("search_chunks", {"query": question, "scope": "*", "limit": 5})
    if envelope is not None and widgets.search_outcome(envelope):
        for hit in envelope["hits"]:
            widgets.hit_row(hit, question, key=f"eval-hit{hit['rank']}")
            if st.button("This answers it", key=f"eval-right{hit['rank']}", icon=":material/check:"):
                chunk = widgets.run_tool(
                    "get_chunk",
                    {k: hit[k] for k in ("collectionPath", "filePath", "chunkIndex")},
                    panel=False,
                )
                q = evaluation.question_from_hit(question, hit, (chunk or {}).get("text", ""))
                written = append_question(target, q)
                st.success(f"Added `{written.id}` ({written.file}) to `{target}`.")
