"""User-visible figures of two engine trees, side by side in one run, with the ratio this/base.

    .venv/bin/python bench/user_figures.py [--base DIR] [--this DIR] [--rounds 5] [--cli-runs 15]
                                           [--queries 60] [--mcp-starts 9]
                                           [--query TEXT ...] [--files 60] [--keep]

Rows (every one measured on both sides in the same run; the ratio is this / base, so
below 1.00x is better for seconds and milliseconds, above 1.00x for chunks/s):

* ``index wall s``            a fresh ``python -m engine index`` (new index file, the
  collection just added with ``python -m engine collections add``) of the corpus, with
  the default embedding (local WordLlama, offline); median of ``--rounds`` rounds (default 5)
* ``index CPU s``             that process's user + system time (its extraction workers
  included: ``getrusage(RUSAGE_CHILDREN)``)
* ``index chunks/s``          chunks written (from ``index --json``) / index wall seconds
* ``first search-chunks s``   the first ``python -m engine search-chunks --scope '*' -- QUERY``
  process right after that index (default mode: hybrid when vectors exist), same rounds
* ``CLI search-chunks s``     median of ``--cli-runs`` (default 15) warm
  ``search-chunks`` processes, the queries taken in turn
* ``MCP start + initialize + list_tools ms``  spawning ``python -m engine mcp`` (stdio)
  with the official client (``mcp.client.stdio.stdio_client`` + ``ClientSession``) until
  ``list_tools`` answers, ``--mcp-starts`` times per side (default 9, alternated)
* ``MCP first search_chunks ms``  the first ``search_chunks`` call of each of those
  sessions (it loads the model); arguments: ``query``, and ``scope: '*'`` when the
  tool's input schema has ``scope``
* ``MCP search_chunks ms``    on the last session of each side (both servers up at
  once, 2 untimed warm-up calls each), ``--queries`` calls per side (default 60, the
  queries in turn, alternating between the servers, the order flipping each call):
  median and p95 (nearest rank) of the client-side round trip

The corpus is built in a scratch directory: ``assets/samples`` of the ``--this`` tree
(else of this script's checkout) plus ``--files`` (default 60) generated plain-text files
of about 20 KB each (seeded, so every run indexes the same text). One collection,
``Bench``.

Each side runs ``python -m engine ...`` with this interpreter, ``PYTHONPATH=<tree>``, cwd
the scratch directory (so no ``./engine`` is found from the working directory), and its
own index file ``CHUNKNAV_DB=<scratch>/<side>.db``; every other ``CHUNKNAV_*`` / ``EMBED_*``
variable is dropped except ``CHUNKNAV_ALLOWED_ROOTS=<scratch>`` (the collection lives
there). Before timing, each side runs one untimed index + search on a throwaway index
(bytecode written, model file in the page cache). Sides alternate within every round and
the order flips every round, so drift of the machine cancels; every figure is a median.

Both trees need their compiled ``engine/extract/_pdfwords*.so`` to compare like with like
(the line "pdf words:" says which reader each side uses; "pymupdf" means the extension is
not built there: ``python setup.py build_ext --inplace`` in that tree, or copy the ``.so``
when the C source is the same). Self-contained: it imports nothing from ``engine`` or
the other bench scripts. Default arguments take about a minute on an idle 2-core
machine (well under 6 minutes on a busy one).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PY = sys.executable
HERE = Path(__file__).resolve().parents[1]
COLLECTION = "Bench"
QUERIES = [
    "background checks for handgun permits",
    "harbour lantern keeper storm",
    "quarterly budget forecast for the northern region",
    "how are tables extracted from word documents",
    "river valley orchard harvest",
]
#: Words of the generated files: topic words (so the queries find something) and filler.
TOPICS = [
    "harbour lantern keeper storm ship rope tide fog signal coast",
    "budget forecast quarterly revenue region northern sales cost margin audit",
    "river valley orchard harvest apple pear frost blossom cider farm",
    "library archive manuscript catalogue index shelf reader binding ink",
    "engine turbine pressure valve steam boiler gauge piston fuel",
    "court permit handgun check background state law record agency",
]
FILLER = (
    "the a of and to in is was for on that with as by at from it this which be are were "
    "not or have had has their there when where after before under over between through "
    "during while because although every each some many most other such only also then "
    "very small large early late long short new old first last next great little high low "
    "morning evening winter summer people house road town city village water light stone "
    "wood iron paper letter report table chapter page section figure number year month "
    "day hour work time place hand side part line word name story question answer"
).split()


# ---------------------------------------------------------------------------- helpers
def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def clean_env(tree: Path, db: Path, scratch: Path) -> dict[str, str]:
    """The environment of one side: no CHUNKNAV_*/EMBED_* but its own index file and the
    scratch directory as the allowed root; ``PYTHONPATH`` = that tree only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env.pop("PYTHONHOME", None)
    env["PYTHONPATH"] = str(tree)
    env["CHUNKNAV_DB"] = str(db)
    env["CHUNKNAV_ALLOWED_ROOTS"] = str(scratch)
    return env


