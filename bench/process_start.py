"""Process start: three short-lived processes of the CLI, CPU time and wall time.

    .venv/bin/python bench/process_start.py [--runs 21] [--base DIR]

Rows (separate processes, each the median of ``--runs`` runs, default 21):

* ``python -c pass``                       the anchor (interpreter and site only)
* ``python -c 'import engine.faces.cli'``        the CLI's imports
* ``chunknav index`` of an unchanged corpus of 100 files (``bench/perf_rows.py``'s
  ``start`` corpus: the corpus PDFs and text files plus pieces of Tiny Shakespeare)
* ``chunknav get-chunk Hundred piece-003.txt 2``

CPU is the child's user + system time from ``getrusage(RUSAGE_CHILDREN)`` (microseconds;
the row that matters, steadier than wall on a shared machine); wall is
``perf_counter`` around ``subprocess.run``. engine/ is byte-compiled first, as an
installed package is.

``--base DIR``: the same rows for another checkout's tree (e.g. ``mkdir DIR && git
archive 2f976e2 | tar -x -C DIR``, plus the built ``engine/extract/_pdfwords*.so``),
run with ``PYTHONPATH=DIR`` by the same interpreter and venv (every process runs in a
scratch directory, so neither tree is found as ``./engine``), each run alternated with
this tree's (the order flips every round, so drift cancels), on its own index made by
its own first run. It prints base / this per row.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_rows import BIN, PY, REPO, clean_env, hundred_files, loadavg, med  # noqa: E402


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(cpu s, wall s) of one child process run in ``cwd`` (stdout and stderr dropped)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, wall


def side_env(work: Path, name: str, tree: Path | None) -> dict:
    """The environment of one side: its own index file; ``tree``: PYTHONPATH to that engine."""
    env = clean_env(str(work / f"{name}.db"))
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    else:
        env.pop("PYTHONPATH", None)
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21, help="runs per row and side (median; default 21)")
    ap.add_argument("--base", type=Path, help="another checkout's tree to compare with (run with PYTHONPATH)")
    args = ap.parse_args()
    sides: dict[str, Path | None] = {"this": None}
    if args.base is not None:
        sides["base"] = args.base.resolve()
    for tree in [REPO] + [t for t in sides.values() if t is not None]:
        subprocess.run(
            [PY, "-m", "compileall", "-q", str(tree / "engine")],
            check=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
            stdout=subprocess.DEVNULL,
        )
    work = Path(tempfile.mkdtemp(prefix="chunknav-start-"))
    try:
        root = work / "hundred"
        hundred_files(root)
        chunknav = str(BIN / "chunknav")
        envs = {name: side_env(work, name, tree) for name, tree in sides.items()}
        for name, env in envs.items():
            which = subprocess.run(
                [PY, "-c", "import engine; print(engine.__file__)"],
                env=env,
                cwd=work,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            print(f"{name}: engine from {which}")
            subprocess.run(
                [chunknav, "collections", "add", "Hundred", str(root)], env=env, check=True, stdout=subprocess.DEVNULL
            )
            subprocess.run([chunknav, "index"], env=env, check=True, stdout=subprocess.DEVNULL)  # the first index
        rows = {
            "python -c pass": [PY, "-c", "pass"],
            "python -c 'import engine.faces.cli'": [PY, "-c", "import engine.faces.cli"],
            "chunknav index (unchanged, 100 files)": [chunknav, "index"],
            "chunknav get-chunk": [chunknav, "get-chunk", "Hundred", "piece-003.txt", "2"],
        }
        got: dict[tuple[str, str], list[tuple[float, float]]] = {(s, r): [] for s in sides for r in rows}
        names = list(sides)
        for i in range(args.runs):
            order = names if i % 2 == 0 else names[::-1]
            for label, cmd in rows.items():
                for name in order:
                    got[(name, label)].append(timed(cmd, envs[name], work))
        print(f"\nprocess start, {args.runs} runs per row and side, median   (load average {loadavg()})")
        head = f"  {'':40} {'cpu ms':>8} {'wall ms':>8} {'cpu-anchor':>10}"
        if "base" in sides:
            head += f" | {'base cpu':>8} {'base wall':>9} {'this/base cpu':>13} {'wall':>6}"
        print(head)
        anchor = {name: med([c for c, _ in got[(name, "python -c pass")]]) for name in sides}
        for label in rows:
            cpu, wall = med([c for c, _ in got[("this", label)]]), med([w for _, w in got[("this", label)]])
            line = f"  {label:40} {cpu * 1e3:8.1f} {wall * 1e3:8.1f} {(cpu - anchor['this']) * 1e3:10.1f}"
            if "base" in sides:
                bc, bw = med([c for c, _ in got[("base", label)]]), med([w for _, w in got[("base", label)]])
                line += f" | {bc * 1e3:8.1f} {bw * 1e3:9.1f} {cpu / bc:12.2f}x {wall / bw:5.2f}x"
            print(line, flush=True)
        print(f"load average at the end {loadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
