"""Boundaries (STYLE.md §1): the engine core imports no face; faces import the engine."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FACES = {
    "engine/faces/cli.py",
    "engine/faces/mcp_server.py",
    "engine/faces/mcp_resources.py",
    "engine/__main__.py",
}  # __main__ only runs the CLI face
FRAMEWORKS = {"streamlit", "mcp", "argparse", "click"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _core_files():
    return [p for p in sorted((REPO / "engine").rglob("*.py")) if str(p.relative_to(REPO)) not in FACES]


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_core_imports_no_face(path):
    bad = {
        n
        for n in _imports(path)
        if n.split(".")[0] in FRAMEWORKS or n in ("engine.faces.cli", "engine.faces.mcp_server")
    }
    assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_explorer_and_pages_are_never_imported_by_the_engine():
    for path in (REPO / "engine").rglob("*.py"):
        bad = {n for n in _imports(path) if n.split(".")[0] in ("explorer", "pages")}
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_pages_do_no_sql_http_or_pdf():
    for path in sorted((REPO / "pages").glob("*.py")):
        bad = {
            n
            for n in _imports(path)
            if n.split(".")[0] in ("sqlite3", "sqlite_utils", "requests", "pymupdf", "fitz", "psycopg")
        }
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"


#: Streamlit elements backed by pandas/pyarrow/altair/pydeck, which the lean install
#: (requirements.lock, `make run`) leaves out: explorer.table.table shows rows instead.
ARROW_ELEMENTS = {
    "dataframe",
    "data_editor",
    "table",
    "line_chart",
    "area_chart",
    "bar_chart",
    "scatter_chart",
    "map",
    "altair_chart",
    "vega_lite_chart",
    "pydeck_chart",
    "plotly_chart",
}
LEFT_OUT = ("pandas", "pyarrow", "altair", "pydeck", "narwhals")


@pytest.mark.parametrize(
    "path",
    sorted((REPO / "explorer").glob("*.py")) + sorted((REPO / "pages").glob("*.py")),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_explorer_uses_no_arrow_backed_element(path):
    """``st.dataframe`` & co. need pandas/pyarrow, which ``make run`` does not install."""
    tree = ast.parse(path.read_text("utf-8"))
    bad = sorted(
        {
            f"st.{n.attr}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and n.attr in ARROW_ELEMENTS
            and isinstance(n.value, ast.Name)
            and n.value.id == "st"
        }
    )
    assert not bad, f"{path.relative_to(REPO)} uses {bad}: use explorer.table.table (see requirements.lock)"
    imported = {n for n in _imports(path) if n.split(".")[0] in LEFT_OUT}
    assert not imported, f"{path.relative_to(REPO)} imports {imported}, left out of the lean install"


def test_engine_core_loads_without_streamlit_or_mcp():
    code = (
        "import sys\n"
        "import engine.tools.registry, engine.search.searcher, engine.index.indexer, engine.chunk, engine.extract, engine.embed\n"
        "import engine.store.sqlite.store, engine.config, engine.tools.envelopes\n"
        "bad = [m for m in ('streamlit', 'mcp', 'argparse') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


@pytest.mark.parametrize(
    "module",
    [
        "engine.errors",
        "engine.values",
        "engine.tools.envelopes",
        "engine.config",
        "engine.chunk",
        "engine.paths",
        "engine.search.searcher",
        "engine.tools.registry",
        "engine.extract",
        "engine.embed",
        "engine.index.indexer",
        "engine.store.sqlite.store",
        "engine.store.base",
        "engine.store.postgres.schema",
        "engine.store.postgres.rows",
        "engine.store.postgres.vectors",
        "engine.embed.base",
        "engine.embed.local",
        "engine.embed.http",
        "engine.store.sqlite.vectors",
        "engine.embed.isolate",
        "engine.index.embed_pass",
        "engine.store.sqlite.notes",
        "engine.store.postgres.notes",
        "engine.store.sqlite.rows",
        "engine.service",
        "engine.tools.answers",
        "engine.store.sqlite.schema",
        "engine.store.postgres.keyword",
        "engine.extract.common",
        "engine.extract.pdf",
        "engine.extract.text",
        "engine.extract.docx",
        "engine.store.fts",
        "engine.store.sqlite.keyword",
        "explorer.retrieval",
        "engine.extract.html",
        "engine.extract.ocr",
        "engine.extract.pages",
        "engine.extract.saslprep",
        "engine.index.walk",
        "engine.index.runs",
        "engine.extract.limits",
        "engine.index.files",
        "engine.secrets",
        "engine.paths",
        "engine.faces.gui",
        "engine.store.purge",
        "engine.index.gate",
        "engine.render",
        "engine.store.threads",
        "engine.index.pool",
        "engine.index.recovery",
        "engine.lazy",
        "engine.store.sqlite.int8",
        "engine.store.scan_share",
        "engine.index.walk_pass",
        "engine.index.context",
        "engine.index.text_pass",
        "engine.search.hybrid",
        "engine.search.fusion",
        "engine.search.per_file",
        "engine.store.sqlite.search",
        "engine.index.rows",
        "engine.extract.pdfwords",
        "engine.extract.codepages",
        "engine.extract.mupdf_log",
        "engine.faces.cli_views",
        "engine.store.sqlite.top_k",
        "engine.store.sqlite.term_scores",
        "explorer.run_views",
        "engine.search.query",
        "engine.search.snippets",
    ],
)
def test_exports_exist_and_are_documented(module):
    mod = importlib.import_module(module)
    assert mod.__doc__ and mod.__doc__.strip(), f"{module} has no module docstring"
    assert hasattr(mod, "__all__"), f"{module} has no __all__"
    for name in mod.__all__:
        obj = getattr(mod, name)  # AttributeError: a stale export
        if callable(obj) and not isinstance(obj, type(str)) and getattr(obj, "__module__", "") == module:
            assert obj.__doc__ and obj.__doc__.strip(), f"{module}.{name} has no docstring"