class SideFailed(RuntimeError):
    pass


def run(side: "Side", args: list[str], capture: bool = False) -> tuple[float, float, str]:
    """(wall s, CPU s of the child and its reaped children, stdout) of ``python -m engine ARGS``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(
        [PY, "-m", "engine", *args],
        env=side.env,
        cwd=side.cwd,
        text=True,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SideFailed(
            f"{side.name}: python -m engine {' '.join(args)} exited with {p.returncode}:\n" + p.stderr[-3000:]
        )
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return wall, cpu, p.stdout or ""


class Side:
    """One engine tree: its environment, index file and the figures measured for it."""

    def __init__(self, name: str, tree: Path, scratch: Path) -> None:
        self.name, self.tree, self.cwd = name, tree, scratch
        self.db = scratch / f"{name}.db"
        self.env = clean_env(tree, self.db, scratch)
        self.figures: dict[str, list[float]] = {}
        self.notes: dict[str, set] = {}

    def add(self, row: str, value: float) -> None:
        self.figures.setdefault(row, []).append(value)

    def note(self, key: str, value: Any) -> None:
        self.notes.setdefault(key, set()).add(value)

    def drop_index(self, db: Path | None = None) -> None:
        """Remove the index file and everything the stores keep beside it (``<db>.*``, ``<db>-wal``)."""
        db = db or self.db
        for p in db.parent.glob(db.name + "*"):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)

    def describe(self) -> str:
        """Where ``engine`` comes from for this side and which PDF word reader it uses."""
        code = (
            "import engine, sys\nprint(engine.__file__)\n"
            "try:\n import engine.extract.pdfwords as p; p.walker(); print(p.PDFWORDS)\n"
            "except Exception as e:\n print('? (%s)' % type(e).__name__)\n"
        )
        p = subprocess.run([PY, "-c", code], env=self.env, cwd=self.cwd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SideFailed(f"{self.name}: cannot import engine from {self.tree}:\n{p.stderr[-2000:]}")
        where, words = (p.stdout.strip().splitlines() + ["?"])[:2]
        return f"engine from {where}; pdf words: {words}"


def search_args(query: str) -> list[str]:
    return ["search-chunks", "--scope", "*", "--", query]


def hits_of(stdout: str) -> tuple[str, int]:
    """(mode, count) of a search-chunks answer; ('?', -1) when it is not the JSON expected."""
    try:
        out = json.loads(stdout)
        return str(out.get("mode", "?")), int(out.get("count", len(out.get("hits", []))))
    except (ValueError, AttributeError, TypeError):
        return "?", -1


# ---------------------------------------------------------------------------- corpus
def build_corpus(dest: Path, samples: Path, files: int, seed: int = 15) -> int:
    """``samples`` copied, plus ``files`` generated plain-text files of ~20 KB each. Returns bytes."""
    dest.mkdir(parents=True)
    for p in sorted(samples.iterdir()) if samples.is_dir() else []:
        if p.is_file():
            shutil.copy(p, dest / p.name)
    rng = random.Random(seed)
    topics = [t.split() for t in TOPICS]
    for i in range(files):
        words = topics[i % len(topics)] + topics[rng.randrange(len(topics))]
        paras, size = [], 0
        while size < 20_000:
            sentences = []
            for _ in range(rng.randint(3, 7)):
                n = rng.randint(8, 22)
                ws = [rng.choice(words) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(n)]
                sentences.append(" ".join(ws).capitalize() + ".")
            para = " ".join(sentences)
            paras.append(para)
            size += len(para) + 2
        (dest / f"generated-{i:03d}.txt").write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    return sum(p.stat().st_size for p in dest.iterdir())


# ---------------------------------------------------------------------------- rows
def warm_up(side: Side, corpus: Path, query: str) -> None:
    """One untimed collections add + index + search on a throwaway index (bytecode, page cache)."""
    db = side.cwd / f"{side.name}-warm.db"
    env = dict(side.env, CHUNKNAV_DB=str(db))
    saved, side.env = side.env, env
    try:
        side.drop_index(db)
        run(side, ["collections", "add", COLLECTION, str(corpus)])
        run(side, ["index"])
        run(side, search_args(query))
    finally:
        side.env = saved
        side.drop_index(db)


def index_round(side: Side, corpus: Path, query: str) -> None:
    """A fresh index of the corpus, then the first search-chunks process."""
    side.drop_index()
    run(side, ["collections", "add", COLLECTION, str(corpus)])
    wall, cpu, out = run(side, ["index", "--json"], capture=True)
    side.add("index wall s", wall)
    side.add("index CPU s", cpu)
    try:
        summary = json.loads(out)
        chunks = int(summary.get("chunksWritten"))
        side.note("chunks", chunks)
        side.note("embedded", summary.get("embedded"))
        if summary.get("embedError"):
            side.note("embedError", str(summary["embedError"]))
        side.add("index chunks/s", chunks / wall)
    except (ValueError, TypeError, AttributeError):
        side.note("chunks", "? (index --json not parsed)")
    wall, _, out = run(side, search_args(query), capture=True)
    side.add("first search-chunks s", wall)
    side.note("first search mode/hits", hits_of(out))


def cli_round(side: Side, query: str) -> None:
    wall, _, out = run(side, search_args(query), capture=True)
    side.add("CLI search-chunks s", wall)
    side.note("CLI search mode/hits", hits_of(out))


async def open_server(stack: Any, side: Side, query: str) -> tuple[Any, dict[str, Any]]:
    """Start ``python -m engine mcp`` (stdio) for ``side`` on ``stack``; time the start (spawn to
    the ``list_tools`` answer) and the first ``search_chunks`` call. Returns (session, the
    arguments besides ``query`` its search_chunks schema takes)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog = stack.enter_context(open(side.cwd / f"{side.name}-mcp.log", "a", encoding="utf-8"))
    params = StdioServerParameters(command=PY, args=["-m", "engine", "mcp"], env=side.env, cwd=str(side.cwd))
    t = time.perf_counter()
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    tools = (await session.list_tools()).tools
    side.add("MCP start + initialize + list_tools ms", (time.perf_counter() - t) * 1e3)
    tool = next((t for t in tools if t.name == "search_chunks"), None)
    if tool is None:
        raise SideFailed(f"{side.name}: no search_chunks tool (tools: {[t.name for t in tools]})")
    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
    extra = {"scope": "*"} if "scope" in schema.get("properties", {}) else {}
    side.note("MCP search_chunks arguments", ",".join(["query", *extra]))
    side.add("MCP first search_chunks ms", await mcp_call(side, session, query, extra))
    return session, extra


