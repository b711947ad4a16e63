"""Peak memory of one index run: a large plain-text file, and a folder of hostile files.

Usage::

    .venv/bin/python bench/index_memory.py [--mb 200] [--hostile] [--anchor-mb 1]

Each case runs ``Indexer.run`` (no embedding, a fresh SQLite file) in a child
process that reports its own peak resident set size (``ru_maxrss``, KiB on
Linux) at the end, so the numbers do not include this process. The table
gives the peak RSS in MiB and its ratio over an anchor run in the same
invocation: the same pipeline on a ``--anchor-mb`` MiB text file (interpreter,
numpy, PyMuPDF and SQLite loaded; the fixed cost). Target: a 200 MB
text file indexes under 1.5 GB peak RSS.

``--hostile`` adds the run over the hostile folder of the tests
(``tests/fixtures/hostile.py``: 60+ hostile entries next to healthy files).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
sys.path.insert(0, {repo!r})
from engine.config import load_settings
from engine.index.indexer import Indexer
from engine.values import Collection
from engine.store.sqlite.store import SqliteStore
settings = load_settings({{"db": {db!r}, "embed_provider": "none"}})
store = SqliteStore(settings.db)
store.add_collection(Collection("B", {root!r}))
t0 = time.perf_counter()
summary = Indexer(store, settings).run()
store.close()
import resource
print(json.dumps({{"seconds": time.perf_counter() - t0, "counts": summary.get("counts"),
                  "peakKib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "indexed": summary["indexed"], "chunks": summary["chunksWritten"]}}))
"""


def write_text(path: Path, mib: int) -> None:
    """A prose-like UTF-8 text file of ``mib`` MiB (lines of words, a few non-ASCII)."""
    line = (
        "The quick brown fox jumps over the lazy dog near the river bank; "
        "café, naïve, Straße and 東京 appear now and then. "
    ).encode("utf-8") * 4 + b"\n"
    block = line * ((1 << 20) // len(line) + 1)
    block = block[: 1 << 20]
    with open(path, "wb") as f:
        for i in range(mib):
            f.write(block)


def run_child(
    root: Path, db: Path, prefix: list[str] | None = None, env: dict[str, str] | None = None
) -> tuple[float, dict]:
    """Index ``root`` in a child process (``prefix``: e.g. setpriv); returns
    (peak RSS MiB, the child's JSON line)."""
    code = _CHILD.format(repo=str(REPO), db=str(db), root=str(root))
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    child_env.update(env or {})
    proc = subprocess.Popen(
        [*(prefix or []), sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=child_env
    )
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"child failed with {proc.returncode}")
    info = json.loads(out.strip().splitlines()[-1])
    return info["peakKib"] / 1024, info


def main() -> int:
    """Print the table; exit 1 when the big text file peaks at or over 1.5 GB."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="size of the big text file in MiB")
    ap.add_argument("--anchor-mb", type=int, default=1, help="size of the anchor text file in MiB")
    ap.add_argument("--hostile", action="store_true", help="also run the hostile folder of the tests")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="chunknav-mem-") as tmp:
        t = Path(tmp)
        cases: list[tuple[str, Path, list[str], dict[str, str]]] = []
        anchor = t / "anchor"
        anchor.mkdir()
        write_text(anchor / "anchor.txt", args.anchor_mb)
        cases.append((f"text {args.anchor_mb} MiB (anchor)", anchor, [], {}))
        if args.hostile:
            sys.path.insert(0, str(REPO))
            from tests.fixtures.hostile import DROP_CAPS, build_hostile_folder

            hostile = t / "hostile"
            build_hostile_folder(hostile)
            # the limits the tests use, and root's permission bypass dropped
            cases.append(
                (
                    "hostile folder (setpriv)" if DROP_CAPS else "hostile folder",
                    hostile,
                    DROP_CAPS,
                    {"CHUNKNAV_MAX_FILE_BYTES": str(1 << 20), "CHUNKNAV_MAX_DOCX_PART_BYTES": str(1 << 20)},
                )
            )
            os.chmod(t, 0o755)
        big = t / "big"
        big.mkdir()
        write_text(big / "big.txt", args.mb)
        cases.append((f"text {args.mb} MiB", big, [], {}))
        for i, (name, root, prefix, env) in enumerate(cases):
            t0 = time.perf_counter()
            peak, info = run_child(root, t / f"index{i}.db", prefix, env)
            rows.append((name, peak, time.perf_counter() - t0, info))
        if args.hostile:
            from tests.fixtures.hostile import restore_permissions

            restore_permissions(hostile)
    anchor_peak = rows[0][1]
    print(f"{'case':<28} {'peak RSS MiB':>12} {'x anchor':>9} {'seconds':>8}  result")
    for name, peak, secs, info in rows:
        print(
            f"{name:<28} {peak:>12.0f} {peak / anchor_peak:>9.2f} {secs:>8.1f}  "
            f"indexed {info['indexed']}, chunks {info['chunks']}, counts {info['counts']}"
        )
    big_peak = rows[-1][1]
    limit_mib = 1.5e9 / (1 << 20)
    print(
        f"target: {args.mb} MiB text under {limit_mib:.0f} MiB peak RSS: "
        f"{'met' if big_peak < limit_mib else 'NOT met'} ({big_peak:.0f} MiB)"
    )
    return 0 if big_peak < limit_mib else 1


if __name__ == "__main__":
    sys.exit(main())
