"""``chunknav``: the command-line face, built on the tool registry.

Owns: argument parsing (argparse: this face only; only the subcommand
``argv`` names is built, see ``command_in``), exit codes; the human views of
``index`` and ``status`` are in ``engine.faces.cli_views``. Tool subcommands (search,
search-chunks, get-chunk, read, node, status) are generated from
``engine.tools.registry.REGISTRY`` and print the tool's envelope as JSON on stdout,
nothing else there. Exit codes: 0 ok (``found: false`` is an answer), 1 the
envelope carries ``error``, or a run had a failed file, was cancelled
(Ctrl-C / SIGTERM stop it at the next file boundary) or stopped on a busy
writer lock, 2 bad usage. A closed stdout ends quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from engine.config import load_settings, settings_table
from engine.secrets import install_log_redaction, redact
from engine.errors import (
    ChunknavError,
    CollectionBoundError,
    IndexBusyError,
    RootRefusedError,
    SettingsError,
    StoreFaultError,
)
from engine.faces.cli_views import STORE_FAULTS, fault_line, human_index as _human_index, human_status as _human_status

if TYPE_CHECKING:
    from engine.service import Engine

# engine.service (the Engine, engine.values) is imported when a command needs the index, and
# engine.tools.registry (the registry, and the search and answer modules behind it) only where a
# tool subcommand is parsed or run, or an envelope printed: an unchanged ``chunknav index``
# never loads the registry.

__all__ = ["main", "build_parser", "command_in", "OWN_COMMANDS", "CLI_ALIASES"]

log = logging.getLogger(__name__)
_TYPES = {"integer": int, "string": str, "number": float}


def _settings_epilog() -> str:
    rows = [f"  {r['env']:<24} {r['help']} [{r['unit']}; default {r['default']!r}]" for r in settings_table()]
    return "settings (environment, or [chunknav] in chunknav.toml):\n" + "\n".join(rows)


#: Extra command names that spell the tool's own name (``get_document`` -> ``get-document``);
#: argparse reports the alias typed, ``main`` maps it back to the command (``node``, ``read``).
CLI_ALIASES = {
    "get_document": ["get-document"],
    "read_document": ["read-document"],
    "index_status": ["index-status"],
    "list_documents": ["list-documents"],
    "plan_index": ["plan-index"],
    "cancel_index": ["cancel-index"],
}
#: The subcommands that are not registry tools (every other subcommand is one, or an alias of one).
OWN_COMMANDS = ("collections", "index", "mcp", "gui", "migrate", "settings", "vectors", "export", "import", "eval")


def _canonical(command: str) -> str:
    """The subcommand an alias stands for (``get-document`` -> ``node``); others unchanged."""
    if command in OWN_COMMANDS:
        return command
    from engine.tools.registry import CLI_NAMES

    return {a: CLI_NAMES[n] for n, names in CLI_ALIASES.items() for a in names}.get(command, command)


def command_in(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names, when only plain top-level options come before it.

    Plain: ``--db X``, ``--dsn X`` (X not starting with ``-``), ``--db=X``,
    ``--dsn=X``, ``-v``, ``--verbose``. The first other token that does not
    start with ``-`` is returned: argparse dispatches to that very subcommand.
    Anything else first (``-h``, ``--version``, an abbreviated, combined or
    unknown option, ``--``) or no such token gives None. The name is not
    checked here (``build_parser`` falls back to every subcommand for an
    unknown one).
    """
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--db", "--dsn"):
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            i += 2
        elif a in ("-v", "--verbose") or a.startswith(("--db=", "--dsn=")):
            i += 1
        elif a.startswith("-"):
            return None
        else:
            return a
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``chunknav`` parser; tool subcommands come from the registry.

    Args:
        command: a subcommand name or alias (``command_in(argv)``): only that
            subcommand is built (an unchanged ``chunknav index`` builds no tool
            parser and imports no registry). Its arguments, help and errors,
            and the top-level options, are the same as in the full parser.
            None, or a name that is no subcommand: every subcommand (what
            ``chunknav --help`` and an invalid choice list).
    """
    if command is not None and command not in OWN_COMMANDS:
        from engine.tools.registry import CLI_NAMES

        if command not in {*CLI_NAMES.values(), *(a for names in CLI_ALIASES.values() for a in names)}:
            command = None

    def wanted(*names: str) -> bool:
        return command is None or command in names

    p = argparse.ArgumentParser(
        prog="chunknav",
        description="Navigate a content index by document and by chunk, with page and region provenance.",
        epilog=_settings_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", help="SQLite index file (env CHUNKNAV_DB, default ./.chunknav/index.db)")
    p.add_argument("--dsn", help="postgresql://... selects the Postgres store (env CHUNKNAV_DSN)")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    p.add_argument("--version", action=_VersionAction, help="print the installed version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    if wanted("collections"):
        _add_collections(sub)
    if wanted("index"):
        ix = sub.add_parser("index", help="index the collections (hash-gated; --force rebuilds)")
        ix.add_argument("--force", action="store_true", help="re-extract and re-store every file (Rebuild)")
        ix.add_argument("--collection", action="append", help="only this collection (repeatable)")
        ix.add_argument("--no-embed", action="store_true", help="store text and chunks only")
        ix.add_argument("--json", action="store_true", help="print the JSON summary")
        ix.add_argument(
            "--dry-run",
            action="store_true",
            help="list what the run would add, change, rename, remove and leave unchanged; write nothing "
            "(the plan_index tool)",
        )
        ix.add_argument(
            "--keep-missing",
            action="store_true",
            default=None,
            help="keep documents whose file is gone, marked missing (setting keep_missing, CHUNKNAV_KEEP_MISSING)",
        )
        ix.add_argument(
            "-v",
            "--verbose",
            dest="list_all",
            action="store_true",
            help="list every failed, empty, skipped and stale file (default: a few examples per reason)",
        )
    if command is None or command not in OWN_COMMANDS:
        _add_tools(sub, wanted)
    if wanted("mcp"):
        mcp = sub.add_parser("mcp", help="serve the tools over MCP (stdio, or streamable HTTP with --http)")
        mcp.add_argument(
            "--http",
            metavar="HOST:PORT",
            help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback by "
            "default; any other address needs CHUNKNAV_MCP_TOKEN)",
        )
    if wanted("gui"):
        gui = sub.add_parser("gui", help="open the Streamlit explorer")
        gui.add_argument(
            "--port",
            type=int,
            help="server port (beats STREAMLIT_SERVER_PORT, which beats streamlit_config.toml: 8501)",
        )
        gui.add_argument(
            "--address", help="bind address (default 127.0.0.1; anything not loopback needs CHUNKNAV_ACCESS_TOKEN)"
        )
        gui.add_argument("--headless", action="store_true", help="do not open a browser")
    if wanted("migrate"):
        mig = sub.add_parser("migrate", help="copy an index (chunks and vectors) to another store")
        mig.add_argument("--from", dest="src", required=True, help="sqlite:PATH or postgresql://...")
        mig.add_argument("--to", dest="dst", required=True, help="sqlite:PATH or postgresql://...")
    if wanted("export"):
        ex = sub.add_parser(
            "export",
            help="write collections, documents, chunks and vectors to one portable archive file (with checksums)",
        )
        ex.add_argument("archive", help="the archive file to write (replaced if it exists)")
        ex.add_argument("--collection", action="append", help="only this collection (repeatable)")
    if wanted("import"):
        im = sub.add_parser(
            "import",
            help="restore an archive into this index (SQLite or Postgres): nothing re-extracted or re-embedded; "
            "all or nothing",
        )
        im.add_argument("archive", help="the archive file to read")
        im.add_argument("--collection", action="append", help="only this archived collection (repeatable)")
        im.add_argument(
            "--root",
            action="append",
            metavar="COLLECTION=DIR",
            help="bind an archived collection to this directory here (repeatable); a collection this index "
            "already has keeps its root",
        )
    if wanted("settings"):
        sub.add_parser("settings", help="list every setting with its unit, default and help")
    if wanted("eval"):
        _add_eval(sub)
    if wanted("vectors"):
        vec = sub.add_parser("vectors", help="manage stored vectors")
        vsub = vec.add_subparsers(dest="vaction", required=True)
        vsub.add_parser(
            "purge-stale",
            help="delete the vectors whose chunk no longer exists (index_status "
            "staleVectors); they are kept otherwise, so a restored file costs no embedding",
        )
    return p


def _add_eval(sub: Any) -> None:
    ev = sub.add_parser(
        "eval",
        help="measure retrieval on labelled questions: recall@1/5/10 and MRR per mode and model "
        "(saved under the index folder); --compare RUN_A RUN_B compares two saved runs",
    )
    ev.add_argument("questions", nargs="?", help="questions file, JSON Lines (docs/evaluation.md)")
    ev.add_argument(
        "--model",
        action="append",
        default=[],
        help="also rank with this embedding model in vector and hybrid mode, when the index "
        "holds its vectors (repeatable)",
    )
    ev.add_argument(
        "--mode", action="append", choices=["keyword", "vector", "hybrid"], help="only this mode (repeatable)"
    )
    ev.add_argument("--save", metavar="PATH", help="save the run here (default: <index folder>/evals/)")
    ev.add_argument("--no-save", action="store_true", help="do not save the run")
    ev.add_argument(
        "--compare", nargs=2, metavar=("RUN_A", "RUN_B"), help="compare two saved runs question by question"
    )
    ev.add_argument("--json", action="store_true", help="print the run (or the comparison) as JSON")


def _eval(args: argparse.Namespace, engine: Engine) -> int:
    """``chunknav eval QUESTIONS``: run, print (table or JSON), exit 1 when a mode could not run."""
    from engine.faces.cli_views import human_eval

    done = [0]

    def progress(n: int, total: int) -> None:
        if sys.stderr.isatty() and (n == total or n - done[0] >= 25):
            done[0] = n
            sys.stderr.write(f"\r{n}/{total} searches" + ("\n" if n == total else ""))

    try:
        run = engine.evaluate(
            args.questions,
            models=args.model,
            modes=args.mode,
            save_to=args.save,
            save=not args.no_save,
            on_progress=progress,
        )
    except OSError as e:
        _err(f"cannot read or save: {e}")
        return 2
    if not run["questions"]["count"]:
        _err(f"no question could be read from {args.questions}: " + "; ".join(run["questions"]["problems"][:5]))
        return 2
    if args.json:
        _print(run)
    else:
        print(redact(human_eval(run)))
    return 1 if any("error" in r for r in run["results"]) else 0


def _compare(args: argparse.Namespace) -> int:
    """``chunknav eval --compare RUN_A RUN_B``: no index needed."""
    from engine.faces.cli_views import human_compare
    from engine.search.evaluate import compare_runs, load_run

    try:
        a, b = (load_run(p) for p in args.compare)
    except (OSError, ValueError) as e:
        _err(e)
        return 2
    cmp = compare_runs(a, b)
    if args.json:
        _print(cmp)
    else:
        print(human_compare(cmp))
    return 0


def _add_collections(sub: Any) -> None:
    """``collections add|list|remove``."""
    coll = sub.add_parser("collections", help="add, list or remove collections")
    csub = coll.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = csub.add_parser("add", help="bind a collection path to a directory")
    add.add_argument("path", help="collection path, e.g. ACME/Reports")
    add.add_argument("dir", help="directory holding the files")
    pw = add.add_mutually_exclusive_group()
    pw.add_argument(
        "--password-env",
        metavar="NAME",
        help="environment variable holding the password for encrypted PDFs (the index stores the name)",
    )
    pw.add_argument(
        "--password-file",
        metavar="PATH",
        help="secrets file (first line) holding that password, outside the index (the index stores the path)",
    )
    pw.add_argument("--password", help=argparse.SUPPRESS)  # refused: no password is stored
    add.add_argument(
        "--replace",
        action="store_true",
        help="re-point a collection path that is bound to another directory "
        "(drops its documents and chunks; vectors stay)",
    )
    add.add_argument(
        "--allow-any-root",
        action="store_true",
        help="accept a directory outside CHUNKNAV_ALLOWED_ROOTS ('/' and system directories stay refused)",
    )
    csub.add_parser("list", help="list collections as JSON")
    rm = csub.add_parser("remove", help="drop a collection's documents and chunks (vectors stay)")
    rm.add_argument("path")


def _add_tools(sub: Any, wanted: Callable[..., bool]) -> None:
    """One subcommand per registry tool (with its aliases) that ``wanted(name, *aliases)``."""
    from engine.tools.registry import CLI_NAMES, CLI_POSITIONAL, REGISTRY, cli_option

    for name, tool in REGISTRY.items():
        if not wanted(CLI_NAMES[name], *CLI_ALIASES.get(name, [])):
            continue
        sp = sub.add_parser(
            CLI_NAMES[name],
            help=tool.description.split(". ")[0],
            description=tool.description,
            aliases=CLI_ALIASES.get(name, []),
        )
        props = tool.schema["properties"]
        for arg in CLI_POSITIONAL[name]:
            sp.add_argument(arg, type=_TYPES.get(_json_type(props[arg]), str), help=props[arg].get("description"))
        for arg, spec in props.items():
            if arg in CLI_POSITIONAL[name]:
                continue
            if _json_type(spec) == "boolean":  # default true: --no-X; false: --X; none: both
                if spec.get("default") is not True:
                    sp.add_argument(
                        cli_option(arg), dest=arg, action="store_true", default=None, help=spec.get("description")
                    )
                if spec.get("default") is not False:
                    sp.add_argument(
                        "--no-" + cli_option(arg)[2:],
                        dest=arg,
                        action="store_false",
                        default=None,
                        help=f"set {arg} false: {spec.get('description', '')}",
                    )
                continue
            kwargs: dict[str, Any] = {"dest": arg, "default": None, "help": spec.get("description")}
            if "array" in (spec.get("type") if isinstance(spec.get("type"), list) else [spec.get("type")]):
                kwargs["action"] = "append"  # repeat the option for a list
                kwargs["help"] = f"{spec.get('description', '')} (repeat for a list)"
            if "enum" in spec:
                kwargs["choices"] = spec["enum"]
            kwargs["type"] = _TYPES.get(_json_type(spec), str)
            sp.add_argument(cli_option(arg), **kwargs)
        if name in ("index_status", "coverage"):
            sp.add_argument("--json", action="store_true", help="print the JSON envelope")
        if name == "coverage":
            sp.add_argument("--csv", action="store_true", help="print the rows as CSV")


def _version() -> str:
    import engine

    return engine.__version__


class _VersionAction(argparse.Action):
    """``--version``: print ``chunknav <version>`` (package metadata, read only when asked) and exit 0."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"chunknav {_version()}\n")
        parser.exit()


