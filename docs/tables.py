"""The reference tables of the docs pages, generated from the code.

Owns: the Markdown of each generated table (CLI commands from
``engine.faces.cli.build_parser``, tools from ``engine.tools.REGISTRY``,
settings from ``engine.config.SETTINGS``, codes from the ``Literal`` types of
``engine/errors.py``) and the rewriting of the marked regions of the pages::

    <!-- generated: settings -->
    ...the table, rewritten on every run...
    <!-- end -->

Run ``python docs/tables.py`` (``make docs``) after changing a command, a tool,
a setting or a code; ``python docs/tables.py --check`` lists the pages whose
regions differ and exits 1. tests/project/test_docs.py runs the same check.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tokenize
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
REGION = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end -->)", re.S)


def _cell(text: Any) -> str:
    """One Markdown table cell: whitespace collapsed, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, list[str], str, argparse.ArgumentParser]]:
    """(name, aliases, help, parser) of each subcommand, in the parser's order."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None:
        return []
    helps = {ca.dest: ca.help or "" for ca in sub._choices_actions}
    names: dict[int, list[str]] = {}
    for name, p in sub.choices.items():
        names.setdefault(id(p), []).append(name)
    out = []
    for name, p in sub.choices.items():
        group = names[id(p)]
        if group[0] == name:
            out.append((name, group[1:], helps.get(name, ""), p))
    return out


def _argument(action: argparse.Action) -> str:
    """``--limit LIMIT`` for an option, ``query`` for a positional argument."""
    metavar = " ".join(action.metavar) if isinstance(action.metavar, tuple) else action.metavar
    if action.option_strings:
        flag = " / ".join(action.option_strings)
        if action.nargs != 0 and metavar != argparse.SUPPRESS:
            flag += " " + (metavar or action.dest.upper())
        return f"`{flag}`"
    return f"`{metavar or action.dest}`"


def cli_table() -> str:
    """Every ``chunknav`` command (nested ones too) and every argument."""
    from engine.faces.cli import build_parser

    rows = ["| command | aliases | what it does |", "|---|---|---|"]
    args = ["| command | argument | meaning |", "|---|---|---|"]

    def walk(prefix: str, parser: argparse.ArgumentParser) -> None:
        for name, aliases, help_, p in _subcommands(parser):
            full = f"{prefix} {name}"
            also = ", ".join(f"`{prefix} {a}`" for a in aliases)
            rows.append(f"| `{full}` | {also} | {_cell(help_)} |")
            for action in p._actions:
                if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                    continue
                if action.help == argparse.SUPPRESS:
                    continue
                args.append(f"| `{full}` | {_argument(action)} | {_cell(action.help or '')} |")
            walk(full, p)

    parser = build_parser()
    top = ["| option | meaning |", "|---|---|"]
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            top.append(f"| {_argument(action)} | {_cell(action.help or '')} |")
    walk("chunknav", parser)
    return "\n".join(["Global options (before the command):", "", *top, "", *rows, "", *args])


def _signature(name: str, schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    parts = []
    for arg, spec in schema.get("properties", {}).items():
        if arg in required:
            parts.append(arg)
        elif "default" in spec:
            parts.append(f"{arg}={spec['default']}")
        else:
            parts.append(f"{arg}?")
    return f"{name}({', '.join(parts)})"


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    kinds = spec.get("type") or [_type(s) for s in spec.get("anyOf", spec.get("oneOf", ()))]
    if isinstance(kinds, list):
        return " or ".join(k for k in kinds if k)
    if kinds == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type(spec['items'])}"
    return str(kinds)


def tools_table() -> str:
    """Every tool: signature, CLI command, envelope, description, then its arguments."""
    from engine.tools.registry import CLI_NAMES, REGISTRY

    out = ["| tool | CLI | answers with | what it does |", "|---|---|---|---|"]
    for name, tool in REGISTRY.items():
        out.append(
            f"| `{_signature(name, tool.schema)}` | `{CLI_NAMES[name]}` | `{tool.envelope.__name__}` "
            f"| {_cell(tool.description)} |"
        )
    out += ["", "| tool | argument | type | required | default | meaning |", "|---|---|---|---|---|---|"]
    for name, tool in REGISTRY.items():
        required = set(tool.schema.get("required", ()))
        for arg, spec in tool.schema.get("properties", {}).items():
            default = f"`{spec['default']}`" if "default" in spec else ""
            yes = "yes" if arg in required else ""
            out.append(
                f"| `{name}` | `{arg}` | {_type(spec)} | {yes} | {default} | {_cell(spec.get('description', ''))} |"
            )
    return "\n".join(out)


def settings_table() -> str:
    """Every setting: env variable, field name, unit, default, help."""
    from engine.config import SETTINGS

    out = ["| env | name | unit | default | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = "" if s.default in ("", None) else f"`{s.default}`"
        out.append(f"| `{s.env}` | `{s.name}` | {s.unit} | {default} | {_cell(s.help)} |")
    return "\n".join(out)


def _literals() -> list[tuple[str, list[tuple[str, str]]]]:
    """Each ``X = Literal[...]`` of engine/errors.py: (X, [(code, trailing comment)])."""
    path = ROOT / "engine" / "errors.py"
    source = path.read_text("utf-8")
    with path.open("rb") as f:
        comments = {
            t.start[0]: t.string.lstrip("#").strip()
            for t in tokenize.tokenize(f.readline)
            if t.type == tokenize.COMMENT
        }
    found = []
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Subscript)):
            continue
        if not (isinstance(value.value, ast.Name) and value.value.id == "Literal"):
            continue
        codes = []
        for elt in ast.walk(value.slice):
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                codes.append((elt.value, comments.get(elt.end_lineno or elt.lineno, "")))
        found.append((target.id, codes))
    return found


def codes_table() -> str:
    """One table per code ``Literal`` of engine/errors.py; error codes with who can act."""
    from engine.errors import WHO_FIXES

    out: list[str] = []
    for name, codes in _literals():
        out += [f"`{name}` (`engine.errors`):", ""]
        if name == "ErrorCode":
            out += ["| code | who can act |", "|---|---|"]
            out += [f"| `{code}` | {_cell(WHO_FIXES.get(code, ''))} |" for code, _ in codes]
        elif not any(comment for _, comment in codes):
            out += ["| code |", "|---|"]
            out += [f"| `{code}` |" for code, _ in codes]
        else:
            out += ["| code | meaning |", "|---|---|"]
            out += [f"| `{code}` | {_cell(comment)} |" for code, comment in codes]
        out.append("")
    return "\n".join(out[:-1])


TABLES: dict[str, Callable[[], str]] = {
    "cli": cli_table,
    "tools": tools_table,
    "settings": settings_table,
    "codes": codes_table,
}


def pages() -> list[Path]:
    """The pages that may hold generated regions: README.md and docs/**/*.md."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def rewrite(text: str, made: dict[str, str] | None = None) -> str:
    """``text`` with every generated region holding what the code makes now."""
    made = {} if made is None else made

    def fill(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in TABLES:
            raise KeyError(f"unknown generated region {name!r}; known: {sorted(TABLES)}")
        if name not in made:
            made[name] = TABLES[name]()
        return f"{m.group(1)}{made[name]}\n{m.group(4)}"

    return REGION.sub(fill, text)


def regions(text: str) -> list[str]:
    """The names of the generated regions in ``text``."""
    return [m.group(2) for m in REGION.finditer(text)]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the regions (or, with ``--check``, list the pages that differ)."""
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    made: dict[str, str] = {}
    stale = []
    for page in pages():
        text = page.read_text("utf-8")
        new = rewrite(text, made)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not check:
                page.write_text(new, "utf-8")
    for page in stale:
        print(f"{'differs' if check else 'rewrote'}: {page}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
