"""The explorer's views of index runs and of the index's status: live progress of the
background job, a run's summary (every outcome class, failures with reasons, the
collection roots it could not list), and the ``index_status`` envelope (Status page).

Owns: ``job_progress``, ``run_summary``, ``root_errors``, ``provider_view`` and
``status_view``; failures are drawn by ``explorer.widgets.failure_callout``. Renders
envelopes only: no engine calls, no store access, no SQL.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from engine.index.runs import unchanged_of
from explorer.table import table
from explorer.widgets import failure_callout

__all__ = ["job_progress", "run_summary", "root_errors", "provider_view", "status_view"]


# -- index runs --------------------------------------------------------------------
def job_progress(snap: dict[str, Any]) -> None:
    """Live progress of a running index job: files done/total, current file, elapsed."""
    total = int(snap.get("total") or 0)
    done = int(snap.get("done") or 0)
    phase = snap.get("phase") or "start"
    unit = {"embed": "chunks embedded", "walk": "files found", "hash": "files hashed"}.get(phase, "files")
    frac = min(1.0, done / total) if total else 0.0
    what = "Rebuild (forced)" if snap.get("force") else "Re-index (hash-gated)"
    count = f"{done}/{total}" if total else f"{done}"
    if snap.get("bytesHashed") and phase == "hash":
        count += f" ({snap['bytesHashed'] / 1e6:.1f} MB hashed)"
    if snap.get("cancelRequested"):
        what += " · cancelling at the next file boundary"
    st.progress(frac, text=f"{what}: {phase} · {count} {unit} · {snap.get('elapsedS', 0):.1f} s")
    if snap.get("file"):
        st.caption(f"Current file: `{snap['file']}`")


def run_summary(summary: dict[str, Any], heading: str = "Summary", roots: bool = True) -> None:
    """The summary of an index run: counts, failures with reasons, embedding failure
    (``roots``: also the collection roots it could not list, ``root_errors``)."""
    st.markdown(f"**{heading}**" + (f" · {summary.get('finishedAt')}" if summary.get("finishedAt") else ""))
    cols = st.columns(6)
    for col, (label, key) in zip(
        cols,
        [
            ("files seen", "filesSeen"),
            ("indexed", "indexed"),
            ("unchanged", "unchanged"),
            ("chunks written", "chunksWritten"),
            ("vectors embedded", "embedded"),
            ("seconds", "seconds"),
        ],
    ):
        col.metric(label, unchanged_of(summary) if key == "unchanged" else summary.get(key, 0))
    extra = []
    for label, key in (
        ("removed", "removed"),
        ("vectors reused", "reused"),
        ("embedded truncated", "truncated"),
        ("chunks without a vector", "embedFailed"),
    ):
        if summary.get(key):
            extra.append(f"{label}: {summary[key]}")
    if summary.get("collections"):
        extra.append("collections: " + ", ".join(f"`{c}`" for c in summary["collections"]))
    extra.append("forced rebuild" if summary.get("force") else "hash-gated")
    st.caption(" · ".join(extra))
    counts = summary.get("counts")
    if counts:  # every class of outcome
        st.caption(
            f"Run **{summary.get('status', 'finished')}** · "
            + " · ".join(
                f"{k}: {counts.get(k, 0)}"
                for k in ("indexed", "unchanged", "empty", "failed", "skipped", "stale", "removed")
            )
        )
    if summary.get("cancelRequested") and summary.get("status") == "finished":
        st.info(
            summary.get("message") or "A stop was requested during the last file: nothing was left to do.",
            icon=":material/info:",
        )
    if summary.get("status") == "stopped" and summary.get("error"):  # a store fault: its code, who can fix it
        failure_callout(summary["error"])
    elif summary.get("status") in ("cancelled", "interrupted", "stopped"):
        st.warning(
            summary.get("message")
            or (summary.get("error") or {}).get("message")
            or f"The run was {summary['status']}: what it committed is kept; run again to finish."
        )
    if roots:
        root_errors(summary)
    if summary.get("embedError"):
        failure_callout(summary["embedError"])
    lists = ("failed", "empty", "skippedFiles", "stale") if counts else ("failed", "empty", "unsupported")
    rows = [
        {"status": {"skippedFiles": "skipped"}.get(kind, kind), **f} for kind in lists for f in summary.get(kind) or []
    ]
    if rows:
        st.markdown(f"**Files not indexed ({len(rows)})**")
        table(rows, columns=["status", "code", "collectionPath", "filePath", "reason"])


def root_errors(summary: dict[str, Any] | None) -> None:
    """One error box per collection root the run could not list (``rootErrors``: which
    collection, its root, the code and why; its documents are kept, listed stale)."""
    for r in (summary or {}).get("rootErrors") or []:
        st.error(
            f"**Collection `{r['collectionPath']}`** (`{r['code']}`): {r['reason']}. They stay searchable; "
            "the next run that can list the root reads them again.",
            icon=":material/folder_off:",
        )


# -- status --------------------------------------------------------------------------
def provider_view(provider: dict[str, Any]) -> None:
    """The embedding provider with model, dimension, endpoint and the probe's result."""
    line = (
        f"Provider **`{provider.get('provider')}`** · model `{provider.get('model') or '-'}` · "
        f"dimension {provider.get('dim') or '-'}"
    )
    if provider.get("endpoint"):
        line += f" · endpoint `{provider['endpoint']}`"
    st.markdown(line)
    probe = provider.get("probe")
    if probe is None:
        st.caption("Probe not run.")
    elif probe.get("ok"):
        st.success(
            f"Probe ok: embedded a test string in {probe.get('seconds', 0):.3f} s.", icon=":material/check_circle:"
        )
    else:
        failure_callout(probe)