def _json_type(spec: dict[str, Any]) -> str:
    t = spec.get("type", "string")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    return t


def _print(obj: Any) -> None:
    from engine.tools.registry import to_json  # the one serialisation of every face

    sys.stdout.write(redact(to_json(obj, indent=2)) + "\n")
    sys.stdout.flush()


def _err(message: Any) -> None:
    """One ``chunknav: ...`` line on stderr, secrets redacted."""
    print(f"chunknav: {redact(str(message))}", file=sys.stderr)


def _progress_printer():
    """The CLI's progress of a run (``engine.index.progress.progress_line``): one line
    redrawn in place on a terminal; on anything else plain lines, once the run is
    ``_PLAIN_AFTER_S`` old, at each phase and every ``_PLAIN_EVERY_S``."""
    from engine.index.progress import progress_line

    tty = sys.stderr.isatty()
    state: dict[str, Any] = {"at": 0.0, "phase": ""}

    def show(ev: dict) -> None:
        phase = str(ev.get("phase") or "")
        if tty:
            import shutil

            width = shutil.get_terminal_size((100, 20)).columns - 1
            line = progress_line(ev, bar_width=20)[:width]
            sys.stderr.write("\r" + line.ljust(width) + ("\n" if phase == "done" else ""))
            sys.stderr.flush()
            return
        now = time.monotonic()
        if phase == "done" or float(ev.get("elapsedS") or 0) < _PLAIN_AFTER_S:
            return
        if phase != state["phase"] or now - float(state["at"]) >= _PLAIN_EVERY_S:
            state.update(at=now, phase=phase)
            sys.stderr.write(f"chunknav: {progress_line(ev)}\n")
            sys.stderr.flush()

    return show


