"""Write or check ``requirements.lock``: the pinned closure of ``requirements.txt``.

``make run`` installs ``requirements.lock`` with ``pip install --no-deps``, so
the lock must hold every package the runtime needs, each pinned. The closure
is walked over the installed distributions' metadata (``Requires-Dist``,
markers evaluated for this interpreter), starting at the names in
``requirements.txt`` and skipping the edges in ``OMIT``: packages a
dependency declares that chunknav never loads. Streamlit declares pandas,
pyarrow, altair and pydeck for its dataframe and chart elements; the explorer
uses neither (``tests/project/test_boundaries.py`` forbids them), and they are 2/3 of a
runtime ``.venv`` (pyarrow 170 MB, pandas 84 MB, pydeck 23 MB, altair 10 MB).
``pip install .`` still resolves streamlit's full requirements.

Usage (from the repository root):

    python .ci/lock.py          # print the lock for the installed packages
    python .ci/lock.py --check  # exit 1 naming each difference from requirements.lock

``make lock`` installs ``requirements.txt`` into a scratch venv and runs the
first form there.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]

#: Declared by streamlit, never loaded by chunknav: left out of the lean install.
OMIT = ("altair", "pandas", "pyarrow", "pydeck")
#: In every venv already (sqlite-utils declares pip): never pinned here.
ALWAYS = ("pip", "setuptools")

HEADER = """\
# requirements.lock: every package `make run` installs (pip install --no-deps -r),
# the pinned closure of requirements.txt (CPython 3.11, Linux). Do not edit by hand:
# change requirements.txt, then `make lock` (tests/project/test_requirements.py checks it).
# Left out on purpose, though streamlit declares them (the explorer uses no
# dataframe or chart element; `pip install .` still installs them):
# omit: {omit}
# (pip and setuptools come with the venv and are not pinned here.)
"""


def direct(path: Path = REPO / "requirements.txt") -> list[Requirement]:
    """The requirements of ``path``: one per non-comment line, in file order."""
    out = []
    for line in path.read_text("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(Requirement(line))
    return out


def closure(roots: list[Requirement], omit: tuple[str, ...] = OMIT) -> dict[str, str]:
    """Canonical name -> installed version of every distribution ``roots`` need.

    Raises:
        metadata.PackageNotFoundError: a needed distribution is not installed.
    """
    skip = {canonicalize_name(n) for n in omit}
    seen: dict[str, str] = {}
    walked: set[tuple[str, frozenset[str]]] = set()
    todo = [r for r in roots if r.marker is None or r.marker.evaluate({"extra": ""})]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        key = (name, frozenset(req.extras))
        if name in skip or key in walked:
            continue
        walked.add(key)
        dist = metadata.distribution(name)
        seen[name] = dist.version
        for spec in dist.requires or []:
            sub = Requirement(spec)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append(sub)
    return dict(sorted(seen.items()))


def render(pins: dict[str, str]) -> str:
    """The lock file's text for ``pins`` (``ALWAYS`` left out)."""
    lines = "".join(f"{n}=={v}\n" for n, v in pins.items() if n not in ALWAYS)
    return HEADER.format(omit=" ".join(OMIT)) + lines


def read_lock(path: Path = REPO / "requirements.lock") -> dict[str, str]:
    """Canonical name -> pinned version of each line of the lock."""
    pins = {}
    for line in path.read_text("utf-8").splitlines():
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", line.strip())
        if m:
            pins[canonicalize_name(m[1])] = m[2]
    return pins


def main(argv: list[str]) -> int:
    """Print the lock, or with ``--check`` compare it with ``requirements.lock``."""
    try:
        pins = closure(direct())
    except metadata.PackageNotFoundError as e:
        print(f"not installed but needed: {e.name}", file=sys.stderr)
        return 1
    if "--check" not in argv:
        sys.stdout.write(render(pins))
        return 0
    locked = read_lock()
    pins = {n: v for n, v in pins.items() if n not in ALWAYS}
    problems = [f"{n}: needs {v}, lock has {locked.get(n)}" for n, v in pins.items() if locked.get(n) != v]
    problems += [f"{n}: locked but not needed" for n in locked if n not in pins]
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
