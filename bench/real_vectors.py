"""Real WordLlama vectors for the 1M vector-scan comparison (bench/vector_scan.py).

Usage: .venv/bin/python bench/real_vectors.py [n]   (default 1000000)

Cuts 1000-character windows from the text files on this machine (the
repository's tests/corpus text, the Python sources and docs in the venv's
site-packages, /usr/lib/python3* and /usr/share/doc; files sorted by path,
so the set is reproducible on one machine), with the step chosen so that
``n`` distinct windows come out (about 150 characters for 1M: neighbours
overlap heavily, which makes near-ties and so a harder test for quantised
scans), embeds them with the default local model (WordLlama l2_supercat
256-d, L2-normalised float32) and stores them in shards of 50,000 under
``$BENCH_VECTORS`` (default /tmp/chunknav-bench-vectors). A shard already
there is kept, so an interrupted run resumes. Takes about 8 minutes of one
core per 1M windows here.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SIZE = 1000
SHARD = 50_000
CACHE = Path(os.environ.get("BENCH_VECTORS", "/tmp/chunknav-bench-vectors"))
_SUFFIXES = (".py", ".md", ".rst", ".txt", ".html", ".pyi")


def sources() -> list[Path]:
    """Text files, sorted, each under 2 MB."""
    roots = [
        REPO / "tests" / "corpus" / "text",
        Path(sys.prefix) / "lib",
        Path("/usr/lib/python3"),
        Path("/usr/lib/python3.11"),
        Path("/usr/share/doc"),
    ]
    out: list[Path] = []
    for r in roots:
        if r.is_dir():
            out += [p for p in r.rglob("*") if p.suffix in _SUFFIXES and p.is_file() and p.stat().st_size < 2_000_000]
    return sorted(set(out))


def windows(n: int) -> list[str]:
    """``n`` distinct windows of SIZE characters (the last of a file may be shorter)."""
    texts = []
    for p in sources():
        try:
            t = p.read_text("utf-8", errors="ignore")
        except OSError:
            continue
        if len(t.strip()) > 200:
            texts.append(t)
    total = sum(len(t) for t in texts)
    step = max(50, int(total / (n * 1.12)))
    seen: set[bytes] = set()
    out: list[str] = []
    for t in texts:
        for i in range(0, max(1, len(t) - SIZE // 2), step):
            w = t[i : i + SIZE]
            h = hashlib.blake2b(w.encode("utf-8", "ignore"), digest_size=12).digest()
            if h not in seen and w.strip():
                seen.add(h)
                out.append(w)
                if len(out) == n:
                    return out
    return out


def load(n: int) -> np.ndarray:
    """The first ``n`` cached vectors, float32 (n, 256), L2-normalised (build them first)."""
    parts = []
    have = 0
    for i in range(0, n, SHARD):
        p = CACHE / f"shard-{i // SHARD:04d}.npy"
        if not p.exists():
            break
        parts.append(np.load(p, mmap_mode="r"))
        have += len(parts[-1])
    if have < n:
        raise SystemExit(f"only {have} vectors cached in {CACHE}; run bench/real_vectors.py {n}")
    return np.ascontiguousarray(np.concatenate(parts)[:n])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    from engine.embed.local import load_wordllama

    CACHE.mkdir(parents=True, exist_ok=True)
    ws = windows(n)
    print(f"{len(ws)} windows", flush=True)
    model = load_wordllama()
    for s in range(0, len(ws), SHARD):
        p = CACHE / f"shard-{s // SHARD:04d}.npy"
        if p.exists():
            continue
        v = np.asarray(model.embed(ws[s : s + SHARD], norm=False, batch_size=32), np.float32)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        tmp = p.with_suffix(".tmp.npy")
        np.save(tmp, v)
        os.replace(tmp, p)
        print(f"{s + len(v)} embedded", flush=True)


if __name__ == "__main__":
    main()