#: A run younger than this prints no plain progress line (a quick run stays quiet).
_PLAIN_AFTER_S = 2.0
#: Seconds between two plain progress lines of one phase.
_PLAIN_EVERY_S = 2.0


def main(argv: list[str] | None = None) -> int:
    """Run ``chunknav`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    A closed stdout (``chunknav status | head``) ends quietly (exit 0 when the
    command itself succeeded), never with a BrokenPipe traceback.

    ``argv`` None means the process's own command line (the console script,
    ``python -m engine``), which ends right after: the objects alive then are
    moved out of the cyclic collector's reach (``gc.freeze``), so the
    interpreter's exit skips its collection passes over every imported
    module (``docs/decisions/cli-exit-gc-freeze.md``). Exit still runs
    atexit handlers, flushes stdout and stderr and frees what refcounts free;
    what it skips is finalizing objects left in reference cycles, which
    Python never promises at exit. A caller passing ``argv`` (tests, an
    embedding program) keeps its collector as it was.
    """
    try:
        return _main_quietly(argv)
    finally:
        if argv is None:
            import gc

            gc.freeze()


def _main_quietly(argv: list[str] | None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # a second Ctrl-C during a run: the run record says how it ended
        sys.stderr.write("\nchunknav: interrupted\n")
        return 130
    except BrokenPipeError:
        try:  # the reader went away: drop what is buffered, say nothing
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command_in(argv))  # only the subcommand asked for, when plain
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: 0 for --help, 2 for usage
        return int(e.code or 0)
    args.command = _canonical(args.command)
    install_log_redaction()  # engine.secrets: no log line carries a configured secret
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = load_settings({"db": args.db, "dsn": args.dsn})
    except SettingsError as e:
        _err(e)
        return 2
    if args.command == "settings":
        _print(settings_table())
        return 0
    if args.command == "mcp":
        from engine.faces.mcp_server import main as mcp_main

        try:
            return mcp_main(settings, http=args.http) or 0
        except SettingsError as e:
            _err(e)
            return 2
    if args.command == "gui":
        from engine.faces.gui import run_gui

        return run_gui(settings, port=args.port, address=args.address, headless=args.headless)
    if args.command == "migrate":
        return _migrate(args.src, args.dst)
    if args.command == "eval":
        if args.compare:
            return _compare(args)
        if not args.questions:
            _err("eval: give a questions file, or --compare RUN_A RUN_B")
            return 2

    missing = _missing_index(settings, args)
    if missing:
        return _answer_without_index(args, settings, missing)
    from engine.service import Engine

    engine = Engine(settings)
    try:
        return _run(args, engine)
    except IndexBusyError as e:
        _err(e)
        return 1
    except CollectionBoundError as e:
        counts = engine.collection_counts(e.collection_path)
        _err(
            f"collection {e.collection_path!r} is already bound to {e.current_root}; use --replace to "
            f"re-point it to {e.new_root} (drops its {counts['documents']} documents and "
            f"{counts['chunks']} chunks; vectors stay)"
        )
        return 2
    except RootRefusedError as e:
        _err(f"{e}; or pass --allow-any-root to accept it once" if "outside the allowed roots" in str(e) else e)
        return 2
    except StoreFaultError as e:  # cannot be opened or written (read-only, disk full, server gone): one line
        if args.command != "index":
            _err(f"{e.code}: {e}")
            return 2
        if args.json:  # a --json caller always gets an envelope to parse (as for index-busy)
            _print({"error": e.code, "message": str(e), "status": "refused"})
        _err(f"{e.code}: {e}")
        return 1
    except (ValueError, ChunknavError) as e:  # engine.tools.registry.ToolArgumentError (a ValueError) too
        _err(e)
        return 2
    finally:
        engine.close()


