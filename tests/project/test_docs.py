"""Docs cannot drift: the generated tables match the code, and every tool, CLI command and
setting is documented in the docs pages."""

import importlib.util
import re
from pathlib import Path

from engine.config import SETTINGS
from engine.faces.cli import build_parser
from engine.tools.registry import CLI_NAMES, REGISTRY

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text("utf-8")


def _tables():
    spec = importlib.util.spec_from_file_location("docs_tables", DOCS / "tables.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subcommands():
    return next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")


def test_readme_opens_with_the_two_commands():
    """The first code block holds exactly the two commands for a new machine."""
    lines = README.splitlines()
    assert lines[2] == "```sh", lines[:3]
    block = lines[3 : lines.index("```", 3)]
    assert [line.split()[:2] for line in block] == [["make", "run"], ["make", "test"]], block


def test_generated_tables_match_the_code():
    """Every marked region of every page holds what docs/tables.py makes now (`make docs`)."""
    tables = _tables()
    made: dict[str, str] = {}
    stale = []
    for page in tables.pages():
        text = page.read_text("utf-8")
        if tables.rewrite(text, made) != text:
            stale.append(str(page.relative_to(ROOT)))
    assert not stale, f"run `make docs` (python docs/tables.py): {stale}"


def test_every_generated_table_is_on_a_page():
    tables = _tables()
    found = {name for page in tables.pages() for name in tables.regions(page.read_text("utf-8"))}
    assert found == set(tables.TABLES), found
    assert "settings" in tables.regions(_page("settings.md"))
    assert "cli" in tables.regions(_page("cli.md"))
    assert {"tools", "codes"} <= set(tables.regions(_page("tools.md")))


def test_every_tool_is_documented():
    tools = _page("tools.md")
    for name in REGISTRY:
        assert f"`{name}(" in tools, name
        assert f"`{CLI_NAMES[name]}`" in tools, CLI_NAMES[name]


def test_every_cli_command_is_documented():
    cli = _page("cli.md")
    for command in _subcommands().choices:
        assert f"chunknav {command}" in cli, command


def test_every_setting_is_documented_with_its_unit():
    lines = _page("settings.md").splitlines()
    for s in SETTINGS:
        line = next((ln for ln in lines if ln.startswith(f"| `{s.env}`")), None)
        assert line, f"{s.env} missing from docs/settings.md"
        assert s.unit in line, f"{s.env}: unit {s.unit!r} missing"
        assert s.unit and s.help, f"{s.env}: a setting needs a unit and a help text"


def test_every_error_and_reason_code_is_documented():
    from engine.errors import ERROR_CODES, REASON_CODES, WHO_FIXES

    tools = _page("tools.md")
    for code in (*ERROR_CODES, *REASON_CODES):
        assert f"| `{code}` |" in tools, code
    assert set(WHO_FIXES) == set(ERROR_CODES)


def test_readme_links_only_files_of_the_repository():
    linked = set(re.findall(r"\]\(([^)#:]+)\)", README)) | set(re.findall(r"`(docs/[\w./-]+\.md)`", README))
    # a clone has nothing beside it: no README path may climb out of the repository
    outside = re.findall(r"\.\./[\w.-]+/[\w./-]+\.md", README)  # e.g. a sibling folder's DESIGN.md
    assert not outside and not any(rel.startswith("..") for rel in linked), outside
    assert {"docs/DESIGN.md", "docs/STYLE.md"} <= linked
    for rel in linked:
        assert (ROOT / rel).is_file(), rel
    assert "README.md documents the current" in (DOCS / "DESIGN.md").read_text("utf-8")[:800]


def test_readme_links_every_docs_page():
    """The README is the door: every topic page of docs/ is linked from it."""
    linked = set(re.findall(r"\]\((docs/[\w./-]+)\)", README))
    for page in sorted(DOCS.glob("*.md")):
        assert f"docs/{page.name}" in linked, page.name
    assert "docs/decisions/README.md" in linked and "CHANGELOG.md" in README


def test_docs_links_resolve():
    """Every relative link of every docs page (and CHANGELOG.md) names a file that exists."""
    for page in [ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"


def test_architecture_names_every_package_and_core_module():
    """docs/architecture.md draws the tree: every package and top-level module of engine/,
    and every path it names in backticks exists."""
    arch = _page("architecture.md")
    tree = arch[arch.index("## The tree") : arch.index("## Where to make a change")]
    for path in sorted((ROOT / "engine").iterdir()):
        if path.name.startswith(("_", ".")) and path.name not in ("__init__.py", "__main__.py"):
            continue
        if path.is_dir() and (path / "__init__.py").is_file():
            assert f"{path.name}/" in tree, path.name
        elif path.suffix == ".py":
            assert path.name in tree, path.name
    for rel in re.findall(r"`((?:engine|explorer|pages)/[\w/.-]*\.py)`", arch):
        assert (ROOT / rel).is_file(), rel


def test_every_tool_name_is_a_cli_command():
    sub = _subcommands()
    for name in REGISTRY:
        assert name.replace("_", "-") in sub.choices or CLI_NAMES[name] == name.replace("_", "-"), name


def _named_code(text: str) -> tuple[set[str], set[str]]:
    paths = set(
        re.findall(
            r"(?<![\w/.])((?:engine|explorer|pages|tests|bench)/[\w/.-]*\w\.(?:py|c|jsonl|json|md|txt))(?!\w)", text
        )
    )
    return paths, set(re.findall(r"`(engine(?:\.\w+)+)", text))


def test_docs_name_only_code_that_exists():
    """Every file path (engine/…, tests/…, bench/…) and dotted engine name a page cites exists,
    so a moved module or a renamed function shows up here, not in a reader's editor."""
    import importlib

    missing = []
    for page in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]:
        if page.name in ("DESIGN.md", "STYLE.md"):  # the contract and the style, kept as written
            continue
        paths, dotted = _named_code(page.read_text("utf-8"))
        missing += [f"{page.name}: {rel}" for rel in sorted(paths) if not (ROOT / rel).exists()]
        for name in sorted(dotted):
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:i]))
                    break
                except ImportError:
                    continue
            for attr in parts[i:]:
                if not hasattr(obj, attr):
                    missing.append(f"{page.name}: {name}")
                    break
                obj = getattr(obj, attr)
    assert not missing, missing
