"""History stays out of the product: the README is a short door, and no code, test, bench or
docs page cites issue numbers, trials, sessions, earlier figures or older versions.

History lives in CHANGELOG.md and the figures that decided a choice in docs/decisions/.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Words that tell the story of how the code came to be instead of what it does.
HISTORY = re.compile(
    r"\bissues? \d+"  # "issue 15", "issues 9-15"
    r"|\bi(?:9|1\d)\b"  # "i12": an issue in shorthand
    r"|(?<![\w&/#])#\d{1,2}\b(?!-)"  # "#18" as an issue or item reference (not a colour)
    r"|\btrial\d*\b"  # "trial6", "a new user's trial"
    r"|\bsessions? \d+"  # "session 4"
    r"|\bverify\d"  # "verify6 D5"
    r"|\bwas \d+(?:\.\d+)? ?m?s\b"  # "was 0.35 s", "was 27 ms"
    r"|\bolder versions?\b",  # "links of older versions"
    re.IGNORECASE,
)

#: Folders scanned, with the file types that hold prose or code.
FOLDERS = ("engine", "explorer", "pages", "tests", "bench", "docs")
SUFFIXES = {".py", ".md", ".c", ".toml", ".txt", ".cfg", ".sh", ".yml", ".yaml"}
#: Not ours to reword: third-party documents of the test corpus; the history's own places.
EXCLUDED = ("tests/corpus/", "docs/decisions/", "tests/project/test_history.py")


def _hits(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if not path.is_file() or path.suffix not in SUFFIXES or rel.startswith(EXCLUDED) or "__pycache__" in rel:
            continue
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            for m in HISTORY.finditer(line):
                found.append(f"{rel}:{number}: {m.group(0)!r}: {line.strip()[:120]}")
    return found


def test_readme_is_a_short_door():
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    assert lines[0] == "# chunknav" and lines[2] == "```sh", lines[:3]
    assert lines[3].startswith("make run ") and lines[4].startswith("make test "), lines[3:5]
    assert lines[5] == "```", lines[5]


def test_readme_has_no_history():
    hits = [f"README.md:{n}: {line}" for n, line in enumerate((ROOT / "README.md").read_text("utf-8").splitlines(), 1)]
    assert not [h for h in hits if HISTORY.search(h.split(": ", 1)[1])]


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_history_in(folder):
    hits = _hits(folder)
    assert not hits, f"{len(hits)} history mentions in {folder}/:\n" + "\n".join(hits)


def test_the_patterns_catch_history_and_spare_the_product():
    for text in (
        "issue 15",
        "(trial6 #5)",
        "Session 4 measured",
        "verify6 D5",
        "was 0.35 s",
        "was 27 ms",
        "older versions",
        "see #18",
        "trial",
        "(i12)",
        "i9's rule",
    ):
        assert HISTORY.search(text), text
    for text in (
        "color #1f77b4",
        "#000000",
        "page 2 of 9",
        "it was read",
        "3.5 ms",
        "# 1. the walk",
        "[Footnote 1]",
        "versions of the model",
        "the session's token",
        "was 5 files",
        "i1 = 0",
        "pi12",
    ):
        assert not HISTORY.search(text), text
