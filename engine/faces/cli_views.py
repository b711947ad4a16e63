"""The human views of ``chunknav index``, ``status`` and ``eval`` (the CLI face's text output).

Owns: ``human_index`` (an index run's summary for people), ``human_plan`` (a
dry run's ``IndexPlan``), ``human_coverage`` (the ``coverage`` envelope as a
table), ``human_status``
(the ``index_status`` envelope for people), ``last_run_line`` and
``attention`` (the lines an operator must not miss), ``human_eval`` (an
evaluation run's table) and ``human_compare`` (two runs compared); a run's progress
line is ``engine.index.progress.progress_line``. Plain functions of the
envelopes: no argparse, no store, no I/O; ``engine.faces.cli`` prints them.
"""

from __future__ import annotations

from engine.errors import WHO_FIXES
from engine.index.progress import progress_line
from engine.index.runs import roots_not_listed, unchanged_of

__all__ = [
    "human_index",
    "human_status",
    "human_plan",
    "human_coverage",
    "last_run_line",
    "attention",
    "fault_line",
    "STORE_FAULTS",
    "human_eval",
    "human_compare",
]

#: The codes of a store that failed under a run (``engine.errors.StoreFaultError``): such a run
#: ends with ``fault_line`` alone.
STORE_FAULTS = ("disk-full", "index-unavailable", "store-busy")


def fault_line(error: dict) -> str:
    """One line for a run that a store fault stopped: the class, what happened and was kept
    (``error["message"]``), and who can fix it."""
    code = error.get("error", "")
    return (
        f"index run stopped: {code}: {error.get('message', '')} (who can fix it: {WHO_FIXES.get(code, 'the operator')})"
    )


#: Files named per reason code in ``human_index`` (``verbose``: every one).
EXAMPLES_PER_REASON = 3


def human_index(s: dict, verbose: bool = False) -> str:
    """An index run's summary (``engine.index.runs``) as lines for people: the counts, then
    per class (failed, kept failed from earlier runs, empty, skipped, stale) one line per
    reason code with its count and ``EXAMPLES_PER_REASON`` files (``verbose``: every file),
    and what stopped the run or its embedding."""
    counts = s.get("counts") or {}
    kept = s.get("failedKept") or []
    lines = [
        f"{'Rebuild' if s.get('force') else 'Index'} {s.get('status', 'finished')} in {s.get('seconds', 0):.2f} s: "
        f"{s.get('filesSeen', 0)} entries seen, {s.get('indexed', 0)} indexed, "
        f"{unchanged_of(s)} unchanged, {len(s.get('failed', []))} failed"
        + (f" ({len(kept)} more failed, kept from earlier runs)" if kept else "")
        + f", {counts.get('skipped', len(s.get('skippedFiles', [])))} skipped, "
        f"{len(s.get('empty', []))} empty, {counts.get('stale', 0)} kept stale, {s.get('removed', 0)} removed"
        + roots_not_listed(s)
        + (f", {counts['renamed']} renamed" if counts.get("renamed") else "")
        + (f", {counts['missing']} kept missing" if counts.get("missing") else ""),
        f"chunks written {s.get('chunksWritten', 0)}; embedded {s.get('embedded', 0)}, reused {s.get('reused', 0)}"
        + (f", truncated {s['truncated']}" if s.get("truncated") else "")
        + (f", without a vector {s['embedFailed']}" if s.get("embedFailed") else ""),
    ]

    def why(f: dict) -> str:  # "code: message", without repeating a code the message starts with
        code, reason = f.get("code") or "", f.get("reason") or ""
        return reason if not code or reason.startswith(code) else f"{code}: {reason}"

    for r in s.get("rootErrors") or []:
        lines.append(f"  root    {r['collectionPath']} <- {r['root']}: {why(r)}")
    classes = (
        ("failed", s.get("failed", []), ""),
        ("failed", kept, " (kept from earlier runs: unchanged, still failing)"),
        ("empty", s.get("empty", []), ""),
        ("skipped", s.get("skippedFiles", s.get("unsupported", [])), ""),
        ("stale", s.get("stale", []), " (chunks kept)"),
    )
    for label, files, note in classes:
        lines += _by_reason(label, files, note, verbose, why)
    for f in s.get("renamed") or []:
        lines.append(f"  renamed {f['collectionPath']}/{f['from']} -> {f['to']} (chunks and vectors kept)")
    for f in s.get("missing") or []:
        lines.append(f"  missing {f['collectionPath']}/{f['filePath']}: {f['reason']}")
    if s.get("error"):
        lines.append(f"run stopped: {s['error'].get('error')}: {s['error'].get('message')}")
        lines.append(f"  who can fix it: {WHO_FIXES.get(s['error'].get('error', ''), 'the operator')}")
    if s.get("status") == "cancelled":
        lines.append(
            "run cancelled: the files being read were abandoned; everything above is committed; run again to finish"
        )
    elif s.get("cancelRequested"):
        lines.append(f"note: {s.get('message')}")
    err = s.get("embedError")
    if err:
        lines.append(
            f"embedding failed: {err.get('error')}: {err.get('message')}"
            + (f" (stored {err['storedDim']}-d, server {err['serverDim']}-d)" if "storedDim" in err else "")
        )
        lines.append(f"  who can fix it: {err.get('whoFixes') or WHO_FIXES.get(err.get('error', ''), 'the operator')}")
    if not verbose and any(len(files) > EXAMPLES_PER_REASON for _l, files, _n in classes):
        lines.append("every file: chunknav index -v (or --json)")
    return "\n".join(lines)