def _missing_index(settings, args: argparse.Namespace) -> str | None:
    """The SQLite index path when it does not exist and the command only reads
    (status, search, search-chunks, get-chunk, read, node, collections list), else None.
    ``collections add`` and ``index`` create the index; Postgres is never "missing"."""
    reads = (
        args.command not in OWN_COMMANDS
        or args.command in ("vectors", "export", "eval")
        or (args.command == "collections" and args.action == "list")
    )
    if not reads or settings.dsn or settings.db == ":memory:" or os.path.exists(settings.db):
        return None
    return os.path.abspath(settings.db)


def no_index_message(path: str) -> str:
    """What a read-only command says on a missing index (nothing is created)."""
    return f"no index at {path}; add a collection with `chunknav collections add NAME DIR`"


def _answer_without_index(args: argparse.Namespace, settings, path: str) -> int:
    """A read-only command on a missing index: the tool's own empty answer (from
    an in-memory index, so the shapes are the real ones) carrying the hint, exit 0.
    Human ``status`` prints only the hint; ``collections list`` prints ``[]``
    and the hint on stderr. No file or folder is created."""
    import dataclasses

    from engine.tools.registry import CLI_NAMES, REGISTRY, ToolArgumentError, call_tool

    msg = no_index_message(path)
    if args.command == "eval":
        _err(f"{msg}; nothing to evaluate")
        return 2
    if args.command == "vectors":
        _print({"purged": {}, "total": 0, "message": msg})
        return 0
    if args.command == "export":
        _print({"error": "not-found", "message": msg})
        _err(msg)
        return 1
    if args.command == "collections":
        _print([])
        _err(msg)
        return 0
    if args.command == "status" and not args.json:
        print(msg)
        return 0
    from engine.service import Engine

    engine = Engine(dataclasses.replace(settings, db=":memory:"))
    try:
        name = next(n for n, c in CLI_NAMES.items() if c == args.command)
        props = REGISTRY[name].schema["properties"]
        arguments = {k: getattr(args, k) for k in props if getattr(args, k, None) is not None}
        envelope = call_tool(engine, name, arguments)
    except ToolArgumentError as e:
        _err(e)
        return 2
    finally:
        engine.close()
    envelope["hint" if "searched" in envelope else "message"] = msg
    _print(envelope)
    return 0


