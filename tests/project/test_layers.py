"""Imports point down the layers of docs/architecture.md, and no module or package imports itself back.

Every module of ``engine``, ``explorer`` and ``pages`` is found with ``pkgutil.walk_packages``
(pages by file), its imports read from the AST (function-level and ``TYPE_CHECKING`` imports
included: a cycle through a late import is still a cycle), and the graph is checked twice: per
module and per concern (``engine.index``, ``engine.search``, ``engine.config``, ...).
"""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import engine
import explorer

REPO = Path(__file__).resolve().parents[2]

#: Layer of each concern, lowest first; a module may import its own layer or any below.
LAYERS: dict[str, int] = {
    **dict.fromkeys(
        [
            "engine",
            "engine.config",
            "engine.secrets",
            "engine.errors",
            "engine.values",
            "engine.paths",
            "engine.passwords",
            "engine.lazy",
        ],
        0,
    ),
    **dict.fromkeys(["engine.chunk", "engine.extract", "engine.embed", "engine.store"], 1),
    **dict.fromkeys(["engine.render", "engine.index", "engine.search"], 2),
    "engine.service": 3,
    "engine.tools": 4,
    **dict.fromkeys(["engine.faces", "engine.__main__"], 5),
    "explorer": 6,
    "pages": 7,
}


def _modules() -> dict[str, Path]:
    """Every first-party module name -> its source file."""
    found: dict[str, Path] = {"engine": Path(engine.__file__), "explorer": Path(explorer.__file__)}
    for pkg in (engine, explorer):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            spec = info.module_finder.find_spec(info.name, None)  # type: ignore[call-arg]
            if spec is not None and spec.origin and spec.origin.endswith((".py", ".so")):
                found[info.name] = Path(spec.origin)  # a compiled module imports nothing first-party
    for page in sorted((REPO / "pages").glob("*.py")):
        found[f"pages.{page.stem}"] = page
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The first-party module an imported name lands in (a name inside a module -> that module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    """First-party modules ``module`` imports, anywhere in its file."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    parent = parent.rpartition(".")[0]
                base = f"{parent}.{base}" if base else parent
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target is not None and target != module:
                out.add(target)
    return out


GRAPH = {m: _imports(m, p) if p.suffix == ".py" else set() for m, p in MODULES.items()}


def concern(module: str) -> str:
    """The concern a module belongs to: its longest prefix in LAYERS."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} belongs to no layer: add its concern to LAYERS")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    assert len(MODULES) > 60
    for module in MODULES:
        concern(module)


def test_imports_point_down_the_layers():
    upward = sorted(
        f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets if LAYERS[concern(t)] > LAYERS[concern(m)]
    )
    assert upward == []


def test_no_module_imports_itself_back():
    assert _cycles(GRAPH) == []


def test_no_package_imports_itself_back():
    packages: dict[str, set[str]] = {}
    for m, targets in GRAPH.items():
        packages.setdefault(concern(m), set()).update(concern(t) for t in targets if concern(t) != concern(m))
    assert _cycles(packages) == []


def test_the_checker_sees_a_cycle_and_an_upward_edge():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert LAYERS[concern("engine.tools.answers")] > LAYERS[concern("engine.index.runs")]
    assert "engine.index.indexer" in GRAPH["engine.service"] or any(
        t.startswith("engine.index") for t in GRAPH["engine.service"]
    )
