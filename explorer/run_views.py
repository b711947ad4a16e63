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

__all__ = ["job_progress", "run_line", "run_summary", "root_errors", "provider_view", "status_view"]


# -- index runs --------------------------------------------------------------------
def job_progress(snap: dict[str, Any]) -> None:
    """Live progress of a running index job (``engine.index.progress``): the phase and its
    counts, a bar weighted by bytes (chunks while embedding), time taken and left, and the
    files being read with how long each has taken."""
    from engine.index.progress import progress_line

    phase = snap.get("phase") or "start"
    fraction = snap.get("fraction")
    what = "Rebuild (forced)" if snap.get("force") else "Re-index (hash-gated)"
    if snap.get("cancelRequested"):
        what += " · cancelling: the files being read are abandoned"
    line = progress_line({**snap, "inFlight": []}) if phase != "start" else "starting"
    st.progress(float(fraction or 0.0), text=f"{what}: {line}")
    flight = snap.get("inFlight") or []
    if flight:
        st.caption("Reading now: " + ", ".join(f"`{f['file']}` ({f['seconds']:.0f} s)" for f in flight[:4]))


def run_line(summary: dict[str, Any]) -> str:
    """One line for a run: its status (``cancelled`` and ``stopped`` said as such) and counts."""
    from engine.index.runs import roots_not_listed

    kept = len(summary.get("failedKept") or [])
    return (
        f"{summary.get('status', 'finished')}: {summary.get('indexed', 0)} indexed, {unchanged_of(summary)} unchanged, "
        f"{len(summary.get('failed') or [])} failed"
        + (f" (+{kept} kept from earlier runs)" if kept else "")
        + f"{roots_not_listed(summary)}, {summary.get('seconds', 0)} s"
    )


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
def _collection_rows(status: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per collection: its documents by class, and the files the last run skipped
    in it, by reason code (``"3 unsupported-type, 1 too-large"``)."""
    skipped: dict[str, dict[str, int]] = {}
    for f in (status.get("lastRun") or {}).get("skippedFiles") or []:
        codes = skipped.setdefault(f["collectionPath"], {})
        codes[f.get("code") or "no-code"] = codes.get(f.get("code") or "no-code", 0) + 1
    rows = []
    for c in status["collections"]:
        codes = skipped.get(c["collectionPath"], {})
        rows.append(
            {
                **c,
                "skipped": ", ".join(f"{n} {code}" for code, n in sorted(codes.items(), key=lambda kv: -kv[1])) or "0",
            }
        )
    return rows


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
    age = provider.get("probeAgeS")
    if probe is None:
        st.caption("Probe not run: it embeds a test string on demand (the button above), not on every view.")
        return
    if probe.get("ok"):
        st.success(
            f"Probe ok: embedded a test string in {probe.get('seconds', 0):.3f} s.", icon=":material/check_circle:"
        )
    else:
        failure_callout(probe)
    if age is not None:
        st.caption(f"Probe result from {age} s ago; probe again for a fresh answer.")


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
        table(
            _collection_rows(status),
            columns=["collectionPath", "documents", "chunks", "indexed", "failed", "empty", "stale", "skipped", "root"],
            labels={"stale": "stale, kept", "skipped": "skipped at the last run"},
        )
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
    bad = [f for f in status["failures"] if f["status"] != "stale"]
    kept = [f for f in status["failures"] if f["status"] == "stale"]
    st.subheader(f"Documents failed or without text ({len(bad)})")
    if bad:
        table(bad, columns=["status", "collectionPath", "filePath", "reason"])
    else:
        st.caption("None failed or came out empty. Files the last run skipped are counted per collection above.")
    if kept:
        st.subheader(f"Indexed, kept while their file cannot be read ({len(kept)})")
        st.caption("Still searchable: the text and chunks from the last read are kept and marked stale.")
        table(kept, columns=["collectionPath", "filePath", "reason"])
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