def _run(args: argparse.Namespace, engine: Engine) -> int:
    if args.command == "collections":
        if args.action == "add":
            if args.password:
                print(
                    "chunknav: the index stores no password: export it and pass --password-env NAME, "
                    "or put it in a file outside the index and pass --password-file PATH",
                    file=sys.stderr,
                )
                return 2
            ref = (
                f"env:{args.password_env}"
                if args.password_env
                else f"file:{args.password_file}"
                if args.password_file
                else None
            )
            c = engine.add_collection(
                args.path, args.dir, ref, replace=args.replace, allow_any_root=args.allow_any_root
            )
            out = {"collectionPath": c.collection_path, "root": c.root}
            if c.password_ref:
                out["passwordRef"] = c.password_ref
            _print(out)
        elif args.action == "list":
            _print([{"collectionPath": c.collection_path, "root": c.root} for c in engine.store.collections()])
        else:
            counts = engine.collection_counts(args.path)
            if not engine.remove_collection(args.path):
                _err(f"no collection {args.path!r}")
                return 1
            _print(
                {
                    "removed": args.path,
                    "documents": counts["documents"],
                    "chunks": counts["chunks"],
                    "vectorsKept": True,
                }
            )
        return 0
    if args.command in ("export", "import"):
        return _archive(args, engine)
    if args.command == "eval":
        return _eval(args, engine)
    if args.command == "vectors":  # purge-stale
        from engine.store.purge import purge_stale_vectors

        purged = purge_stale_vectors(engine.store)
        _print({"purged": purged, "total": sum(purged.values())})
        return 0
    if args.command == "index" and args.dry_run:
        from engine.faces.cli_views import human_plan
        from engine.tools.operations import plan_envelope

        plan = plan_envelope(engine.plan_index(args.collection, args.force, args.keep_missing))
        if args.json:
            _print(plan)
        else:
            print(redact(human_plan(dict(plan))))
        return 0
    if args.command == "index":
        from engine.index.runs import exit_code

        t0 = time.perf_counter()
        try:
            with _cancel_on_signals() as cancel:
                summary = engine.run_index(
                    args.collection,
                    args.force,
                    _progress_printer(),
                    embed=not args.no_embed,
                    cancel=cancel,
                    keep_missing=args.keep_missing,
                )
        except IndexBusyError as e:  # refused at once: another run holds the index lock
            s = engine.settings
            where = s.dsn.split("@")[-1] if s.dsn else os.path.abspath(s.db)  # never the DSN's password
            message = f"{e} on {where}: this run did not start and changed nothing; run it again when that one ends"
            if args.json:  # a --json caller always gets an envelope to parse
                _print({"error": "index-busy", "message": message, "status": "refused"})
            _err(message)
            return 1
        if args.json:
            _print(summary)
        elif summary.get("status") == "stopped" and (summary.get("error") or {}).get("error") in STORE_FAULTS:
            _err(fault_line(summary["error"]))  # disk full, database lost, lock held too long: one line
        else:
            print(redact(_human_index(summary, verbose=bool(args.list_all or args.verbose))))
        log.info("index took %.2f s", time.perf_counter() - t0)
        return exit_code(summary)
    # a tool subcommand
    from engine.tools.registry import CLI_NAMES, REGISTRY, call_tool

    name = next(n for n, c in CLI_NAMES.items() if c == args.command)
    props = REGISTRY[name].schema["properties"]
    arguments = {k: getattr(args, k) for k in props if getattr(args, k, None) is not None}
    for k, v in arguments.items():
        if isinstance(v, list) and len(v) == 1:
            arguments[k] = v[0]  # one --scope: the plain string, as a registry call would pass it
    envelope = call_tool(engine, name, arguments)
    if name == "index_status" and not args.json:
        print(redact(_human_status(envelope)))
    elif name == "coverage" and args.csv and "error" not in envelope:
        from engine.tools.operations import coverage_csv

        sys.stdout.write(redact(coverage_csv(envelope)))
    elif name == "coverage" and not args.json:
        from engine.faces.cli_views import human_coverage

        print(redact(human_coverage(envelope)))
    else:
        _print(envelope)
    return 1 if "error" in envelope else 0