def _by_reason(label: str, files: list[dict], note: str, verbose: bool, why) -> list[str]:
    """Lines of one class of files: every file (``verbose``), else per reason code its count
    and the first ``EXAMPLES_PER_REASON`` files."""
    if verbose:
        return [f"  {label:<7} {f['collectionPath']}/{f['filePath']}: {why(f)}{note}" for f in files]
    groups: dict[str, list[dict]] = {}
    for f in files:
        groups.setdefault(f.get("code") or "no-code", []).append(f)
    out = []
    for code, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(f"{f['collectionPath']}/{f['filePath']}" for f in group[:EXAMPLES_PER_REASON])
        more = f" and {len(group) - EXAMPLES_PER_REASON} more" if len(group) > EXAMPLES_PER_REASON else ""
        out.append(f"  {label:<7} {len(group):>5} {code}{note}: {shown}{more}")
        if len(group) == 1 and group[0].get("reason"):
            out[-1] += f" ({why(group[0])})"
    return out


def human_status(st: dict) -> str:
    """The ``index_status`` envelope for people: counts, collections, what needs
    attention (last run's outcome, embedding failures, models with chunks
    lacking vectors, truncated chunks, stale and failed files), the provider, and a
    ``read-only:`` line when the index was opened read-only. An envelope
    carrying ``error`` (``index-unavailable``: a corrupt, truncated or unopenable index) is
    that error, its message and who can fix it: no counts that would look like an empty index."""
    if st.get("error"):
        return "\n".join(
            [
                f"error: {st['error']}: {st.get('message', '')}",
                f"  who can fix it: {WHO_FIXES.get(st['error'], 'the operator')}",
                "  nothing was read from the index: its counts are unknown",
            ]
        )
    prov = st["provider"]
    probe = prov.get("probe") or {}
    out = [f"documents {st['documents']}, chunks {st['chunks']}, stale vectors {st['staleVectors']}"]
    if st.get("readOnly"):
        why = f" ({st['readOnlyReason']})" if st.get("readOnlyReason") else ""
        out.append(f"read-only: opened without write access{why}; searching and reading work, an index run is refused")
    roots = {r["collectionPath"]: r for r in (st.get("lastRun") or {}).get("rootErrors") or []}
    for c in st["collections"]:
        r = roots.get(c["collectionPath"])
        classes = "".join(f", {c[k]} {k}" for k in ("empty", "stale") if c.get(k))
        out.append(
            f"  {c['collectionPath']:<24} {c['documents']:>5} docs {c['chunks']:>7} chunks "
            f"{c['failed']:>3} failed{classes}  <- {c['root']}" + (f"  ({r['code']} at the last run)" if r else "")
        )
    for v in st["vectors"]:
        line = f"  vectors {v['model']} (dim {v['dim']}): {v['vectors']}, missing {v['missing']}, stale {v['stale']}"
        if v.get("truncated"):
            line += f", truncated {v['truncated']}"
        if v.get("failed"):
            line += f", without a vector {v['failed']}"
        if v.get("serving"):
            line += "  <- searches use these"
        out.append(line)
    for f in st.get("embedFailures", []):
        out.append(
            f"  no vector {f['model']} {f['collectionPath']}/{f['filePath']} chunk {f['chunkIndex']}: "
            f"{f['error']}: {f['reason']}"
        )
    out.append(
        f"provider {prov['provider']} model {prov.get('model') or '-'} dim {prov.get('dim') or '-'}"
        + (f" at {prov['endpoint']}" if prov.get("endpoint") else "")
    )
    if probe:
        out.append(
            "  probe: ok (%.3f s)" % probe.get("seconds", 0)
            if probe.get("ok")
            else f"  probe: {probe.get('error')}: {probe.get('message')}"
        )
    out += attention(st)
    for f in st["failures"]:
        out.append(f"  {f['status']:<7} {f['collectionPath']}/{f['filePath']}: {f['reason']}")
    return "\n".join(out)