async def mcp_call(side: Side, session: Any, query: str, extra: dict[str, Any]) -> float:
    """Milliseconds of one ``search_chunks`` round trip (an error result stops the run)."""
    t = time.perf_counter()
    res = await session.call_tool("search_chunks", {"query": query, **extra})
    ms = (time.perf_counter() - t) * 1e3
    if getattr(res, "is_error", None) or getattr(res, "isError", None):
        raise SideFailed(f"{side.name}: search_chunks returned an error: {res.content}")
    side.note("MCP search mode/hits", hits_of(res.content[0].text))
    return ms


async def mcp_rows(sides: list[Side], queries: list[str], calls: int, starts: int) -> None:
    """``starts - 1`` short sessions per side (start and first call only), then both servers
    up at once for the warm calls, which alternate between them, the order flipping each call."""
    from contextlib import AsyncExitStack

    import anyio

    for i in range(starts - 1):
        for side in sides if i % 2 == 0 else sides[::-1]:
            await anyio.sleep(0.5)  # the previous server gone, its BLAS threads quiet
            async with AsyncExitStack() as stack:
                await open_server(stack, side, queries[i % len(queries)])
    async with AsyncExitStack() as stack:
        open_ = {}
        for side in sides if starts % 2 == 1 else sides[::-1]:
            await anyio.sleep(0.5)
            open_[side.name] = await open_server(stack, side, queries[(starts - 1) % len(queries)])
        for side in sides:
            session, extra = open_[side.name]
            for q in queries[1:3]:  # warm-up
                await mcp_call(side, session, q, extra)
        for i in range(calls):
            for side in sides if i % 2 == 0 else sides[::-1]:
                session, extra = open_[side.name]
                side.add("MCP search_chunks ms", await mcp_call(side, session, queries[i % len(queries)], extra))