def status_view(status: dict[str, Any]) -> None:
    """The ``index_status`` envelope: counts, collections, vectors per model, failures, last run."""
    c = st.columns(5)
    c[0].metric("collections", len(status["collections"]))
    c[1].metric("documents", status["documents"])
    c[2].metric("chunks", status["chunks"])
    c[3].metric(
        "stale vectors", status["staleVectors"], help="vectors whose chunk no longer exists (kept: rows are only added)"
    )
    model = status["provider"].get("model")
    row = next((v for v in status["vectors"] if v["model"] == model), None)
    c[4].metric(
        "chunks lacking vectors",
        row["missing"] if row else status["chunks"],
        help=f"for the configured model `{model}`; every model below",
    )
    st.subheader("Embedding provider")
    provider_view(status["provider"])
    st.subheader("Collections")
    root_errors(status.get("lastRun"))
    if status["collections"]:
        table(status["collections"], columns=["collectionPath", "root", "documents", "chunks", "failed"])
    else:
        st.info("No collection yet: add one on the Rebuild page.")
    st.subheader("Vectors per model")
    if status["vectors"]:
        table(status["vectors"], labels={"missing": "chunks lacking vectors", "stale": "stale vectors"})
    else:
        st.caption("No vectors stored yet.")
    if status.get("embedFailures"):
        st.markdown(f"**Chunks the embedding pass could not embed ({len(status['embedFailures'])})**")
        table(status["embedFailures"], columns=["model", "collectionPath", "filePath", "chunkIndex", "error", "reason"])
    st.subheader(f"Files not indexed ({len(status['failures'])})")
    if status["failures"]:
        table(status["failures"], columns=["status", "collectionPath", "filePath", "reason"])
    else:
        st.caption("None: every file was indexed.")
    noted = status.get("notes") or []
    if noted:
        st.subheader(f"Indexed with notes ({len(noted)})")
        st.caption(
            "Text decoded from a detected encoding, OCR'd pages, parts not read: "
            "the file is searchable, but check these."
        )
        table(
            [{**n, "notes": "; ".join(n["notes"])} for n in noted],
            columns=["collectionPath", "filePath", "encoding", "encodingConfidence", "notes"],
        )
    st.subheader("Last run")
    if status.get("lastRun"):
        run_summary(status["lastRun"], heading="Last index run", roots=False)  # shown under Collections
        with st.expander("Last run summary as JSON"):
            st.json(status["lastRun"])
    else:
        st.caption("No index run yet.")