def last_run_line(run: dict) -> str:
    """The one ``last run:`` line of ``chunknav status``: the outcome (``finished``,
    ``finished with failures``, ``embedding failed``, or the status of a run that did
    not finish: ``running``, ``cancelled``, ``stopped``, ``interrupted``), when, and
    every class of ``counts`` (a record without ``counts``: its top-level fields)."""
    status = run.get("status", "finished")
    c = dict(run.get("counts") or {})
    c.setdefault("indexed", run.get("indexed", 0))
    c.setdefault("unchanged", unchanged_of(run))
    c.setdefault("failed", len(run.get("failed") or []))
    c.setdefault("removed", run.get("removed", 0))
    if status != "finished":
        outcome = status
    elif run.get("embedError"):
        outcome = "embedding failed"
    else:
        outcome = "finished with failures" if c["failed"] or run.get("rootErrors") else "finished"
    when = f"at {run['finishedAt']}" if run.get("finishedAt") else f"started {run.get('startedAt', '?')}"
    if status == "running":
        outcome = "running (counts so far)"
    return (
        f"last run: {outcome} {when}{' (rebuild)' if run.get('force') else ''}: "
        + ", ".join(
            f"{c.get(k, 0)} {k}" for k in ("indexed", "unchanged", "empty", "failed", "skipped", "stale", "removed")
        )
        + (f" ({len(run['failedKept'])} more failed, kept from earlier runs)" if run.get("failedKept") else "")
        + f", {run.get('embedded', 0)} vectors embedded"
        + roots_not_listed(run)
    )