# ---------------------------------------------------------------------------- table
def table(base: Side, this: Side) -> None:
    def fmt(x: float) -> str:
        return f"{x:.3f}" if x < 10 else f"{x:.1f}"

    rows: list[tuple[str, float, float]] = []
    for label in this.figures:
        if label not in base.figures:
            continue
        b, t = base.figures[label], this.figures[label]
        n = f" (median of {len(t)})" if len(t) > 1 else ""
        rows.append((label + n, med(b), med(t)))
        if label == "MCP search_chunks ms":
            rows.append((f"MCP search_chunks ms (p95 of {len(t)})", p95(b), p95(t)))
    width = max(len(r[0]) for r in rows) + 2
    print(f"\n{'row':{width}} {'base':>10} {'this':>10} {'this/base':>10}")
    print("-" * (width + 33))
    for label, b, t in rows:
        ratio = f"{t / b:.2f}x" if b else "-"
        print(f"{label:{width}} {fmt(b):>10} {fmt(t):>10} {ratio:>10}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, default=Path("/work/base"), help="the base tree (default /work/base)")
    ap.add_argument("--this", type=Path, default=HERE, help=f"the tree measured against it (default {HERE})")
    ap.add_argument("--rounds", type=int, default=5, help="fresh index + first search rounds per side (default 5)")
    ap.add_argument("--cli-runs", type=int, default=15, help="warm search-chunks processes per side (default 15)")
    ap.add_argument("--queries", type=int, default=60, help="MCP search_chunks calls per side (default 60)")
    ap.add_argument(
        "--mcp-starts",
        type=int,
        default=9,
        help="MCP server starts per side, each timed with its first search_chunks (default 9)",
    )
    ap.add_argument(
        "--query",
        action="append",
        metavar="TEXT",
        help="a query (repeatable; replaces the built-in five, taken in turn)",
    )
    ap.add_argument("--files", type=int, default=60, help="generated ~20 KB text files in the corpus (default 60)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (its path is printed)")
    args = ap.parse_args()
    queries = args.query or QUERIES
    if min(args.rounds, args.cli_runs, args.queries, args.mcp_starts) < 1:
        sys.exit("--rounds, --cli-runs, --queries and --mcp-starts must be at least 1")
    trees = {"base": args.base.resolve(), "this": args.this.resolve()}
    for name, tree in trees.items():
        if not (tree / "engine" / "__init__.py").is_file():
            sys.exit(f"--{name} {tree}: no engine/__init__.py there")
    samples = next(
        (t / "assets" / "samples" for t in (trees["this"], HERE, trees["base"]) if (t / "assets" / "samples").is_dir()),
        Path("/nonexistent"),
    )

    scratch = Path(tempfile.mkdtemp(prefix="chunknav-user-figures-"))
    t_start = time.perf_counter()
    try:
        corpus = scratch / "corpus"
        size = build_corpus(corpus, samples, args.files)
        n_files = sum(1 for _ in corpus.iterdir())
        sides = [Side(name, tree, scratch) for name, tree in trees.items()]
        print(
            f"user figures: {n_files} files, {size / 1e6:.2f} MB (samples from {samples}); "
            f"scratch {scratch}; python {PY}"
        )
        for side in sides:
            print(f"  {side.name}: {side.tree}: {side.describe()}", flush=True)
        print(f"load average at the start {loadavg()}", flush=True)

        for side in sides:
            warm_up(side, corpus, queries[0])
        print(f"  warm-up done ({time.perf_counter() - t_start:.0f} s)", flush=True)

        for i in range(args.rounds):  # a fresh index, then the first search, per side
            for side in sides if i % 2 == 0 else sides[::-1]:
                index_round(side, corpus, queries[i % len(queries)])
        print(f"  {args.rounds} index rounds done ({time.perf_counter() - t_start:.0f} s)", flush=True)

        for side in sides:  # one untimed warm process on the final index
            run(side, search_args(queries[-1]))
        for i in range(args.cli_runs):
            for side in sides if i % 2 == 0 else sides[::-1]:
                cli_round(side, queries[i % len(queries)])
        print(f"  {args.cli_runs} CLI searches done ({time.perf_counter() - t_start:.0f} s)", flush=True)

        import anyio

        anyio.run(mcp_rows, sides, queries, args.queries, args.mcp_starts)
        print(
            f"  {args.mcp_starts} MCP starts, {args.queries} MCP calls done ({time.perf_counter() - t_start:.0f} s)",
            flush=True,
        )

        base, this = sides
        table(base, this)
        print()
        for key in sorted(set(base.notes) | set(this.notes)):
            b, t = base.notes.get(key, set()), this.notes.get(key, set())
            flag = "" if b == t else "   <- differs"
            print(f"{key}: base {sorted(b, key=str)}  this {sorted(t, key=str)}{flag}")
        print(f"load average at the end {loadavg()}; {time.perf_counter() - t_start:.0f} s in all")
    except SideFailed as e:
        sys.exit(f"\nfailed: {e}\n(scratch kept: {scratch})" if args.keep else f"\nfailed: {e}")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
