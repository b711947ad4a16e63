"""Docs cannot drift: every tool, CLI command and setting is in the README."""

from pathlib import Path

from engine.faces.cli import build_parser
from engine.config import SETTINGS
from engine.tools.registry import CLI_NAMES, REGISTRY

README = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")


def test_readme_opens_with_the_two_commands():
    """The first code block holds exactly the two commands for a new machine."""
    lines = README.splitlines()
    assert lines[2] == "```sh", lines[:3]
    block = lines[3 : lines.index("```", 3)]
    assert [line.split()[:2] for line in block] == [["make", "run"], ["make", "test"]], block


def test_every_tool_is_documented():
    for name in REGISTRY:
        assert f"`{name}(" in README, name
        assert f"`{CLI_NAMES[name]}`" in README, CLI_NAMES[name]


def test_every_cli_command_is_documented():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for command in sub.choices:
        assert f"chunknav {command}" in README, command


def test_every_setting_is_documented_with_its_unit():
    for s in SETTINGS:
        line = next((ln for ln in README.splitlines() if ln.startswith(f"| `{s.env}`")), None)
        assert line, f"{s.env} missing from README"
        assert s.unit in line, f"{s.env}: unit {s.unit!r} missing"


def test_readme_links_only_files_of_the_repository():
    import re

    root = Path(__file__).resolve().parents[2]
    linked = set(re.findall(r"\]\(([^)#:]+)\)", README)) | set(re.findall(r"`(docs/[\w./-]+\.md)`", README))
    # a clone has nothing beside it: no README path may climb out of the repository
    outside = re.findall(r"\.\./[\w.-]+/[\w./-]+\.md", README)  # e.g. a sibling folder's DESIGN.md
    assert not outside and not any(rel.startswith("..") for rel in linked), outside
    assert {"docs/DESIGN.md", "docs/STYLE.md"} <= linked
    for rel in linked:
        assert (root / rel).is_file(), rel
    assert "README.md documents the current" in (root / "docs" / "DESIGN.md").read_text("utf-8")[:800]


def test_every_tool_name_is_a_cli_command():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in REGISTRY:
        assert name.replace("_", "-") in sub.choices or CLI_NAMES[name] == name.replace("_", "-"), name
