"""Index time with the default model (all-MiniLM-L6-v2 int8) against raw onnxruntime, and peak memory.

Usage::

    .venv/bin/python bench/minilm_index.py                 # tests/corpus and a 10k-chunk collection
    BENCH_CHUNKS=2000 .venv/bin/python bench/minilm_index.py   # a smaller synthetic collection

Rows, each phase in its own process (its peak RSS is that process's ``ru_maxrss``):

1. ``index tests/corpus``: a fresh ``chunknav index`` of the corpus with the
   default settings (extract + chunk + store + embed, ``EMBED_THREADS`` = every
   core) against the anchor ``raw``: ``onnxruntime`` running the same int8
   model with the same threads over the same chunk texts (read back from that
   index), sorted by length in batches padded to their longest text, mean
   pooling, nothing else. Goal <= 1.15x. The embed pass alone is also shown
   (an index whose text is stored, only vectors missing).
2. ``index 10k chunks``: the same on a synthetic collection of ``BENCH_CHUNKS``
   (default 10,000) chunks of ~1000 characters of English-like text.
3. ``WordLlama``: the same corpus indexed with ``EMBED_MODEL=l2_supercat_256``
   (the fast option), as a ratio to MiniLM's index time.

Prints the machine's load average: the ratios are only comparable within one run.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _child(phase: str, db: str, root: str, model: str) -> None:
    """One measured phase in this process; prints a JSON line."""
    from engine.config import load_settings
    from engine.service import Engine

    env = {"CHUNKNAV_DB": db, "CHUNKNAV_ALLOWED_ROOTS": root, "EMBED_MODEL": model, "CHUNKNAV_OCR": "off"}
    settings = load_settings(environ=env, toml_path=Path(db).with_suffix(".absent.toml"))
    out: dict = {}
    if phase in ("index", "text"):
        eng = Engine(settings)
        eng.add_collection("Bench", root, allow_any_root=True)
        t0 = time.perf_counter()
        s = eng.run_index(embed=phase == "index")
        out = {"seconds": time.perf_counter() - t0, "chunks": s.get("chunksWritten", 0), "embedded": s.get("embedded")}
        eng.close()
    elif phase == "embed":  # text stored already: the embed pass alone
        eng = Engine(settings)
        t0 = time.perf_counter()
        s = eng.run_index()
        out = {"seconds": time.perf_counter() - t0, "embedded": s.get("embedded")}
        eng.close()
    elif phase == "raw":
        from engine.embed import minilm
        from engine.store import open_store

        store = open_store(settings)
        texts = sorted({t for _, t in store.chunks_missing_vectors("no-such-model")})
        store.close()
        session, tok = minilm.load_minilm(settings.embed_threads)
        t0 = time.perf_counter()
        minilm.encode(session, tok, texts, settings.embed_batch)
        out = {"seconds": time.perf_counter() - t0, "texts": len(texts)}
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def _run(phase: str, db: Path, root: Path, model: str = "all-MiniLM-L6-v2") -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env["PYTHONPATH"] = str(REPO)
    r = subprocess.run(
        [sys.executable, __file__, "--phase", phase, str(db), str(root), model],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(r.stdout.strip().splitlines()[-1])


def _synthetic(root: Path, chunks: int) -> None:
    rng = random.Random(7)
    words = (
        "the report index search model vector chunk page table figure method result data analysis "
        "policy market energy water river city region budget audit contract review risk plan team "
        "science history language music health school court law trade price growth network system"
    ).split()
    root.mkdir(parents=True)
    per_file = 20  # ~20 windows of 1000 characters (850 step) per file
    for f in range(max(1, chunks // per_file)):
        text = " ".join(rng.choice(words) for _ in range(per_file * 850 // 6))
        (root / f"doc{f:05d}.txt").write_text(text + "\n", encoding="utf-8")


def _collection(label: str, root: Path, work: Path, wordllama: bool = False) -> list[tuple[str, str, str, str]]:
    rows = []
    db = work / f"{label}.db"
    full = _run("index", db, root)
    raw = _run("raw", db, root)
    rows.append((f"index {label} ({full['chunks']} chunks)", f"{full['seconds']:.1f}", f"{full['peak_mb']:.0f}", ""))
    rows.append((f"raw onnxruntime, same texts ({raw['texts']})", f"{raw['seconds']:.1f}", f"{raw['peak_mb']:.0f}", ""))
    rows[-2] = rows[-2][:3] + (f"{full['seconds'] / raw['seconds']:.2f}x raw",)
    db2 = work / f"{label}-embed.db"
    _run("text", db2, root)
    emb = _run("embed", db2, root)
    rows.append(
        (
            "  embed pass alone",
            f"{emb['seconds']:.1f}",
            f"{emb['peak_mb']:.0f}",
            f"{emb['seconds'] / raw['seconds']:.2f}x raw",
        )
    )
    if wordllama:
        wl = _run("index", work / f"{label}-wl.db", root, "l2_supercat_256")
        rows.append(
            (
                f"index {label}, WordLlama",
                f"{wl['seconds']:.1f}",
                f"{wl['peak_mb']:.0f}",
                f"{wl['seconds'] / full['seconds']:.3f}x MiniLM",
            )
        )
    return rows


def main() -> None:
    chunks = int(os.environ.get("BENCH_CHUNKS", "10000"))
    print(f"load average {os.getloadavg()[0]:.2f}, {len(os.sched_getaffinity(0))} cores, EMBED_THREADS=0 (all)")
    work = Path(tempfile.mkdtemp(prefix="bench-minilm-"))
    try:
        corpus = work / "corpus"
        shutil.copytree(REPO / "tests" / "corpus", corpus)
        rows = _collection("tests/corpus", corpus, work, wordllama=True)
        synth = work / "synthetic"
        _synthetic(synth, chunks)
        rows += _collection(f"{chunks} synthetic", synth, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'what':<44} {'seconds':>8} {'peak MB':>8}  ratio")
    for what, sec, mb, ratio in rows:
        print(f"{what:<44} {sec:>8} {mb:>8}  {ratio}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--phase":
        _child(*sys.argv[2:6])
    else:
        main()
