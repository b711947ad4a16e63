"""Retrieval evaluation: labelled questions in, recall and MRR per mode and model out.

Owns: the questions file format (JSON Lines: ``question``, ``file``, and ``page``
and/or ``phrase``, optional ``id``, ``kind``, ``scope``), reading it (a bad line
is named in ``problems``, never dropped silently), the rule that says a hit answers
a question (``answer_rank``), the metrics (recall@1/5/10, MRR@10, overall and per
``kind``), the saved run (a JSON file holding the settings, the metrics and every
question's rank) and the comparison of two saved runs question by question.
``append_question`` grows a questions file (the explorer's "this hit is right").

A run searches with ``engine.search.searcher.ContentChunkSearch`` exactly as the
``search_chunks`` tool does (same scope rules, same fusion), so its figures are
the product's. Imports the searcher, the store protocol and ``engine.embed`` (an
extra model's embedder); no face (streamlit, mcp, argparse).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.search.fusion import FUSION_DEPTH, RRF_K, VECTOR_WEIGHT_DEFAULT
from engine.values import Chunk, RankedChunk

__all__ = [
    "EVAL_MODES",
    "EVAL_DEPTH",
    "RUN_FORMAT",
    "Question",
    "load_questions",
    "question_line",
    "append_question",
    "answer_rank",
    "metrics",
    "run_eval",
    "compare_runs",
    "load_run",
    "save_run",
    "default_run_path",
]

#: The modes an evaluation ranks with, in the order they are reported.
EVAL_MODES = ("keyword", "vector", "hybrid")
#: Hits read per question: recall@10 and MRR@10 need ten.
EVAL_DEPTH = 10
#: Version of the saved run's layout (``format`` key).
RUN_FORMAT = 1
_KEYS = {"id", "question", "file", "page", "phrase", "kind", "scope"}


@dataclass(frozen=True, slots=True)
class Question:
    """One labelled question.

    Attributes:
        id: its name (the line number, ``"line-7"``, when the file gives none).
        question: what is searched.
        file: the answering file, POSIX, relative to its collection root.
        page: the answer's 1-based page, or None.
        phrase: words of the answering passage as extracted, or None.
        kind: a free label the metrics are split by (``paraphrase``, ``lexical``...), or None.
        scope: the collection path(s) to search; None: every collection.
    """

    id: str
    question: str
    file: str
    page: int | None = None
    phrase: str | None = None
    kind: str | None = None
    scope: str | tuple[str, ...] | None = None


def _question(obj: Any, line_no: int) -> Question:
    """A ``Question`` from one parsed line.

    Raises:
        ValueError: the line breaks the format (the message says how).
    """
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    unknown = sorted(set(obj) - _KEYS)
    if unknown:
        raise ValueError(f"unknown keys {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    for key in ("question", "file"):
        if not isinstance(obj.get(key), str) or not obj[key].strip():
            raise ValueError(f"'{key}' must be a non-empty string")
    page = obj.get("page")
    if page is not None and (not isinstance(page, int) or isinstance(page, bool) or page < 1):
        raise ValueError("'page' must be an integer >= 1")
    phrase = obj.get("phrase")
    if phrase is not None and (not isinstance(phrase, str) or not phrase.strip()):
        raise ValueError("'phrase' must be a non-empty string")
    scope = obj.get("scope")
    if isinstance(scope, list) and scope and all(isinstance(s, str) and s for s in scope):
        scope = tuple(scope)
    elif scope is not None and not (isinstance(scope, str) and scope):
        raise ValueError("'scope' must be a collection path or a list of them")
    kind = obj.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise ValueError("'kind' must be a string")
    qid = obj.get("id")
    return Question(
        str(qid) if qid is not None else f"line-{line_no}",
        obj["question"],
        obj["file"].strip().lstrip("/"),
        page,
        phrase,
        kind,
        scope,
    )


def load_questions(path: str | os.PathLike[str]) -> tuple[list[Question], list[str]]:
    """Read a questions file (JSON Lines; blank lines and lines starting with ``#`` skipped).

    Returns:
        ``(questions in file order, problems)``: each problem names its line and why it
        was not read (bad JSON, a missing key, a repeated id).

    Raises:
        OSError: the file cannot be read.
    """
    questions: list[Question] = []
    problems: list[str] = []
    seen: set[str] = set()
    text = Path(path).read_text("utf-8")
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            q = _question(json.loads(line), no)
        except ValueError as e:  # json.JSONDecodeError is a ValueError
            problems.append(f"line {no}: {e}")
            continue
        if q.id in seen:
            problems.append(f"line {no}: id {q.id!r} repeats an earlier line")
            continue
        seen.add(q.id)
        questions.append(q)
    return questions, problems


def question_line(q: Question) -> str:
    """``q`` as one line of a questions file (keys that are None left out)."""
    obj: dict[str, Any] = {"id": q.id, "question": q.question, "file": q.file}
    for key in ("page", "phrase", "kind"):
        if getattr(q, key) is not None:
            obj[key] = getattr(q, key)
    if q.scope is not None:
        obj["scope"] = list(q.scope) if isinstance(q.scope, tuple) else q.scope
    return json.dumps(obj, ensure_ascii=False)


def append_question(path: str | os.PathLike[str], q: Question) -> Question:
    """Append ``q`` to a questions file (created when missing), giving it a free id.

    The id becomes ``q.id``, or ``q.id`` with ``-2``, ``-3``... when the file already
    holds it. Returns the question as written.

    Raises:
        OSError: the file cannot be read or written.
    """
    p = Path(path)
    taken: set[str] = set()
    ends_in_newline = True
    if p.exists():
        text = p.read_text("utf-8")
        ends_in_newline = not text or text.endswith("\n")
        for no, line in enumerate(text.splitlines(), 1):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            taken.add(str(obj.get("id", f"line-{no}")) if isinstance(obj, dict) else "")
    qid, n = q.id, 1
    while qid in taken:
        n += 1
        qid = f"{q.id}-{n}"
    written = Question(qid, q.question, q.file, q.page, q.phrase, q.kind, q.scope)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as f:
        f.write(("" if ends_in_newline else "\n") + question_line(written) + "\n")
    return written


# ---------------------------------------------------------------------------
# the hit rule


def _fold(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs folded to one space, and the raw offset of each kept character."""
    out: list[str] = []
    where: list[int] = []
    for i, part in enumerate(text.split()):
        if i:
            out.append(" ")
            where.append(where[-1] + 1)
        start = text.find(part, (where[-1] + 1) if where else 0)
        out.append(part)
        where.extend(range(start, start + len(part)))
    return "".join(out), where


def phrase_span(text: str, phrase: str) -> tuple[int, int] | None:
    """Raw ``(start, end)`` character offsets (end exclusive) of the first occurrence of
    ``phrase`` in ``text``, both with whitespace runs folded; case-insensitive when no
    exact occurrence exists. None: not found."""
    folded, where = _fold(text)
    want = " ".join(phrase.split())
    if not want:
        return None
    i = folded.find(want)
    if i < 0:
        i = folded.casefold().find(want.casefold()) if len(folded.casefold()) == len(folded) else -1
    if i < 0:
        return None
    return where[i], where[i + len(want) - 1] + 1


def _pages(chunk: Chunk) -> set[int]:
    return {r.page for r in chunk.regions} | ({chunk.page} if chunk.page else set())


def answer_rank(hits: Sequence[RankedChunk], q: Question, span: tuple[int, int] | None) -> int | None:
    """0-based rank of the first hit that answers ``q``, or None.

    A hit answers when it comes from ``q.file`` and: with a phrase (its span in the
    document given as ``span``), its chunk overlaps that span; else with a page, it
    touches that page (any region); else always.
    """
    for rank, h in enumerate(hits):
        c = h.chunk
        if c.file_path != q.file:
            continue
        if q.phrase is not None:
            if span is not None and c.start < span[1] and c.end > span[0]:
                return rank
        elif q.page is not None:
            if q.page in _pages(c):
                return rank
        else:
            return rank
    return None


def metrics(ranks: Iterable[int | None]) -> dict[str, float | int]:
    """``{"n", "recall1", "recall5", "recall10", "mrr"}`` of 0-based answer ranks (None: not in the
    top ``EVAL_DEPTH``); MRR is MRR@10. An empty list gives zeros with ``n`` 0."""
    rs = list(ranks)
    n = len(rs)
    if not n:
        return {"n": 0, "recall1": 0.0, "recall5": 0.0, "recall10": 0.0, "mrr": 0.0}
    return {
        "n": n,
        "recall1": sum(r is not None and r < 1 for r in rs) / n,
        "recall5": sum(r is not None and r < 5 for r in rs) / n,
        "recall10": sum(r is not None and r < 10 for r in rs) / n,
        "mrr": sum(1.0 / (r + 1) for r in rs if r is not None and r < 10) / n,
    }


# ---------------------------------------------------------------------------
# a run


@dataclass
class _Target:
    """One (mode, model) of a run: the searcher to ask and what to call it."""

    mode: str
    model: str | None
    search: Any  # ContentChunkSearch
    note: str | None = None
    ranks: dict[str, int | None] = field(default_factory=dict)
    matches: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None


def run_eval(
    searcher: Any,
    questions: Sequence[Question],
    *,
    extra: Sequence[tuple[str, Any]] = (),
    modes: Sequence[str] = EVAL_MODES,
    settings: dict[str, Any] | None = None,
    source: str | None = None,
    problems: Sequence[str] = (),
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Rank every question with every mode (vector and hybrid once per model) and score them.

    Args:
        searcher: the configured ``ContentChunkSearch`` (its embedder is "the configured model").
        questions: the labelled questions.
        extra: ``(model name, ContentChunkSearch for that model)`` of further models to
            rank with in vector and hybrid mode (keyword mode does not depend on a model).
        modes: a subset of ``EVAL_MODES``.
        settings: what the run ran with (saved as they are).
        source: where the questions came from (a path), saved with the run.
        problems: lines of the questions file that were not read (saved and reported).
        on_progress: called with ``(searches done, searches in all)``.

    Returns:
        The run (JSON-able dict): ``format``, ``created`` (UTC, ISO 8601), ``questions``
        (``source``, ``count``, ``sha256`` of the question lines, ``problems``), ``settings``,
        ``results`` (one per mode and model: ``mode``, ``model``, ``n``, ``recall1``,
        ``recall5``, ``recall10``, ``mrr``, ``byKind`` {kind: the same metrics},
        and ``error``/``message`` instead of metrics when the mode could not run: the
        provider's error code, or ``no-vectors`` when the index holds no vectors for the
        model), ``questions.unanswerable`` (ids whose phrase is not in their indexed file), ``ranks`` ({"mode|model":
        {question id: 0-based rank or null}}) and ``seconds``.
    """
    t0 = time.perf_counter()
    own_model = None
    if any(m != "keyword" for m in modes):
        try:
            emb = searcher.embedder()
            own_model = getattr(emb, "model", None) if emb is not None else None
        except Exception:  # a provider that cannot be built: its modes report the failure
            own_model = None
    targets: list[_Target] = []
    for mode in modes:
        if mode not in EVAL_MODES:
            raise ValueError(f"mode must be one of {', '.join(EVAL_MODES)}, got {mode!r}")
        if mode == "keyword":
            targets.append(_Target(mode, None, searcher))
            continue
        own = _Target(mode, own_model, searcher)
        if own_model is not None and not searcher.has_vectors(own_model):
            own.error, own.note = "no-vectors", f"this index holds no vectors for model {own_model!r}"
        targets.append(own)
        targets.extend(_Target(mode, name, s) for name, s in extra)
    spans: dict[tuple[str, str], dict[str, tuple[int, int] | None]] = {}
    total, done = len(targets) * len(questions), 0
    for target in targets:
        for q in questions:
            if target.error:
                break
            outcome = target.search.search(q.question, q.scope or "*", EVAL_DEPTH, target.mode)
            done += 1
            if on_progress is not None:
                on_progress(done, total)
            if not outcome.searched and (outcome.failure is not None or outcome.error):
                target.error = outcome.error or outcome.failure.code
                target.note = outcome.message or getattr(outcome.failure, "message", None)
                break
            hits = outcome.hits
            span = None
            if q.phrase is not None:
                span = _span_in(searcher.store, hits, q, spans)
            target.ranks[q.id] = answer_rank(hits, q, span)
    unanswerable = sorted(
        q.id
        for q in questions
        if q.phrase is not None and spans.get((q.file, q.phrase), {}) and not any(spans[(q.file, q.phrase)].values())
    )
    results = []
    ranks: dict[str, dict[str, int | None]] = {}
    for target in targets:
        row: dict[str, Any] = {"mode": target.mode, "model": target.model}
        if target.error:
            row.update(error=target.error, message=target.note or "")
            results.append(row)
            continue
        row.update(metrics(target.ranks[q.id] for q in questions))
        kinds = sorted({q.kind for q in questions if q.kind})
        row["byKind"] = {k: metrics(target.ranks[q.id] for q in questions if q.kind == k) for k in kinds}
        results.append(row)
        ranks[_run_key(target.mode, target.model)] = dict(target.ranks)
    lines = "\n".join(question_line(q) for q in questions)
    return {
        "format": RUN_FORMAT,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "questions": {
            "source": source,
            "count": len(questions),
            "sha256": hashlib.sha256(lines.encode("utf-8")).hexdigest(),
            "problems": list(problems),
            "unanswerable": unanswerable,
        },
        "settings": {
            "rrfK": RRF_K,
            "fusionDepth": FUSION_DEPTH,
            "vectorWeight": VECTOR_WEIGHT_DEFAULT,
            "depth": EVAL_DEPTH,
            **(settings or {}),
        },
        "results": results,
        "ranks": ranks,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _span_in(
    store: Any, hits: Sequence[RankedChunk], q: Question, spans: dict[tuple[str, str], dict[str, Any]]
) -> tuple[int, int] | None:
    """The phrase's span in the indexed text of ``q.file`` in the collection a hit comes from
    (read once per file and collection; None when no hit comes from the file or the phrase is
    not in its text)."""
    assert q.phrase is not None
    found = spans.setdefault((q.file, q.phrase), {})
    for h in hits:
        c = h.chunk
        if c.file_path != q.file:
            continue
        if c.collection_path not in found:
            text = store.document_text(c.collection_path, c.file_path)
            found[c.collection_path] = phrase_span(text, q.phrase) if text else None
        if found[c.collection_path] is not None:
            return found[c.collection_path]
    return None


def _run_key(mode: str, model: str | None) -> str:
    """The ``ranks`` key of one mode and model: ``"keyword"``, ``"hybrid|<model>"``."""
    return mode if model is None else f"{mode}|{model}"


# ---------------------------------------------------------------------------
# saved runs


def default_run_path(index_dir: str | os.PathLike[str], now: float | None = None) -> Path:
    """``<index_dir>/evals/eval-YYYYmmdd-HHMMSS.json`` (UTC) for a run made at ``now``
    (epoch seconds; default: now); ``-2``, ``-3``... when that name is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    base = Path(index_dir) / "evals"
    p, n = base / f"eval-{stamp}.json", 1
    while p.exists():
        n += 1
        p = base / f"eval-{stamp}-{n}.json"
    return p


def save_run(run: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``run`` as indented JSON (folders made as needed). Raises OSError."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".part")
    tmp.write_text(json.dumps(run, ensure_ascii=False, indent=1) + "\n", "utf-8")
    os.replace(tmp, p)
    return p


def load_run(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved run.

    Raises:
        OSError: unreadable. ValueError: not a saved run (the message says why).
    """
    try:
        run = json.loads(Path(path).read_text("utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(run, dict) or run.get("format") != RUN_FORMAT or not isinstance(run.get("ranks"), dict):
        raise ValueError(f"{path}: not a saved chunknav evaluation run (format {RUN_FORMAT})")
    return run


def compare_runs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two saved runs side by side, question by question.

    Returns:
        ``{"same": bool (same questions), "rows": [...]}`` with one row per (mode, model)
        both runs ranked: ``key``, the metrics of each (``a``, ``b``), ``delta`` (b - a per
        metric), ``better`` / ``worse`` (question ids whose answer rank moved up / down,
        None counting as below every rank), ``unchanged`` (count), and ``onlyA`` /
        ``onlyB``: (mode, model) keys only one run has.
    """
    rows = []
    res_a = {_run_key(r["mode"], r["model"]): r for r in a.get("results", []) if "error" not in r}
    res_b = {_run_key(r["mode"], r["model"]): r for r in b.get("results", []) if "error" not in r}
    for key in [k for k in a["ranks"] if k in b["ranks"]]:
        ra, rb = a["ranks"][key], b["ranks"][key]
        better, worse, same = [], [], 0
        for qid in ra:
            if qid not in rb:
                continue
            x = EVAL_DEPTH if ra[qid] is None else ra[qid]
            y = EVAL_DEPTH if rb[qid] is None else rb[qid]
            if y < x:
                better.append(qid)
            elif y > x:
                worse.append(qid)
            else:
                same += 1
        ma, mb = res_a.get(key, {}), res_b.get(key, {})
        names = ("recall1", "recall5", "recall10", "mrr")
        rows.append(
            {
                "key": key,
                "a": {m: ma.get(m) for m in names},
                "b": {m: mb.get(m) for m in names},
                "delta": {m: (mb[m] - ma[m]) if m in ma and m in mb else None for m in names},
                "better": better,
                "worse": worse,
                "unchanged": same,
            }
        )
    return {
        "same": a.get("questions", {}).get("sha256") == b.get("questions", {}).get("sha256"),
        "rows": rows,
        "onlyA": [k for k in a["ranks"] if k not in b["ranks"]],
        "onlyB": [k for k in b["ranks"] if k not in a["ranks"]],
    }