def attention(st: dict) -> list[str]:
    """The lines an operator must not miss: last run, collection roots it could not list,
    embedding failure, missing vectors per model, truncated chunks, stale files."""
    out = []
    run = st.get("lastRun")
    if not run:
        out.append("last run: none yet (chunknav index)")
    else:
        out.append(last_run_line(run))
        if run.get("status") == "running" and run.get("progress"):
            out.append(f"  now: {progress_line(run['progress'])}")
        if run.get("message"):
            out.append(f"  {run['message']}")
        if run.get("error"):  # what stopped it (disk full, database lost, lock held too long)
            out.append(f"  {run['error'].get('error')}: {run['error'].get('message')}")
        for r in run.get("rootErrors") or []:  # which collection and why (its documents are listed stale)
            out.append(f"attention: collection {r['collectionPath']}: {r['code']}: {r['reason']}")
        err = run.get("embedError")
        if err:
            out.append(f"  embedding failed: {err.get('error')}: {err.get('message')}")
            out.append(
                f"  who can fix it: {err.get('whoFixes') or WHO_FIXES.get(err.get('error', ''), 'the operator')}; "
                f"keyword search works meanwhile, the next run embeds what is missing"
            )
    running = (run or {}).get("status") == "running"
    for v in st["vectors"]:
        if v.get("missing"):
            out.append(
                f"attention: model {v['model']} has {v['missing']} chunks without vectors "
                + ("(the index run going on now embeds them)" if running else "(run chunknav index to embed them)")
            )
    # truncated chunks: wherever the embedding pass reports them (per model, in the status, in the run)
    in_run = (run or {}).get("truncated") or 0
    truncated = (
        sum(int(v.get("truncated") or 0) for v in st["vectors"])
        or int(st.get("truncatedChunks") or 0)
        or (len(in_run) if isinstance(in_run, list) else int(in_run))
    )
    if truncated:
        out.append(f"attention: {truncated} chunks were truncated before embedding")
    stale = [f for f in st["failures"] if f.get("status") == "stale" or f.get("stale")]
    if stale:
        out.append(f"attention: {len(stale)} stale files (changed or unreadable since indexing)")
    model = st["provider"].get("model")
    if st["chunks"] and model and not any(v["model"] == model for v in st["vectors"]):
        out.append(
            f"attention: the configured model {model} has no vectors yet ({st['chunks']} chunks lack them"
            + ("; the index run going on now embeds them)" if running else ")")
        )
    return out


#: The lists of a plan, in the order shown, with the verb each line starts with.
_PLAN_LISTS = (
    ("add", "add"),
    ("change", "change"),
    ("rename", "rename"),
    ("remove", "remove"),
    ("missing", "keep missing"),
    ("stale", "keep stale"),
    ("skipped", "skip"),
)


def human_plan(p: dict) -> str:
    """A dry run's ``IndexPlan`` envelope for people: the counts, then one line per file
    that would change (unchanged files are counted, not listed)."""
    if p.get("error"):
        return f"plan refused: {p['error']}: {p.get('message', '')}"
    c = p["counts"]
    lines = [
        f"Dry run{' (Rebuild)' if p.get('force') else ''}: nothing written. {p['filesSeen']} entries seen; "
        f"would add {c['add']}, change {c['change']}, rename {c['rename']}, remove {c['remove']}, "
        f"keep missing {c['missing']}, keep stale {c['stale']}, skip {c['skipped']}; {c['unchanged']} unchanged"
    ]
    for r in p.get("rootErrors") or []:
        lines.append(f"  root         {r['collectionPath']} <- {r['root']}: {r.get('reason', '')}")
    for key, verb in _PLAN_LISTS:
        for f in p.get(key) or []:
            where = (
                f"{f['collectionPath']}/{f['from']} -> {f['to']}"
                if key == "rename"
                else (f"{f['collectionPath']}/{f['filePath']}")
            )
            why = f.get("reason") or ""
            code = f.get("code") or ""
            lines.append(
                f"  {verb:<12} {where}" + (f": {why if why.startswith(code) else f'{code}: {why}'}" if why else "")
            )
    if p.get("truncated"):
        lines.append(f"  (lists cut at {p['limit']} files each; the counts are whole)")
    return "\n".join(lines)


_COVERAGE_COLUMNS = (
    ("fileType", "type"),
    ("filesSeen", "seen"),
    ("indexed", "indexed"),
    ("empty", "empty"),
    ("failed", "failed"),
    ("stale", "stale"),
    ("missing", "missing"),
    ("notIndexed", "new"),
    ("chunks", "chunks"),
)