def _archive(args: argparse.Namespace, engine: Engine) -> int:
    """``export`` / ``import``: the counts as JSON (exit 0), or ``{"error", "message"}``
    (exit 1) for an archive refused before anything was written."""
    from engine.errors import ArchiveError

    try:
        if args.command == "export":
            out = engine.export_archive(args.archive, args.collection)
        else:
            roots: dict[str, str] = {}
            for item in args.root or []:
                name, sep, folder = item.partition("=")
                if not sep or not name or not folder:
                    _err(f"--root takes COLLECTION=DIR, got {item!r}")
                    return 2
                roots[name.strip("/")] = os.path.abspath(folder)
            out = engine.import_archive(args.archive, args.collection, roots)
    except ArchiveError as e:
        _print({"error": e.code, "message": str(e)})
        _err(e)
        return 1
    _print(out)
    return 0


@contextlib.contextmanager
def _cancel_on_signals():
    """An Event set by the first Ctrl-C (SIGINT) or SIGTERM: the run stops within
    seconds, abandoning the files being read (what it committed stays). A second
    Ctrl-C interrupts at once."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return

    def handler(signum, _frame):
        if cancel.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        cancel.set()
        sys.stderr.write(
            f"\nchunknav: {signal.Signals(signum).name}: stopping: the files being read are abandoned, "
            "what is committed stays (Ctrl-C again to abort now)\n"
        )

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield cancel
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def _migrate(src: str, dst: str) -> int:
    from engine.config import Settings
    from engine.store.copy import migrate
    from engine.store import open_store

    def store_for(url: str):
        if url.startswith("sqlite:"):
            return open_store(Settings(db=url[len("sqlite:") :]))
        if url.startswith(("postgresql://", "postgres://")):
            return open_store(Settings(dsn=url))
        raise SettingsError(f"store URL must be sqlite:PATH or postgresql://..., got {url!r}")

    try:
        a, b = store_for(src), store_for(dst)
    except SettingsError as e:
        _err(e)
        return 2
    try:
        _print(migrate(a, b))
    finally:
        a.close()
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
