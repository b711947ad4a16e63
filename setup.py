"""Packages for setuptools (the rest of the build is in pyproject.toml).

Here, not in pyproject.toml, so a new subpackage of ``engine`` or ``explorer``
ships without editing a list. The explorer's pages, assets and Streamlit
settings ship inside the ``explorer`` package without moving their folders:
``pages/`` -> ``explorer/_pages``, ``assets/`` -> ``explorer/_assets``,
``streamlit_config.toml`` -> ``explorer/_config`` (``explorer.state`` and
``engine.faces.cli`` look there first, then in the checkout).
"""

from pathlib import Path

from setuptools import Extension, find_packages, setup

MAPPED = {"explorer._pages": "pages", "explorer._assets": "assets", "explorer._config": "."}


def _pdfwords() -> list[Extension]:
    """``engine.extract._pdfwords`` (PDF words without a Python object per word; see its C
    source): built against the MuPDF headers and library the installed PyMuPDF wheel ships
    (``pymupdf/mupdf-devel``, pinned in pyproject's build requirements to requirements.txt's
    version). Optional: without PyMuPDF's headers or a C compiler, nothing is built and
    ``engine.extract.pdfwords`` falls back to PyMuPDF's ``extractWORDS`` (same words, slower)."""
    try:
        import pymupdf
    except Exception:
        return []
    here = Path(pymupdf.__file__).parent
    libs = sorted(here.glob("libmupdf.so.*"))
    if not (here / "mupdf-devel" / "include" / "mupdf" / "fitz.h").exists() or not libs:
        return []
    return [
        Extension(
            "engine.extract._pdfwords",
            ["engine/extract/_pdfwords.c"],
            include_dirs=[str(here / "mupdf-devel" / "include")],
            library_dirs=[str(here)],
            # by soname: at run time the libmupdf PyMuPDF has loaded is the one used
            libraries=[":" + libs[-1].name],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]


setup(
    packages=find_packages(include=["engine", "engine.*", "explorer", "explorer.*"]) + list(MAPPED),
    package_dir=MAPPED,
    ext_modules=_pdfwords(),
)
