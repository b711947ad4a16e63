"""The operator tools: a run's plan (``plan_index``) and the coverage report (``coverage``).

Owns: ``tool_plan_index`` (``Engine.plan_index``'s dry-run summary -> the
``IndexPlan`` envelope, lists cut at ``limit``), ``plan_envelope`` (the same
for ``chunknav index --dry-run``), ``tool_coverage``
(``engine.index.coverage`` -> the ``Coverage`` envelope), ``coverage_csv`` (its
rows as CSV) and ``mark_missing`` (``missing: true`` on search hits whose
file is gone and whose document was kept). Imports no face (streamlit, mcp,
argparse); raises nothing past ``engine.tools.registry.call_tool``.
"""

from __future__ import annotations

from typing import Any

from engine.tools import envelopes as E
from engine.service import Engine

__all__ = ["PLAN_LIMIT_DEFAULT", "tool_plan_index", "plan_envelope", "tool_coverage", "coverage_csv", "mark_missing"]

#: Files listed per list of a plan unless ``limit`` says otherwise (the counts stay whole).
PLAN_LIMIT_DEFAULT = 1000


def _file(entry: dict[str, Any], with_code: bool = True) -> E.PlanFile:
    out: E.PlanFile = {"collectionPath": entry["collectionPath"], "filePath": entry["filePath"]}
    if with_code and entry.get("code"):
        out["code"] = entry["code"]
    if entry.get("reason"):
        out["reason"] = entry["reason"]
    return out


def plan_envelope(summary: dict[str, Any], limit: int = PLAN_LIMIT_DEFAULT) -> E.IndexPlan:
    """A dry-run summary (``engine.index.indexer.Indexer.plan``) as its envelope.

    Args:
        summary: the plan's summary (``status: "planned"``).
        limit: entries kept per list (>= 1); ``truncated: true`` when one was cut.
    """
    lists: dict[str, list[Any]] = {
        "add": [_file(e, False) for e in summary["added"]],
        "change": [_file(e, False) for e in summary["changed"]],
        "rename": [
            {"collectionPath": e["collectionPath"], "from": e["from"], "to": e["to"]} for e in summary["renamed"]
        ],
        "remove": [_file(e) for e in summary["removedFiles"]],
        "missing": [_file(e) for e in summary["missing"]],
        "unchanged": [_file(e, False) for e in summary["unchangedFiles"]],
        "stale": [_file(e) for e in summary["stale"]],
        "skipped": [_file(e) for e in summary["skippedFiles"]],
    }
    counts = {k: len(v) for k, v in lists.items()}
    truncated = any(n > limit for n in counts.values())
    out: E.IndexPlan = {
        "dryRun": True,
        "collections": list(summary["collections"]),
        "force": bool(summary["force"]),
        "keepMissing": bool(summary.get("keepMissing")),
        "filesSeen": int(summary["filesSeen"]),
        "counts": counts,
        "add": lists["add"][:limit],
        "change": lists["change"][:limit],
        "rename": lists["rename"][:limit],
        "remove": lists["remove"][:limit],
        "missing": lists["missing"][:limit],
        "unchanged": lists["unchanged"][:limit],
        "stale": lists["stale"][:limit],
        "skipped": lists["skipped"][:limit],
        "rootErrors": list(summary.get("rootErrors") or []),
    }
    if truncated:
        out["truncated"] = True
        out["limit"] = limit
    return out


def _unknown(names: list[str] | None, engine: Engine) -> str | None:
    """The message for the first name in ``names`` that is no collection, else None."""
    known = {c.collection_path for c in engine.store.collections()}
    for name in names or []:
        if name.strip("/") not in known:
            return f"unknown collection {name!r}; known: {', '.join(sorted(known)) or 'none'}"
    return None


def _names(collections: str | list[str] | None) -> list[str] | None:
    """One path or a list of them -> a list (None stays None)."""
    return [collections] if isinstance(collections, str) else collections