def human_coverage(cov: dict) -> str:
    """The ``coverage`` envelope as a table per collection (the ``*`` row is its total),
    then skipped reasons and vectors per model for each row that has any."""
    if cov.get("error"):
        return f"coverage refused: {cov['error']}: {cov.get('message', '')}"
    models = list(cov.get("models") or [])
    head = [label for _, label in _COVERAGE_COLUMNS] + [f"vectors:{m}" for m in models] + ["skipped"]
    lines: list[str] = []
    for cp in cov["collections"]:
        rows = [r for r in cov["rows"] if r["collectionPath"] == cp]
        table = [head]
        for r in rows:
            skipped = ", ".join(f"{k} {v}" for k, v in r["skipped"].items())
            table.append(
                [str(r[k]) if k != "fileType" else (r[k] or "(none)") for k, _ in _COVERAGE_COLUMNS]
                + [str(r["vectors"].get(m, 0)) for m in models]
                + [skipped]
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        lines.append(f"{cp}")
        lines.extend("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table)
    for r in cov.get("rootErrors") or []:
        lines.append(f"root {r['collectionPath']} <- {r['root']}: {r['code']}: {r['reason']}")
    return "\n".join(lines)


def _f(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def human_eval(run: dict) -> str:
    """An evaluation run (``engine.search.evaluate.run_eval``) as a table for people: one row
    per mode and model over all questions, then one per kind (``paraphrase``...), then the
    rows that could not run and the lines of the questions file that were not read."""
    q = run.get("questions") or {}
    lines = [
        f"{q.get('count', 0)} questions from {q.get('source') or '?'} in {run.get('seconds', 0):.1f} s",
        f"{'mode':<8} {'model':<24} {'set':<12} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}",
    ]
    failed = []
    for r in run.get("results", []):
        if "error" in r:
            failed.append(f"  {r['mode']} {r.get('model') or ''}: {r['error']}: {r.get('message', '')}")
            continue
        model = r.get("model") or "-"
        for name, m in [("all", r), *sorted((r.get("byKind") or {}).items())]:
            lines.append(
                f"{r['mode']:<8} {model[:24]:<24} {name[:12]:<12} {m['n']:>4} {_f(m['recall1']):>6} "
                f"{_f(m['recall5']):>6} {_f(m['recall10']):>6} {_f(m['mrr']):>6}"
            )
    if failed:
        lines.append("not run:")
        lines.extend(failed)
    for what, items in (("not read", q.get("problems")), ("phrase not in its file", q.get("unanswerable"))):
        if items:
            lines.append(f"{what}: {len(items)}")
            lines.extend(f"  {p}" for p in items[:20])
    if run.get("savedTo"):
        lines.append(f"saved to {run['savedTo']}")
    return "\n".join(lines)


def human_compare(cmp: dict) -> str:
    """Two saved runs compared (``engine.search.evaluate.compare_runs``): per mode and model the
    metrics of A and B and the questions whose answer moved up or down."""
    lines = [] if cmp.get("same") else ["note: the two runs used different question sets"]
    lines.append(f"{'mode|model':<32} {'metric':<8} {'A':>6} {'B':>6} {'B-A':>7}")
    for row in cmp.get("rows", []):
        for m in ("recall1", "recall5", "recall10", "mrr"):
            d = row["delta"][m]
            lines.append(
                f"{row['key'][:32]:<32} {m:<8} {_f(row['a'][m]):>6} {_f(row['b'][m]):>6} "
                + ("     - " if d is None else f"{d:+7.3f}")
            )
        lines.append(f"  better in B ({len(row['better'])}): {', '.join(row['better']) or '-'}")
        lines.append(f"  worse in B ({len(row['worse'])}): {', '.join(row['worse']) or '-'}")
        lines.append(f"  unchanged: {row['unchanged']}")
    for side in ("onlyA", "onlyB"):
        if cmp.get(side):
            lines.append(f"only in {side[-1]}: {', '.join(cmp[side])}")
    return "\n".join(lines)
