"""The embed pass against its physical bound, and vectors reused by window text.

Usage::

    .venv/bin/python bench/embed_pass.py [corpus_dir]          # default tests/corpus/pdf
    BENCH_REPO=/path/to/other/checkout .venv/bin/python bench/embed_pass.py   # "before" numbers
    BENCH_BEFORE=/path/to/other/checkout .venv/bin/python bench/embed_pass.py # row 4 interleaved with it

Rows (ratios of one run, interleaved pairs, median and min-max; load average printed):

1. ``index with the local model / (bare PyMuPDF words + raw WordLlama on the
   same chunks)``: a fresh index of every PDF with ``EMBED_PROVIDER=local``
   (extract + chunk + store + embed) against bare ``page.get_text("words")``
   over every page plus ``WordLlama.embed(texts, batch_size=EMBED_BATCH)`` of
   the same chunk texts in document order (the model loaded once, before
   timing, on both sides). Goal <= 1.1x.
2. ``embed phase alone / raw WordLlama``: an index run whose text is already
   stored (hash gate) and whose chunks lack vectors, against the raw call.
3. ``PDF re-saved with identical text: chunks re-embedded``: index the largest
   PDF, re-save it with PyMuPDF (``garbage=4``, new metadata: other bytes, same
   text), re-index; the count comes from the run summary. Goal 0.
4. ``unchanged `chunknav index` process, local provider``: wall seconds of one
   CLI process on an index where nothing changed (no model load when nothing
   needs embedding), median of the runs; with ``BENCH_BEFORE`` the other
   checkout's processes alternate with ours and the per-pair ratio is printed.

``BENCH_PAIRS`` (default 5) sets the number of interleaved pairs.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
REPO = Path(os.environ.get("BENCH_REPO", HERE)).resolve()
sys.path.insert(0, str(REPO))

import pymupdf  # noqa: E402

from engine.config import Settings  # noqa: E402
from engine.embed import make_embedder  # noqa: E402
from engine.embed.local import _shared_model  # noqa: E402
from engine.index.indexer import Indexer  # noqa: E402
from engine.values import Collection  # noqa: E402
from engine.store.sqlite.store import SqliteStore  # noqa: E402

PAIRS = int(os.environ.get("BENCH_PAIRS", "5"))


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def settings_for(db: Path, provider: str) -> Settings:
    return Settings(db=str(db), embed_provider=provider).validate()


class Clock:
    """Wall (``perf_counter``) and CPU (``process_time``, all threads of this
    process) seconds of a ``with`` block: ``.wall_s``, ``.cpu_s``. CPU time is
    less disturbed by other processes on a shared machine."""

    def __enter__(self) -> "Clock":
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.perf_counter() - self._w
        self.cpu_s = time.process_time() - self._c


def index_once(root: Path, db: Path, provider: str, embedder=None) -> tuple[Clock, dict, SqliteStore]:
    s = settings_for(db, provider)
    store = SqliteStore(str(db))
    if not store.collections():
        store.add_collection(Collection("Bench", str(root)))
    with Clock() as c:
        summary = Indexer(store, s, embedder).run()
    return c, summary, store


def doc_order_texts(store: SqliteStore) -> list[str]:
    return [c.chunk_text for d in store.documents("Bench") for c in store.chunks("Bench", d.file_path)]


def bare_words(pdfs: list[Path]) -> Clock:
    with Clock() as c:
        for p in pdfs:
            with pymupdf.open(p) as doc:
                for page in doc:
                    page.get_text("words")
    return c


def raw_embed(model, texts: list[str], batch: int) -> Clock:
    with Clock() as c:
        model.embed(texts, norm=True, batch_size=batch)
    return c


def fmt(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]"


def ratio_line(name: str, wall: list[float], cpu: list[float], goal: str) -> str:
    return f"| {name} | {fmt(wall)} | {fmt(cpu)} | {goal} |"


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "tests" / "corpus" / "pdf"
    work = Path(tempfile.mkdtemp(prefix="chunknav-embed-bench-"))
    root = work / "pdfs"
    root.mkdir()
    pdfs = sorted(p for p in corpus.rglob("*.pdf") if p.is_file())
    for p in pdfs:
        shutil.copy(p, root / p.name)
    pdfs = sorted(root.iterdir())
    model = _shared_model()  # loaded once, outside every timing
    embedder = make_embedder(settings_for(work / "x.db", "local"))
    embedder.probe()
    batch = settings_for(work / "x.db", "local").embed_batch
    print(f"code: {REPO}")
    print(f"corpus: {len(pdfs)} PDFs from {corpus}; pairs {PAIRS}; load average before: {loadavg()}")

    # warm-up (file cache, imports)
    _t, _s, st = index_once(root, work / "warm" / "i.db", "local", embedder)
    texts = doc_order_texts(st)
    st.close()
    bare_words(pdfs)
    raw_embed(model, texts, batch)
    print(f"chunks: {len(texts)} ({sum(map(len, texts))} characters)")

    full_w, full_c, phase_w, phase_c = [], [], [], []
    secs = []
    for i in range(PAIRS):
        db = work / f"run{i}" / "i.db"
        ours, summary, st = index_once(root, db, "local", embedder)
        st.close()
        words, raw = bare_words(pdfs), raw_embed(model, texts, batch)
        full_w.append(ours.wall_s / (words.wall_s + raw.wall_s))
        full_c.append(ours.cpu_s / (words.cpu_s + raw.cpu_s))
        # embed phase alone: text already stored, no vectors yet
        db2 = work / f"phase{i}" / "i.db"
        _c, _s, st = index_once(root, db2, "none", None)
        st.close()
        raw2 = raw_embed(model, texts, batch)
        phase, s2, st = index_once(root, db2, "local", embedder)
        st.close()
        assert s2["embedded"] > 0 and s2["indexed"] == 0, s2
        phase_w.append(phase.wall_s / raw2.wall_s)
        phase_c.append(phase.cpu_s / raw2.cpu_s)
        secs.append((ours.wall_s, words.wall_s + raw.wall_s, phase.wall_s, raw2.wall_s))
    print(f"load average after timing: {loadavg()}")
    print()
    print("| row | wall ratio (median [min-max]) | CPU ratio | goal |")
    print("|---|---|---|---|")
    print(
        ratio_line(
            "index with the local model / (bare PyMuPDF words + raw WordLlama on the same chunks)",
            full_w,
            full_c,
            "<= 1.1x",
        )
    )
    print(ratio_line("embed phase alone / raw WordLlama on the same chunks", phase_w, phase_c, "<= 1.1x"))
    med = [statistics.median(x[k] for x in secs) for k in range(4)]
    print(
        f"  wall seconds (median): index {med[0]:.3f} vs anchor {med[1]:.3f}; "
        f"embed phase {med[2]:.3f} vs raw {med[3]:.3f}"
    )

    # re-saved PDF with identical text
    big = max(pdfs, key=lambda p: p.stat().st_size)
    one = work / "resave"
    one.mkdir()
    shutil.copy(big, one / big.name)
    db = work / "resave-db" / "i.db"
    _t, first, st = index_once(one, db, "local", embedder)
    st.close()
    with pymupdf.open(one / big.name) as doc:
        doc.set_metadata({**(doc.metadata or {}), "title": "re-saved by bench", "producer": "bench"})
        doc.save(one / "tmp.pdf", garbage=4, deflate=True)
    os.replace(one / "tmp.pdf", one / big.name)
    _t, second, st = index_once(one, db, "local", embedder)
    st.close()
    print(
        f"| PDF re-saved with identical text ({big.name}, {first['chunksWritten']} chunks): chunks re-embedded "
        f"| {second['embedded']} (reused {second['reused']}) | 0 |"
    )

    # unchanged `chunknav index` process (no model load when nothing needs embedding);
    # with BENCH_BEFORE=<other checkout>, its processes alternate with ours (pairs)
    trees = {"this": REPO}
    if os.environ.get("BENCH_BEFORE"):
        trees["before"] = Path(os.environ["BENCH_BEFORE"]).resolve()
    cmds = {}
    for name, tree in trees.items():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
        env.update(EMBED_PROVIDER="local", PYTHONPATH=str(tree), CHUNKNAV_ALLOWED_ROOTS=str(work))
        base = [sys.executable, "-m", "engine", "--db", str(work / f"cli-{name}" / "i.db")]
        subprocess.run(
            base + ["collections", "add", "Bench", str(root)], check=True, env=env, cwd=tree, capture_output=True
        )
        subprocess.run(base + ["index"], check=True, env=env, cwd=tree, capture_output=True)
        cmds[name] = (base + ["index"], env, tree)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(PAIRS):
        for name, (cmd, env, tree) in cmds.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=tree, capture_output=True)
            walls[name].append(time.perf_counter() - t0)
    for name, w in walls.items():
        print(
            f"| unchanged `chunknav index` process, local provider ({len(pdfs)} PDFs), {name} code "
            f"({trees[name]}) | {statistics.median(w):.2f} s [{min(w):.2f}-{max(w):.2f}] | no model load |"
        )
    if "before" in walls:
        r = [a / b for a, b in zip(walls["this"], walls["before"])]
        print(f"|   this / before, per pair | {fmt(r)} | < 1 |")
    print(f"load average at the end: {loadavg()}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