def tool_plan_index(
    engine: Engine,
    collections: str | list[str] | None = None,
    force: bool = False,
    keepMissing: bool | None = None,
    limit: int = PLAN_LIMIT_DEFAULT,
) -> E.IndexPlan:
    """``plan_index``: what an index run with these arguments would add, change, move,
    remove (or keep missing), leave unchanged or skip, with nothing written."""
    collections = _names(collections)
    bad = _unknown(collections, engine)
    if bad:
        return {**_empty_plan(collections, force, keepMissing, engine), "error": "not-found", "message": bad}
    return plan_envelope(
        engine.plan_index([c.strip("/") for c in collections or []] or None, force, keepMissing), limit
    )


def _empty_plan(collections: list[str] | None, force: bool, keep: bool | None, engine: Engine) -> E.IndexPlan:
    return {
        "dryRun": True,
        "collections": list(collections or []),
        "force": bool(force),
        "keepMissing": bool(engine.settings.keep_missing if keep is None else keep),
        "filesSeen": 0,
        "counts": {k: 0 for k in ("add", "change", "rename", "remove", "missing", "unchanged", "stale", "skipped")},
        "add": [],
        "change": [],
        "rename": [],
        "remove": [],
        "missing": [],
        "unchanged": [],
        "stale": [],
        "skipped": [],
        "rootErrors": [],
    }


def tool_coverage(engine: Engine, collections: str | list[str] | None = None) -> E.Coverage:
    """``coverage``: per collection and file type, files on disk beside what is indexed."""
    from engine.index.coverage import coverage

    collections = _names(collections)
    store = engine.store
    known = {c.collection_path: c for c in store.collections()}
    bad = _unknown(collections, engine)
    models = sorted(store.vector_counts())
    if bad:
        return {
            "collections": list(collections or []),
            "models": models,
            "rows": [],
            "rootErrors": [],
            "error": "not-found",
            "message": bad,
        }
    names = sorted(known) if not collections else [n.strip("/") for n in collections]
    rows, errors = coverage(store, [known[n] for n in names], engine.settings.max_file_bytes)
    return {
        "collections": names,
        "models": models,
        "rows": [
            {
                "collectionPath": r.collection_path,
                "fileType": r.file_type,
                "filesSeen": r.files_seen,
                "indexed": r.indexed,
                "empty": r.empty,
                "failed": r.failed,
                "stale": r.stale,
                "missing": r.missing,
                "notIndexed": r.not_indexed,
                "skipped": dict(sorted(r.skipped.items())),
                "chunks": r.chunks,
                "vectors": dict(sorted(r.vectors.items())),
            }
            for r in rows
        ],
        "rootErrors": errors,
    }


#: The fixed CSV columns of ``coverage_csv`` (then one ``skipped:<code>`` and one
#: ``vectors:<model>`` column per code and model that occurs).
CSV_COLUMNS = (
    "collectionPath",
    "fileType",
    "filesSeen",
    "indexed",
    "empty",
    "failed",
    "stale",
    "missing",
    "notIndexed",
    "chunks",
)


def coverage_csv(envelope: dict[str, Any]) -> str:
    """The rows of a ``coverage`` envelope as CSV (header first; ``\\r\\n`` line ends)."""
    import csv
    import io

    codes = sorted({c for r in envelope["rows"] for c in r["skipped"]})
    models = list(envelope["models"])
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([*CSV_COLUMNS, *(f"skipped:{c}" for c in codes), *(f"vectors:{m}" for m in models)])
    for r in envelope["rows"]:
        row: dict[str, Any] = dict(r)
        w.writerow(
            [
                *(row[c] for c in CSV_COLUMNS),
                *(r["skipped"].get(c, 0) for c in codes),
                *(r["vectors"].get(m, 0) for m in models),
            ]
        )
    return buf.getvalue()


def mark_missing(engine: Engine, envelope: E.SearchResult) -> E.SearchResult:
    """Add ``missing: true`` to each hit whose document is kept with a ``missing`` mark
    (its file is gone; ``keep_missing``). One row read per distinct file of the hits."""
    hits: list[dict[str, Any]] = list(envelope.get("hits") or [])
    marks: dict[tuple[str, str], bool] = {}
    for h in hits:
        key = (h["collectionPath"], h["filePath"])
        if key not in marks:
            doc = engine.store.get_document(*key)
            marks[key] = bool(doc is not None and ((doc.metadata or {}).get("stale") or {}).get("code") == "missing")
        if marks[key]:
            h["missing"] = True
    return envelope
